#pragma once
/// @file amp.h
/// Mixed precision: autocast scopes and loss scaling (torch.autocast and
/// torch.amp.GradScaler).
///
/// @code
///   kiln::amp::GradScaler scaler;                       // float16 needs it; bfloat16 not
///   for (auto& batch : loader) {
///     opt.zero_grad();
///     kiln::Tensor loss;
///     {
///       kiln::autocast scope(kiln::default_device().backend(), kiln::float16);
///       loss = criterion(model->forward(batch.input), batch.target);  // convs in float16
///     }
///     scaler.scale(loss).backward();  // backward outside the scope, as in PyTorch
///     scaler.step(opt);               // skipped when a gradient is inf or NaN
///     scaler.update();
///   }
/// @endcode
///
/// Inside a scope, on devices of the scope's backend, each catalogue op with an
/// autocast policy (share/doc/kiln/OPS.md, "Autocast") casts its floating-point inputs
/// first: `lower` ops (matmul, linear, conv2d) to the scope's dtype, `float32` ops
/// (exp, log, pow, softmax, log_softmax, the norms, nll_loss, sum, prod, ...) from
/// float16/bfloat16 to float32. Every other op runs in its inputs' dtypes, mixed
/// dtypes promoting as usual (a bfloat16 times a float32 is float32). Casts are
/// differentiable, so gradients reach float32 parameters in float32. Float64 inputs
/// are never cast. The cast of a parameter (a leaf that requires grad) is made once per
/// outermost scope and reused, as PyTorch caches it. Scopes are per thread and nest;
/// the backward pass runs without autocast.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "kiln/dtype.h"
#include "kiln/nn/module.h"
#include "kiln/tensor.h"

namespace kiln {

namespace optim {
class Optimizer;
}

/// Enables (or, with `enabled` false, disables) autocast to `dtype` for the ops this
/// thread runs on devices of backend `device_type` ("cpu", "cuda", ...) for the
/// scope's lifetime; the previous setting comes back when it ends. `dtype` must be
/// float16 or bfloat16.
class autocast {
 public:
  explicit autocast(std::string device_type, DType dtype = DType::BFloat16, bool enabled = true);
  ~autocast();
  autocast(const autocast&) = delete;
  autocast& operator=(const autocast&) = delete;

 private:
  std::string device_type_;
  bool previous_enabled_;
  DType previous_dtype_;
};

/// Whether autocast is on for `device_type` on this thread.
bool is_autocast_enabled(std::string_view device_type);
/// The dtype `lower` ops cast to on `device_type` (bfloat16 until a scope says
/// otherwise).
DType get_autocast_dtype(std::string_view device_type);
/// Drops this thread's cached parameter casts (done when the outermost scope ends).
void clear_autocast_cache();

namespace amp {

/// torch.amp.GradScaler's options and defaults.
struct GradScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  /// A disabled scaler passes everything through (scale() returns the loss itself).
  bool enabled = true;
};

/// Dynamic loss scaling for float16 training: the loss is multiplied by a large
/// factor so small gradients survive float16, the gradients are divided by it before
/// the optimizer step, and a step whose gradients hold an inf or NaN is skipped and
/// the factor halved; after `growth_interval` clean steps it doubles.
class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {});

  /// loss times the current scale (a float32 0-d tensor on the loss's device; the
  /// product's dtype follows the usual promotion).
  Tensor scale(const Tensor& loss);
  /// Divides every gradient of `optimizer`'s parameters by the scale in place and
  /// records whether any is (or becomes) inf or NaN: one kernel per device per (up
  /// to) 7 gradients, and no host synchronization until step(). Throws if called
  /// twice for one optimizer before update(), and for float16 gradients (PyTorch's
  /// rule: keep float32 parameters and run the forward pass under autocast).
  void unscale_(optim::Optimizer& optimizer);
  /// unscale_ (unless done already), then optimizer.step() unless a gradient was
  /// inf or NaN. Returns whether the step ran (reading the flag back is this
  /// scaler's one host synchronization per step). Throws when no parameter has a
  /// gradient.
  bool step(optim::Optimizer& optimizer);
  /// Adjusts the scale after the step(s) of this iteration: backoff_factor times if
  /// any unscaled gradient was inf or NaN, growth_factor times after growth_interval
  /// clean iterations in a row; a scale that would leave float32's normal range
  /// stays. `new_scale` sets it outright instead (the growth count stays).
  void update(std::optional<double> new_scale = std::nullopt);

  double get_scale() const { return scale_; }
  bool is_enabled() const { return options_.enabled; }
  /// The steps in a row without inf/NaN since the last change of scale.
  int64_t growth_tracker() const { return growth_tracker_; }

  /// "scale", "growth_factor", "backoff_factor", "growth_interval" and
  /// "growth_tracker", as 0-d float64 tensors (PyTorch's keys, without the
  /// underscore of "_growth_tracker").
  nn::StateDict state_dict() const;
  /// Restores what state_dict() produced; throws kiln::Error naming the key, and
  /// changing nothing, when one is missing or unknown, not one floating-point value or
  /// out of range (a scale that is not a positive normal float32, a growth factor <= 1,
  /// a backoff factor outside (0, 1), ...).
  void load_state_dict(const nn::StateDict& dict);
  /// The checks of load_state_dict alone: throws the same kiln::Error for the same
  /// `dict`, and changes nothing either way.
  void check_state_dict(const nn::StateDict& dict) const;

 private:
  GradScalerOptions options_;
  double scale_;
  int64_t growth_tracker_ = 0;
  // Per optimizer unscaled this iteration: its found-inf flag per device (float32,
  // 1 element, nonzero when a gradient was inf or NaN).
  std::map<const optim::Optimizer*, std::map<std::string, Tensor>> found_inf_;
  std::map<const optim::Optimizer*, bool> stepped_;
};

}  // namespace amp
}  // namespace kiln
