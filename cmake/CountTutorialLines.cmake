# cmake -DTUTORIALS=<examples/tutorial> -DMAX_PERCENT=130 -P CountTutorialLines.cmake
#
# Lines of each tutorial program against the PyTorch program it re-creates
# (pytorch/<name>.py): lines that are neither blank nor only a comment, counted the
# same way in both languages (C++'s #includes and closing braces count; so do
# Python's imports). Only the programs are counted: tutorial 8's kernel library
# (myops_plugin/) is not, as its PyTorch counterpart (a C++ extension) is not either.
# Fails when the C++ total exceeds MAX_PERCENT % of the Python.
cmake_minimum_required(VERSION 3.25)

function(count_lines path comment_regex out)
  file(STRINGS "${path}" lines)
  set(n 0)
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "^[ \t]*$" AND NOT line MATCHES "${comment_regex}")
      math(EXPR n "${n} + 1")
    endif()
  endforeach()
  set(${out} ${n} PARENT_SCOPE)
endfunction()

file(GLOB programs "${TUTORIALS}/*.cpp")
set(total_cpp 0)
set(total_py 0)
foreach(program IN LISTS programs)
  get_filename_component(name "${program}" NAME_WE)
  set(python "${TUTORIALS}/pytorch/${name}.py")
  if(NOT EXISTS "${python}")
    message(FATAL_ERROR "${program} has no PyTorch counterpart ${python}")
  endif()
  count_lines("${program}" "^[ \t]*//" cpp)
  count_lines("${python}" "^[ \t]*#" py)
  math(EXPR total_cpp "${total_cpp} + ${cpp}")
  math(EXPR total_py "${total_py} + ${py}")
  message(STATUS "${name}: ${cpp} lines of C++, ${py} of Python")
endforeach()
if(total_py EQUAL 0)
  message(FATAL_ERROR "no tutorial programs under ${TUTORIALS}")
endif()
# CMake's math is integer: per mille for the message, the check exact.
math(EXPR permille "1000 * ${total_cpp} / ${total_py}")
math(EXPR whole "${permille} / 10")
math(EXPR tenth "${permille} % 10")
set(percent "${whole}.${tenth}")
math(EXPR scaled_cpp "100 * ${total_cpp}")
math(EXPR scaled_limit "${MAX_PERCENT} * ${total_py}")
message(STATUS "total: ${total_cpp} lines of C++ for ${total_py} of Python: ${percent}% "
               "(limit ${MAX_PERCENT}%)")
if(scaled_cpp GREATER scaled_limit)
  message(FATAL_ERROR "the tutorials take ${percent}% of the PyTorch lines, over ${MAX_PERCENT}%")
endif()
