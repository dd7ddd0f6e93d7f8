// libFuzzer target: the IDX readers (kiln/data/mnist.h) on arbitrary bytes, plain or
// gzip-compressed (zlib reads both).
//
// Contract under test: every file is read or refused with a kiln::Error; nothing
// else escapes, nothing crashes, and storage grows only as the data actually arrives
// (a header announcing 2^32 images of 2^16 x 2^16 pixels must not allocate them; the
// fuzzer's -rss_limit_mb catches it if it does). What is read matches its header.
#include <kiln/data/mnist.h>
#include <kiln/error.h>

#include <cstdio>
#include <cstdlib>

#include "fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static kiln::fuzz::InputFile input("kiln-fuzz-idx");
  input.write(data, size);
  try {
    kiln::data::IdxImages images = kiln::data::read_idx_images(input.path());
    if (images.rows <= 0 || images.cols <= 0 || images.count < 0 ||
        images.pixels.size() != static_cast<uint64_t>(images.count) *
                                    static_cast<uint64_t>(images.rows) *
                                    static_cast<uint64_t>(images.cols)) {
      std::fprintf(stderr,
                   "fuzz_idx: read_idx_images returned %lld x %lld x %lld with %zu pixels\n",
                   static_cast<long long>(images.count), static_cast<long long>(images.rows),
                   static_cast<long long>(images.cols), images.pixels.size());
      std::abort();
    }
  } catch (const kiln::Error&) {
  }
  try {
    kiln::data::read_idx_labels(input.path());
  } catch (const kiln::Error&) {
  }
  return 0;
}
