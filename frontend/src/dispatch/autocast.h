#pragma once
// Autocast inside libkiln: the op functions call detail::autocast(op, x) on each
// floating-point input before they look at its dtype. Outside a scope that is one
// thread-local read. A hook: declared here, in the dispatch layer, for the ops, the
// autograd engine and nn; implemented by amp/ (frontend/src/LAYERS).

#include <cstdint>
#include <initializer_list>

#include "kiln/tensor.h"
#include "runtime/op_ids.h"

namespace kiln::detail {

/// What an op does with its inputs under autocast (api/ops.json's "autocast").
enum class AutocastPolicy : uint8_t {
  None,     ///< runs in its inputs' dtypes
  Lower,    ///< float32 inputs are cast to the scope's dtype
  Float32,  ///< float16/bfloat16 inputs are cast to float32
};

/// The catalogue's policy for `op` (generated from api/ops.json).
AutocastPolicy autocast_policy(OpId op);

/// True while some autocast scope is on for this thread and not suspended.
extern thread_local bool autocast_on;

Tensor autocast_slow(OpId op, const Tensor& x);

/// `x` as `op`'s policy wants it under this thread's scope for x's backend (x itself
/// when none applies: an undefined, integer or float64 x, a backend without a scope).
inline Tensor autocast(OpId op, const Tensor& x) { return autocast_on ? autocast_slow(op, x) : x; }

/// Replaces each of `inputs` by its autocast (as autocast() does); true when any
/// changed. A function then calls itself again on the cast inputs, so that its
/// gradient is recorded against them and the casts' own nodes lead back:
/// @code
///   if (detail::autocast_on) {
///     Tensor xc = x, wc = w;
///     if (detail::autocast_inputs(OpId::conv2d, {&xc, &wc})) return conv2d(xc, wc, ...);
///   }
/// @endcode
bool autocast_inputs(OpId op, std::initializer_list<Tensor*> inputs);

/// Turns autocast off on this thread for its lifetime (the backward pass), restoring
/// it after. is_autocast_enabled() still reports the scopes that are open.
class AutocastSuspend {
 public:
  AutocastSuspend();
  ~AutocastSuspend();
  AutocastSuspend(const AutocastSuspend&) = delete;
  AutocastSuspend& operator=(const AutocastSuspend&) = delete;
};

}  // namespace kiln::detail
