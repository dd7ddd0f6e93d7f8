#include "dispatch/dispatch.h"

#include <iterator>
#include <sstream>
#include <vector>

#include "dispatch/complex_pairs.h"
#include "dispatch/fallback.h"
#include "kiln/error.h"
#include "kiln/runtime.h"
#include "op_dtype_rules.h"
#include "runtime/graph_capture.h"
#include "runtime/log.h"
#include "runtime/profiler_hooks.h"
#include "runtime/registry.h"

namespace kiln::detail {

const char* op_name(OpId op) {
  static const char* const names[] = {
#define KILN_OP_NAME(name, ...) "kiln." #name,
      KILN_OP_CATALOGUE(KILN_OP_NAME)
#undef KILN_OP_NAME
  };
  return names[static_cast<size_t>(op)];
}

int32_t op_version(OpId op) {
  static const int32_t versions[] = {
#define KILN_OP_VERSION(name, version, ...) version,
      KILN_OP_CATALOGUE(KILN_OP_VERSION)
#undef KILN_OP_VERSION
  };
  return versions[static_cast<size_t>(op)];
}

namespace {

/// The ABI's operand limit (api/OPS.md): at most this many inputs and outputs.
constexpr size_t kMaxOperands = 8;

// The catalogue's dtype rule of each op (op_dtype_rules.h, generated from api/ops.json):
// the dtypes the deciding operand may have, its class and the optional ones.
struct DtypeRule {
  uint32_t dtypes;
  bool of_output;
  uint32_t operand;
};
constexpr DtypeRule kDtypeRules[] = {
#define KILN_OP_DTYPE_RULE(name, allowed, of_output, operand) {allowed, of_output != 0, operand},
    KILN_OP_DTYPE_RULES(KILN_OP_DTYPE_RULE)
#undef KILN_OP_DTYPE_RULE
};
static_assert(std::size(kDtypeRules) == KILN_OP_CATALOGUE_SIZE);

[[noreturn, gnu::cold]] void throw_dtype_not_allowed(OpId op, const DtypeRule& rule, DType got) {
  std::string allowed;
  for (uint32_t d = 0; d < 32; ++d) {
    if (((rule.dtypes >> d) & 1u) == 0) continue;
    if (!allowed.empty()) allowed += ", ";
    allowed += dtype_name(static_cast<DType>(d));
  }
  throw Error(concat(op_name(op), ": ", rule.of_output ? "output " : "input ", rule.operand,
                     " has dtype ", dtype_name(got), ", which the op does not take (it takes ",
                     allowed, ")"));
}

[[noreturn, gnu::cold]] void throw_device_mismatch(OpId op, const TensorImpl& first,
                                                   const TensorImpl& other) {
  throw Error(concat(op_name(op), ": operands on different devices: ", first.device()->name(),
                     " and ", other.device()->name()));
}

// What the catalogue lets the frontend check for every op before it looks for a
// kernel: one device for all operands, and a deciding dtype the op takes. A wrong
// dtype is then an error naming the dtypes allowed, not "no kernel on cpu:0".
[[gnu::always_inline]] inline void check_catalogue_rules(
    OpId op, DeviceContext* dev, std::span<const TensorImpl* const> inputs,
    std::span<const TensorImpl* const> outputs) {
  const DtypeRule& rule = kDtypeRules[static_cast<size_t>(op)];
  const auto& side = rule.of_output ? outputs : inputs;
  if (rule.operand < side.size()) {
    const DType d = side[rule.operand]->dtype;
    if (((rule.dtypes >> static_cast<uint32_t>(d)) & 1u) == 0) [[unlikely]]
      throw_dtype_not_allowed(op, rule, d);
  }
  const TensorImpl& first = *(outputs.empty() ? inputs[0] : outputs[0]);
  for (const TensorImpl* t : inputs)
    if (t->device() != dev) [[unlikely]]
      throw_device_mismatch(op, first, *t);
  for (const TensorImpl* t : outputs)
    if (t->device() != dev) [[unlikely]]
      throw_device_mismatch(op, first, *t);
}

void fill_view(kiln_tensor_view& v, const TensorImpl& t) {
  v.struct_size = sizeof(kiln_tensor_view);
  v.data = t.storage->data;
  v.byte_offset = t.offset * static_cast<int64_t>(t.itemsize());
  v.shape = t.shape.data();
  v.strides = t.strides.data();
  v.ndim = static_cast<int32_t>(t.shape.size());
  v.dtype = static_cast<int32_t>(t.dtype);
  v.device = t.device()->handle();
}

// The views and argument list of one kernel call. The views are left uninitialized
// until filled: this is built on every dispatch.
struct KernelArgs {
  kiln_tensor_view in[kMaxOperands];
  kiln_tensor_view out[kMaxOperands];
  kiln_op_args args;

  KernelArgs(std::span<const TensorImpl* const> inputs, std::span<const TensorImpl* const> outputs,
             std::span<const kiln_attr> attrs)
      : args{sizeof(kiln_op_args), in,           inputs.size(), out,
             outputs.size(),       attrs.data(), attrs.size(),  nullptr} {
    fill(inputs, outputs);
  }
  KernelArgs(const KernelArgs&) = delete;  // args points into this object
  KernelArgs& operator=(const KernelArgs&) = delete;
  /// Points the views at other operands of the same counts (contiguous temporaries).
  void fill(std::span<const TensorImpl* const> inputs, std::span<const TensorImpl* const> outputs) {
    for (size_t i = 0; i < inputs.size(); ++i) fill_view(in[i], *inputs[i]);
    for (size_t i = 0; i < outputs.size(); ++i) fill_view(out[i], *outputs[i]);
  }
};

}  // namespace

std::string describe_operands(std::span<const TensorImpl* const> inputs,
                              std::span<const TensorImpl* const> outputs) {
  std::ostringstream out;
  auto one = [&](const TensorImpl* t) {
    out << dtype_name(t->dtype) << IntArrayRef(t->shape.data(), t->shape.size());
  };
  if (inputs.empty()) out << "no inputs";
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i) out << ", ";
    one(inputs[i]);
  }
  out << " -> ";
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (i) out << ", ";
    one(outputs[i]);
  }
  return out.str();
}

namespace {

std::shared_ptr<TensorImpl> contiguous_temp(const TensorImpl& t) {
  auto tmp = std::make_shared<TensorImpl>();
  tmp->storage = t.device()->allocate(static_cast<size_t>(t.numel) * t.itemsize());
  tmp->shape = t.shape;
  tmp->strides = contiguous_strides(IntArrayRef(t.shape.data(), t.shape.size()));
  tmp->numel = t.numel;
  tmp->dtype = t.dtype;
  return tmp;
}

// Runs a kernel that needs contiguous operands on contiguous temporaries:
// `run(inputs, outputs)` dispatches the op itself.
template <class Run>
void run_with_contiguous(uint32_t flags, std::span<const TensorImpl* const> inputs,
                         std::span<const TensorImpl* const> outputs, const Run& run) {
  std::vector<std::shared_ptr<TensorImpl>> keep;
  std::vector<const TensorImpl*> in(inputs.begin(), inputs.end());
  std::vector<const TensorImpl*> out(outputs.begin(), outputs.end());
  if (!(flags & KILN_KERNEL_STRIDED_INPUTS)) {
    for (auto& t : in) {
      if (t->is_contiguous()) continue;
      keep.push_back(contiguous_temp(*t));
      dispatch(OpId::copy, {t}, {keep.back().get()});
      t = keep.back().get();
    }
  }
  std::vector<std::pair<const TensorImpl*, const TensorImpl*>> write_back;
  if (!(flags & KILN_KERNEL_STRIDED_OUTPUTS)) {
    for (auto& t : out) {
      if (t->is_contiguous()) continue;
      keep.push_back(contiguous_temp(*t));
      // Filled from the output first: a kernel may read what it updates in place
      // (optimizer steps, index_add, a plugin's own op).
      dispatch(OpId::copy, {t}, {keep.back().get()});
      write_back.emplace_back(keep.back().get(), t);
      t = keep.back().get();
    }
  }
  run(std::span<const TensorImpl* const>(in), std::span<const TensorImpl* const>(out));
  for (auto [tmp, dst] : write_back) dispatch(OpId::copy, {tmp}, {dst});
}

bool layout_ok(uint32_t flags, std::span<const TensorImpl* const> inputs,
               std::span<const TensorImpl* const> outputs) {
  if (!(flags & KILN_KERNEL_STRIDED_INPUTS))
    for (auto* t : inputs)
      if (!t->is_contiguous()) return false;
  if (!(flags & KILN_KERNEL_STRIDED_OUTPUTS))
    for (auto* t : outputs)
      if (!t->is_contiguous()) return false;
  return true;
}

// Whether the native kernel takes these arguments (no supports() means all).
bool kernel_supports(const KernelSlot& slot, const kiln_op_args& args, DeviceContext* dev,
                     const char* name) {
  if (!slot.kernel.supports) return true;
  try {
    return slot.kernel.supports(slot.kernel.context, &args) != 0;
  } catch (...) {
    throw_abi_violation(dev->api()->name, concat(name, " supports()"));
  }
}

// Calls the kernel with `args` and turns its status into kiln::Error; during a graph
// capture, records the call instead.
void run_kernel(const KernelSlot& slot, const kiln_op_args& args, DeviceContext* dev,
                const char* name, std::span<const TensorImpl* const> inputs,
                std::span<const TensorImpl* const> outputs, bool op_outlives_call = true) {
  if (graph::Capture* capture = graph::active()) [[unlikely]]
    return graph::record_kernel(*capture, slot.kernel, dev, name, args, inputs, outputs);
  kiln_status* status;
  {
    // Named for the last word of a crash, exit or hang inside the kernel.
    KernelInFlight in_kernel(name, dev->name().c_str(), op_outlives_call);
    try {
      status = slot.kernel.run(slot.kernel.context, &args);
    } catch (...) {
      throw_abi_violation(dev->api()->name, name);
    }
  }
  dev->check(status, name);
}

// Inlined into dispatch() (the hot path); profiled_dispatch calls the out-of-line copy.
[[gnu::always_inline]] inline void dispatch_unprofiled(OpId op,
                                                       std::span<const TensorImpl* const> inputs,
                                                       std::span<const TensorImpl* const> outputs,
                                                       std::span<const kiln_attr> attrs) {
  KILN_CHECK(inputs.size() <= kMaxOperands && outputs.size() <= kMaxOperands, op_name(op),
             ": too many operands");
  // Complex copies and fills are real ones on the pairs' components (dispatch/complex_pairs.h).
  if ((op == OpId::copy || op == OpId::fill) &&
      (is_complex(outputs[0]->dtype) || (!inputs.empty() && is_complex(inputs[0]->dtype))))
      [[unlikely]]
    return complex_copy_or_fill(op, inputs, outputs, attrs);
  DeviceContext* dev = (outputs.empty() ? inputs[0] : outputs[0])->device();
  check_catalogue_rules(op, dev, inputs, outputs);
  const KernelSlot& slot = dev->kernel(op);
  const KernelArgs call(inputs, outputs, attrs);

  if (slot.state.load(std::memory_order_relaxed) == KernelSlot::State::Native &&
      kernel_supports(slot, call.args, dev, op_name(op))) [[likely]] {
    if (!layout_ok(slot.kernel.flags, inputs, outputs)) [[unlikely]] {
      // A copy kernel that cannot read strided input cannot make it contiguous
      // either: let the CPU plugin do it.
      if (op == OpId::copy) return run_on_cpu(op, dev, inputs, outputs, attrs);
      return run_with_contiguous(slot.kernel.flags, inputs, outputs,
                                 [&](auto in, auto out) { dispatch(op, in, out, attrs); });
    }
    return run_kernel(slot, call.args, dev, op_name(op), inputs, outputs);
  }
  run_on_cpu(op, dev, inputs, outputs, attrs);
}

}  // namespace

void dispatch(OpId op, std::span<const TensorImpl* const> inputs,
              std::span<const TensorImpl* const> outputs, std::span<const kiln_attr> attrs) {
  PluginCallScope in_plugin;  // an orderly exit waits for this op (runtime/exit_guard.h)
  if (profiler_active()) [[unlikely]] {
    struct Call {
      OpId op;
      std::span<const TensorImpl*const> inputs, outputs;
      std::span<const kiln_attr> attrs;
    } call{op, inputs, outputs, attrs};
    return profiled_dispatch(
        op_name(op), inputs, outputs,
        [](void* c) {
          auto& call = *static_cast<Call*>(c);
          dispatch_unprofiled(call.op, call.inputs, call.outputs, call.attrs);
        },
        &call);
  }
  dispatch_unprofiled(op, inputs, outputs, attrs);
}

const KernelSlot& named_kernel_or_throw(DeviceContext* dev, const std::string& name,
                                        int32_t version) {
  const KernelSlot& slot = dev->named_kernel(name, version);
  if (slot.state.load(std::memory_order_acquire) != KernelSlot::State::Native)
    throw Error(concat(name, " (version ", version, ") has no kernel on ", dev->name(),
                       ": plugin '", dev->api()->name,
                       "' does not provide it (or its get_kernel failed: see the log). An op "
                       "outside the catalogue runs only on the devices of the plugin that "
                       "defines it (loaded: ",
                       Registry::get().describe_loaded(), ")"));
  return slot;
}

void dispatch_named(const KernelSlot& slot, const std::string& name,
                    std::span<const TensorImpl* const> inputs,
                    std::span<const TensorImpl* const> outputs, std::span<const kiln_attr> attrs) {
  PluginCallScope in_plugin;
  KILN_CHECK(inputs.size() <= kMaxOperands && outputs.size() <= kMaxOperands, name,
             ": too many operands (at most ", kMaxOperands, " inputs and ", kMaxOperands,
             " outputs)");
  DeviceContext* dev = (outputs.empty() ? inputs[0] : outputs[0])->device();
  // The complex dtypes are ABI 1.3's: an older plugin never receives them.
  if (dev->api()->abi_minor < 3)
    for (auto operands : {inputs, outputs})
      for (const TensorImpl* t : operands)
        KILN_CHECK(!is_complex(t->dtype), name, ": plugin '", dev->api()->name, "' speaks ABI 1.",
                   dev->api()->abi_minor, ", which has no ", t->dtype,
                   " (complex dtypes are ABI 1.3)");
  auto run = [&] {
    KernelArgs call(inputs, outputs, attrs);
    if (!kernel_supports(slot, call.args, dev, name.c_str()))
      throw Error(concat(name, ": ", dev->name(), " declined these operands: ",
                         describe_operands(inputs, outputs), " (its supports() said no)"));
    if (layout_ok(slot.kernel.flags, inputs, outputs))
      return run_kernel(slot, call.args, dev, name.c_str(), inputs, outputs, false);
    // Copies to contiguous temporaries, then the kernel on those.
    run_with_contiguous(slot.kernel.flags, inputs, outputs, [&](auto in_c, auto out_c) {
      call.fill(in_c, out_c);
      run_kernel(slot, call.args, dev, name.c_str(), in_c, out_c, false);
    });
  };
  if (profiler_active()) [[unlikely]]
    return profiled_dispatch(
        name.c_str(), inputs, outputs, [](void* r) { (*static_cast<decltype(run)*>(r))(); }, &run);
  run();
}

}  // namespace kiln::detail
