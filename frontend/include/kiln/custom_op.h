#pragma once
/// @file custom_op.h
/// Ops that a plugin defines under its own prefix ("acme.fused_gelu"), outside Kiln's
/// catalogue (api/OPS.md): the Kiln answer to writing your own kernel. The plugin
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
/// backward call ops (examples/tutorial/custom_op.cpp).

#include <cstdint>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "kiln/device.h"
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
/// Outputs count as modified (their version goes up), like any in-place op.
void call_op(const std::string& name, const std::vector<Tensor>& inputs,
             const std::vector<Tensor>& outputs, const std::vector<OpAttribute>& attributes = {},
             int32_t version = 1);

/// True when `device`'s plugin provides the op `name` at `version` (looked up once and
/// cached, as call_op does). Throws when `device` cannot be opened.
bool has_op(const std::string& name, const Device& device, int32_t version = 1);

}  // namespace kiln
