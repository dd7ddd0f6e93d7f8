#pragma once
/// @file reference_ops.h
/// The Kiln side of the random reference suite's OpInfo table (make_golden.py's OPS):
/// for each op name a golden file may hold, the Kiln call that does what PyTorch's
/// reference did, given the inputs (already laid out as views on the device under
/// test) and the case's attributes.
///
///   const ReferenceOp* op = find_reference_op("max_dim");
///   std::vector<Tensor> outs = op->run({x}, attrs);   // {values, indices}

#include <kiln/kiln.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kiln::test::reference {

struct ReferenceOp {
  /// Runs the op; throws kiln::Error where Kiln refuses the inputs.
  std::function<std::vector<Tensor>(const std::vector<Tensor>&, const nlohmann::json&)> run;
  /// The sign of a zero result is part of the answer (ops that only move values).
  bool zero_sign_matters = false;
};

/// The op of that name, or nullptr when the suite does not know it.
const ReferenceOp* find_reference_op(const std::string& name);

/// A Python scalar of a golden file ({"kind": "int"|"float"|"bool", "v": ...}).
Scalar scalar_of(const nlohmann::json& scalar);
/// A number of a golden file: a JSON number or "nan", "inf", "-inf", "-0".
double number_of(const nlohmann::json& value);

}  // namespace kiln::test::reference
