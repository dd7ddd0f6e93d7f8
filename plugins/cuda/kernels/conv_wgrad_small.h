// conv_wgrad_small.cu: kiln.conv2d_backward_weight without cuDNN for a network's first
// layer (1 or 3 input channels, 3×3, or 1 channel 5×5, no groups; float32/float64).
#ifndef KILN_CUDA_KERNELS_CONV_WGRAD_SMALL_H
#define KILN_CUDA_KERNELS_CONV_WGRAD_SMALL_H

#include "kiln/sdk/conv.h"
#include "kiln/sdk/op_args.h"  // sdk::TensorView
#include "launch.h"

namespace kiln::cuda {

/// Enqueues grad_w = the weight gradient of the convolution `g` (grad_y and x checked
/// and non-empty, grad_w contiguous) and returns true, deterministically; returns false
/// without doing anything where the shape is not one it is faster for (cuDNN's turn).
bool small_filter_weight_grad(const sdk::ConvGeometry& g, const sdk::TensorView& grad_y,
                              const sdk::TensorView& x, const sdk::TensorView& grad_w,
                              const Launch& l);

}  // namespace kiln::cuda

#endif  // KILN_CUDA_KERNELS_CONV_WGRAD_SMALL_H
