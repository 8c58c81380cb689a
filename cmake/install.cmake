# install.cmake: what `cmake --install build --prefix P` puts under P:
#   lib/libclformer.so.VERSION (soname libclformer.so.SOVERSION) and
#   lib/libclformer.a, both from the same objects;
#   include/clformer/*.h, the public headers alone: the stable tier
#   (clformer.h and its parts, no OpenCL header) and advanced.h with
#   advanced/*.h (OpenCL's CL/cl.h); they include one another, nothing
#   internal;
#   bin/clformer;
#   lib/pkgconfig/clformer.pc (`pkg-config --cflags --libs clformer`;
#   --static adds what libclformer.a needs, as Debian's -dev packages
#   name them) and clformer-advanced.pc (the same and OpenCL's);
#   lib/cmake/clformer/ (find_package(clformer) gives clformer::clformer,
#   the shared library; find_package(clformer COMPONENTS advanced) adds
#   clformer::advanced, which brings OpenCL::OpenCL).
# The two tiers: the stable one (<clformer/clformer.h>) names no OpenCL
# type, so its users need no OpenCL header, and neither clformer.pc nor
# clformer::clformer hands them OpenCL (libclformer.so links libOpenCL
# itself); the advanced tier's headers include <CL/cl.h>, so its
# clformer-advanced.pc and clformer::advanced do. tests/install_check.sh
# builds a user of each, the stable one with a CL/cl.h that is an #error
# first on its include path.
# Each in a component, for the Debian packages (cmake/package.cmake):
# runtime (the shared library), dev (the rest but the command), command.
# The kernels are embedded in the library: nothing else is needed at run
# time. Paths inside clformer.pc and the CMake package are relative to
# where they lie, so the prefix given at install time is the one they name.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# In the tree the command and tests take OpenCL through clformer_shared
# (CMakeLists.txt); installed, clformer::clformer does not, and
# clformer::advanced does (clformerAdvancedTargets.cmake, loaded only for
# the component, after find_dependency(OpenCL): clformerConfig.cmake.in)
set_property(TARGET clformer_shared PROPERTY INTERFACE_LINK_LIBRARIES $<BUILD_INTERFACE:OpenCL::OpenCL>)
add_library(clformer_advanced INTERFACE)
target_link_libraries(clformer_advanced INTERFACE clformer_shared OpenCL::OpenCL)
set_target_properties(clformer_advanced PROPERTIES EXPORT_NAME advanced)

install(TARGETS clformer_shared EXPORT clformerTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS clformer ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/clformer DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev
        FILES_MATCHING PATTERN "*.h")
install(TARGETS clformer_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT command)

# clformer.pc: ${pcfiledir} is lib/pkgconfig (or Debian's multiarch
# lib/<triplet>/pkgconfig under /usr); the prefix is that many levels up
file(RELATIVE_PATH CLF_PC_PREFIX "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
string(REGEX REPLACE "/$" "" CLF_PC_PREFIX "${CLF_PC_PREFIX}")
configure_file(${CMAKE_SOURCE_DIR}/cmake/clformer.pc.in ${CMAKE_BINARY_DIR}/clformer.pc @ONLY)
configure_file(${CMAKE_SOURCE_DIR}/cmake/clformer-advanced.pc.in ${CMAKE_BINARY_DIR}/clformer-advanced.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/clformer.pc ${CMAKE_BINARY_DIR}/clformer-advanced.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

set(CLF_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/clformer)
install(EXPORT clformerTargets NAMESPACE clformer:: DESTINATION ${CLF_CMAKE_DIR} COMPONENT dev)
install(TARGETS clformer_advanced EXPORT clformerAdvancedTargets COMPONENT dev)
install(EXPORT clformerAdvancedTargets NAMESPACE clformer:: DESTINATION ${CLF_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/clformerConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/clformerConfig.cmake INSTALL_DESTINATION ${CLF_CMAKE_DIR})
# 0.x: a minor version may change the interface
write_basic_package_version_file(${CMAKE_BINARY_DIR}/clformerConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/clformerConfig.cmake ${CMAKE_BINARY_DIR}/clformerConfigVersion.cmake
        DESTINATION ${CLF_CMAKE_DIR} COMPONENT dev)
