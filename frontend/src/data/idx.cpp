// IDX readers over zlib's gz* interface, which reads gzip and plain files alike.
#include <zlib.h>

#include <array>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <string>
#include <system_error>

#include "kiln/data/mnist.h"
#include "kiln/error.h"

namespace kiln::data {

namespace {

constexpr uint32_t kLabelMagic = 0x00000801;  // 2049: unsigned bytes, 1 dimension
constexpr uint32_t kImageMagic = 0x00000803;  // 2051: unsigned bytes, 3 dimensions
// A corrupt size field must not make us reserve gigabytes before the file proves
// it holds them: storage grows in steps of at most this while reading.
constexpr size_t kReadChunk = size_t{1} << 20;

class GzFile {
 public:
  explicit GzFile(const std::filesystem::path& path) : path_(path) {
    errno = 0;
    file_ = gzopen(path.c_str(), "rb");
    if (!file_) {
      int error = errno;
      KILN_FAIL("cannot open IDX file '", path.string(), "': ",
                error ? std::system_category().message(error) : std::string("out of memory"));
    }
    gzbuffer(file_, 1 << 17);
  }
  ~GzFile() {
    if (file_) gzclose_r(file_);
  }
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;

  // Reads up to `n` bytes; fewer only at the end of the data. Corrupt compressed
  // data (bad deflate stream, CRC or length mismatch) throws.
  size_t read(void* data, size_t n) {
    size_t total = 0;
    auto* out = static_cast<unsigned char*>(data);
    while (total < n) {
      unsigned want = static_cast<unsigned>(std::min<size_t>(n - total, 1u << 30));
      int got = gzread(file_, out + total, want);
      if (got < 0) fail_corrupt();
      if (got == 0) break;
      total += static_cast<size_t>(got);
    }
    // A gzip stream cut short returns what it had, then flags Z_BUF_ERROR.
    int code = Z_OK;
    gzerror(file_, &code);
    if (code != Z_OK && code != Z_BUF_ERROR) fail_corrupt();
    return total;
  }

  // Reads exactly `n` bytes of `what`, or throws saying where the file ended.
  void read_exact(void* data, size_t n, const char* what) {
    size_t got = read(data, n);
    if (got != n) fail_truncated(what, n, got);
  }

  [[noreturn]] void fail_truncated(const char* what, size_t expected, size_t got) {
    int code = Z_OK;
    const char* message = gzerror(file_, &code);
    KILN_FAIL("IDX file '", path_.string(), "' is truncated: expected ", expected, " bytes of ",
              what, " but the file ends after ", got,
              code == Z_BUF_ERROR ? std::string(" (the gzip stream is cut short: ") + message + ")"
                                  : std::string());
  }

  const std::filesystem::path& path() const { return path_; }

 private:
  [[noreturn]] void fail_corrupt() {
    int code = Z_OK;
    const char* message = gzerror(file_, &code);
    KILN_FAIL("IDX file '", path_.string(), "' is corrupt: ",
              code == Z_ERRNO ? std::system_category().message(errno) : std::string(message));
  }

  std::filesystem::path path_;
  gzFile file_ = nullptr;
};

uint32_t big_endian_u32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// Reads and checks the magic number and the `dims` sizes that follow it.
std::array<uint32_t, 3> read_header(GzFile& file, uint32_t magic, size_t dims) {
  unsigned char bytes[16] = {};
  file.read_exact(bytes, 4, "header (magic number)");
  uint32_t found = big_endian_u32(bytes);
  if (found != magic) {
    const char* guess = found == kImageMagic   ? " (that is an IDX image file)"
                        : found == kLabelMagic ? " (that is an IDX label file)"
                        : (found >> 16) != 0   ? " (not an IDX file; a gzip file decompressed "
                                                 "to something else?)"
                                               : "";
    KILN_FAIL("IDX file '", file.path().string(), "' has the wrong magic number ", found, " (0x",
              std::hex, found, std::dec, "); expected ", magic, " (0x0000080", dims,
              ", unsigned bytes with ", dims, dims == 1 ? " dimension)" : " dimensions)", guess);
  }
  file.read_exact(bytes + 4, 4 * dims, "header (dimension sizes)");
  std::array<uint32_t, 3> sizes = {0, 0, 0};
  for (size_t i = 0; i < dims; ++i) sizes[i] = big_endian_u32(bytes + 4 + 4 * i);
  return sizes;
}

// Reads the `n` bytes of payload, growing the buffer as data actually arrives, and
// checks that nothing follows them.
std::vector<uint8_t> read_payload(GzFile& file, uint64_t n, const char* what) {
  std::vector<uint8_t> data;
  while (data.size() < n) {
    size_t step = static_cast<size_t>(std::min<uint64_t>(n - data.size(), kReadChunk));
    size_t before = data.size();
    data.resize(before + step);
    size_t got = file.read(data.data() + before, step);
    if (got != step) file.fail_truncated(what, n, before + got);
  }
  unsigned char extra[64];
  size_t trailing = file.read(extra, sizeof extra);
  if (trailing > 0) {
    uint64_t more = trailing;
    while ((trailing = file.read(extra, sizeof extra)) > 0) more += trailing;
    KILN_FAIL("IDX file '", file.path().string(), "' has ", more,
              " bytes of trailing data after the ", n, " bytes of ", what, " its header announces");
  }
  return data;
}

}  // namespace

IdxImages read_idx_images(const std::filesystem::path& path) {
  GzFile file(path);
  auto [count, rows, cols] = read_header(file, kImageMagic, 3);
  KILN_CHECK(rows > 0 && cols > 0, "IDX file '", path.string(), "' declares images of ", rows,
             " x ", cols, " pixels");
  IdxImages images;
  images.count = count;
  images.rows = rows;
  images.cols = cols;
  // uint32 * uint32 * uint32 can overflow 64 bits only when the counts are absurd;
  // the reading loop then fails on the first missing byte anyway.
  uint64_t pixels = uint64_t{count} * rows;
  KILN_CHECK(pixels <= UINT64_MAX / cols, "IDX file '", path.string(), "' declares ", count,
             " images of ", rows, " x ", cols, " pixels, more than can be addressed");
  images.pixels = read_payload(file, pixels * cols, "pixels");
  return images;
}

std::vector<uint8_t> read_idx_labels(const std::filesystem::path& path) {
  GzFile file(path);
  auto sizes = read_header(file, kLabelMagic, 1);
  return read_payload(file, sizes[0], "labels");
}

}  // namespace kiln::data
