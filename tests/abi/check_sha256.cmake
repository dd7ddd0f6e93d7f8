# cmake -DFILE=<file> -DEXPECTED=<sha256> -P check_sha256.cmake
file(SHA256 "${FILE}" actual)
if(NOT actual STREQUAL EXPECTED)
  message(FATAL_ERROR "${FILE} was edited (SHA-256 ${actual}, recorded ${EXPECTED}). It is "
                      "the frozen ABI 1.0 baseline: a header change that needs it edited "
                      "breaks released plugins and requires a new major version.")
endif()
message("frozen ABI 1.0 baseline intact: ${actual}")
