// The catalogue of op suites and the helpers the suite files share.
#include "op_suite.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "kiln/op_catalogue.h"

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

Case known(std::string label, std::vector<Operand> inputs,
           std::function<Outputs(const Operands&)> fn, std::vector<std::vector<double>> expected) {
  Case c;
  c.label = std::move(label) + " (known answers)";
  c.inputs = std::move(inputs);
  c.fn = [fn](const Operands& x, const Device&) { return fn(x); };
  c.reference = Reference::SameDtype;
  c.expected = std::move(expected);
  return c;
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

namespace {

// The suites must cover the catalogue's ops (api/ops.json), one suite each, and
// nothing else: a new op without conformance cases is an error here (the CTest
// conformance.covers_catalogue runs `kiln-conformance --list-ops`). Puts the suites
// in catalogue order.
void check_covers_catalogue(std::vector<OpSuite>& suites) {
#define KILN_CONFORMANCE_NAME(op, ...) "kiln." #op,
  static const char* const catalogue[] = {KILN_OP_CATALOGUE(KILN_CONFORMANCE_NAME)};
#undef KILN_CONFORMANCE_NAME
  auto position = [&](const std::string& op) {
    return static_cast<size_t>(std::find(std::begin(catalogue), std::end(catalogue), op) -
                               std::begin(catalogue));
  };
  std::string problems;
  std::vector<int> count(std::size(catalogue), 0);
  for (const OpSuite& suite : suites) {
    const size_t i = position(suite.op);
    if (i == std::size(catalogue))
      problems += "\n  a suite for " + suite.op + ", not in the catalogue";
    else if (++count[i] == 2)
      problems += "\n  two suites for " + suite.op;
  }
  for (size_t i = 0; i < std::size(catalogue); ++i)
    if (count[i] == 0) problems += std::string("\n  no suite for ") + catalogue[i];
  if (!problems.empty())
    throw std::logic_error(
        "the conformance suites do not match the op catalogue "
        "(api/ops.json); every op needs exactly one suite:" +
        problems);
  std::stable_sort(suites.begin(), suites.end(), [&](const OpSuite& a, const OpSuite& b) {
    return position(a.op) < position(b.op);
  });
}

}  // namespace

const std::vector<OpSuite>& op_suites() {
  static const std::vector<OpSuite> suites = [] {
    std::vector<OpSuite> all;
    add_creation_suites(all);
    add_elementwise_suites(all);
    add_reduction_suites(all);
    add_training_suites(all);
    add_fft_suites(all);
    check_covers_catalogue(all);
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
