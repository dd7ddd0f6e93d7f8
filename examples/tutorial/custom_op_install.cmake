# Tutorial 8, your own kernel, built against an installed Kiln only: the vendor plugin
# myops_plugin/ (one op of its own, "myops.softplus", on a host-memory device myops:0)
# and custom_op.cpp, which loads it and makes the op differentiable with an
# autograd::Function.
#
#   cmake -S . -B build -DCMAKE_PREFIX_PATH=/where/kiln/is/installed
#   cmake --build build
#   (cd build && ctest)        # or: cd build && ./custom_op (it loads ./myops_plugin)
#
# Copy this folder out of the install first (the install's share/ is not writable
# for everyone).
cmake_minimum_required(VERSION 3.25)
project(kiln_custom_op LANGUAGES CXX)

set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
if(NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type" FORCE)
endif()

find_package(Kiln CONFIG REQUIRED)

# libkiln_myops.so in build/myops_plugin, the folder custom_op loads by default.
kiln_add_plugin(myops SOURCES myops_plugin/myops.cpp
                OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/myops_plugin NO_INSTALL)

add_executable(custom_op custom_op.cpp)
target_link_libraries(custom_op PRIVATE Kiln::kiln)
add_dependencies(custom_op kiln_myops)

# Exit status 0: the op's values and gradients are right (gradcheck included).
enable_testing()
add_test(NAME custom_op COMMAND custom_op ${CMAKE_CURRENT_BINARY_DIR}/myops_plugin)
