#pragma once
// op_suite.h — the op conformance cases: for every catalogue op (api/OPS.md), argument
// lists that are run through Kiln's frontend on the device under test and on the CPU
// reference, and compared.
//
// A case names its operands (shape, dtype, layout, values) and a function of them.
// The runner (op_runner.cpp) builds the operands on the device, runs the function,
// builds the same values on the CPU plugin — in float64 for float dtypes, so float32
// results are checked against a more precise reference — runs it again and compares
// every output within the dtype's tolerance. Cases may also compare the gradients
// backward() computes (which exercises the backward ops of the catalogue) and run
// kiln::gradcheck (finite differences, float64) on the device.
//
//   Case c;
//   c.label = "float32 [3,4]+[4] strided";
//   c.inputs = {operand({3, 4}, float32, Layout::Strided), operand({4}, float32)};
//   c.fn = [](const Operands& x, const Device&) { return Outputs{x[0] + x[1]}; };
//   c.grad = true;
//
// A case may also state its known answers (Case::expected), which every device's
// results, the CPU's included, must match.

#include <kiln/conformance/tensors.h>
#include <kiln/kiln.h>

#include <functional>
#include <string>
#include <vector>

namespace kiln::conformance {

using Operands = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;

struct Operand {
  Shape shape;
  DType dtype = DType::Float32;
  Layout layout = Layout::Contiguous;
  std::vector<double> values;  ///< row-major; converted to dtype on the CPU
  bool requires_grad = false;  ///< compare this operand's gradient (float dtypes)
};

/// How the CPU reference computes a case.
enum class Reference {
  Float64,    ///< float operands promoted to float64 (results compared in the case's dtype)
  SameDtype,  ///< the same dtypes as on the device (creation, conversion, random ops)
};

struct Case {
  std::string label;  ///< "float32 [3,4] strided", shown when the case fails
  std::vector<Operand> inputs;
  /// Runs the op(s) on `device`'s operands; returns the tensors to compare. Must
  /// create any tensor of its own on `device`.
  std::function<Outputs(const Operands&, const Device& device)> fn;
  Reference reference = Reference::Float64;
  double tolerance_scale = 1;  ///< widens the dtype's tolerance (long accumulations)
  bool grad = false;           ///< also compare the gradients of requires_grad operands
  bool gradcheck = false;      ///< also run kiln::gradcheck on the device (float64 only)
  /// Known answers: output i must hold expected[i] (row-major; NaN matches NaN, an
  /// infinity only itself) within its dtype's tolerance. This checks the CPU reference
  /// itself, where comparing with the CPU cannot: OPS.md's exact rules (integer
  /// wrap-around, NaN propagation, rounding) on every device. Empty: no known answer.
  std::vector<std::vector<double>> expected;
  /// When > 0, the known answers must hold within this many units in the last place
  /// of the output's dtype, relative (ulp_tolerance), instead of the dtype's tolerance,
  /// whose absolute part hides any error in values below it:
  ///   Case c = known("float64 small x", {x}, fn, {{9.9999999995e-11}});
  ///   c.known_ulps = 2;  // log(1 + x) for log1p fails here
  double known_ulps = 0;
};

/// All cases of one catalogue op.
struct OpSuite {
  std::string op;  ///< "kiln.add"
  /// The cases. Evaluated in the child process that runs the suite.
  std::function<std::vector<Case>()> cases;
};

/// An operand with deterministic pseudo-random values in [lo, hi).
Operand operand(const Shape& shape, DType dtype, Layout layout = Layout::Contiguous, double lo = -2,
                double hi = 2, uint32_t seed = 1);
/// An operand with the given values.
Operand operand_of(const Shape& shape, DType dtype, std::vector<double> values,
                   Layout layout = Layout::Contiguous);

/// A case with known answers (Case::expected) computed on the operands' own dtypes;
/// "(known answers)" is appended to its label.
Case known(std::string label, std::vector<Operand> inputs,
           std::function<Outputs(const Operands&)> fn, std::vector<std::vector<double>> expected);

/// "[2,3,4]"
std::string shape_text(const Shape& shape);
/// "float32 [2,3,4] strided"
std::string describe(const Operand& x);

/// Every suite, in catalogue order (api/OPS.md).
const std::vector<OpSuite>& op_suites();
/// The catalogue's op names, in order.
std::vector<std::string> catalogue_op_names();

// The parts of the catalogue, one per file.
void add_creation_suites(std::vector<OpSuite>& suites);     // ops_creation.cpp
void add_elementwise_suites(std::vector<OpSuite>& suites);  // ops_elementwise.cpp
void add_reduction_suites(std::vector<OpSuite>& suites);    // ops_reduce_linalg.cpp
void add_training_suites(std::vector<OpSuite>& suites);     // ops_training.cpp
void add_fft_suites(std::vector<OpSuite>& suites);          // ops_fft.cpp

}  // namespace kiln::conformance
