#pragma once
// The dispatcher: one catalogue op, a list of operand views, one indirect call.
//
// Kernels are looked up once per (device, op) and cached in the DeviceContext.
// When the device's plugin lacks the op or declines the arguments, the op runs on
// the CPU plugin on host copies of the operands (counted in the fallback report);
// when a kernel cannot take strided operands, contiguous temporaries are made.

#include <initializer_list>
#include <span>
#include <string>

#include "core/tensor_impl.h"
#include "kiln/c_api.h"
#include "runtime/op_ids.h"

namespace kiln::detail {

struct KernelSlot;
class DeviceContext;

inline kiln_attr float_attr(const char* name, double v) {
  kiln_attr a{};
  a.name = name;
  a.type = KILN_ATTR_FLOAT;
  a.value.f = v;
  return a;
}
inline kiln_attr int_attr(const char* name, int64_t v) {
  kiln_attr a{};
  a.name = name;
  a.type = KILN_ATTR_INT;
  a.value.i = v;
  return a;
}
inline kiln_attr string_attr(const char* name, const char* v) {
  kiln_attr a{};
  a.name = name;
  a.type = KILN_ATTR_STRING;
  a.value.s = v;
  return a;
}

inline kiln_attr ints_attr(const char* name, const int64_t* v, int64_t count) {
  kiln_attr a{};
  a.name = name;
  a.type = KILN_ATTR_INTS;
  a.count = count;
  a.value.ints = v;
  return a;
}

using Operands = std::initializer_list<const TensorImpl*>;

/// Runs `op` with the given operands (already validated, outputs allocated) on the
/// device of the first output (or input). Throws kiln::Error on failure.
void dispatch(OpId op, std::span<const TensorImpl* const> inputs,
              std::span<const TensorImpl* const> outputs, std::span<const kiln_attr> attrs = {});

inline void dispatch(OpId op, Operands inputs, Operands outputs,
                     std::span<const kiln_attr> attrs = {}) {
  dispatch(op, std::span(inputs.begin(), inputs.size()), std::span(outputs.begin(), outputs.size()),
           attrs);
}

/// Runs the op `Attrs::op` with the attributes `attrs`, its struct from the generated
/// ops/op_attrs.h (detail::attrs::<op>, one field per catalogue attribute).
template <class Attrs>
void dispatch(const Attrs& attrs, Operands inputs, Operands outputs) {
  dispatch(Attrs::op, inputs, outputs, attrs.pack());
}

/// Runs the kernel `slot` (named_kernel_or_throw's) of the op `name` that is not in the
/// catalogue (a plugin's own, "acme.fused_gelu"; kiln::call_op validated the operands)
/// on the device of the first output (or input). No CPU fallback: throws kiln::Error
/// when its supports() declines the operands or the kernel fails.
void dispatch_named(const KernelSlot& slot, const std::string& name,
                    std::span<const TensorImpl* const> inputs,
                    std::span<const TensorImpl* const> outputs, std::span<const kiln_attr> attrs);

/// The kernel of a plugin-defined op on `dev`; throws kiln::Error (naming the device,
/// its plugin and the loaded plugins) when the plugin does not provide it.
const KernelSlot& named_kernel_or_throw(DeviceContext* dev, const std::string& name,
                                        int32_t version);

}  // namespace kiln::detail
