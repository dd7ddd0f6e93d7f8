# cmake -DBUILD_DIR=<build> -DSOURCE_DIR=<source> -DWORK=<scratch folder> [-DWITH_BENCH=ON]
#       [-DWITH_BENCH_MPI=1] -P check_install.cmake
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
if(WITH_BENCH_MPI)
  list(APPEND bench_program bin/kiln-bench-mpi)
endif()
foreach(required bin/kiln-info ${bench_program} bin/kiln-train bin/kiln-conformance lib/libkiln.so
                 lib/kiln/plugins/libkiln_cpu.so include/kiln/kiln.h include/kiln/c_api.h
                 include/kiln/sdk/plugin.h include/kiln/sdk/kernel_table.h
                 lib/cmake/Kiln/KilnConfig.cmake lib/cmake/Kiln/KilnTargets.cmake
                 lib/cmake/Kiln/KilnPlugin.cmake lib/pkgconfig/kiln.pc
                 include/kiln/sdk/table_entries.h include/kiln/sdk/elf_symbols.h
                 share/doc/kiln/OPS.md share/doc/kiln/ABI.md share/doc/kiln/plugin-guide.md
                 share/doc/kiln/LICENSE share/doc/kiln/ops.json
                 share/doc/kiln/examples/plugin-template/CMakeLists.txt
                 share/doc/kiln/examples/plugin-template/README.md
                 share/doc/kiln/examples/plugin-template/src/backend.cpp
                 share/doc/kiln/examples/plugin-template/src/kernels.cpp
                 share/doc/kiln/examples/plugin-template/src/kernels.h
                 share/doc/kiln/examples/tutorial/CMakeLists.txt
                 share/doc/kiln/examples/tutorial/custom_op.cpp
                 share/doc/kiln/examples/tutorial/myops_plugin/myops.cpp)
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

# Every path the installed headers, documents and examples cite resolves in the install:
# a `share/doc/kiln/...` path must exist there, and a path into the Kiln sources
# (api/README.md, plugins/cpu/..., tests/..., docs/...) must say so on its line or the
# line before or after ("... in the Kiln sources"), since an install has no such file.
# Preceded by a path character, such a word is part of an installed path
# (kiln/sdk/plugin.h, lib/cmake/Kiln, share/doc/kiln/examples/...) and is not one.
cmake_policy(SET CMP0007 NEW)  # empty list elements (blank lines) count
file(GLOB_RECURSE cited_from "${moved}/include/kiln/*.h" "${moved}/share/doc/kiln/*.md"
     "${moved}/share/doc/kiln/examples/*")
set(source_path "(api|base|bench|cmake|docs|examples|frontend|plugins|scripts|sdk|tests)/")
set(path_chars "A-Za-z0-9_./{},*-")
set(unresolved)
foreach(f IN LISTS cited_from)
  file(READ "${f}" content)
  file(RELATIVE_PATH shown "${moved}" "${f}")
  # One list element per line (CMake lists split at ';' and balance brackets).
  string(REGEX REPLACE "[][;\\]" " " content "${content}")
  string(REPLACE "\n" ";" lines "${content}")
  list(LENGTH lines count)
  set(index 0)
  foreach(line IN LISTS lines)
    math(EXPR number "${index} + 1")
    string(REGEX MATCHALL "share/doc/kiln/[${path_chars}]*[A-Za-z0-9_*-]" installed "${line}")
    foreach(path IN LISTS installed)
      # Braces name several files (device.{h,cpp}); a trailing * a family of them.
      string(REGEX REPLACE "[{][^}]*[}].*|[*].*" "" path "${path}")
      if(NOT EXISTS "${moved}/${path}")
        list(APPEND unresolved "${shown}:${number}: ${path} is not in the install")
      endif()
    endforeach()
    string(REGEX MATCHALL "(^|[^${path_chars}])${source_path}[${path_chars}]*" cited "${line}")
    if(cited)
      set(near "${line}")
      foreach(other -1 1)
        math(EXPR at "${index} + ${other}")
        if(at GREATER_EQUAL 0 AND at LESS count)
          list(GET lines ${at} neighbour)
          string(APPEND near " ${neighbour}")
        endif()
      endforeach()
      if(NOT near MATCHES "[Ss]ources?($|[^A-Za-z])")
        foreach(path IN LISTS cited)
          string(REGEX REPLACE "^[^${path_chars}]|[.,]+$" "" path "${path}")
          list(APPEND unresolved
               "${shown}:${number}: ${path} is a path in the Kiln sources but does not say so")
        endforeach()
      endif()
    endif()
    math(EXPR index "${index} + 1")
  endforeach()
endforeach()
if(unresolved)
  list(JOIN unresolved "\n  " unresolved)
  message(FATAL_ERROR "installed text cites files that the install lacks:\n  ${unresolved}")
endif()

# The plugin guide lists every SDK header the install holds.
file(READ "${moved}/share/doc/kiln/plugin-guide.md" guide)
file(GLOB sdk_headers RELATIVE "${moved}/include" "${moved}/include/kiln/sdk/*.h"
     "${moved}/include/kiln/base/*.h")
foreach(header IN LISTS sdk_headers)
  string(FIND "${guide}" "`${header}`" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "share/doc/kiln/plugin-guide.md does not list the installed ${header}")
  endif()
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

# The installed programs find every library they link from the moved prefix (their
# RPATH is $ORIGIN-relative): kiln-bench-mpi needs libkiln_mpi and libkiln beside it.
find_program(LDD ldd)
if(LDD)
  foreach(program ${bench_program} bin/kiln-train)
    execute_process(COMMAND ${LDD} "${moved}/${program}" OUTPUT_VARIABLE out ERROR_VARIABLE err
                    RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0 OR out MATCHES "not found")
      message(FATAL_ERROR "${program} in the moved prefix lacks a library (${rc}):\n${out}${err}")
    endif()
  endforeach()
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
