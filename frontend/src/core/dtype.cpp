#include "kiln/dtype.h"

#include <ostream>

#include "kiln/c_api.h"
#include "kiln/error.h"
#include "kiln/scalar.h"

namespace kiln {

size_t element_size(DType dtype) {
  size_t size = kiln_dtype_size(static_cast<int32_t>(dtype));
  KILN_CHECK(size != 0, "unknown dtype value ", static_cast<int32_t>(dtype));
  return size;
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return "float32";
    case DType::Float64:
      return "float64";
    case DType::Float16:
      return "float16";
    case DType::BFloat16:
      return "bfloat16";
    case DType::Int32:
      return "int32";
    case DType::Int64:
      return "int64";
    case DType::UInt8:
      return "uint8";
    case DType::Bool:
      return "bool";
    case DType::Complex64:
      return "complex64";
    case DType::Complex128:
      return "complex128";
  }
  return "invalid";
}

DType dtype_from_name(std::string_view name) {
  for (DType d : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int32,
                  DType::Int64, DType::UInt8, DType::Bool, DType::Complex64, DType::Complex128})
    if (dtype_name(d) == name) return d;
  KILN_FAIL("unknown dtype '", name,
            "' (expected float32, float64, float16, bfloat16, int32, int64, uint8, bool, "
            "complex64 or complex128)");
}

bool is_floating(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}

bool is_integral(DType d) { return d == DType::Int32 || d == DType::Int64 || d == DType::UInt8; }

bool is_complex(DType d) { return d == DType::Complex64 || d == DType::Complex128; }

DType real_dtype(DType d) {
  return d == DType::Complex64 ? DType::Float32 : d == DType::Complex128 ? DType::Float64 : d;
}

DType complex_dtype(DType d) {
  return d == DType::Float64 || d == DType::Complex128 ? DType::Complex128 : DType::Complex64;
}

namespace {
int rank(DType d) {
  switch (d) {
    case DType::Bool:
      return 0;
    case DType::UInt8:
      return 1;
    case DType::Int32:
      return 2;
    case DType::Int64:
      return 3;
    case DType::BFloat16:
    case DType::Float16:
      return 4;
    case DType::Float32:
      return 5;
    case DType::Float64:
      return 6;
    case DType::Complex64:
      return 7;
    case DType::Complex128:
      return 8;
  }
  return -1;
}
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if ((a == DType::Float16 && b == DType::BFloat16) ||
      (a == DType::BFloat16 && b == DType::Float16))
    return DType::Float32;
  // complex64 with float64 keeps float64's precision: complex128.
  if (is_complex(a) || is_complex(b))
    return complex_dtype(promote_types(real_dtype(a), real_dtype(b)));
  return rank(a) >= rank(b) ? a : b;
}

std::ostream& operator<<(std::ostream& out, DType dtype) { return out << dtype_name(dtype); }

DType Scalar::natural_dtype() const {
  switch (kind_) {
    case Kind::Bool:
      return DType::Bool;
    case Kind::Integral:
      return DType::Int64;
    case Kind::Floating:
      return DType::Float32;
  }
  return DType::Float32;
}

DType Scalar::result_type(DType tensor_dtype) const {
  // A complex tensor (category 3) keeps its dtype with any real scalar.
  int tensor_category = tensor_dtype == DType::Bool ? 0
                        : is_integral(tensor_dtype) ? 1
                        : is_complex(tensor_dtype)  ? 3
                                                    : 2;
  int scalar_category = static_cast<int>(kind_);
  return scalar_category > tensor_category ? natural_dtype() : tensor_dtype;
}

}  // namespace kiln
