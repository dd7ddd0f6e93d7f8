// What F::scaled_dot_product_attention's composed version and nn::MultiheadAttention's
// attention-weights path share: the masks as additive tensors and the softmax of the
// scores.
#pragma once

#include <cstdint>

#include "kiln/tensor.h"

namespace kiln::nn::attention {

/// A mask as an additive one of `dtype`: a boolean `mask` gives −∞ where it equals
/// `blocked` and 0 elsewhere (F::scaled_dot_product_attention's masks block where
/// false, the modules' where true); a floating one is converted to `dtype`.
Tensor additive_mask(const Tensor& mask, bool blocked, DType dtype);

/// −∞ above the diagonal of [l, s], 0 elsewhere (top-left aligned).
Tensor causal_mask(int64_t l, int64_t s, DType dtype, const Device& device);

/// softmax(q·kᵀ·scale + mask) over the last dim, with the causal mask added when
/// `causal`: the attention weights before dropout.
Tensor weights(const Tensor& q, const Tensor& k, const Tensor& mask, bool causal, double scale);

}  // namespace kiln::nn::attention
