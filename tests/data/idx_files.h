#pragma once
/// @file idx_files.h
/// Writes small MNIST-format (IDX) files, gzip-compressed or plain, for the reader
/// tests, and a temporary folder to hold them.

#include <gtest/gtest.h>
#include <stdlib.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace kiln::test {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kiln-data-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

using Bytes = std::vector<uint8_t>;

inline void append_be32(Bytes& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(v >> shift));
}

/// An IDX image file: magic, [count, rows, cols], pixels (as given: may be short or long).
inline Bytes idx_images(uint32_t count, uint32_t rows, uint32_t cols, const Bytes& pixels,
                        uint32_t magic = 2051) {
  Bytes out;
  append_be32(out, magic);
  append_be32(out, count);
  append_be32(out, rows);
  append_be32(out, cols);
  out.insert(out.end(), pixels.begin(), pixels.end());
  return out;
}

/// An IDX label file: magic, [count], labels.
inline Bytes idx_labels(uint32_t count, const Bytes& labels, uint32_t magic = 2049) {
  Bytes out;
  append_be32(out, magic);
  append_be32(out, count);
  out.insert(out.end(), labels.begin(), labels.end());
  return out;
}

/// Pixels 0, 1, 2, ... (mod 256).
inline Bytes ramp(size_t n, uint8_t start = 0) {
  Bytes out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(start + i);
  return out;
}

inline void write_gz(const std::filesystem::path& path, const Bytes& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  if (!f) throw std::runtime_error("gzopen failed: " + path.string());
  if (!bytes.empty() && gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) !=
                            static_cast<int>(bytes.size()))
    throw std::runtime_error("gzwrite failed: " + path.string());
  if (gzclose(f) != Z_OK) throw std::runtime_error("gzclose failed: " + path.string());
}

inline void write_plain(const std::filesystem::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

inline Bytes read_plain(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace kiln::test
