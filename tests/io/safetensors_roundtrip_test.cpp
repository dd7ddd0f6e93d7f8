// Save then load: every dtype bit for bit, 0-d and empty tensors, strided inputs,
// order, metadata and the lookups on the loaded file.
#include <kiln/io/safetensors.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "io_test_util.h"
#include "kiln_test.h"

namespace kiln::test {
namespace {

using io::load_safetensors;
using io::NamedTensors;
using io::save_safetensors;

// A [2, 3] tensor of `dtype` whose bytes are a recognizable, non-symmetric pattern:
// bit patterns for the floating types (incl. -0, inf, NaN, subnormals where they
// exist), distinct values for the integer types.
Tensor patterned(DType dtype) {
  switch (dtype) {
    case DType::Float32: {
      std::vector<float> v = {1.5f,
                              -0.0f,
                              std::numeric_limits<float>::infinity(),
                              std::numeric_limits<float>::quiet_NaN(),
                              1e-42f,
                              -3.25e7f};
      return copy_from_blob(v.data(), {2, 3}, dtype);
    }
    case DType::Float64: {
      std::vector<double> v = {1.0 / 3,
                               -0.0,
                               -std::numeric_limits<double>::infinity(),
                               std::numeric_limits<double>::quiet_NaN(),
                               5e-324,
                               1e300};
      return copy_from_blob(v.data(), {2, 3}, dtype);
    }
    case DType::Float16:     // 1.0, -0, inf, NaN, smallest subnormal, 65504
    case DType::BFloat16: {  // 1.875, -0, inf, NaN, smallest subnormal, a large value
      std::vector<uint16_t> v =
          dtype == DType::Float16
              ? std::vector<uint16_t>{0x3c00, 0x8000, 0x7c00, 0x7e00, 0x0001, 0x7bff}
              : std::vector<uint16_t>{0x3ff0, 0x8000, 0x7f80, 0x7fc0, 0x0001, 0x7f7f};
      return copy_from_blob(v.data(), {2, 3}, dtype);
    }
    case DType::Int32: {
      std::vector<int32_t> v = {0, -1, 2147483647, -2147483647 - 1, 12345, -6789};
      return copy_from_blob(v.data(), {2, 3}, dtype);
    }
    case DType::Int64: {
      std::vector<int64_t> v = {0,
                                -1,
                                std::numeric_limits<int64_t>::max(),
                                std::numeric_limits<int64_t>::min(),
                                1ll << 40,
                                -(1ll << 50)};
      return copy_from_blob(v.data(), {2, 3}, dtype);
    }
    case DType::UInt8: {
      std::vector<uint8_t> v = {0, 1, 127, 128, 254, 255};
      return copy_from_blob(v.data(), {2, 3}, dtype);
    }
    case DType::Bool: {
      std::vector<uint8_t> v = {1, 0, 0, 1, 1, 0};
      return copy_from_blob(v.data(), {2, 3}, dtype);
    }
    case DType::Complex64: {  // C64: (re, im) float32 pairs, -0 and NaN parts included
      std::vector<float> v = {
          1.5f, -2, -0.0f, std::numeric_limits<float>::quiet_NaN(), 3, 4, 1e-42f, 0, -7, 8, 9, -10};
      return copy_from_blob(v.data(), {2, 3}, dtype);
    }
    case DType::Complex128: {  // C128
      std::vector<double> v = {1.0 / 3, -1, 0, -0.0, 5e-324, 2, 3, 4, -5, 6, 7, 1e300};
      return copy_from_blob(v.data(), {2, 3}, dtype);
    }
  }
  return {};
}

const DType kAllDTypes[] = {float32, float64, float16, bfloat16,  int32,
                            int64,   uint8,   kbool,   complex64, complex128};

TEST(SafetensorsRoundTrip, EveryDTypeBitForBit) {
  TempDir dir;
  NamedTensors tensors;
  for (DType d : kAllDTypes) tensors.emplace_back(std::string(dtype_name(d)), patterned(d));
  save_safetensors(dir / "all.safetensors", tensors);

  auto file = load_safetensors(dir / "all.safetensors");
  ASSERT_EQ(file.tensors.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, original] = tensors[i];
    SCOPED_TRACE(name);
    EXPECT_EQ(file.tensors[i].first, name);  // file order = save order
    const Tensor& loaded = file.tensors[i].second;
    EXPECT_EQ(loaded.dtype(), original.dtype());
    EXPECT_EQ(loaded.shape(), original.shape());
    EXPECT_EQ(raw_bytes(loaded), raw_bytes(original));
  }
}

TEST(SafetensorsRoundTrip, ZeroDimensionalAndEmptyTensors) {
  TempDir dir;
  NamedTensors tensors = {{"scalar", scalar_tensor(3.5, float64)},
                          {"empty_1d", zeros({0}, float32)},
                          {"empty_3d", zeros({2, 0, 3}, int64)},
                          {"after", from_vector<int32_t>({7, 8})}};
  save_safetensors(dir / "edge.safetensors", tensors);
  auto file = load_safetensors(dir / "edge.safetensors");

  const Tensor& scalar = file.at("scalar");
  EXPECT_EQ(scalar.dim(), 0);
  EXPECT_EQ(scalar.dtype(), float64);
  EXPECT_EQ(scalar.item<double>(), 3.5);
  EXPECT_EQ(file.at("empty_1d").shape(), IntArrayRef({0}));
  EXPECT_EQ(file.at("empty_3d").shape(), IntArrayRef({2, 0, 3}));
  EXPECT_EQ(file.at("empty_3d").dtype(), int64);
  EXPECT_EQ(file.at("after").to_vector<int32_t>(), (std::vector<int32_t>{7, 8}));
}

TEST(SafetensorsRoundTrip, StridedTensorsAreStoredContiguous) {
  TempDir dir;
  Tensor base = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor transposed = base.t();                 // [3, 2], not contiguous
  Tensor every_other = base.slice(1, 0, 3, 2);  // [2, 2] with stride 2
  ASSERT_FALSE(transposed.is_contiguous());
  save_safetensors(dir / "strided.safetensors",
                   NamedTensors{{"t", transposed}, {"s", every_other}});
  auto file = load_safetensors(dir / "strided.safetensors");
  EXPECT_EQ(file.at("t").shape(), IntArrayRef({3, 2}));
  EXPECT_EQ(file.at("t").to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(file.at("s").to_vector<float>(), (std::vector<float>{1, 3, 4, 6}));
}

TEST(SafetensorsRoundTrip, KeepsTheGivenOrderNotAlphabetical) {
  TempDir dir;
  NamedTensors tensors = {{"zeta", ones({1})}, {"alpha", ones({2})}, {"mu", ones({3})}};
  save_safetensors(dir / "order.safetensors", tensors);
  auto file = load_safetensors(dir / "order.safetensors");
  ASSERT_EQ(file.tensors.size(), 3u);
  EXPECT_EQ(file.tensors[0].first, "zeta");
  EXPECT_EQ(file.tensors[1].first, "alpha");
  EXPECT_EQ(file.tensors[2].first, "mu");
}

TEST(SafetensorsRoundTrip, MetadataRoundTrips) {
  TempDir dir;
  io::Metadata metadata = {{"format", "pt"},
                           {"epoch", "7"},
                           {"empty", ""},
                           {"unicode",
                            "Gr\xC3\xBC\xC3\x9F"
                            "e \xE2\x9C\x93"},
                           {"quotes \"and\" \\ slashes", "line\nbreak\ttab"}};
  save_safetensors(dir / "meta.safetensors", NamedTensors{{"w", ones({2})}}, metadata);
  auto file = load_safetensors(dir / "meta.safetensors");
  EXPECT_EQ(file.metadata, metadata);
}

TEST(SafetensorsRoundTrip, NoMetadataMeansNoMetadataKey) {
  TempDir dir;
  save_safetensors(dir / "plain.safetensors", NamedTensors{{"w", ones({2})}});
  EXPECT_EQ(read_bytes(dir / "plain.safetensors").find("__metadata__"), std::string::npos);
  EXPECT_TRUE(load_safetensors(dir / "plain.safetensors").metadata.empty());
}

TEST(SafetensorsRoundTrip, NoTensorsAtAll) {
  TempDir dir;
  save_safetensors(dir / "none.safetensors", NamedTensors{}, {{"only", "metadata"}});
  auto file = load_safetensors(dir / "none.safetensors");
  EXPECT_TRUE(file.tensors.empty());
  EXPECT_EQ(file.metadata.at("only"), "metadata");
}

TEST(SafetensorsRoundTrip, MapOverloadWritesInKeyOrder) {
  TempDir dir;
  std::map<std::string, Tensor> state = {{"b", ones({1})}, {"a", zeros({2})}};
  save_safetensors(dir / "map.safetensors", state);
  auto file = load_safetensors(dir / "map.safetensors");
  ASSERT_EQ(file.tensors.size(), 2u);
  EXPECT_EQ(file.tensors[0].first, "a");
  EXPECT_EQ(file.tensors[1].first, "b");
}

TEST(SafetensorsRoundTrip, LoadsOntoTheRequestedDevice) {
  TempDir dir;
  save_safetensors(dir / "d.safetensors", NamedTensors{{"w", ones({2})}});
  auto file = load_safetensors(dir / "d.safetensors", Device("cpu:0"));
  EXPECT_EQ(file.at("w").device(), Device("cpu:0"));
  EXPECT_EQ(load_safetensors(dir / "d.safetensors", "cpu").at("w").device(), Device("cpu:0"));
  EXPECT_EQ(load_safetensors(dir / "d.safetensors").at("w").device(), default_device());
}

TEST(SafetensorsRoundTrip, AtNamesWhatTheFileHolds) {
  TempDir dir;
  save_safetensors(dir / "n.safetensors", NamedTensors{{"fc.weight", ones({2})}});
  auto file = load_safetensors(dir / "n.safetensors");
  EXPECT_TRUE(file.contains("fc.weight"));
  EXPECT_FALSE(file.contains("fc.bias"));
  EXPECT_KILN_ERROR(file.at("fc.bias"), "fc.bias", "fc.weight");
}

TEST(SafetensorsSaveErrors, RefusesBadInputBeforeWriting) {
  TempDir dir;
  auto path = dir / "bad.safetensors";
  EXPECT_KILN_ERROR(save_safetensors(path, NamedTensors{{"w", ones({1})}, {"w", ones({2})}}), "'w'",
                    path.string());
  EXPECT_KILN_ERROR(save_safetensors(path, NamedTensors{{"__metadata__", ones({1})}}),
                    "__metadata__");
  EXPECT_KILN_ERROR(save_safetensors(path, NamedTensors{{"u", Tensor()}}), "'u'", "undefined");
  EXPECT_KILN_ERROR(save_safetensors(path, NamedTensors{{"bad\xff", ones({1})}}), "UTF-8");
  EXPECT_TRUE(dir.entries().empty()) << "a refused save left files behind";
}

TEST(SafetensorsDTypeNames, MatchTheFormat) {
  EXPECT_EQ(io::safetensors_dtype_name(float32), "F32");
  EXPECT_EQ(io::safetensors_dtype_name(bfloat16), "BF16");
  EXPECT_EQ(io::safetensors_dtype_name(kbool), "BOOL");
  for (DType d : kAllDTypes)
    EXPECT_EQ(io::dtype_from_safetensors_name(io::safetensors_dtype_name(d)), d);
  EXPECT_KILN_ERROR(io::dtype_from_safetensors_name("I8"), "I8", "not supported");
  EXPECT_KILN_ERROR(io::dtype_from_safetensors_name("float32"), "unknown", "float32");
}

}  // namespace
}  // namespace kiln::test
