# Runs kiln-bench and checks its exact exit status and its output.
#
#   cmake -DPROGRAM=<kiln-bench> "-DARGS=<arguments>" -DSTATUS=<0|1|2>
#         [-DMATCH0=<regex> ... -DMATCH4=<regex>] [-DNOMATCH=<regex>]
#         [-DMAKE_FILE=<path>] -P run_bench.cmake
#
# MAKE_FILE: a plain file made first (for an --out that cannot become a folder). A crash
# (a signal instead of an exit status) always fails. Every MATCHn must match
# stdout+stderr, NOMATCH must not.
if(NOT PROGRAM OR NOT DEFINED STATUS)
  message(FATAL_ERROR "run_bench: PROGRAM and STATUS are required")
endif()
if(MAKE_FILE)
  file(REMOVE_RECURSE "${MAKE_FILE}")
  file(WRITE "${MAKE_FILE}" "a plain file, not a folder\n")
endif()
separate_arguments(args UNIX_COMMAND "${ARGS}")
execute_process(COMMAND ${PROGRAM} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(output "${out}${err}")
message("${output}")
message("exit status: ${rc}")
if(NOT rc MATCHES "^[0-9]+$")
  message(FATAL_ERROR "kiln-bench did not exit normally: ${rc}")
endif()
if(NOT rc EQUAL STATUS)
  message(FATAL_ERROR "kiln-bench exited with ${rc}, expected ${STATUS}")
endif()
foreach(i RANGE 0 4)
  if(DEFINED MATCH${i} AND NOT output MATCHES "${MATCH${i}}")
    message(FATAL_ERROR "the output does not match '${MATCH${i}}'")
  endif()
endforeach()
if(DEFINED NOMATCH AND output MATCHES "${NOMATCH}")
  message(FATAL_ERROR "the output matches '${NOMATCH}'")
endif()
