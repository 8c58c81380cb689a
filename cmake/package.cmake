# package.cmake: `cpack -G DEB` in the build folder makes three Debian
# packages from the install components (cmake/install.cmake):
#   libclformer0     the shared library (runtime)
#   libclformer-dev  headers, libclformer.a, the .so link, clformer.pc,
#                    clformer-advanced.pc and the CMake package (dev); needs
#                    libclformer0 of the same version and the -dev packages
#                    the .pc files name (OpenCL's for the advanced tier
#                    and for linking libclformer.a)
#   clformer         the command (command; it links the library statically)
# Depends of the library and the command come from dpkg-shlibdeps (dpkg-dev,
# which build-essential brings); an OpenCL driver is recommended, since
# without one there is no device. tests/deb_check.sh checks all three.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME clformer)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR clformer)
set(CPACK_PACKAGE_CONTACT "clformer developers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "The Transformer of Attention Is All You Need in OpenCL")
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev command)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION science)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libclformer0)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)  # a shlibs file where a package holds a library with a soname
set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS "pocl-opencl-icd | opencl-icd")
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "clformer's shared library, the Transformer in OpenCL
Training, decoding and translation on any OpenCL device; the kernels are
embedded, so nothing else is needed at run time but an OpenCL driver.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libclformer-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DEPENDS runtime)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "ocl-icd-opencl-dev | opencl-dev, opencl-headers, libclblast-dev, libsentencepiece-dev, libopenblas-dev, zlib1g-dev")
set(CPACK_DEBIAN_DEV_DESCRIPTION "clformer's headers, static library, pkg-config files and CMake package
pkg-config --cflags --libs clformer (the stable tier, no OpenCL header
needed) or clformer-advanced; find_package(clformer) gives
clformer::clformer, and its advanced component clformer::advanced.")

set(CPACK_DEBIAN_COMMAND_PACKAGE_NAME clformer)
set(CPACK_DEBIAN_COMMAND_PACKAGE_RECOMMENDS "pocl-opencl-icd | opencl-icd")
set(CPACK_DEBIAN_COMMAND_DESCRIPTION "train, translate and benchmark the Transformer on any OpenCL device
clformer devices, train, translate, import (Marian / OPUS-MT models),
average, quantize, bleu, bpe, tune and bench.")
include(CPack)
