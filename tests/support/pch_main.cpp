// The owner of the test executables' precompiled header (tests/CMakeLists.txt,
// kiln_test_pch): GoogleTest's main runs no test here.
