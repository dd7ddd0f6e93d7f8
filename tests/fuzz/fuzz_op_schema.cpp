// libFuzzer target: the validator of plugin-declared op schemas
// (kiln::detail::parse_op_schema, frontend/src/runtime/op_schema.h), fed the fuzz input as
// the JSON text a plugin's "kiln.op_schemas.v1" table hands over for "fuzz.op".
//
// Contract under test: whatever the bytes (not JSON, deep, huge, wrong types, numbers
// out of range, invalid UTF-8), the validator returns a schema or throws kiln::Error,
// never anything else and never crashes; a schema it returns keeps the limits and
// rules it promises (operand and attribute counts, operand indices in range, a dtype
// class with members).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "kiln/error.h"
#include "runtime/op_schema.h"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_op_schema: accepted a schema that breaks a rule: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  kiln::OpSchema schema;
  try {
    schema = kiln::detail::parse_op_schema("fuzz", "fuzz.op", 1, text);
  } catch (const kiln::Error&) {
    return 0;  // refused, with a message: the expected outcome for most inputs
  }
  using kiln::detail::kMaxSchemaAttributes;
  using kiln::detail::kMaxSchemaOperands;
  check(schema.name == "fuzz.op" && schema.version == 1, "name and version");
  check(schema.inputs.size() <= kMaxSchemaOperands, "at most 8 inputs");
  check(!schema.outputs.empty() && schema.outputs.size() <= kMaxSchemaOperands, "1 to 8 outputs");
  check(schema.attributes.size() <= kMaxSchemaAttributes, "at most 32 attributes");
  check(!schema.dtypes.empty(), "a dtype class with members");
  for (const auto& out : schema.outputs) {
    if (out.shape == kiln::OpSchema::ShapeRule::SameAs)
      check(static_cast<size_t>(out.shape_input) < schema.inputs.size(), "shape input in range");
    if (out.shape == kiln::OpSchema::ShapeRule::Broadcast)
      check(!schema.inputs.empty(), "broadcast of at least one input");
    check(out.dtype_input == 0 || static_cast<size_t>(out.dtype_input) < schema.inputs.size(),
          "dtype input in range");
  }
  const size_t deciding = schema.dtype_of_output ? schema.outputs.size() : schema.inputs.size();
  check(static_cast<size_t>(schema.dtype_operand) < deciding, "dtypes.of in range");
  check(schema.gradient.empty() || schema.differentiable, "a gradient only if differentiable");
  return 0;
}
