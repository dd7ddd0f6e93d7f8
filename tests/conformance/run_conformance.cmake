# Runs kiln-conformance and checks its exit status and output.
#
#   cmake -DPROGRAM=<kiln-conformance> "-DARGS=<arguments>" -DSTATUS=<0|1|2>
#         [-DMATCH0=<regex> ... -DMATCH5=<regex>] [-DNOMATCH=<regex>] -P run_conformance.cmake
#
# A crash of kiln-conformance itself (a signal instead of an exit status) always fails:
# the runner must report a broken plugin, never die of it.
separate_arguments(args UNIX_COMMAND "${ARGS}")
execute_process(COMMAND ${PROGRAM} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
message("exit status: ${rc}")
if(NOT rc MATCHES "^[0-9]+$")
  message(FATAL_ERROR "kiln-conformance did not exit normally: ${rc}")
endif()
if(NOT rc EQUAL STATUS)
  message(FATAL_ERROR "kiln-conformance exited with ${rc}, expected ${STATUS}")
endif()
foreach(i RANGE 0 5)
  if(DEFINED MATCH${i} AND NOT "${out}${err}" MATCHES "${MATCH${i}}")
    message(FATAL_ERROR "the output does not match '${MATCH${i}}'")
  endif()
endforeach()
if(DEFINED NOMATCH AND "${out}${err}" MATCHES "${NOMATCH}")
  message(FATAL_ERROR "the output matches '${NOMATCH}'")
endif()
