# kiln_add_plugin(NAME SOURCES src... [OUTPUT_DIRECTORY dir] [NO_INSTALL])
#
# Builds the backend plugin `libkiln_<NAME>.so` as a loadable module:
#   - the target is called `kiln_<NAME>` and links Kiln::sdk (the C ABI header and
#     the header-only plugin kit; never libkiln);
#   - only the ABI entry point `kiln_plugin_init` is exported: C++ symbols are hidden
#     at compile time and a linker version script makes every other symbol local, so
#     two plugins built with different libstdc++ or SDK versions never clash;
#   - no undefined symbols are left for the loader to trip over at dlopen time;
#   - `cmake --install` puts it in <prefix>/lib/kiln/plugins, the folder beside
#     libkiln where the loader looks without KILN_PLUGIN_PATH (NO_INSTALL: not
#     installed, for test fixtures).
#
# In Kiln's own tree plugins are built into build/lib/kiln/plugins. Out of tree (after
# `find_package(Kiln CONFIG REQUIRED)`, which includes this file) they land in the
# current binary folder unless OUTPUT_DIRECTORY says otherwise; point KILN_PLUGIN_PATH
# there, or install into Kiln's prefix.
#
#   find_package(Kiln CONFIG REQUIRED)
#   kiln_add_plugin(acme SOURCES plugin.cpp kernels.cpp)
#   target_link_libraries(kiln_acme PRIVATE acme_driver)
set(KILN_PLUGIN_VERSION_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/kiln_plugin.map)

function(kiln_add_plugin name)
  cmake_parse_arguments(ARG "NO_INSTALL" "OUTPUT_DIRECTORY" "SOURCES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "kiln_add_plugin(${name}): SOURCES is required")
  endif()
  if(NOT name MATCHES "^[a-z0-9_]+$")
    message(FATAL_ERROR "kiln_add_plugin(${name}): a backend name is [a-z0-9_]+")
  endif()
  if(NOT TARGET Kiln::sdk)
    message(FATAL_ERROR "kiln_add_plugin(${name}): no Kiln::sdk target; "
                        "call find_package(Kiln CONFIG REQUIRED) first")
  endif()
  set(target kiln_${name})
  add_library(${target} MODULE ${ARG_SOURCES})
  if(NOT ARG_OUTPUT_DIRECTORY AND DEFINED KILN_PLUGIN_OUTPUT_DIRECTORY)
    set(ARG_OUTPUT_DIRECTORY ${KILN_PLUGIN_OUTPUT_DIRECTORY})
  endif()
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY})
  endif()
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME kiln_${name}
    SUFFIX ".so"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    CUDA_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LINK_DEPENDS ${KILN_PLUGIN_VERSION_SCRIPT})
  target_link_libraries(${target} PRIVATE Kiln::sdk)
  target_link_options(${target} PRIVATE "-Wl,--version-script=${KILN_PLUGIN_VERSION_SCRIPT}")
  if(NOT KILN_SANITIZE)
    target_link_options(${target} PRIVATE -Wl,--no-undefined)
  endif()
  if(NOT ARG_NO_INSTALL)
    if(DEFINED KILN_INSTALL_PLUGIN_DIR)
      set(destination ${KILN_INSTALL_PLUGIN_DIR})
    else()
      include(GNUInstallDirs)
      set(destination ${CMAKE_INSTALL_LIBDIR}/kiln/plugins)
    endif()
    install(TARGETS ${target} LIBRARY DESTINATION ${destination})
  endif()
endfunction()
