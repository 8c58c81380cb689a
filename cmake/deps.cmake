# Finds clformer's dependencies; a missing one stops with one line naming the Debian package.
find_package(PkgConfig QUIET)
if(NOT PkgConfig_FOUND)
  message(FATAL_ERROR "pkg-config not found: apt-get install pkg-config")
endif()

find_package(OpenCL QUIET)
if(NOT OpenCL_FOUND)
  message(FATAL_ERROR "OpenCL ICD loader or headers not found: apt-get install ocl-icd-opencl-dev opencl-headers")
endif()

find_package(CLBlast QUIET CONFIG)
if(NOT CLBlast_FOUND)
  message(FATAL_ERROR "CLBlast not found: apt-get install libclblast-dev")
endif()

pkg_check_modules(SENTENCEPIECE QUIET IMPORTED_TARGET sentencepiece)
if(NOT SENTENCEPIECE_FOUND)
  message(FATAL_ERROR "SentencePiece not found: apt-get install libsentencepiece-dev")
endif()

find_package(ZLIB QUIET)
if(NOT ZLIB_FOUND)
  message(FATAL_ERROR "zlib not found: apt-get install zlib1g-dev")
endif()

# OpenBLAS runs the library's GEMMs on CPU devices (the host-BLAS backend)
# and is the roof the GEMM benchmark measures CLBlast against. Debian's
# libopenblas-dev installs openblas.pc and cblas.h (with
# openblas_set_num_threads) for the pthread build.
pkg_check_modules(OPENBLAS QUIET IMPORTED_TARGET openblas)
if(NOT OPENBLAS_FOUND)
  message(FATAL_ERROR "OpenBLAS (the host BLAS for GEMMs on CPU devices) not found: apt-get install libopenblas-dev")
endif()

if(CLF_TESTS)
  pkg_check_modules(CRITERION QUIET IMPORTED_TARGET criterion)
  if(NOT CRITERION_FOUND)
    message(FATAL_ERROR "Criterion not found: apt-get install libcriterion-dev (or configure with -DCLF_TESTS=OFF)")
  endif()
endif()
