// libFuzzer target: the IDX readers (kiln/data/mnist.h) on arbitrary bytes, plain or
// gzip-compressed (zlib reads both).
//
// Contract under test: every file is read or refused with a kiln::Error; nothing
// else escapes, nothing crashes, and a header that declares more than the limits
// (IdxLimits: 16 MiB here, and 28 x 28 images for every other input) is refused
// before any of it is inflated, so a gzip bomb never allocates its size (the
// fuzzer's -rss_limit_mb catches it if it does). What is read matches its header
// and keeps within the limits.
#include <kiln/data/mnist.h>
#include <kiln/error.h>

#include <cstdio>
#include <cstdlib>

#include "fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static kiln::fuzz::InputFile input("kiln-fuzz-idx");
  input.write(data, size);
  kiln::data::IdxLimits limits;
  limits.max_bytes = uint64_t{16} << 20;
  if (size % 2 == 1) limits.rows = limits.cols = 28;
  try {
    kiln::data::IdxImages images = kiln::data::read_idx_images(input.path(), limits);
    if (images.rows <= 0 || images.cols <= 0 || images.count < 0 ||
        images.pixels.size() > limits.max_bytes ||
        (limits.rows != 0 && (images.rows != limits.rows || images.cols != limits.cols)) ||
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
    if (kiln::data::read_idx_labels(input.path(), limits).size() > limits.max_bytes) {
      std::fprintf(stderr, "fuzz_idx: read_idx_labels returned more than the limit\n");
      std::abort();
    }
  } catch (const kiln::Error&) {
  }
  return 0;
}
