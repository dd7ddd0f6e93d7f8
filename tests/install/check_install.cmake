# cmake -DBUILD_DIR=<build> -DSOURCE_DIR=<source> -DWORK=<scratch folder> [-DWITH_BENCH=ON] -P check_install.cmake
file(REMOVE_RECURSE "${WORK}")
set(first "${WORK}/first")
set(moved "${WORK}/moved-elsewhere")
execute_process(COMMAND ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${first}"
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc}): ${err}")
endif()
file(RENAME "${first}" "${moved}")

set(bench_program)
if(WITH_BENCH)
  set(bench_program bin/kiln-bench)
endif()
foreach(required bin/kiln-info ${bench_program} bin/kiln-train bin/kiln-conformance lib/libkiln.so
                 lib/kiln/plugins/libkiln_cpu.so include/kiln/kiln.h include/kiln/c_api.h
                 include/kiln/sdk/plugin.h include/kiln/sdk/kernel_table.h
                 lib/cmake/Kiln/KilnConfig.cmake lib/cmake/Kiln/KilnTargets.cmake
                 lib/cmake/Kiln/KilnPlugin.cmake lib/pkgconfig/kiln.pc
                 include/kiln/sdk/table_entries.h include/kiln/sdk/elf_symbols.h
                 share/doc/kiln/OPS.md share/doc/kiln/ABI.md share/doc/kiln/plugin-guide.md)
  if(NOT EXISTS "${moved}/${required}")
    message(FATAL_ERROR "the install lacks ${required}")
  endif()
endforeach()

# No installed text file may name the build or source tree, or the first prefix.
file(GLOB_RECURSE texts "${moved}/lib/cmake/*" "${moved}/lib/pkgconfig/*")
foreach(f IN LISTS texts)
  file(READ "${f}" content)
  foreach(path "${BUILD_DIR}" "${SOURCE_DIR}" "${first}")
    string(FIND "${content}" "${path}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "${f} names ${path}: the package would not be relocatable")
    endif()
  endforeach()
endforeach()

# kiln-info from the moved prefix finds libkiln and the CPU plugin beside it, with no
# environment variable.
execute_process(COMMAND env -u KILN_PLUGIN_PATH -u KILN_BACKEND "${moved}/bin/kiln-info"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kiln-info from the moved prefix failed (${rc})")
endif()
if(NOT out MATCHES "cpu [^\n]*${moved}/lib/kiln/plugins/libkiln_cpu.so")
  message(FATAL_ERROR "kiln-info did not load the CPU plugin from the moved prefix")
endif()

# The installed kiln-bench runs `compare` from the moved prefix too.
if(WITH_BENCH)
  execute_process(COMMAND env -u KILN_PLUGIN_PATH -u KILN_BACKEND -u KILN_PLUGINS
                          "${moved}/bin/kiln-bench" compare --size tiny --devices cpu:0
                          --workloads gemm --repetitions 1 --warmup 1 --min-time 0
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "\ngemm +cpu:0 ")
    message(FATAL_ERROR "kiln-bench compare from the moved prefix failed (${rc}):\n${out}${err}")
  endif()
endif()

# pkg-config answers with the moved prefix.
find_program(PKG_CONFIG pkg-config)
if(PKG_CONFIG)
  set(ENV{PKG_CONFIG_PATH} "${moved}/lib/pkgconfig")
  execute_process(COMMAND ${PKG_CONFIG} --variable=plugindir kiln OUTPUT_VARIABLE plugindir
                  OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
  get_filename_component(plugindir "${plugindir}" REALPATH)
  if(NOT rc EQUAL 0 OR NOT plugindir STREQUAL "${moved}/lib/kiln/plugins")
    message(FATAL_ERROR "pkg-config plugindir is '${plugindir}', expected ${moved}/lib/kiln/plugins")
  endif()
  execute_process(COMMAND ${PKG_CONFIG} --libs kiln OUTPUT_VARIABLE libs RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT libs MATCHES "-lkiln")
    message(FATAL_ERROR "pkg-config --libs kiln gave '${libs}'")
  endif()
endif()
file(REMOVE_RECURSE "${WORK}")
message("installed, moved, and still working: ${moved}")
