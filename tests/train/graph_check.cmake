# kiln-train --graph against eager training: the same run with the step captured and
# replayed (kiln/graph.h) must give the same losses and accuracies, bit for bit, for
# the CNN with Adam and dropout, and for the MLP with SGD, a step schedule and a short
# last batch (which runs eagerly between replays).
#   -DPROGRAM=kiln-train -DWORK=dir [-DTEST_BATCHES=2]
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
function(run name)
  set(eval)
  if(TEST_BATCHES)
    set(eval --limit-test-batches ${TEST_BATCHES})
  endif()
  execute_process(COMMAND ${PROGRAM} --seed 3 ${eval} ${ARGN} --metrics-json ${WORK}/${name}.json
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "kiln-train ${ARGN} failed (exit ${rc})")
  endif()
  file(READ ${WORK}/${name}.json metrics)
  string(JSON history GET "${metrics}" history)
  string(JSON graph GET "${metrics}" graph)
  set(${name}_history "${history}" PARENT_SCOPE)
  set(${name}_graph "${graph}" PARENT_SCOPE)
  set(${name}_out "${out}" PARENT_SCOPE)
endfunction()
set(cnn --model cnn --epochs 1 --limit-batches 30)
set(mlp --model mlp --optimizer sgd --schedule step --batch-size 7000 --epochs 2)
foreach(model cnn mlp)
  run(${model}_eager ${${model}})
  run(${model}_graph ${${model}} --graph)
  if(NOT ${model}_graph_out MATCHES "graph replay" OR NOT ${model}_graph_graph STREQUAL "ON")
    message(FATAL_ERROR "${model}: the banner or --metrics-json does not say graph replay "
                        "(metrics: graph=${${model}_graph_graph})")
  endif()
  # Only the losses and accuracies: the seconds differ.
  foreach(key train_loss test_accuracy)
    string(JSON e GET "${${model}_eager_history}" ${key})
    string(JSON g GET "${${model}_graph_history}" ${key})
    if(NOT e STREQUAL g)
      message(FATAL_ERROR "${model}: ${key} eager ${e}, with --graph ${g}")
    endif()
    message("${model}: ${key} ${e} eager and with --graph")
  endforeach()
endforeach()
