#pragma once
/// @file custom_op.h
/// Ops that a plugin defines under its own prefix ("acme.fused_gelu"), outside Kiln's
/// catalogue (share/doc/kiln/OPS.md): the Kiln answer to writing your own kernel. The plugin
/// returns a kernel for the name from get_kernel, as for any catalogue op (the plugin
/// kit: one KernelTable entry); the program calls it by name:
///
/// @code
///   kiln::load_plugins("/opt/acme/lib");                     // or the default folders
///   auto x = kiln::randn({1024}).to("acme:0");
///   auto y = kiln::empty_like(x);
///   kiln::call_op("acme.softplus", {x}, {y}, {{"beta", 2.0}});
/// @endcode
///
/// The caller allocates the outputs (as the frontend does for catalogue ops); inputs
/// and outputs must all live on one device, whose plugin must provide the op: there is
/// no CPU fallback for an op the CPU plugin does not know. The call is not recorded by
/// autograd: a differentiable custom op is a kiln::autograd::Function whose forward and
/// backward call ops (share/doc/kiln/examples/tutorial/custom_op.cpp, with its plugin in
/// myops_plugin/ beside it).
///
/// A plugin may also declare its ops' schemas (inputs, outputs, typed attributes, dtypes,
/// output shape rules: OpSchema below, share/doc/kiln/vendor-ops.md). call_op then checks
/// every call against the schema, and a VendorOp allocates the outputs and, given the
/// schema's gradient op, records autograd.

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "kiln/device.h"
#include "kiln/dtype.h"
#include "kiln/tensor.h"

namespace kiln {

/// One attribute of a call_op: an integer, a float or a string, passed to the kernel
/// as a kiln_attr of that type (KILN_ATTR_INT, _FLOAT, _STRING) under `name`.
struct OpAttribute {
  OpAttribute(std::string name, double value) : name(std::move(name)), value(value) {}
  /// Any integer type (int, size_t, int64_t...), passed as int64.
  template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
  OpAttribute(std::string name, I value)
      : name(std::move(name)), value(static_cast<int64_t>(value)) {}
  OpAttribute(std::string name, std::string value)
      : name(std::move(name)), value(std::move(value)) {}
  OpAttribute(std::string name, const char* value)
      : name(std::move(name)), value(std::string(value)) {}

  std::string name;
  std::variant<int64_t, double, std::string> value;
};

/// Runs the plugin-defined op `name` at `version` (at least 1) with `inputs`, writing
/// `outputs` (allocated by the caller, written in place; at most 8 of each), with
/// `attributes` in the order given. Throws kiln::Error, leaving the outputs' contents
/// unspecified only when the kernel itself failed, when:
///   - `name` is not "<prefix>.<op>" or uses the catalogue's "kiln." prefix (those ops
///     have functions of their own, which validate what their kernels rely on);
///   - an operand is undefined, or operands live on different devices;
///   - grad mode is on and an input or output requires grad (the call would not be
///     recorded; run it inside a NoGradGuard or an autograd::Function);
///   - an output's elements overlap (an expanded view);
///   - the device's plugin does not provide the op, or its supports() declines the
///     operands; the plugin's kernel fails (its message, naming the op and device).
///   - a plugin declared the op's schema (op_schema()) and the call does not match it:
///     the number of inputs or outputs, an attribute undeclared, given twice, of
///     another type or missing (an omitted optional one with a "default" is passed with
///     that value), a dtype outside the op's class, or an output whose shape or dtype
///     differs from what the schema's rules give.
/// Outputs count as modified (their version goes up), like any in-place op.
void call_op(const std::string& name, const std::vector<Tensor>& inputs,
             const std::vector<Tensor>& outputs, const std::vector<OpAttribute>& attributes = {},
             int32_t version = 1);

/// True when `device`'s plugin provides the op `name` at `version` (looked up once and
/// cached, as call_op does). Throws when `device` cannot be opened.
bool has_op(const std::string& name, const Device& device, int32_t version = 1);

/// The schema a plugin declared for one of its ops (the extension "kiln.op_schemas.v1",
/// share/doc/kiln/ABI.md "Vendor op schemas"), validated when the plugin loaded. With a schema,
/// call_op checks each call against it, and a VendorOp allocates the outputs.
struct OpSchema {
  enum class AttributeType { Int, Float, String };
  /// How an output's shape follows from the inputs' ("shape" in the JSON).
  enum class ShapeRule {
    None,       ///< not declared: call_op works, a VendorOp cannot allocate the output
    SameAs,     ///< "input N": the shape of input `shape_input`
    Broadcast,  ///< "broadcast": the broadcast of every input's shape
    Scalar,     ///< "scalar": rank 0
  };
  struct Input {
    std::string name;
    std::string description;
  };
  struct Output {
    std::string name;
    std::string description;
    ShapeRule shape = ShapeRule::None;
    int shape_input = 0;  ///< for ShapeRule::SameAs
    /// The output's dtype: that of input `dtype_input` (the default, input 0), or
    /// `dtype` when the schema names one ("dtype": "bool").
    int dtype_input = 0;
    std::optional<DType> dtype;
  };
  struct Attribute {
    std::string name;
    AttributeType type = AttributeType::Float;
    bool optional = false;
    /// Passed to the kernel when the call omits the attribute ("default").
    std::optional<std::variant<int64_t, double, std::string>> default_value;
    std::string description;
  };

  std::string name;  ///< "acme.swish"
  int32_t version = 1;
  std::string plugin;  ///< the plugin that declared it
  std::vector<Input> inputs;
  std::vector<Output> outputs;
  std::vector<Attribute> attributes;
  std::string dtype_class;       ///< a catalogue dtype class: "float", "all", ...
  std::vector<DType> dtypes;     ///< its members
  bool dtype_of_output = false;  ///< the class constrains output `dtype_operand`...
  int dtype_operand = 0;         ///< ...or input `dtype_operand` ("of", default input 0)
  bool one_dtype = false;        ///< every operand has that operand's dtype
  bool differentiable = false;
  std::string gradient;   ///< the backward op's name ("gradient"), or empty
  std::string semantics;  ///< free text
};

/// The schemas of every loaded plugin's declared ops, sorted by name and version.
std::vector<OpSchema> vendor_ops();
/// The schema of `name` at `version`, or nullopt when no loaded plugin declared it.
std::optional<OpSchema> op_schema(const std::string& name, int32_t version = 1);

/// A typed handle on a declared vendor op: outputs allocated from the schema's shape
/// rules, on the inputs' device, then call_op (which checks arity, attributes and dtypes
/// against the schema).
///
/// @code
///   kiln::VendorOp swish("acme.swish");                  // throws if not declared
///   kiln::Tensor y = swish({x}, {{"beta", 1.0}});        // one output
///   std::vector<kiln::Tensor> outs = swish.run({x});     // every output
/// @endcode
///
/// Autograd: when grad mode is on and an input requires grad, an op of one output
/// whose schema names a "gradient" op is recorded; backward runs that op on (the
/// inputs..., the output's gradient) with the same attributes, and takes its outputs as
/// the inputs' gradients, one each (first order only). Without a "gradient", such a
/// call throws: wrap the op in a kiln::autograd::Function (share/doc/kiln/vendor-ops.md).
class VendorOp {
 public:
  /// Throws kiln::Error when no loaded plugin declared `name` at `version`.
  explicit VendorOp(const std::string& name, int32_t version = 1);
  const OpSchema& schema() const { return schema_; }
  /// Runs the op and returns its outputs, in the schema's order. Throws kiln::Error
  /// when an output has no shape rule, or for anything call_op refuses.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs,
                          const std::vector<OpAttribute>& attributes = {}) const;
  /// run() for an op with exactly one output.
  Tensor operator()(const std::vector<Tensor>& inputs,
                    const std::vector<OpAttribute>& attributes = {}) const;
  /// The shapes run() allocates for `input_shapes` (a broadcast that fails throws).
  std::vector<std::vector<int64_t>> output_shapes(
      const std::vector<std::vector<int64_t>>& input_shapes) const;

 private:
  OpSchema schema_;
};

}  // namespace kiln
