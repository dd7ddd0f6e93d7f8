// kiln_save_loop PATH — saves a checkpoint to PATH over and over until it is killed,
// for the kill -9 test (kill_during_save_test.cpp). Save i holds two tensors of
// 1 Mi float32 each, every element equal to i, and the metadata {"iteration": "i"},
// so a reader can tell a whole file from a torn one. Prints "ready" once Kiln is loaded.
#include <kiln/io/safetensors.h>
#include <kiln/kiln.h>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: kiln_save_loop PATH\n");
    return 2;
  }
  try {
    // Kiln is loaded and a device ready before the first save; the test times its kill
    // from this line, so a slow start (a sanitizer build on a busy machine) cannot make
    // every kill land before any save.
    (void)kiln::full({1}, 0.0);
    std::printf("ready\n");
    std::fflush(stdout);
    for (long i = 0;; ++i) {
      const double v = static_cast<double>(i);
      kiln::io::save_safetensors(
          argv[1],
          kiln::io::NamedTensors{{"a", kiln::full({1 << 20}, v)}, {"b", kiln::full({1 << 20}, v)}},
          {{"iteration", std::to_string(i)}});
    }
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "kiln_save_loop: %s\n", e.what());
    return 1;
  }
}
