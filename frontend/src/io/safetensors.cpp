// What save and load share: dtype spellings and SafetensorsFile lookups.
#include "kiln/io/safetensors.h"

#include <sstream>

#include "kiln/error.h"

namespace kiln::io {

namespace {

struct DTypeName {
  DType dtype;
  std::string_view name;
};
constexpr DTypeName kNames[] = {
    {DType::Float32, "F32"},     {DType::Float64, "F64"}, {DType::Float16, "F16"},
    {DType::BFloat16, "BF16"},   {DType::Int32, "I32"},   {DType::Int64, "I64"},
    {DType::UInt8, "U8"},        {DType::Bool, "BOOL"},   {DType::Complex64, "C64"},
    {DType::Complex128, "C128"},
};

}  // namespace

std::string_view safetensors_dtype_name(DType dtype) {
  for (const auto& entry : kNames)
    if (entry.dtype == dtype) return entry.name;
  KILN_FAIL("safetensors: dtype ", dtype, " has no safetensors name");
}

DType dtype_from_safetensors_name(std::string_view name) {
  for (const auto& entry : kNames)
    if (entry.name == name) return entry.dtype;
  // Spellings the format defines but Kiln has no dtype for.
  static constexpr std::string_view kOther[] = {"I8",      "I16",     "U16",     "U32",
                                                "U64",     "F8_E5M2", "F8_E4M3", "F8_E8M0",
                                                "F6_E2M3", "F6_E3M2", "F4"};
  for (std::string_view other : kOther)
    if (other == name)
      KILN_FAIL("safetensors dtype '", name,
                "' is not supported by Kiln (supported: F32, F64, F16, BF16, I32, I64, U8, BOOL, "
                "C64, C128)");
  KILN_FAIL("unknown safetensors dtype '", name,
            "' (Kiln reads F32, F64, F16, BF16, I32, I64, U8, BOOL, C64, C128)");
}

bool SafetensorsFile::contains(std::string_view name) const {
  for (const auto& entry : tensors)
    if (entry.first == name) return true;
  return false;
}

const Tensor& SafetensorsFile::at(std::string_view name) const {
  for (const auto& entry : tensors)
    if (entry.first == name) return entry.second;
  std::ostringstream names;
  for (size_t i = 0; i < tensors.size() && i < 20; ++i)
    names << (i ? ", " : "") << "'" << tensors[i].first << "'";
  if (tensors.size() > 20) names << ", ... (" << tensors.size() << " in all)";
  KILN_FAIL("safetensors: no tensor named '", name, "'; the file holds ",
            tensors.empty() ? std::string("no tensors") : names.str());
}

}  // namespace kiln::io
