// The catalogue of op suites and the helpers the suite files share.
#include "op_suite.h"

#include <cmath>

namespace kiln::conformance {

Operand operand(const Shape& shape, DType dtype, Layout layout, double lo, double hi,
                uint32_t seed) {
  std::vector<double> values = random_values(static_cast<size_t>(numel_of(shape)), seed, lo, hi);
  if (dtype == DType::Bool) {
    for (double& v : values) v = v > 0 ? 1 : 0;
  } else if (!is_floating(dtype)) {
    for (double& v : values) v = std::round(v);
  }
  return operand_of(shape, dtype, std::move(values), layout);
}

Operand operand_of(const Shape& shape, DType dtype, std::vector<double> values, Layout layout) {
  Operand x;
  x.shape = shape;
  x.dtype = dtype;
  x.layout = layout;
  x.values = std::move(values);
  return x;
}

std::string shape_text(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? "," : "") + std::to_string(shape[i]);
  return out + "]";
}

std::string describe(const Operand& x) {
  std::string out = std::string(dtype_name(x.dtype)) + " " + shape_text(x.shape);
  if (x.layout != Layout::Contiguous) out += std::string(" ") + layout_name(x.layout);
  return out;
}

const std::vector<OpSuite>& op_suites() {
  static const std::vector<OpSuite> suites = [] {
    std::vector<OpSuite> all;
    add_creation_suites(all);
    add_elementwise_suites(all);
    add_reduction_suites(all);
    add_training_suites(all);
    return all;
  }();
  return suites;
}

std::vector<std::string> catalogue_op_names() {
  std::vector<std::string> names;
  for (const OpSuite& s : op_suites()) names.push_back(s.op);
  return names;
}

}  // namespace kiln::conformance
