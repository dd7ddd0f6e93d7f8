// The bytes on disk, checked by hand against the format and against the test
// vectors of the reference implementation (huggingface/safetensors,
// bindings/python/tests/test_simple.py), so files interoperate with PyTorch.
#include <kiln/io/safetensors.h>

#include "io_test_util.h"
#include "kiln_test.h"

namespace kiln::test {
namespace {

using io::load_safetensors;
using io::NamedTensors;
using io::save_safetensors;

std::string zeros_bytes(size_t n) { return std::string(n, '\0'); }

TEST(SafetensorsFormat, TinyFileByteForByte) {
  TempDir dir;
  // F32 [2] = {1, 2}: 1.0f is 0x3f800000, 2.0f is 0x40000000, stored little-endian.
  save_safetensors(dir / "tiny.safetensors", NamedTensors{{"a", from_vector<float>({1, 2})}});
  const std::string json = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  ASSERT_EQ(json.size(), 54u);  // padded with 2 spaces to 56, a multiple of 8
  std::string expected;
  expected += std::string("\x38\0\0\0\0\0\0\0", 8);  // 56, little-endian u64
  expected += json + "  ";
  expected += std::string("\x00\x00\x80\x3f\x00\x00\x00\x40", 8);
  EXPECT_EQ(read_bytes(dir / "tiny.safetensors"), expected);
}

TEST(SafetensorsFormat, MatchesTheReferenceSerialization) {
  TempDir dir;
  // save({"test": np.zeros((2, 2), dtype=np.int32)})
  save_safetensors(dir / "ref.safetensors", NamedTensors{{"test", zeros({2, 2}, int32)}});
  EXPECT_EQ(read_bytes(dir / "ref.safetensors"),
            std::string("@\0\0\0\0\0\0\0", 8) +
                R"({"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}})" + "    " +
                zeros_bytes(16));
}

TEST(SafetensorsFormat, MatchesTheReferenceWithTwoDTypes) {
  TempDir dir;
  // save({"test1": zeros int32 [2, 2], "test2": zeros float16 [2, 2]})
  save_safetensors(dir / "ref2.safetensors", NamedTensors{{"test1", zeros({2, 2}, int32)},
                                                          {"test2", zeros({2, 2}, float16)}});
  EXPECT_EQ(read_bytes(dir / "ref2.safetensors"),
            std::string("\x80\0\0\0\0\0\0\0", 8) +
                R"({"test1":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]},)"
                R"("test2":{"dtype":"F16","shape":[2,2],"data_offsets":[16,24]}})" +
                "      " + zeros_bytes(24));
}

TEST(SafetensorsFormat, MatchesTheReferenceWithMetadata) {
  TempDir dir;
  // save({"test1": zeros int32 [2, 2]}, metadata={"framework": "pt"})
  save_safetensors(dir / "meta.safetensors", NamedTensors{{"test1", zeros({2, 2}, int32)}},
                   {{"framework", "pt"}});
  EXPECT_EQ(
      read_bytes(dir / "meta.safetensors"),
      std::string("`\0\0\0\0\0\0\0", 8) +
          R"({"__metadata__":{"framework":"pt"},"test1":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}})" +
          " " + zeros_bytes(16));
}

TEST(SafetensorsFormat, HeaderIsAlwaysPaddedToEightBytes) {
  TempDir dir;
  for (int name_length = 1; name_length <= 9; ++name_length) {
    auto path = dir / "pad.safetensors";
    save_safetensors(path, NamedTensors{{std::string(name_length, 'x'), ones({3}, uint8)}});
    std::string bytes = read_bytes(path);
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
    EXPECT_EQ(n % 8, 0u) << "name length " << name_length;
    EXPECT_EQ(bytes.size(), 8 + n + 3);
  }
}

TEST(SafetensorsFormat, LoadsTheReferenceFilesUnpaddedAndPadded) {
  TempDir dir;
  // An older writer's file: no padding.
  std::string unpadded = std::string("<\0\0\0\0\0\0\0", 8) +
                         R"({"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}})" +
                         zeros_bytes(16);
  write_bytes(dir / "old.safetensors", unpadded);
  auto old_file = load_safetensors(dir / "old.safetensors");
  ASSERT_EQ(old_file.tensors.size(), 1u);
  EXPECT_EQ(old_file.at("test").shape(), IntArrayRef({2, 2}));
  EXPECT_EQ(old_file.at("test").to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 0, 0}));

  // Metadata and 7 spaces of padding (102 bytes of header).
  std::string with_metadata =
      std::string("f\0\0\0\0\0\0\0", 8) +
      R"({"__metadata__":{"framework":"pt"},"test1":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}})" +
      "       " + zeros_bytes(16);
  write_bytes(dir / "meta.safetensors", with_metadata);
  auto meta_file = load_safetensors(dir / "meta.safetensors");
  EXPECT_EQ(meta_file.metadata, (io::Metadata{{"framework", "pt"}}));
  EXPECT_TRUE(meta_file.contains("test1"));
}

TEST(SafetensorsFormat, LoadsOtherWritersLayouts) {
  TempDir dir;
  // Keys in another order, tensors listed in the header out of data order, metadata
  // last, extra whitespace: a valid file all the same. Data: b = I64 [1] = 5 at
  // [0, 8), a = U8 [2] = {9, 10} at [8, 10).
  std::string header = R"({ "a": {"data_offsets": [8, 10], "shape": [2], "dtype": "U8"},)"
                       R"( "b": {"shape": [1], "dtype": "I64", "data_offsets": [0, 8]},)"
                       R"( "__metadata__": {"k": "v"} })";
  std::string data = std::string("\x05\0\0\0\0\0\0\0", 8) + "\x09\x0a";
  write_bytes(dir / "other.safetensors", safetensors_bytes(header, data));
  auto file = load_safetensors(dir / "other.safetensors");
  ASSERT_EQ(file.tensors.size(), 2u);
  EXPECT_EQ(file.tensors[0].first, "b");  // data order
  EXPECT_EQ(file.tensors[1].first, "a");
  EXPECT_EQ(file.at("b").to_vector<int64_t>(), (std::vector<int64_t>{5}));
  EXPECT_EQ(file.at("a").to_vector<uint8_t>(), (std::vector<uint8_t>{9, 10}));
  EXPECT_EQ(file.metadata.at("k"), "v");
}

TEST(SafetensorsFormat, BFloat16AndFloat16AreLittleEndianOnDisk) {
  TempDir dir;
  std::vector<uint16_t> f16 = {0x3c00};   // 1.0
  std::vector<uint16_t> bf16 = {0x3f80};  // 1.0
  save_safetensors(dir / "h.safetensors",
                   NamedTensors{{"h", copy_from_blob(f16.data(), {1}, float16)},
                                {"b", copy_from_blob(bf16.data(), {1}, bfloat16)}});
  std::string bytes = read_bytes(dir / "h.safetensors");
  EXPECT_EQ(bytes.substr(bytes.size() - 4), std::string("\x00\x3c\x80\x3f", 4));
  EXPECT_NE(bytes.find(R"("dtype":"F16")"), std::string::npos);
  EXPECT_NE(bytes.find(R"("dtype":"BF16")"), std::string::npos);
}

}  // namespace
}  // namespace kiln::test
