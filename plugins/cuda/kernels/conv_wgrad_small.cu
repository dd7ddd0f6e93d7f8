// kiln.conv2d_backward_weight for filters of a few taps over few input channels (a
// network's first layer: 1 or 3 channels, 3×3 or 5×5), float32 and float64.
//
// grad_w[o, c, i, j] = Σ over (n, oh, ow) of grad_y[n, o, oh, ow] · x[n, c, ih, iw], with
// ih = oh·stride − pad + i·dilation (likewise iw), zero outside x. Each output channel's
// N·Ho·Wo positions are cut into slices (from the shape alone); a block takes one
// (slice, o), each thread keeps the C·K·K sums in registers over its positions, a fixed
// tree combines the block's threads, and a second kernel adds the slices in order. So
// the result is deterministic, grad_y is read once (coalesced), and x is read from the
// L1/L2 caches.
//
// Why (H200, 2026-11-26, the 1->32 layer of kiln-train's CNN at batch 256): cuDNN's
// deterministic weight-gradient algorithms took 84 µs (FFT) and 115 µs (TF32 implicit
// GEMM, plus layout transforms), where PyTorch's default non-deterministic one took 54
// to 62 µs; this kernel reads the layer's 25.7 MB of grad_y once.
//
// It applies only where it wins: x small enough to stay in L2 while every output
// channel's blocks read it (kMaxInputBytes), few output channels, C·K·K <= 27 sums per
// thread, no groups. Everything else goes to cuDNN (conv.cu).
#include "kernels/conv_wgrad_small.h"

#include <algorithm>
#include <limits>

#include "dnn_util.cuh"

namespace kiln::cuda {

namespace {

using namespace dnn;

constexpr int64_t kMaxInputBytes = int64_t{16} << 20;
constexpr int64_t kMaxOutputChannels = 128;

struct WgradShape {
  int32_t o, h, w, ho, wo;  // positions N·Ho·Wo fit in int32: cuDNN's limit, checked by conv.cu
  int32_t c_total;          // x's channels (all groups)
  int32_t og;               // output channels per group
  int32_t stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
  int32_t positions;  // N·Ho·Wo
  int32_t slices, slice_len;
};

template <class T, int C, int K>
__global__ void __launch_bounds__(kThreads)
    wgrad_small_kernel(const WgradShape s, const T* __restrict__ grad_y, const T* __restrict__ x,
                       compute_t<T>* __restrict__ partial, T* __restrict__ grad_w) {
  using A = compute_t<T>;
  constexpr int R = C * K * K;
  constexpr int kWarps = kThreads / 32;
  __shared__ A warp_sums[kWarps][R];
  const int o = static_cast<int>(blockIdx.y);
  const int slice = static_cast<int>(blockIdx.x);
  const int c_first = (o / s.og) * C;  // the group's first input channel
  const int plane_out = s.ho * s.wo;
  const int64_t plane_in = static_cast<int64_t>(s.h) * s.w;
  const int begin = slice * s.slice_len;
  const int end = min(s.positions, begin + s.slice_len);

  A acc[R];
#pragma unroll
  for (int r = 0; r < R; ++r) acc[r] = A(0);
  int p = begin + static_cast<int>(threadIdx.x);
  // (n, rest) = divmod(p, plane_out), advanced by subtraction as p grows.
  int n = p / plane_out;
  int rest = p - n * plane_out;
  for (; p < end; p += kThreads) {
    const int oh = rest / s.wo;
    const int ow = rest - oh * s.wo;
    const A g = load(grad_y[(static_cast<int64_t>(n) * s.o + o) * plane_out + rest]);
    const T* xn = x + (static_cast<int64_t>(n) * s.c_total + c_first) * plane_in;
#pragma unroll
    for (int i = 0; i < K; ++i) {
      const int ih = oh * s.stride_h - s.pad_h + i * s.dil_h;
      if (ih < 0 || ih >= s.h) continue;
#pragma unroll
      for (int j = 0; j < K; ++j) {
        const int iw = ow * s.stride_w - s.pad_w + j * s.dil_w;
        if (iw < 0 || iw >= s.w) continue;
        const T* at = xn + static_cast<int64_t>(ih) * s.w + iw;
#pragma unroll
        for (int c = 0; c < C; ++c) acc[(c * K + i) * K + j] += g * load(at[c * plane_in]);
      }
    }
    rest += kThreads;
    while (rest >= plane_out) {
      rest -= plane_out;
      ++n;
    }
  }

  // A fixed tree: butterfly within each warp, then the warps in order.
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp = static_cast<int>(threadIdx.x) / 32;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    A v = acc[r];
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    if (lane == 0) warp_sums[warp][r] = v;
  }
  __syncthreads();
  const int r = static_cast<int>(threadIdx.x);
  if (r < R) {
    A sum = warp_sums[0][r];
    for (int w = 1; w < kWarps; ++w) sum += warp_sums[w][r];
    if (s.slices == 1)
      grad_w[static_cast<int64_t>(o) * R + r] = store<T>(sum);
    else
      partial[(static_cast<int64_t>(o) * s.slices + slice) * R + r] = sum;
  }
}

// grad_w[o, r] = the slices' partial sums added in slice order.
template <class T>
__global__ void __launch_bounds__(kThreads)
    wgrad_small_merge_kernel(const compute_t<T>* __restrict__ partial, int64_t sums, int slices,
                             int r_per_o, T* __restrict__ grad_w) {
  for (int64_t t = first_index(); t < sums; t += grid_stride()) {
    const int64_t o = t / r_per_o, r = t - o * r_per_o;
    const compute_t<T>* mine = partial + o * slices * r_per_o + r;
    compute_t<T> sum = mine[0];
    for (int slice = 1; slice < slices; ++slice) sum += mine[static_cast<int64_t>(slice) * r_per_o];
    grad_w[t] = store<T>(sum);
  }
}

template <class T, int C, int K>
void launch(const WgradShape& s, const TensorView& grad_y, const TensorView& x,
            const TensorView& grad_w, const Launch& l) {
  using A = compute_t<T>;
  constexpr int R = C * K * K;
  A* partial = nullptr;
  if (s.slices > 1) {
    partial = static_cast<A*>(
        l.scratch(static_cast<size_t>(s.o) * static_cast<size_t>(s.slices) * R * sizeof(A)));
  }
  const dim3 grid(static_cast<unsigned>(s.slices), static_cast<unsigned>(s.o));
  wgrad_small_kernel<T, C, K><<<grid, kThreads, 0, l.stream()>>>(
      s, grad_y.ptr<const T>(), x.ptr<const T>(), partial, grad_w.ptr<T>());
  check_launch("conv2d_backward_weight: small-filter kernel");
  if (s.slices > 1) {
    const int64_t sums = static_cast<int64_t>(s.o) * R;
    wgrad_small_merge_kernel<T><<<grid_for(sums, l), kThreads, 0, l.stream()>>>(
        partial, sums, s.slices, R, grad_w.ptr<T>());
    check_launch("conv2d_backward_weight: small-filter merge");
  }
}

template <class T>
bool launch_for_shape(const WgradShape& s, int64_t cg, int64_t k, const TensorView& grad_y,
                      const TensorView& x, const TensorView& grad_w, const Launch& l) {
  if (cg == 1 && k == 3) {
    launch<T, 1, 3>(s, grad_y, x, grad_w, l);
  } else if (cg == 3 && k == 3) {
    launch<T, 3, 3>(s, grad_y, x, grad_w, l);
  } else if (cg == 1 && k == 5) {
    launch<T, 1, 5>(s, grad_y, x, grad_w, l);
  } else {
    return false;
  }
  return true;
}

}  // namespace

bool small_filter_weight_grad(const sdk::ConvGeometry& g, const TensorView& grad_y,
                              const TensorView& x, const TensorView& grad_w, const Launch& l) {
  const bool float_type = x.dtype == KILN_DTYPE_FLOAT32 || x.dtype == KILN_DTYPE_FLOAT64;
  const int64_t positions = g.n * g.ho * g.wo;
  // Groups (depthwise convolutions) were never measured; output planes of fewer than 64
  // positions would make each step's (n, position) update loop; positions near INT_MAX
  // would overflow the kernel's 32-bit index arithmetic.
  if (!float_type || g.groups != 1 || g.kh != g.kw || g.o > kMaxOutputChannels ||
      g.ho * g.wo < 64 || positions > std::numeric_limits<int32_t>::max() / 2 ||
      x.numel() * static_cast<int64_t>(x.itemsize) > kMaxInputBytes) {
    return false;
  }
  WgradShape s{};
  s.o = static_cast<int32_t>(g.o);
  s.h = static_cast<int32_t>(g.h);
  s.w = static_cast<int32_t>(g.w);
  s.ho = static_cast<int32_t>(g.ho);
  s.wo = static_cast<int32_t>(g.wo);
  s.c_total = static_cast<int32_t>(g.c);
  s.og = static_cast<int32_t>(g.og);
  s.stride_h = static_cast<int32_t>(g.stride_h);
  s.stride_w = static_cast<int32_t>(g.stride_w);
  s.pad_h = static_cast<int32_t>(g.pad_h);
  s.pad_w = static_cast<int32_t>(g.pad_w);
  s.dil_h = static_cast<int32_t>(g.dil_h);
  s.dil_w = static_cast<int32_t>(g.dil_w);
  s.positions = static_cast<int32_t>(positions);
  // Slices from the shape alone: about 8192 positions each, up to ~1024 blocks in all.
  const int64_t slices =
      std::max<int64_t>(1, std::min((positions + 8191) / 8192, std::max<int64_t>(1, 1024 / g.o)));
  s.slice_len = static_cast<int32_t>((positions + slices - 1) / slices);
  s.slices = static_cast<int32_t>((positions + s.slice_len - 1) / s.slice_len);
  if (x.dtype == KILN_DTYPE_FLOAT32)
    return launch_for_shape<float>(s, g.cg, g.kh, grad_y, x, grad_w, l);
  return launch_for_shape<double>(s, g.cg, g.kh, grad_y, x, grad_w, l);
}

}  // namespace kiln::cuda
