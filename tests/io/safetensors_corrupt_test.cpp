// Hand-made broken files: each is refused with a kiln::Error naming the file and
// the problem, and none is read past its end.
#include <kiln/io/safetensors.h>
#include <sys/stat.h>

#include "io_test_util.h"
#include "kiln_test.h"

namespace kiln::test {
namespace {

using io::load_safetensors;

class SafetensorsCorrupt : public ::testing::Test {
 protected:
  // Writes `bytes` to a file and expects loading it to fail with a message holding
  // the file's path and every one of `substrings`.
  void expect_refused(const std::string& bytes, std::initializer_list<std::string> substrings) {
    auto path = dir_ / ("case" + std::to_string(counter_++) + ".safetensors");
    write_bytes(path, bytes);
    std::string message = kiln_error_message([&] { load_safetensors(path); });
    EXPECT_NE(message.find(path.string()), std::string::npos)
        << "message does not name the file: " << message;
    for (const std::string& s : substrings)
      EXPECT_NE(message.find(s), std::string::npos)
          << "message \"" << message << "\" lacks \"" << s << "\"";
  }

  // A file with `header` (as given) and `data_bytes` zero bytes of data.
  void expect_header_refused(const std::string& header, size_t data_bytes,
                             std::initializer_list<std::string> substrings) {
    expect_refused(safetensors_bytes(header, std::string(data_bytes, '\0')), substrings);
  }

  TempDir dir_;
  int counter_ = 0;
};

// F32 [2] at [0, 8): the well-formed entry the cases below break one piece of.
const std::string kGood = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";

TEST_F(SafetensorsCorrupt, TheGoodBaselineLoads) {
  write_bytes(dir_ / "good.safetensors", safetensors_bytes(kGood, std::string(8, '\0')));
  EXPECT_EQ(load_safetensors(dir_ / "good.safetensors").at("w").shape(), IntArrayRef({2}));
}

TEST_F(SafetensorsCorrupt, DeeplyNestedHeaderIsRefusedNotACrash) {
  // A 200 KB and a 2 MB header nested 100,000 and 1,000,000 levels deep (under the
  // 100 MB header limit): parsing, printing or freeing such a tree recursively
  // overflows the stack.
  for (size_t depth : {size_t{100000}, size_t{1000000}}) {
    const std::string nested = std::string(depth, '[') + std::string(depth, ']');
    expect_header_refused(
        R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"x":)" + nested + "}", 8,
        {"nests deeper than 16 levels"});
    // The same depth in objects, inside the metadata.
    std::string objects;
    for (size_t i = 0; i < depth; ++i) objects += R"({"a":)";
    objects += "1" + std::string(depth, '}');
    expect_header_refused(R"({"__metadata__":{"run":)" + objects + "}}", 0,
                          {"nests deeper than 16 levels"});
  }
}

TEST_F(SafetensorsCorrupt, MegabyteNamesAndStringsGiveShortMessages) {
  // A 1 MB tensor name with a bad dtype, and a 1 MB string left unterminated: the
  // message quotes at most a few hundred characters of either.
  const std::string huge(1 << 20, 'n');
  for (const std::string& header :
       {R"({")" + huge + R"(":{"dtype":"NOPE","shape":[2],"data_offsets":[0,8]}})",
        R"({"w":")" + huge}) {
    write_bytes(dir_ / "huge.safetensors", safetensors_bytes(header, std::string(8, '\0')));
    const std::string message =
        kiln_error_message([&] { load_safetensors(dir_ / "huge.safetensors"); });
    EXPECT_FALSE(message.empty());
    EXPECT_LT(message.size(), 1000u) << message.substr(0, 200);
    EXPECT_NE(message.find("more characters"), std::string::npos) << message.substr(0, 200);
  }
}

TEST_F(SafetensorsCorrupt, ShorterThanTheLengthPrefix) {
  expect_refused("", {"0 bytes", "8-byte"});
  expect_refused(std::string(7, '\0'), {"7 bytes", "8-byte"});
}

TEST_F(SafetensorsCorrupt, HeaderLengthBeyondTheFile) {
  expect_refused(length_prefix(1000) + kGood, {"1000", "only 54 follow"});
}

TEST_F(SafetensorsCorrupt, AbsurdHeaderLength) {
  expect_refused(length_prefix(uint64_t{1} << 40) + kGood, {"1099511627776", "100000000"});
  expect_refused(length_prefix(~uint64_t{0}) + kGood, {"18446744073709551615"});
}

TEST_F(SafetensorsCorrupt, HeaderNotJson) {
  expect_header_refused("", 0, {"does not start with '{'"});
  expect_header_refused("[1, 2]", 0, {"does not start with '{'"});
  expect_header_refused(R"({"w":{"dtype":"F32",)", 0, {"not valid JSON"});
  expect_header_refused(R"({"w": nope})", 0, {"not valid JSON"});
  expect_header_refused("{\"w\xff\":1}", 0, {"not valid JSON"});  // invalid UTF-8
  expect_header_refused(kGood + "\n{}", 8, {"not valid JSON"});   // two documents
}

TEST_F(SafetensorsCorrupt, EntryNotAnObject) {
  expect_header_refused(R"({"w":5})", 0, {"'w'", "not a JSON object", "5"});
  expect_header_refused(R"({"w":[1,2]})", 0, {"'w'", "not a JSON object"});
}

TEST_F(SafetensorsCorrupt, MissingFields) {
  expect_header_refused(R"({"w":{"shape":[2],"data_offsets":[0,8]}})", 8, {"'w'", "\"dtype\""});
  expect_header_refused(R"({"w":{"dtype":"F32","data_offsets":[0,8]}})", 8, {"\"shape\""});
  expect_header_refused(R"({"w":{"dtype":"F32","shape":[2]}})", 8, {"\"data_offsets\""});
}

TEST_F(SafetensorsCorrupt, BadDType) {
  expect_header_refused(R"({"w":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}})", 8,
                        {"'w'", "unknown", "F33"});
  expect_header_refused(R"({"w":{"dtype":"I8","shape":[2],"data_offsets":[0,2]}})", 2,
                        {"'w'", "I8", "not supported"});
  expect_header_refused(R"({"w":{"dtype":1,"shape":[2],"data_offsets":[0,8]}})", 8,
                        {"\"dtype\" is not a string"});
}

TEST_F(SafetensorsCorrupt, BadShape) {
  expect_header_refused(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8,
                        {"'w'", "negative"});
  expect_header_refused(R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,8]}})", 8,
                        {"1.5", "non-negative integer"});
  expect_header_refused(R"({"w":{"dtype":"F32","shape":"2","data_offsets":[0,8]}})", 8,
                        {"\"shape\" is not a list"});
  // 2^32 * 2^32 * 4 elements: the product wraps around 64 bits.
  expect_header_refused(
      R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,4],"data_offsets":[0,0]}})", 0,
      {"overflows"});
  // 2^62 elements of 4 bytes: the element count fits, the byte count does not.
  expect_header_refused(
      R"({"w":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0]}})", 0,
      {"overflows"});
  // A dimension past 2^64 (parsed as a float by JSON).
  expect_header_refused(
      R"({"w":{"dtype":"F32","shape":[18446744073709551616],"data_offsets":[0,8]}})", 8,
      {"non-negative integer"});
}

TEST_F(SafetensorsCorrupt, BadDataOffsets) {
  expect_header_refused(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", 8,
                        {"two non-negative integers"});
  expect_header_refused(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8,8]}})", 8,
                        {"two non-negative integers"});
  expect_header_refused(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":["0",8]}})", 8,
                        {"two non-negative integers"});
  expect_header_refused(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[-8,8]}})", 8,
                        {"two non-negative integers"});
  expect_header_refused(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":{"a":0}}})", 8,
                        {"two non-negative integers"});
  expect_header_refused(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", 8,
                        {"begin > end"});
}

TEST_F(SafetensorsCorrupt, OffsetsPastTheDataSection) {
  // The header promises 8 bytes; the file holds 4.
  expect_header_refused(kGood, 4, {"'w'", "past the end of the data section (4 bytes)"});
  // An end so large it would wrap a pointer: still caught, nothing read.
  expect_header_refused(
      R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[18446744073709551608,18446744073709551615]}})",
      8, {"past the end"});
}

TEST_F(SafetensorsCorrupt, SizeDisagreesWithShape) {
  expect_header_refused(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4,
                        {"'w'", "span 4 bytes", "needs 2 x 4 = 8"});
  expect_header_refused(R"({"w":{"dtype":"F64","shape":[],"data_offsets":[0,4]}})", 4,
                        {"span 4 bytes", "needs 1 x 8 = 8"});
}

TEST_F(SafetensorsCorrupt, OverlappingTensors) {
  expect_header_refused(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                        R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                        12, {"'a'", "'b'", "overlap"});
  // The same bytes claimed twice.
  expect_header_refused(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                        R"("b":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}})",
                        8, {"overlap"});
  // An empty tensor placed inside another one.
  expect_header_refused(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                        R"("e":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}})",
                        8, {"'e'", "overlap"});
}

TEST_F(SafetensorsCorrupt, HolesAndTrailingData) {
  expect_header_refused(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                        R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                        12, {"bytes [4, 8)", "belong to no tensor", "'b'"});
  expect_header_refused(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8,
                        {"bytes [0, 4)", "belong to no tensor"});
  expect_header_refused(kGood, 12, {"12 bytes", "cover only 8", "4 bytes of trailing data"});
  expect_header_refused("{}", 3, {"3 bytes of trailing data"});
}

TEST_F(SafetensorsCorrupt, DuplicateNames) {
  // JSON parsers usually keep the last of repeated keys; the file is ambiguous.
  expect_header_refused(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                        R"("w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                        8, {"'w' twice"});
  expect_header_refused(R"({"w":{"dtype":"F32","dtype":"I32","shape":[1],"data_offsets":[0,4]}})",
                        4, {"repeats the key 'dtype'"});
  expect_header_refused(R"({"__metadata__":{"a":"1"},"__metadata__":{"a":"2"}})", 0, {"twice"});
}

TEST_F(SafetensorsCorrupt, BadMetadata) {
  expect_header_refused(R"({"__metadata__":["x"]})", 0, {"__metadata__", "not a JSON object"});
  expect_header_refused(R"({"__metadata__":{"epoch":3}})", 0,
                        {"__metadata__", "'epoch'", "not a string"});
}

TEST_F(SafetensorsCorrupt, AnEmptyObjectIsAValidEmptyFile) {
  // The baseline for the trailing-data case above: "{}" plus padding and no data.
  write_bytes(dir_ / "empty.safetensors", safetensors_bytes("{}      ", ""));
  auto file = load_safetensors(dir_ / "empty.safetensors");
  EXPECT_TRUE(file.tensors.empty());
  EXPECT_TRUE(file.metadata.empty());
}

TEST_F(SafetensorsCorrupt, BoolBytesMustBeZeroOrOne) {
  expect_refused(safetensors_bytes(R"({"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})",
                                   std::string("\x01\x00\x02", 3)),
                 {"'m'", "BOOL element 2", "holds 2"});
}

TEST_F(SafetensorsCorrupt, MissingFileAndFolder) {
  auto missing = dir_ / "nope.safetensors";
  EXPECT_KILN_ERROR(load_safetensors(missing), missing.string(), "does not exist");
  EXPECT_KILN_ERROR(load_safetensors(dir_.path()), dir_.path().string(),
                    "is a folder, not a regular file");
}

TEST_F(SafetensorsCorrupt, AFifoIsRefusedWithoutWaitingForAWriter) {
  const std::string fifo = (dir_ / "checkpoint.safetensors").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string message =
      kiln_error_message_without_blocking(fifo, [&] { load_safetensors(fifo); });
  EXPECT_TRUE(contains(message, fifo)) << message;
  EXPECT_TRUE(contains(message, "is a FIFO (named pipe), not a regular file")) << message;
}

TEST_F(SafetensorsCorrupt, AHeaderOfManyTensorsLoadsInHeaderOrder) {
  // 200,000 zero-size entries: the header parse must be linear (it was quadratic,
  // over a minute for 400,000), and ties at offset 0 keep the file's order.
  constexpr int kCount = 200'000;
  std::string header = "{";
  for (int i = 0; i < kCount; ++i) {
    header += (i ? ",\"" : "\"") + std::to_string(kCount - i) +
              "\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}";
  }
  header += "}";
  write_bytes(dir_ / "many.safetensors", safetensors_bytes(header, ""));
  const io::SafetensorsFile file = load_safetensors(dir_ / "many.safetensors");
  ASSERT_EQ(file.tensors.size(), size_t{kCount});
  for (int i : {0, 1, 9, 10, kCount / 2, kCount - 1})
    EXPECT_EQ(file.tensors[static_cast<size_t>(i)].first, std::to_string(kCount - i));
}

TEST_F(SafetensorsCorrupt, TruncatedCopiesOfAGoodFileAreAllRefused) {
  // Every proper prefix of a valid file is invalid, and must be refused cleanly.
  io::save_safetensors(
      dir_ / "full.safetensors",
      io::NamedTensors{{"a", from_vector<float>({1, 2, 3})}, {"b", from_vector<int64_t>({4, 5})}},
      {{"k", "v"}});
  const std::string full = read_bytes(dir_ / "full.safetensors");
  for (size_t n = 0; n < full.size(); ++n) {
    auto path = dir_ / "prefix.safetensors";
    write_bytes(path, full.substr(0, n));
    EXPECT_TRUE(
        throws_kiln_error("load of a prefix", [&] { load_safetensors(path); }, {path.string()}))
        << "prefix of " << n << " bytes";
  }
}

}  // namespace
}  // namespace kiln::test
