#pragma once
/// @file functional.h
/// Stateless neural-network ops (torch.nn.functional): every one differentiable,
/// every one dispatched to the device's plugin (backward kernels included).
///
/// @code
///   namespace F = kiln::nn::functional;
///   auto h = F::max_pool2d(F::conv2d(x, w, b, /*stride=*/1, /*padding=*/1).relu(), 2);
///   auto loss = F::cross_entropy(F::linear(h.flatten(1), w2, b2), labels);
/// @endcode

#include <cstdint>
#include <optional>
#include <string>

#include "kiln/tensor.h"

namespace kiln::nn {

/// A pair of sizes (height, width) that a single number also converts to:
/// `conv2d(x, w, {}, 2)` and `conv2d(x, w, {}, {2, 1})` both work.
struct Size2 {
  Size2(int64_t v) : h(v), w(v) {}  // NOLINT
  Size2(int64_t h_, int64_t w_) : h(h_), w(w_) {}
  int64_t h, w;
};

/// How a loss combines its per-element values.
enum class Reduction { None, Mean, Sum };

namespace functional {

/// x · weightᵀ + bias; weight is [out, in], bias [out] (optional).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});

/// 2-D cross-correlation of x [N, C, H, W] with weight [O, C/groups, kH, kW].
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, Size2 stride = 1,
              Size2 padding = 0, Size2 dilation = 1, int64_t groups = 1);

/// Max over windows; stride defaults to the kernel size.
Tensor max_pool2d(const Tensor& x, Size2 kernel_size, std::optional<Size2> stride = std::nullopt,
                  Size2 padding = 0, Size2 dilation = 1, bool ceil_mode = false);
Tensor avg_pool2d(const Tensor& x, Size2 kernel_size, std::optional<Size2> stride = std::nullopt,
                  Size2 padding = 0, bool ceil_mode = false, bool count_include_pad = true);
/// Averages into an output of exactly `output_size`.
Tensor adaptive_avg_pool2d(const Tensor& x, Size2 output_size);

/// Batch normalization of x [N, C, *]. Training: batch statistics, and the running
/// statistics (if given) are updated in place; eval: the running statistics.
/// weight/bias may be undefined (no affine transform).
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum = 0.1,
                  double eps = 1e-5);
/// Normalizes over the trailing dims `normalized_shape`.
Tensor layer_norm(const Tensor& x, IntArrayRef normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);

/// Zeroes elements with probability p and scales the rest by 1/(1-p) (training only).
/// Uses the global Philox generator, so a seed reproduces the mask on every backend.
Tensor dropout(const Tensor& x, double p = 0.5, bool training = true);

Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);

/// Rows of weight [V, D] picked by int64 `indices` of any shape → indices.shape + [D].
Tensor embedding(const Tensor& indices, const Tensor& weight);
/// torch.nn.functional.pad: `padding` holds (before, after) pairs from the last
/// dimension backwards. "constant" fills with `value` (negative padding crops);
/// "reflect" (padding below the size), "replicate" and "circular" take the edge
/// values and leave the first dimension (the batch) alone. Differentiable.
Tensor pad(const Tensor& x, IntArrayRef padding, const std::string& mode = "constant",
           double value = 0);
/// Resamples the spatial dimensions of [N, C, ...] to `size`: "nearest" (PyTorch's
/// rule, source floor(i · in / out)), "linear" (one spatial dimension) or "bilinear"
/// (two), with PyTorch's align_corners. Differentiable.
Tensor interpolate(const Tensor& x, IntArrayRef size, const std::string& mode = "nearest",
                   bool align_corners = false);
/// int64 class labels of any shape → labels.shape + [num_classes] int64 rows of 0/1.
/// num_classes -1 takes max(labels) + 1. Labels outside [0, num_classes) throw (this
/// reads the labels' range back to the host: one synchronisation).
Tensor one_hot(const Tensor& labels, int64_t num_classes = -1);

// -- losses (input first, target second, as PyTorch) ----------------------------------
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
/// logp [N, C] (log-probabilities), target [N] int64 class indices. Mean divides by
/// the number of targets that are not ignore_index.
Tensor nll_loss(const Tensor& logp, const Tensor& target, Reduction reduction = Reduction::Mean,
                int64_t ignore_index = -100);
/// log_softmax + nll_loss, with optional label smoothing ε: the loss of each sample is
/// (1 − ε)·nll + ε·mean over classes of −log p.
Tensor cross_entropy(const Tensor& logits, const Tensor& target,
                     Reduction reduction = Reduction::Mean, int64_t ignore_index = -100,
                     double label_smoothing = 0.0);
/// Sigmoid + binary cross-entropy in one numerically stable formula; target in [0, 1].
Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& target,
                                        Reduction reduction = Reduction::Mean);

}  // namespace functional
}  // namespace kiln::nn
