# cmake -DSOURCE_DIR=<repo> -DCLANG_FORMAT=<clang-format-14> -P CheckFormat.cmake
#
# The house style: every C, C++ and CUDA source is as .clang-format formats it.
# Exempt: tests/abi/v1.0 (a byte copy of the released ABI 1.0 header) and
# examples/snippets (the README's and headers' examples, checked verbatim against
# them). Fails listing the files that differ; `clang-format-14 -i <file>` fixes one.
cmake_minimum_required(VERSION 3.25)
if(NOT CLANG_FORMAT)
  message(FATAL_ERROR "clang-format-14 was not found when CMake ran: install it "
                      "(scripts/install-deps.sh) and re-run CMake")
endif()
set(files "")
foreach(dir api frontend plugins sdk tests bench examples)
  file(GLOB_RECURSE found "${SOURCE_DIR}/${dir}/*.h" "${SOURCE_DIR}/${dir}/*.c"
       "${SOURCE_DIR}/${dir}/*.cpp" "${SOURCE_DIR}/${dir}/*.cu" "${SOURCE_DIR}/${dir}/*.cuh")
  list(APPEND files ${found})
endforeach()
list(FILTER files EXCLUDE REGEX "/tests/abi/v1\\.0/|/examples/snippets/")
list(LENGTH files count)
if(count LESS 100)
  message(FATAL_ERROR "only ${count} sources found under ${SOURCE_DIR}: is it the repository?")
endif()
execute_process(COMMAND "${CLANG_FORMAT}" --style=file --dry-run --Werror ${files}
                RESULT_VARIABLE rc ERROR_VARIABLE diagnostics OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  string(REGEX MATCHALL "[^\n]*: error: code should be clang-formatted" lines "${diagnostics}")
  set(differing "")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE ":[0-9]+:[0-9]+: error: .*" "" path "${line}")
    list(APPEND differing "${path}")
  endforeach()
  if(NOT differing)  # clang-format failed for another reason: say what it said
    message(FATAL_ERROR "${CLANG_FORMAT} failed (exit status ${rc}):\n${diagnostics}")
  endif()
  list(REMOVE_DUPLICATES differing)
  list(LENGTH differing n)
  list(JOIN differing "\n  " listing)
  message(FATAL_ERROR "${n} files are not formatted as .clang-format says (run "
                      "clang-format-14 -i on them):\n  ${listing}")
endif()
message(STATUS "all ${count} C, C++ and CUDA sources follow .clang-format")
