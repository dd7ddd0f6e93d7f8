// kiln::call_op: ops a plugin defines under its own prefix, called by name.
#include "kiln/custom_op.h"

#include <span>

#include "autograd/record.h"
#include "kiln/autograd.h"
#include "ops/common.h"
#include "runtime/op_schema.h"
#include "runtime/registry.h"

namespace kiln {

namespace ag = detail::autograd_impl;

namespace {

// "acme.softplus": a non-empty prefix, a dot, a non-empty rest; never the catalogue's.
void check_name(const std::string& name) {
  const size_t dot = name.find('.');
  KILN_CHECK(dot != std::string::npos && dot > 0 && dot + 1 < name.size(), "call_op: '", name,
             "' is not an op name of the form '<prefix>.<op>' "
             "(a plugin's ops carry its prefix, e.g. 'acme.fused_gelu')");
  KILN_CHECK(name.compare(0, dot, "kiln") != 0, "call_op(", name,
             "): the 'kiln.' prefix is the catalogue's; call the op's own function (kiln::",
             name.substr(dot + 1),
             " or the Tensor method), which checks what its kernels "
             "rely on");
}

const char* type_name(OpSchema::AttributeType type) {
  switch (type) {
    case OpSchema::AttributeType::Int:
      return "INT";
    case OpSchema::AttributeType::Float:
      return "FLOAT";
    case OpSchema::AttributeType::String:
      return "STRING";
  }
  return "?";
}

const char* type_name(const std::variant<int64_t, double, std::string>& value) {
  return value.index() == 0 ? "INT" : value.index() == 1 ? "FLOAT" : "STRING";
}

template <class List>
std::string names_of(const List& list) {
  std::string out;
  for (const auto& entry : list) out += (out.empty() ? "" : ", ") + entry.name;
  return out.empty() ? "none" : out;
}

std::string shape_text(IntArrayRef shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// The shape output `o` of `schema` has for inputs of `shapes`; throws naming `what`
// when the output has no rule or the inputs do not broadcast.
std::vector<int64_t> output_shape(const OpSchema& schema, size_t o,
                                  const std::vector<std::vector<int64_t>>& shapes,
                                  const std::string& what) {
  const OpSchema::Output& out = schema.outputs[o];
  switch (out.shape) {
    case OpSchema::ShapeRule::None:
      KILN_FAIL(what, ": output ", o, " ('", out.name,
                "') has no shape rule in the schema of plugin '", schema.plugin,
                "'; allocate it yourself and use kiln::call_op");
    case OpSchema::ShapeRule::SameAs:
      return shapes.at(static_cast<size_t>(out.shape_input));
    case OpSchema::ShapeRule::Scalar:
      return {};
    case OpSchema::ShapeRule::Broadcast: {
      detail::SmallDims shape(shapes.at(0).begin(), shapes.at(0).end());
      for (size_t i = 1; i < shapes.size(); ++i) {
        const std::vector<int64_t>& next = shapes[i];
        shape = detail::broadcast_shapes(IntArrayRef(shape.data(), shape.size()),
                                         IntArrayRef(next.data(), next.size()), what.c_str());
      }
      return {shape.begin(), shape.end()};
    }
  }
  return {};
}

std::vector<std::vector<int64_t>> shapes_of(const std::vector<Tensor>& tensors) {
  std::vector<std::vector<int64_t>> shapes;
  for (const Tensor& t : tensors) shapes.emplace_back(t.shape().begin(), t.shape().end());
  return shapes;
}

// Checks a call against the op's declared schema (arity, attributes, dtypes, output
// shapes) before any kernel runs; returns the attributes to pass: the caller's, then
// the defaults of declared attributes the call leaves out.
std::vector<OpAttribute> check_schema(const OpSchema& schema, const std::string& what,
                                      const std::vector<Tensor>& inputs,
                                      const std::vector<Tensor>& outputs,
                                      const std::vector<OpAttribute>& attributes) {
  const std::string declared = " (the schema of plugin '" + schema.plugin + "')";
  KILN_CHECK(inputs.size() == schema.inputs.size(), what, ": ", inputs.size(),
             " inputs, but the op takes ", schema.inputs.size(), " (", names_of(schema.inputs), ")",
             declared);
  KILN_CHECK(outputs.size() == schema.outputs.size(), what, ": ", outputs.size(),
             " outputs, but the op writes ", schema.outputs.size(), " (", names_of(schema.outputs),
             ")", declared);

  std::vector<OpAttribute> passed = attributes;
  for (size_t i = 0; i < attributes.size(); ++i) {
    const OpAttribute& a = attributes[i];
    for (size_t j = 0; j < i; ++j)
      KILN_CHECK(attributes[j].name != a.name, what, ": attribute '", a.name, "' given twice");
    auto it = std::find_if(schema.attributes.begin(), schema.attributes.end(),
                           [&](const OpSchema::Attribute& d) { return d.name == a.name; });
    KILN_CHECK(it != schema.attributes.end(), what, ": attribute '", a.name,
               "' is not declared; the op's attributes are ", names_of(schema.attributes),
               declared);
    const size_t expected = static_cast<size_t>(it->type);
    KILN_CHECK(a.value.index() == expected, what, ": attribute '", a.name, "' is ",
               type_name(it->type), ", but the call passes ", type_name(a.value),
               it->type == OpSchema::AttributeType::Float ? " (write 1.0, not 1)" : "", declared);
  }
  for (const OpSchema::Attribute& d : schema.attributes) {
    auto given = std::find_if(attributes.begin(), attributes.end(),
                              [&](const OpAttribute& a) { return a.name == d.name; });
    if (given != attributes.end()) continue;
    KILN_CHECK(d.optional, what, ": needs the attribute '", d.name, "' (", type_name(d.type), ")",
               declared);
    if (d.default_value) {
      OpAttribute a(d.name, int64_t{0});
      a.value = *d.default_value;
      passed.push_back(std::move(a));
    }
  }

  const std::vector<Tensor>& deciding_list = schema.dtype_of_output ? outputs : inputs;
  const Tensor& deciding = deciding_list.at(static_cast<size_t>(schema.dtype_operand));
  const char* role = schema.dtype_of_output ? "output" : "input";
  KILN_CHECK(std::find(schema.dtypes.begin(), schema.dtypes.end(), deciding.dtype()) !=
                 schema.dtypes.end(),
             what, ": ", role, " ", schema.dtype_operand, " has dtype ",
             dtype_name(deciding.dtype()), ", outside the op's dtype class '", schema.dtype_class,
             "'", declared);
  if (schema.one_dtype) {
    auto same = [&](const std::vector<Tensor>& list, const char* r) {
      for (size_t i = 0; i < list.size(); ++i)
        KILN_CHECK(list[i].dtype() == deciding.dtype(), what, ": ", r, " ", i, " has dtype ",
                   dtype_name(list[i].dtype()), ", but the op takes one dtype (", role, " ",
                   schema.dtype_operand, "'s, ", dtype_name(deciding.dtype()), ")", declared);
    };
    same(inputs, "input");
    same(outputs, "output");
  }

  const std::vector<std::vector<int64_t>> in_shapes = shapes_of(inputs);
  for (size_t o = 0; o < outputs.size(); ++o) {
    const OpSchema::Output& out = schema.outputs[o];
    if (out.shape != OpSchema::ShapeRule::None) {
      const std::vector<int64_t> expected = output_shape(schema, o, in_shapes, what);
      KILN_CHECK(outputs[o].shape() == IntArrayRef(expected.data(), expected.size()), what,
                 ": output ", o, " ('", out.name, "') has shape ", shape_text(outputs[o].shape()),
                 ", but the schema's rule gives ", shape_text({expected.data(), expected.size()}),
                 declared);
    }
    if (out.dtype || !inputs.empty()) {
      const DType expected =
          out.dtype ? *out.dtype : inputs[static_cast<size_t>(out.dtype_input)].dtype();
      KILN_CHECK(outputs[o].dtype() == expected, what, ": output ", o, " ('", out.name,
                 "') has dtype ", dtype_name(outputs[o].dtype()), ", but the schema gives ",
                 dtype_name(expected), declared);
    }
  }
  return passed;
}
}  // namespace

void call_op(const std::string& name, const std::vector<Tensor>& inputs,
             const std::vector<Tensor>& outputs, const std::vector<OpAttribute>& attributes,
             int32_t version) {
  check_name(name);
  const std::string what = "call_op(" + name + ")";
  KILN_CHECK(version >= 1, what, ": version ", version, " (op versions start at 1)");
  KILN_CHECK(!inputs.empty() || !outputs.empty(), what, ": no operands");
  constexpr size_t kMax = 8;  // the dispatcher's operand limit
  KILN_CHECK(inputs.size() <= kMax && outputs.size() <= kMax, what, ": ", inputs.size(),
             " inputs and ", outputs.size(), " outputs; at most ", kMax, " of each");

  std::vector<const detail::TensorImpl*> in, out;
  detail::DeviceContext* device = nullptr;
  auto take = [&](const Tensor& t, const char* role, size_t i,
                  std::vector<const detail::TensorImpl*>& into) {
    KILN_CHECK(t.defined(), what, ": ", role, " ", i, " is an undefined tensor");
    const detail::TensorImpl* impl = t.impl().get();
    if (!device) device = impl->device();
    KILN_CHECK(impl->device() == device, what, ": expected all operands on one device, but ", role,
               " ", i, " is on ", impl->device()->name(), " and the first on ", device->name(),
               " (move one with .to(device))");
    into.push_back(impl);
  };
  for (size_t i = 0; i < inputs.size(); ++i) take(inputs[i], "input", i, in);
  for (size_t i = 0; i < outputs.size(); ++i) take(outputs[i], "output", i, out);

  // A declared op's call is checked against its schema before any kernel sees it:
  // the schema of the plugin that runs the kernel (another plugin's op of the same
  // name is not bound by it).
  std::vector<OpAttribute> with_defaults;
  const std::vector<OpAttribute>* passed = &attributes;
  const OpSchema* schema = detail::find_op_schema(name, version);
  if (schema && device && schema->plugin == device->api()->name) {
    with_defaults = check_schema(*schema, what, inputs, outputs, attributes);
    passed = &with_defaults;
  }

  if (is_grad_enabled()) {
    for (size_t i = 0; i < inputs.size(); ++i)
      KILN_CHECK(!ag::requires_grad(inputs[i]), what, ": input ", i, " requires grad, but ",
                 "autograd does not record a plugin-defined op; call it inside a "
                 "kiln::NoGradGuard, or make it differentiable with a "
                 "kiln::autograd::Function whose backward computes its gradient");
    for (size_t i = 0; i < outputs.size(); ++i)
      KILN_CHECK(!ag::requires_grad(outputs[i]), what, ": output ", i,
                 " requires grad, and "
                 "writing it in place would not be recorded; call it inside a "
                 "kiln::NoGradGuard (as optimizer steps do)");
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    KILN_CHECK(!out[i]->has_internal_overlap(), what, ": output ", i,
               " has elements that overlap (an expanded view); call .contiguous() first");

  std::vector<kiln_attr> attrs;
  attrs.reserve(passed->size());
  for (const OpAttribute& a : *passed) {
    KILN_CHECK(!a.name.empty(), what, ": an attribute without a name");
    if (auto* i = std::get_if<int64_t>(&a.value))
      attrs.push_back(detail::int_attr(a.name.c_str(), *i));
    else if (auto* f = std::get_if<double>(&a.value))
      attrs.push_back(detail::float_attr(a.name.c_str(), *f));
    else
      attrs.push_back(detail::string_attr(a.name.c_str(), std::get<std::string>(a.value).c_str()));
  }
  // Only a call that reaches a kernel counts as a write: the outputs' versions go up
  // once the op is known to exist (the kernel may still fail part-way).
  const detail::KernelSlot& slot = detail::named_kernel_or_throw(device, name, version);
  for (const Tensor& t : outputs) t.impl()->storage->version++;
  detail::dispatch_named(slot, name, in, out, attrs);
}

bool has_op(const std::string& name, const Device& device, int32_t version) {
  detail::DeviceContext* context = detail::Registry::get().resolve(device);
  return context->named_kernel(name, version).state.load(std::memory_order_acquire) ==
         detail::KernelSlot::State::Native;
}

VendorOp::VendorOp(const std::string& name, int32_t version) {
  check_name(name);
  std::optional<OpSchema> schema = op_schema(name, version);
  KILN_CHECK(schema.has_value(), "VendorOp(", name,
             "): no loaded plugin declares the op at version ", version,
             " (kiln-info lists the declared ops; a plugin declares them through the "
             "extension \"kiln.op_schemas.v1\")");
  schema_ = std::move(*schema);
}

std::vector<std::vector<int64_t>> VendorOp::output_shapes(
    const std::vector<std::vector<int64_t>>& input_shapes) const {
  const std::string what = "VendorOp(" + schema_.name + ")";
  KILN_CHECK(input_shapes.size() == schema_.inputs.size(), what, ": ", input_shapes.size(),
             " input shapes, but the op takes ", schema_.inputs.size(), " inputs (",
             names_of(schema_.inputs), ")");
  std::vector<std::vector<int64_t>> shapes;
  for (size_t o = 0; o < schema_.outputs.size(); ++o)
    shapes.push_back(output_shape(schema_, o, input_shapes, what));
  return shapes;
}

std::vector<Tensor> VendorOp::run(const std::vector<Tensor>& inputs,
                                  const std::vector<OpAttribute>& attributes) const {
  const std::string what = "VendorOp(" + schema_.name + ")";
  for (size_t i = 0; i < inputs.size(); ++i)
    KILN_CHECK(inputs[i].defined(), what, ": input ", i, " is an undefined tensor");
  const std::vector<std::vector<int64_t>> shapes = output_shapes(shapes_of(inputs));
  KILN_CHECK(!inputs.empty(), what,
             ": an op without inputs has no device to run on; "
             "allocate its outputs yourself and use kiln::call_op");
  std::vector<Tensor> outputs;
  for (size_t o = 0; o < schema_.outputs.size(); ++o) {
    const OpSchema::Output& out = schema_.outputs[o];
    const DType dtype =
        out.dtype ? *out.dtype : inputs[static_cast<size_t>(out.dtype_input)].dtype();
    outputs.push_back(empty(IntArrayRef(shapes[o].data(), shapes[o].size()),
                            TensorOptions(dtype).device(inputs[0].device())));
  }
  bool record = false;
  if (is_grad_enabled())
    for (const Tensor& t : inputs) record |= t.requires_grad();
  if (!record) {
    call_op(schema_.name, inputs, outputs, attributes, schema_.version);
    return outputs;
  }
  KILN_CHECK(!schema_.gradient.empty(), what,
             ": an input requires grad, but the schema declares no \"gradient\" op; run it "
             "inside a kiln::NoGradGuard, or wrap it in a kiln::autograd::Function");
  KILN_CHECK(outputs.size() == 1, what, ": autograd records an op of one output; this one writes ",
             outputs.size(), " (wrap it in a kiln::autograd::Function)");
  {
    NoGradGuard no_grad;
    call_op(schema_.name, inputs, outputs, attributes, schema_.version);
  }
  // Backward runs the gradient op on (inputs..., grad_output): one gradient per input.
  auto ctx = std::make_shared<autograd::AutogradContext>();
  ctx->save_for_backward(inputs);
  const std::string gradient = schema_.gradient;
  return {autograd::detail::record_function(
      schema_.name, std::move(ctx), inputs, outputs[0],
      [gradient, attributes, what](autograd::AutogradContext& c, std::vector<Tensor> grads) {
        std::vector<Tensor> operands = c.saved();
        const size_t num_inputs = operands.size();
        operands.push_back(grads.at(0).contiguous());
        std::vector<Tensor> result = VendorOp(gradient).run(operands, attributes);
        KILN_CHECK(result.size() == num_inputs, what, ": its gradient op ", gradient, " wrote ",
                   result.size(), " outputs; expected one gradient per input (", num_inputs, ")");
        return result;
      })};
}

Tensor VendorOp::operator()(const std::vector<Tensor>& inputs,
                            const std::vector<OpAttribute>& attributes) const {
  KILN_CHECK(schema_.outputs.size() == 1, "VendorOp(", schema_.name, "): the op writes ",
             schema_.outputs.size(), " outputs; call run() for all of them");
  return run(inputs, attributes).front();
}

}  // namespace kiln
