#pragma once
// The catalogue ops the frontend calls (api/OPS.md), as dense ids so each device
// caches its kernels in an array. The ABI itself only ever sees the names.

#include <cstddef>
#include <cstdint>

namespace kiln::detail {

#define KILN_CATALOGUE_OPS(X)                                                   \
  X(copy) X(fill) X(arange) X(linspace) X(random_uniform) X(random_normal)       \
  X(neg) X(abs) X(sign) X(exp) X(log) X(sqrt) X(rsqrt) X(sin) X(cos) X(tanh)     \
  X(sigmoid) X(relu) X(gelu) X(logical_not) X(clamp)                             \
  X(add) X(sub) X(mul) X(div) X(pow) X(maximum) X(minimum)                       \
  X(eq) X(ne) X(lt) X(le) X(gt) X(ge) X(logical_and) X(logical_or) X(where)     \
  X(sum) X(prod) X(mean) X(amax) X(amin) X(argmax) X(argmin) X(var)             \
  X(matmul) X(index_select) X(gather)                                           \
  X(relu_backward) X(gelu_backward) X(index_add) X(scatter_add)                \
  X(conv2d) X(conv2d_backward_input) X(conv2d_backward_weight)                 \
  X(max_pool2d) X(max_pool2d_backward) X(avg_pool2d) X(avg_pool2d_backward)    \
  X(adaptive_avg_pool2d) X(adaptive_avg_pool2d_backward)                        \
  X(batch_norm) X(batch_norm_backward) X(layer_norm) X(layer_norm_backward)    \
  X(softmax) X(log_softmax) X(softmax_backward) X(log_softmax_backward)        \
  X(dropout) X(nll_loss) X(nll_loss_backward) X(sgd_step) X(adam_step)

enum class OpId : uint16_t {
#define KILN_OP_ENUM(name) name,
  KILN_CATALOGUE_OPS(KILN_OP_ENUM)
#undef KILN_OP_ENUM
};

#define KILN_OP_COUNT(name) +1
inline constexpr size_t kNumOps = 0 KILN_CATALOGUE_OPS(KILN_OP_COUNT);
#undef KILN_OP_COUNT

/// "kiln.add" for OpId::add.
const char* op_name(OpId op);

}  // namespace kiln::detail
