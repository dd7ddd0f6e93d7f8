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

/// 2-D cross-correlation of x [N, C, H, W] (or unbatched [C, H, W]) with weight
/// [O, C/groups, kH, kW]. A dilated kernel larger than the padded input throws.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, Size2 stride = 1,
              Size2 padding = 0, Size2 dilation = 1, int64_t groups = 1);

/// Pooling of x [N, C, H, W] (or unbatched [C, H, W]) over windows; stride defaults to
/// the kernel size. Output sizes are PyTorch's: rounded down, or up with ceil_mode
/// (dropping a last window that would start in the right padding); an output size
/// below 1 throws. max_pool2d: the first maximum of a window wins ties and a NaN wins
/// over every number (the last NaN, as PyTorch), and gets the gradient.
/// avg_pool2d: the divisor counts the padding inside the padded input
/// (count_include_pad) or only the input's elements.
Tensor max_pool2d(const Tensor& x, Size2 kernel_size, std::optional<Size2> stride = std::nullopt,
                  Size2 padding = 0, Size2 dilation = 1, bool ceil_mode = false);
Tensor avg_pool2d(const Tensor& x, Size2 kernel_size, std::optional<Size2> stride = std::nullopt,
                  Size2 padding = 0, bool ceil_mode = false, bool count_include_pad = true);
/// Averages x [N, C, H, W] (or [C, H, W]) into an output of exactly `output_size`.
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

/// Attention as PyTorch 2's F.scaled_dot_product_attention:
/// `dropout(softmax(q·kᵀ·scale + mask))·v` for q [..., L, E], k [..., S, E],
/// v [..., S, Ev] (the batch dims broadcast) → [..., L, Ev].
/// - attn_mask, broadcastable to [..., L, S]: bool (true: may attend) or additive, of
///   q's dtype. A row that may attend nowhere comes out NaN, as softmax gives.
/// - is_causal: query i attends keys j ≤ i (top-left aligned); not with attn_mask.
/// - dropout_p: on the probabilities, from Kiln's generator (pass 0 outside training).
/// - scale: 1/√E when not given.
/// Where the device's plugin has the fused op (the CPU's: memory that grows with L + S,
/// not L·S) it runs that, else the same computation composed of matmul, softmax and
/// dropout; set_attention_backend chooses for comparisons. Differentiable in q, k, v
/// and an additive mask (the mask's gradient through the composed version).
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& attn_mask = {}, double dropout_p = 0.0,
                                    bool is_causal = false,
                                    std::optional<double> scale = std::nullopt);

/// Which computation scaled_dot_product_attention runs on the calling thread (as
/// PyTorch's torch.nn.attention.sdpa_kernel): Auto, the fused op where the device's
/// plugin has it; Fused, the catalogue op always (falling back to the CPU plugin, as
/// any op, where the plugin lacks it); Composed, matmul, softmax and dropout.
enum class AttentionBackend { Auto, Fused, Composed };
/// Sets this thread's choice and returns the previous one.
AttentionBackend set_attention_backend(AttentionBackend backend);

/// exp(x − max) / Σ exp(x − max) along `dim` (and its log), with PyTorch's arithmetic:
/// a line holding +inf, or only −inf, comes out NaN; a −inf beside finite values is 0
/// (−inf for log_softmax).
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
/// Mean (or summed) squared and absolute differences. Shapes that differ are broadcast,
/// as PyTorch does, with a warning logged once per op (rarely what was meant).
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
/// logp [N, C] or [N, C, d1, ...] (log-probabilities over dim 1), or unbatched [C];
/// target [N] or [N, d1, ...] (or []) int64 class indices. The loss of an element is
/// −weight[t]·logp[t] (weight: optional [C] class weights, 1 without), 0 where t is
/// ignore_index. Mean divides the sum by the number of targets that are not
/// ignore_index or, with weight, by the sum of their weights (PyTorch's rule);
/// None returns target's shape.
Tensor nll_loss(const Tensor& logp, const Tensor& target, Reduction reduction = Reduction::Mean,
                int64_t ignore_index = -100, const Tensor& weight = {});
/// log_softmax over the class dim (1, or 0 for an unbatched [C] input) + nll_loss, with
/// the same shapes, class weights and reductions, and optional label smoothing ε: the
/// loss of each element is (1 − ε)·weight[t]·nll + ε·Σ_c weight[c]·(−log p_c) / C.
Tensor cross_entropy(const Tensor& logits, const Tensor& target,
                     Reduction reduction = Reduction::Mean, int64_t ignore_index = -100,
                     double label_smoothing = 0.0, const Tensor& weight = {});
/// Sigmoid + binary cross-entropy in PyTorch's numerically stable formula; target in
/// [0, 1], of the logits' shape. Gradients as PyTorch's: sigmoid(x) − t for the logits
/// (0.5 − t at x = 0), −x for the target.
Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& target,
                                        Reduction reduction = Reduction::Mean);

}  // namespace functional
}  // namespace kiln::nn
