# kiln_add_plugin(NAME SOURCES src... [OUTPUT_DIRECTORY dir])
#
# Builds the backend plugin `libkiln_<NAME>.so` as a loadable module: C++ symbols
# hidden, only the ABI entry point `kiln_plugin_init` exported, no undefined
# symbols left for the loader to trip over at dlopen time. The target is called
# `kiln_<NAME>`. Plugins go to the plugin folder beside libkiln unless
# OUTPUT_DIRECTORY says otherwise (test fixtures use their own folder).
function(kiln_add_plugin name)
  cmake_parse_arguments(ARG "" "OUTPUT_DIRECTORY" "SOURCES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "kiln_add_plugin(${name}): SOURCES is required")
  endif()
  set(target kiln_${name})
  add_library(${target} MODULE ${ARG_SOURCES})
  if(NOT ARG_OUTPUT_DIRECTORY)
    set(ARG_OUTPUT_DIRECTORY ${KILN_PLUGIN_OUTPUT_DIRECTORY})
  endif()
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME kiln_${name}
    LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY}
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(${target} PRIVATE Kiln::sdk)
  if(NOT KILN_SANITIZE)
    target_link_options(${target} PRIVATE -Wl,--no-undefined)
  endif()
endfunction()
