# Runs COMMAND (an mpirun line) and checks that SURVIVORS ranks printed
# "SURVIVOR rank ..." (they got the error they should, in time) and that no gtest
# assertion failed on them. mpirun's own exit status is not checked: after a rank
# was killed or abandoned, Open MPI reports the job as failed, as it should.
execute_process(COMMAND ${COMMAND} OUTPUT_VARIABLE out ERROR_VARIABLE err
                RESULT_VARIABLE rc TIMEOUT 100)
message("${out}${err}")
if(rc STREQUAL "Process terminated due to timeout")
  message(FATAL_ERROR "mpirun hung: the survivors never returned")
endif()
string(REGEX MATCHALL "SURVIVOR rank [0-9]+" survivors "${out}")
list(LENGTH survivors count)
if(NOT count EQUAL SURVIVORS)
  message(FATAL_ERROR "expected ${SURVIVORS} survivors to report the failure, saw ${count}")
endif()
if(out MATCHES ": Failure\n|\\[  FAILED  \\]")
  message(FATAL_ERROR "an assertion failed on a surviving rank")
endif()
