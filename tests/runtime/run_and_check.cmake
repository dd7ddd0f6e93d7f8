# Runs a program and checks how it ended, for CTest tests of command-line tools.
#
#   cmake -DPROGRAM=<program> -DEXPECT=success|failure [-DMATCH0=<regex> ... -DMATCH4=<regex>]
#         [-DNOMATCH=<regex>] ["-DARGS=<arguments>"] -P run_and_check.cmake
#
# EXPECT=failure wants a non-zero exit status from a program that ended normally: a
# crash (a signal) fails the test either way. Every MATCHn must match stdout+stderr.
if(NOT PROGRAM OR NOT EXPECT)
  message(FATAL_ERROR "run_and_check: PROGRAM and EXPECT are required")
endif()
separate_arguments(args UNIX_COMMAND "${ARGS}")
execute_process(COMMAND ${PROGRAM} ${args} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(output "${out}${err}")
message("${output}")
message("exit status: ${status}")
if(NOT status MATCHES "^[0-9]+$")
  message(FATAL_ERROR "${PROGRAM} did not exit normally: ${status}")
endif()
if(EXPECT STREQUAL "failure" AND status EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} exited with status 0, expected a failure")
elseif(EXPECT STREQUAL "success" AND NOT status EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} exited with status ${status}, expected 0")
endif()
foreach(i RANGE 0 4)
  if(DEFINED MATCH${i} AND NOT output MATCHES "${MATCH${i}}")
    message(FATAL_ERROR "the output of ${PROGRAM} does not match '${MATCH${i}}'")
  endif()
endforeach()
if(DEFINED NOMATCH AND output MATCHES "${NOMATCH}")
  message(FATAL_ERROR "the output of ${PROGRAM} matches '${NOMATCH}'")
endif()
