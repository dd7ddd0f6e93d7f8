# cmake -DHEADER_DIRS=<dir|dir...> -DSNIPPETS=<folder> -P CheckHeaderSnippets.cmake
#
# Every example in a public header's comments is a block between `@code` and
# `@endcode` lines, and must appear in a file under SNIPPETS
# (examples/snippets/headers), where it is compiled. Compared line by line with the
# comment markers and each line's leading and trailing blanks removed (the examples
# sit inside functions there), blank lines ignored. Fails naming the header and the
# block's first line; also fails on an indented comment line that starts like code
# (`auto `, `#include `, `kiln::...(`) outside any @code block, so that a new example
# cannot skip the check by leaving the markers out.
cmake_minimum_required(VERSION 3.25)

# Strips every line of `text` to its content (no indentation, no trailing blanks,
# no empty lines) so that an indented block can be found inside a function body.
function(normalize text out)
  string(REGEX REPLACE "\r" "" text "${text}")
  string(REGEX REPLACE "[ \t]+\n" "\n" text "${text}")
  string(REGEX REPLACE "\n[ \t]+" "\n" text "\n${text}\n")
  string(REGEX REPLACE "\n\n+" "\n" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

file(GLOB_RECURSE sources "${SNIPPETS}/*.cpp" "${SNIPPETS}/*.c")
set(corpus "")
foreach(source IN LISTS sources)
  file(READ "${source}" text)
  normalize("${text}" text)
  string(APPEND corpus "${text}")
endforeach()

set(headers "")
string(REPLACE "|" ";" HEADER_DIRS "${HEADER_DIRS}")
foreach(dir IN LISTS HEADER_DIRS)
  file(GLOB_RECURSE found "${dir}/*.h")
  list(APPEND headers ${found})
endforeach()
if(NOT headers)
  message(FATAL_ERROR "no headers under ${HEADER_DIRS}")
endif()

set(count 0)
set(missing 0)
foreach(header IN LISTS headers)
  file(READ "${header}" rest)
  set(outside "")
  while(TRUE)
    string(FIND "${rest}" "@code\n" open)
    if(open EQUAL -1)
      string(APPEND outside "${rest}")
      break()
    endif()
    string(SUBSTRING "${rest}" 0 ${open} before)
    string(APPEND outside "${before}")
    math(EXPR body_start "${open} + 6")
    string(SUBSTRING "${rest}" ${body_start} -1 rest)
    string(FIND "${rest}" "@endcode" close)
    if(close EQUAL -1)
      message(FATAL_ERROR "${header}: an @code block is never closed")
    endif()
    string(SUBSTRING "${rest}" 0 ${close} block)
    math(EXPR after "${close} + 8")
    string(SUBSTRING "${rest}" ${after} -1 rest)
    # Drop the comment marker ("///", "//", " *") that starts each line, once (no "^":
    # CMake anchors it at every replacement, which would strip a "//" comment too).
    string(REGEX REPLACE "\n[ \t]*(///|//|\\*)" "\n" block "\n${block}")
    normalize("${block}" block)
    math(EXPR count "${count} + 1")
    string(FIND "${corpus}" "${block}" found)
    if(found EQUAL -1)
      string(REGEX MATCH "\n[^\n]+" first_line "${block}")
      string(STRIP "${first_line}" first_line)
      message(SEND_ERROR "${header}: the example starting \"${first_line}\" is not in any "
                         "file under ${SNIPPETS}: change both together")
      math(EXPR missing "${missing} + 1")
    endif()
  endwhile()
  string(REGEX MATCH "\n[ \t]*(///|//|\\*)   +(auto |#include |kiln::[a-z_:]+\\()[^\n]*"
         unmarked "${outside}")
  if(unmarked)
    string(STRIP "${unmarked}" unmarked)
    message(SEND_ERROR "${header}: \"${unmarked}\" looks like an example outside "
                       "@code/@endcode; mark it so that it is compiled")
    math(EXPR missing "${missing} + 1")
  endif()
endforeach()
if(count EQUAL 0)
  message(FATAL_ERROR "no @code blocks found in ${HEADER_DIRS}")
endif()
if(missing GREATER 0)
  message(FATAL_ERROR "${missing} header examples are not compiled (of ${count})")
endif()
message(STATUS "all ${count} header examples are compiled from ${SNIPPETS}")
