// kernels/conv_winograd.h — 3x3 stride-1 convolutions by Winograd's F(2x2, 3x3).
//
// Each 2x2 block of outputs ("tile") is computed from a 4x4 patch of the input:
//
//   Y = Aᵀ [ Σ_c (G g_c Gᵀ) ⊙ (Bᵀ d_c B) ] A
//
// so a 3x3 convolution costs 16 multiplies per tile and channel pair instead of 36:
// 2.25x fewer. The sum over input channels is 16 GEMMs ([out x in] · [in x tiles]),
// one per position of the 4x4 transformed tile. The transforms only add, subtract
// and halve (exact in binary), so the rounding differs from direct convolution by a
// few ulps of float32, as in cuDNN's and oneDNN's Winograd kernels. float32 only:
// float64 keeps im2col, whose results are exact to float64 rounding.
//
// The backward pass with respect to the input of a stride-1 3x3 convolution with
// padding p <= 2 is itself one: the gradient convolved with the filters rotated by
// 180 degrees, in and out channels swapped, padding 2 - p. The weight gradient uses
// the same tiles (see winograd_conv3x3_backward_weight).
//
// Work is split over the pool in chunks of tiles (fixed by the shapes and the pool
// size), each with its own scratch and serial GEMMs; every output element is
// written by exactly one chunk, so results do not depend on timing.
#ifndef KILN_CPU_KERNELS_CONV_WINOGRAD_H
#define KILN_CPU_KERNELS_CONV_WINOGRAD_H

#include <cstdint>

namespace kiln::cpu {

/// The shape of one 3x3, stride-1, undilated, ungrouped convolution.
struct Winograd3x3 {
  int64_t n;       // batch
  int64_t c_in;    // channels read
  int64_t c_out;   // channels written
  int64_t h, w;    // input plane
  int64_t ho, wo;  // output plane: h + 2·pad_h − 2, w + 2·pad_w − 2
  int64_t pad_h, pad_w;
};

/// Whether the Winograd path is used for a convolution with these parameters: 3x3,
/// stride 1, dilation 1, one group, padding at most 2 (so that the input gradient is
/// a convolution too), and enough channels for the channel GEMMs to pay off.
bool winograd_applies(int64_t in_channels, int64_t out_channels, int64_t kh, int64_t kw,
                      int64_t stride_h, int64_t stride_w, int64_t dil_h, int64_t dil_w,
                      int64_t groups, int64_t pad_h, int64_t pad_w);

/// y[n, o] = bias[o] + Σ_c x[n, c] ⋆ w[o, c]: x [n, c_in, h, w], w [c_out, c_in, 3, 3],
/// y [n, c_out, ho, wo], all contiguous. Overwrites y.
void winograd_conv3x3(const Winograd3x3& s, const float* x, const float* w, const float* bias,
                      float* y);

/// grad_x of the convolution above, given grad_y: `s` describes the forward
/// convolution (x → y). Overwrites grad_x.
void winograd_conv3x3_backward_input(const Winograd3x3& s, const float* grad_y, const float* w,
                                     float* grad_x);

/// grad_w of the convolution above, given x and grad_y (the weight gradient of
/// F(2x2, 3x3): the same tiles, the 16 products summed over tiles and samples, then
/// mapped back to 3x3). Overwrites grad_w. The sum over tiles goes through partial
/// sums over fixed tile ranges, chosen from the shapes alone.
void winograd_conv3x3_backward_weight(const Winograd3x3& s, const float* x, const float* grad_y,
                                      float* grad_w);

}  // namespace kiln::cpu

#endif  // KILN_CPU_KERNELS_CONV_WINOGRAD_H
