// The IDX readers on small hand-made files: valid ones (gzip and plain) and each
// kind of damage the reader must name.
#include <kiln/data/mnist.h>

#include "idx_files.h"
#include "kiln_test.h"

namespace kiln::test {
namespace {

using data::read_idx_images;
using data::read_idx_labels;

// The message of the kiln::Error `f` throws must name `file` and hold every substring.
void expect_refused(const std::function<void()>& f, const std::filesystem::path& file,
                    std::initializer_list<std::string> substrings) {
  std::string message = kiln_error_message(f);
  EXPECT_NE(message.find(file.string()), std::string::npos)
      << "message does not name the file: " << message;
  for (const std::string& s : substrings)
    EXPECT_NE(message.find(s), std::string::npos) << "\"" << message << "\" lacks \"" << s << "\"";
}

TEST(IdxReader, ReadsAGzipImageFile) {
  TempDir dir;
  write_gz(dir / "images.gz", idx_images(3, 2, 4, ramp(24, 10)));
  auto images = read_idx_images(dir / "images.gz");
  EXPECT_EQ(images.count, 3);
  EXPECT_EQ(images.rows, 2);
  EXPECT_EQ(images.cols, 4);
  EXPECT_EQ(images.pixels, ramp(24, 10));
}

TEST(IdxReader, ReadsAGzipLabelFile) {
  TempDir dir;
  write_gz(dir / "labels.gz", idx_labels(5, {3, 1, 4, 1, 5}));
  EXPECT_EQ(read_idx_labels(dir / "labels.gz"), (Bytes{3, 1, 4, 1, 5}));
}

TEST(IdxReader, ReadsUncompressedFiles) {
  TempDir dir;
  write_plain(dir / "images", idx_images(2, 3, 3, ramp(18)));
  write_plain(dir / "labels", idx_labels(2, {7, 9}));
  EXPECT_EQ(read_idx_images(dir / "images").pixels, ramp(18));
  EXPECT_EQ(read_idx_labels(dir / "labels"), (Bytes{7, 9}));
}

TEST(IdxReader, ReadsAnEmptySet) {
  TempDir dir;
  write_gz(dir / "images.gz", idx_images(0, 28, 28, {}));
  auto images = read_idx_images(dir / "images.gz");
  EXPECT_EQ(images.count, 0);
  EXPECT_TRUE(images.pixels.empty());
}

TEST(IdxReader, ReadsLargerThanOneChunk) {
  TempDir dir;  // 4020 images of 28 x 28, 3 MB: crosses the reader's 1 MiB growth steps
  Bytes pixels = ramp(4020 * 784, 3);
  write_gz(dir / "images.gz", idx_images(4020, 28, 28, pixels));
  EXPECT_EQ(read_idx_images(dir / "images.gz").pixels, pixels);
}

TEST(IdxReader, WrongMagicNumber) {
  TempDir dir;
  auto labels_as_images = dir / "swapped-images.gz";
  write_gz(labels_as_images, idx_labels(2, {1, 2}));
  expect_refused([&] { read_idx_images(labels_as_images); }, labels_as_images,
                 {"wrong magic number 2049", "expected 2051", "label file"});

  auto images_as_labels = dir / "swapped-labels.gz";
  write_gz(images_as_labels, idx_images(1, 1, 1, {0}));
  expect_refused([&] { read_idx_labels(images_as_labels); }, images_as_labels,
                 {"wrong magic number 2051", "expected 2049", "image file"});

  auto garbage = dir / "garbage.gz";
  write_gz(garbage, Bytes{'P', 'K', 3, 4, 0, 0, 0, 0});
  expect_refused([&] { read_idx_images(garbage); }, garbage, {"wrong magic number", "not an IDX"});

  auto int_elements = dir / "ints.gz";  // element type 0x0C (int32) is not unsigned bytes
  write_gz(int_elements, idx_images(1, 1, 1, {0, 0, 0, 0}, 0x00000C03));
  expect_refused([&] { read_idx_images(int_elements); }, int_elements, {"wrong magic number"});
}

TEST(IdxReader, TruncatedHeader) {
  TempDir dir;
  auto file = dir / "short.gz";
  write_gz(file, Bytes{0, 0, 8, 3, 0, 0});  // magic, then half a size
  expect_refused([&] { read_idx_images(file); }, file, {"truncated", "header"});
  write_gz(file, Bytes{0, 0});
  expect_refused([&] { read_idx_labels(file); }, file, {"truncated", "magic"});
}

TEST(IdxReader, TruncatedData) {
  TempDir dir;
  auto images = dir / "images.gz";
  write_gz(images, idx_images(3, 2, 2, ramp(10)));  // 12 pixels announced, 10 present
  expect_refused([&] { read_idx_images(images); }, images,
                 {"truncated", "expected 12 bytes of pixels", "ends after 10"});
  auto labels = dir / "labels.gz";
  write_gz(labels, idx_labels(60000, ramp(59999)));
  expect_refused([&] { read_idx_labels(labels); }, labels,
                 {"truncated", "expected 60000 bytes of labels", "ends after 59999"});
}

TEST(IdxReader, TruncatedGzipStream) {
  TempDir dir;
  auto whole = dir / "whole.gz";
  write_gz(whole, idx_images(100, 28, 28, ramp(78400)));
  Bytes compressed = read_plain(whole);
  auto cut = dir / "cut.gz";
  write_plain(cut, Bytes(compressed.begin(), compressed.begin() + compressed.size() / 2));
  expect_refused([&] { read_idx_images(cut); }, cut, {"truncated"});
}

TEST(IdxReader, CorruptGzipData) {
  TempDir dir;
  auto file = dir / "images.gz";
  write_gz(file, idx_images(4, 2, 2, ramp(16)));
  Bytes compressed = read_plain(file);
  // The gzip trailer's CRC-32 sits 8 bytes from the end: flip it.
  compressed[compressed.size() - 8] ^= 0xff;
  write_plain(file, compressed);
  expect_refused([&] { read_idx_images(file); }, file, {"corrupt"});
}

TEST(IdxReader, TrailingData) {
  TempDir dir;
  auto images = dir / "images.gz";
  write_gz(images, idx_images(2, 2, 2, ramp(8 + 5)));
  expect_refused([&] { read_idx_images(images); }, images,
                 {"5 bytes of trailing data", "8 bytes of pixels"});
  auto labels = dir / "labels.gz";
  write_gz(labels, idx_labels(2, {1, 2, 3}));
  expect_refused([&] { read_idx_labels(labels); }, labels, {"1 bytes of trailing data"});
}

TEST(IdxReader, ZeroSizedImages) {
  TempDir dir;
  auto file = dir / "images.gz";
  write_gz(file, idx_images(5, 0, 28, {}));
  expect_refused([&] { read_idx_images(file); }, file, {"0 x 28"});
}

TEST(IdxReader, AbsurdCountsFailOnTheMissingBytesWithoutHugeAllocations) {
  TempDir dir;
  auto file = dir / "images.gz";
  // 4 billion images of 65535 x 65535 pixels announced, 3 bytes present.
  write_gz(file, idx_images(0xffffffffu, 0xffffu, 0xffffu, {1, 2, 3}));
  expect_refused([&] { read_idx_images(file); }, file, {"truncated", "ends after 3"});
}

TEST(IdxReader, MissingFile) {
  TempDir dir;
  auto file = dir / "absent.gz";
  expect_refused([&] { read_idx_images(file); }, file, {"cannot open", "No such file"});
}

}  // namespace
}  // namespace kiln::test
