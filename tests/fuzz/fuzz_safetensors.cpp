// libFuzzer target: kiln::io::load_safetensors on arbitrary bytes.
//
// Contract under test (kiln/io/safetensors.h): any file is either loaded or refused
// with a kiln::Error; nothing else escapes, nothing crashes, no byte outside the file
// is read. A file that loads must also save and load again to the same names,
// dtypes, shapes and metadata (what the loader accepts, the saver can write).
#include <kiln/io/safetensors.h>
#include <kiln/kiln.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz_file.h"

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_safetensors: %s: %s\n", what, detail.c_str());
  std::abort();
}

// Where the round trip saves: tmpfs when there is one, so that save_safetensors'
// fsyncs cost nothing.
std::string scratch_path() {
  const char* folder = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  return std::string(folder) + "/kiln-fuzz-safetensors-" + std::to_string(::getpid()) +
         ".safetensors";
}

void check_round_trip(const kiln::io::SafetensorsFile& file) {
  static const std::string path = scratch_path();
  try {
    kiln::io::save_safetensors(path, file.tensors, file.metadata);
  } catch (const kiln::Error& e) {
    fail("a loaded file could not be saved again", e.what());
  }
  kiln::io::SafetensorsFile again;
  try {
    again = kiln::io::load_safetensors(path);
  } catch (const kiln::Error& e) {
    fail("a saved file could not be loaded again", e.what());
  }
  std::remove(path.c_str());
  if (again.metadata != file.metadata) fail("round trip", "the metadata changed");
  if (again.tensors.size() != file.tensors.size()) fail("round trip", "the tensor count changed");
  for (size_t i = 0; i < file.tensors.size(); ++i) {
    const auto& [name, tensor] = file.tensors[i];
    if (!again.contains(name)) fail("round trip lost a tensor", name);
    const kiln::Tensor& other = again.at(name);
    if (other.dtype() != tensor.dtype() || other.shape() != tensor.shape())
      fail("round trip changed the dtype or shape of", name);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static kiln::fuzz::InputFile input("kiln-fuzz-safetensors");
  input.write(data, size);
  kiln::io::SafetensorsFile file;
  try {
    file = kiln::io::load_safetensors(input.path());
  } catch (const kiln::Error&) {
    return 0;  // refused: what a malformed file must get
  }
  check_round_trip(file);
  return 0;
}
