# Installs Kiln as a relocatable package:
#
#   <prefix>/include/kiln/...            frontend headers, the C ABI (c_api.h), the SDK
#   <prefix>/lib/libkiln.so*             the frontend
#   <prefix>/lib/kiln/plugins/           the plugins, found beside libkiln with no
#                                        environment variable
#   <prefix>/bin/                        kiln-info, kiln-train, kiln-demo, kiln-conformance,
#                                        kiln-bench, kiln-bench-mpi (with MPI)
#   <prefix>/lib/cmake/Kiln/             find_package(Kiln CONFIG): Kiln::kiln (the
#                                        frontend), Kiln::sdk (plugin authors: headers
#                                        and kiln_add_plugin), Kiln::api, and the
#                                        imported program Kiln::kiln-conformance
#   <prefix>/lib/pkgconfig/kiln.pc       pkg-config for libkiln
#   <prefix>/share/doc/kiln/             OPS.md (the op catalogue), ABI.md (the ABI's
#                                        rules, api/README.md), plugin-guide.md, LICENSE,
#                                        and examples/: the plugin template and the
#                                        custom-op recipe (examples/CMakeLists.txt)
#
# Nothing installed holds an absolute path: the CMake files locate the prefix from
# their own folder, kiln.pc from ${pcfiledir}, programs find libkiln through an
# $ORIGIN-relative RPATH and libkiln finds its plugins from its own location.
include(CMakePackageConfigHelpers)

install(EXPORT KilnTargets NAMESPACE Kiln:: DESTINATION ${KILN_INSTALL_CMAKE_DIR})

configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/KilnConfig.cmake.in
  ${CMAKE_BINARY_DIR}/package/KilnConfig.cmake
  INSTALL_DESTINATION ${KILN_INSTALL_CMAKE_DIR}
  PATH_VARS KILN_INSTALL_PLUGIN_DIR CMAKE_INSTALL_INCLUDEDIR
  NO_CHECK_REQUIRED_COMPONENTS_MACRO)
# The C++ frontend is not ABI-stable before 1.0, so only the same minor version
# satisfies a request (the plugin C ABI has its own promise: api/README.md).
write_basic_package_version_file(${CMAKE_BINARY_DIR}/package/KilnConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)

# pkg-config: the prefix is worked out from the .pc file's own folder.
file(RELATIVE_PATH kiln_pc_to_prefix /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" kiln_pc_to_prefix "${kiln_pc_to_prefix}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/kiln.pc.in ${CMAKE_BINARY_DIR}/package/kiln.pc @ONLY)

install(FILES
  ${CMAKE_BINARY_DIR}/package/KilnConfig.cmake
  ${CMAKE_BINARY_DIR}/package/KilnConfigVersion.cmake
  ${CMAKE_CURRENT_LIST_DIR}/KilnPlugin.cmake
  ${CMAKE_CURRENT_LIST_DIR}/kiln_plugin.map
  DESTINATION ${KILN_INSTALL_CMAKE_DIR})
install(FILES ${CMAKE_BINARY_DIR}/package/kiln.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
