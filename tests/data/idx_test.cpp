// The IDX readers on small hand-made files: valid ones (gzip and plain) and each
// kind of damage the reader must name.
#include <kiln/data/mnist.h>
#include <sys/stat.h>

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

TEST(IdxReader, AbsurdCountsAreRefusedBeforeReading) {
  TempDir dir;
  auto file = dir / "images.gz";
  // 4 billion images of 65535 x 65535 pixels announced, 3 bytes present.
  write_gz(file, idx_images(0xffffffffu, 0xffffu, 0xffffu, {1, 2, 3}));
  expect_refused([&] { read_idx_images(file); }, file,
                 {"4294967295 images of 65535 x 65535 pixels", "over the limit of 1073741824"});
  // Without a limit, storage still only grows as the data arrives.
  data::IdxLimits unlimited;
  unlimited.max_bytes = UINT64_MAX;
  expect_refused([&] { read_idx_images(file, unlimited); }, file, {"truncated", "ends after 3"});
}

TEST(IdxReader, ADecompressionBombIsRefusedBeforeItIsInflated) {
  TempDir dir;
  // 1 x 40000 x 40000 zero pixels (1.6 GB) announced: the default limit (1 GiB)
  // refuses the header; here the pixels are cut to 1 MB to keep the test small.
  auto bomb = dir / "bomb.gz";
  write_gz(bomb, idx_images(1, 40000, 40000, Bytes(1 << 20, 0)));
  expect_refused([&] { read_idx_images(bomb); }, bomb,
                 {"1 images of 40000 x 40000 pixels", "over the limit", "before reading"});
  // A stated limit and image size are checked the same way.
  auto big = dir / "big.gz";
  write_gz(big, idx_images(2, 100, 100, Bytes(20000, 7)));
  data::IdxLimits small;
  small.max_bytes = 19999;
  expect_refused([&] { read_idx_images(big, small); }, big, {"over the limit of 19999"});
  data::IdxLimits mnist;
  mnist.rows = mnist.cols = 28;
  expect_refused([&] { read_idx_images(big, mnist); }, big, {"100 x 100", "28 x 28 are expected"});
  auto labels = dir / "labels.gz";
  write_gz(labels, idx_labels(20000, Bytes(20000, 1)));
  expect_refused([&] { read_idx_labels(labels, small); }, labels,
                 {"20000 labels", "over the limit of 19999"});
  small.max_bytes = 20000;
  EXPECT_EQ(read_idx_labels(labels, small).size(), 20000u);
}

TEST(IdxReader, GarbageAfterTheGzipStreamIsRefused) {
  TempDir dir;
  auto file = dir / "images.gz";
  write_gz(file, idx_images(2, 2, 2, ramp(8)));
  Bytes bytes = read_plain(file);
  for (uint8_t b : {'j', 'u', 'n', 'k'}) bytes.push_back(b);
  write_plain(file, bytes);
  expect_refused([&] { read_idx_images(file); }, file,
                 {"corrupt", "do not start another gzip member"});
}

TEST(IdxReader, AGzipStreamCutAfterThePayloadIsRefused) {
  TempDir dir;
  auto whole = dir / "whole.gz";
  write_gz(whole, idx_images(2, 2, 2, ramp(8)));
  const Bytes compressed = read_plain(whole);
  // The 8-byte trailer (CRC-32 and length) cut off: every pixel is there, unchecked.
  auto no_trailer = dir / "no_trailer.gz";
  write_plain(no_trailer, Bytes(compressed.begin(), compressed.end() - 8));
  expect_refused([&] { read_idx_images(no_trailer); }, no_trailer,
                 {"corrupt", "gzip stream is cut short after the 8 bytes of pixels"});
  // One byte of a second member's header after a complete first member.
  auto lone_byte = dir / "lone_byte.gz";
  Bytes with_byte = compressed;
  with_byte.push_back(0x1f);
  write_plain(lone_byte, with_byte);
  expect_refused([&] { read_idx_images(lone_byte); }, lone_byte, {"corrupt", "cut short"});
}

TEST(IdxReader, ConcatenatedGzipMembersAreOneStream) {
  TempDir dir;
  // What `cat a.gz b.gz` gives, and gzip -d reads as one file.
  Bytes whole = idx_images(2, 2, 2, ramp(8));
  write_gz(dir / "a.gz", Bytes(whole.begin(), whole.begin() + 10));
  write_gz(dir / "b.gz", Bytes(whole.begin() + 10, whole.end()));
  Bytes joined = read_plain(dir / "a.gz");
  Bytes second = read_plain(dir / "b.gz");
  joined.insert(joined.end(), second.begin(), second.end());
  write_plain(dir / "images.gz", joined);
  EXPECT_EQ(read_idx_images(dir / "images.gz").pixels, ramp(8));
}

TEST(IdxReader, MissingFile) {
  TempDir dir;
  auto file = dir / "absent.gz";
  expect_refused([&] { read_idx_images(file); }, file, {"cannot open", "does not exist"});
}

TEST(IdxReader, FifosAndDevicesAreRefusedWithoutBlocking) {
  TempDir dir;
  const std::string fifo = (dir / "images.gz").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string message =
      kiln_error_message_without_blocking(fifo, [&] { read_idx_images(fifo); });
  EXPECT_TRUE(contains(message, fifo) && contains(message, "is a FIFO (named pipe)")) << message;
  expect_refused([&] { read_idx_labels("/dev/zero"); }, "/dev/zero",
                 {"is a character device, not a regular file"});
  expect_refused([&] { read_idx_labels(dir.path()); }, dir.path(), {"is a folder"});
}

}  // namespace
}  // namespace kiln::test
