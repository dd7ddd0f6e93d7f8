// IDX readers over zlib's inflate, which is driven here rather than through gz*:
// the file is opened as a regular file only (never waiting on a FIFO), and the
// reader sees where the gzip data ends, so bytes after it are refused.
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <string>
#include <system_error>

#include "kiln/base/regular_file.h"
#include "kiln/data/mnist.h"
#include "kiln/error.h"

namespace kiln::data {

namespace {

constexpr uint32_t kLabelMagic = 0x00000801;  // 2049: unsigned bytes, 1 dimension
constexpr uint32_t kImageMagic = 0x00000803;  // 2051: unsigned bytes, 3 dimensions
// A corrupt size field must not make us reserve gigabytes before the file proves
// it holds them: storage grows in steps of at most this while reading.
constexpr size_t kReadChunk = size_t{1} << 20;
// Trailing data is counted up to this, then reported as "more than".
constexpr uint64_t kTrailingCountLimit = uint64_t{1} << 20;

// A plain or gzip-compressed file (told apart by gzip's two magic bytes), read as
// one stream of bytes. Several gzip members in a row are one stream, as gzip -d
// reads them; anything else after a member is corrupt.
class IdxStream {
 public:
  explicit IdxStream(const std::filesystem::path& path) : path_(path), input_(1 << 17) {
    std::string why;
    fd_ = base::open_regular_file(path.string(), why);
    if (fd_ < 0) KILN_FAIL("cannot open IDX file '", path.string(), "': the path ", why);
    try {
      fill();
      gzip_ = have_ >= 2 && input_[0] == 0x1f && input_[1] == 0x8b;
      if (gzip_ && inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) {
        gzip_ = false;  // nothing for the destructor to end
        KILN_FAIL("cannot read IDX file '", path.string(), "': zlib could not start");
      }
    } catch (...) {
      ::close(fd_);  // the destructor does not run when the constructor throws
      throw;
    }
  }
  ~IdxStream() {
    if (gzip_) inflateEnd(&z_);
    ::close(fd_);
  }
  IdxStream(const IdxStream&) = delete;
  IdxStream& operator=(const IdxStream&) = delete;

  // Reads up to `n` bytes; fewer only at the end of the data. Corrupt compressed
  // data (bad deflate stream, CRC or length mismatch, garbage after it) throws.
  size_t read(void* data, size_t n) {
    auto* out = static_cast<unsigned char*>(data);
    size_t total = 0;
    while (total < n && !ended_) {
      if (next_ == have_ && !fill()) {
        // The file ended: complete for a plain file, or between gzip members;
        // inside a member it was cut short.
        cut_short_ = gzip_ && in_member_;
        ended_ = true;
        break;
      }
      if (!gzip_) {
        const size_t step = std::min(n - total, have_ - next_);
        std::copy_n(input_.data() + next_, step, out + total);
        next_ += step;
        total += step;
        continue;
      }
      if (!in_member_) start_member();
      z_.next_in = input_.data() + next_;
      z_.avail_in = static_cast<uInt>(have_ - next_);
      z_.next_out = out + total;
      z_.avail_out = static_cast<uInt>(std::min<size_t>(n - total, 1u << 30));
      const int code = inflate(&z_, Z_NO_FLUSH);
      total = static_cast<size_t>(z_.next_out - out);
      next_ = static_cast<size_t>(z_.next_in - input_.data());
      if (code == Z_STREAM_END) {
        in_member_ = false;
      } else if (code == Z_DATA_ERROR || code == Z_NEED_DICT) {
        fail_corrupt(z_.msg ? z_.msg : "invalid compressed data");
      } else if (code == Z_MEM_ERROR) {
        KILN_FAIL("cannot read IDX file '", path_.string(), "': out of memory while inflating");
      } else if (code != Z_OK && code != Z_BUF_ERROR) {  // Z_BUF_ERROR: needs more input
        fail_corrupt(z_.msg ? z_.msg : "zlib failed");
      }
    }
    return total;
  }

  // Reads exactly `n` bytes of `what`, or throws saying where the file ended.
  void read_exact(void* data, size_t n, const char* what) {
    size_t got = read(data, n);
    if (got != n) fail_truncated(what, n, got);
  }

  [[noreturn]] void fail_truncated(const char* what, size_t expected, size_t got) const {
    KILN_FAIL("IDX file '", path_.string(), "' is truncated: expected ", expected, " bytes of ",
              what, " but the file ends after ", got,
              cut_short_ ? " (the gzip stream is cut short)" : "");
  }

  const std::filesystem::path& path() const { return path_; }
  /// The file ended inside a gzip member (its trailer, with the CRC, never came).
  bool cut_short() const { return cut_short_; }

 private:
  // Reads more of the file into input_; false at its end.
  bool fill() {
    next_ = have_ = 0;
    for (;;) {
      ssize_t got = ::read(fd_, input_.data(), input_.size());
      if (got < 0 && errno == EINTR) continue;
      if (got < 0)
        KILN_FAIL("cannot read IDX file '", path_.string(),
                  "': ", std::system_category().message(errno));
      have_ = static_cast<size_t>(got);
      return got > 0;
    }
  }

  // A new gzip member begins at next_: it must start with gzip's magic bytes.
  void start_member() {
    if (started_) {
      if (input_[next_] != 0x1f || (next_ + 1 < have_ && input_[next_ + 1] != 0x8b))
        fail_corrupt("bytes follow the end of the gzip data that do not start another gzip member");
      inflateReset(&z_);
    }
    started_ = true;
    in_member_ = true;
  }

  [[noreturn]] void fail_corrupt(const std::string& why) const {
    KILN_FAIL("IDX file '", path_.string(), "' is corrupt: ", why);
  }

  std::filesystem::path path_;
  int fd_ = -1;
  std::vector<unsigned char> input_;
  size_t next_ = 0;  // input_[next_, have_) is read but not consumed
  size_t have_ = 0;
  bool gzip_ = false;
  z_stream z_{};
  bool started_ = false;  // a member has begun: the next must start with gzip's magic
  bool in_member_ = false;
  bool ended_ = false;
  bool cut_short_ = false;
};

uint32_t big_endian_u32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// Reads and checks the magic number and the `dims` sizes that follow it.
std::array<uint32_t, 3> read_header(IdxStream& file, uint32_t magic, size_t dims) {
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
std::vector<uint8_t> read_payload(IdxStream& file, uint64_t n, const char* what) {
  std::vector<uint8_t> data;
  while (data.size() < n) {
    size_t step = static_cast<size_t>(std::min<uint64_t>(n - data.size(), kReadChunk));
    size_t before = data.size();
    data.resize(before + step);
    size_t got = file.read(data.data() + before, step);
    if (got != step) file.fail_truncated(what, n, before + got);
  }
  unsigned char extra[4096];
  uint64_t trailing = 0;
  for (size_t got; trailing <= kTrailingCountLimit && (got = file.read(extra, sizeof extra)) > 0;)
    trailing += got;
  // All the payload came, but the gzip data did not end where it should: its trailer
  // (CRC and length) is missing, or a partial member follows it.
  if (trailing == 0 && file.cut_short())
    KILN_FAIL("IDX file '", file.path().string(),
              "' is corrupt: the gzip stream is cut short after the ", n, " bytes of ", what,
              " (its trailer, or a member after it, is incomplete)");
  if (trailing > 0)
    KILN_FAIL("IDX file '", file.path().string(), "' has ",
              trailing > kTrailingCountLimit ? "more than " : "",
              std::min(trailing, kTrailingCountLimit), " bytes of trailing data after the ", n,
              " bytes of ", what, " its header announces");
  return data;
}

}  // namespace

IdxImages read_idx_images(const std::filesystem::path& path, const IdxLimits& limits) {
  IdxStream file(path);
  auto [count, rows, cols] = read_header(file, kImageMagic, 3);
  KILN_CHECK(rows > 0 && cols > 0, "IDX file '", path.string(), "' declares images of ", rows,
             " x ", cols, " pixels");
  KILN_CHECK((limits.rows == 0 || rows == limits.rows) && (limits.cols == 0 || cols == limits.cols),
             "IDX file '", path.string(), "' holds images of ", rows, " x ", cols,
             " pixels, but images of ", limits.rows, " x ", limits.cols, " are expected");
  IdxImages images;
  images.count = count;
  images.rows = rows;
  images.cols = cols;
  // At most (2^32 - 1)^3 < 2^96: computed in 128 bits, it cannot wrap.
  const unsigned __int128 pixels = static_cast<unsigned __int128>(count) * rows * cols;
  const std::string what = kiln::detail::concat(count, " images of ", rows, " x ", cols, " pixels");
  KILN_CHECK(pixels <= limits.max_bytes, "IDX file '", path.string(), "' declares ", what,
             ", over the limit of ", limits.max_bytes,
             " bytes (IdxLimits::max_bytes); refused before reading them");
  images.pixels = read_payload(file, static_cast<uint64_t>(pixels), "pixels");
  return images;
}

std::vector<uint8_t> read_idx_labels(const std::filesystem::path& path, const IdxLimits& limits) {
  IdxStream file(path);
  auto sizes = read_header(file, kLabelMagic, 1);
  KILN_CHECK(sizes[0] <= limits.max_bytes, "IDX file '", path.string(), "' declares ", sizes[0],
             " labels, over the limit of ", limits.max_bytes,
             " bytes (IdxLimits::max_bytes); refused before reading them");
  return read_payload(file, sizes[0], "labels");
}

}  // namespace kiln::data
