#pragma once
/// @file fft.h
/// Discrete Fourier transforms with PyTorch's `torch.fft` names, arguments and results.
///
/// Every transform takes the signal length(s) `n`/`s` (the input is zero-padded or trimmed
/// to it; default: the input's size), the dim(s), and `norm`: "backward" (the default:
/// forward transforms unscaled, inverse ones by 1/n), "forward" (the other way round) or
/// "ortho" (1/sqrt(n) both ways). Lengths need not be powers of two, inputs may have any
/// strides, and every transform is differentiable (PyTorch's formulas). Real inputs of
/// integer dtypes are computed in float32; float16/bfloat16 inputs are refused.
///
/// @code
///   auto spectrum = kiln::fft::rfft(signal);                    // [..., n/2 + 1] complex
///   auto cleaned = kiln::fft::irfft(spectrum * keep, signal.size(-1));
///   auto image_f = kiln::fft::fft2(image);                      // over the last two dims
/// @endcode

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::fft {

/// Signal sizes for the n-dimensional transforms; std::nullopt: the input's sizes.
using Sizes = std::optional<std::vector<int64_t>>;
/// Dims for the n-dimensional transforms; std::nullopt: every dim (or the last len(s)).
using Dims = std::optional<std::vector<int64_t>>;

/// One dimension. A real input to fft/ifft gives the full complex spectrum.
Tensor fft(const Tensor& x, std::optional<int64_t> n = std::nullopt, int64_t dim = -1,
           const std::string& norm = "backward");
Tensor ifft(const Tensor& x, std::optional<int64_t> n = std::nullopt, int64_t dim = -1,
            const std::string& norm = "backward");
/// Real input; the n/2 + 1 non-negative frequencies.
Tensor rfft(const Tensor& x, std::optional<int64_t> n = std::nullopt, int64_t dim = -1,
            const std::string& norm = "backward");
/// The real signal of length n (default 2·(size - 1)) whose rfft is x's first n/2 + 1.
Tensor irfft(const Tensor& x, std::optional<int64_t> n = std::nullopt, int64_t dim = -1,
             const std::string& norm = "backward");
/// The real spectrum of a Hermitian-symmetric signal given by its first half (torch.fft.hfft).
Tensor hfft(const Tensor& x, std::optional<int64_t> n = std::nullopt, int64_t dim = -1,
            const std::string& norm = "backward");
/// The inverse of hfft: a real input's first n/2 + 1 inverse-transform entries.
Tensor ihfft(const Tensor& x, std::optional<int64_t> n = std::nullopt, int64_t dim = -1,
             const std::string& norm = "backward");

/// Two dimensions (default: the last two).
Tensor fft2(const Tensor& x, Sizes s = std::nullopt, std::vector<int64_t> dim = {-2, -1},
            const std::string& norm = "backward");
Tensor ifft2(const Tensor& x, Sizes s = std::nullopt, std::vector<int64_t> dim = {-2, -1},
             const std::string& norm = "backward");
Tensor rfft2(const Tensor& x, Sizes s = std::nullopt, std::vector<int64_t> dim = {-2, -1},
             const std::string& norm = "backward");
Tensor irfft2(const Tensor& x, Sizes s = std::nullopt, std::vector<int64_t> dim = {-2, -1},
              const std::string& norm = "backward");

/// Any number of dimensions; for rfftn/irfftn the last of `dim` is the halved one.
Tensor fftn(const Tensor& x, Sizes s = std::nullopt, Dims dim = std::nullopt,
            const std::string& norm = "backward");
Tensor ifftn(const Tensor& x, Sizes s = std::nullopt, Dims dim = std::nullopt,
             const std::string& norm = "backward");
Tensor rfftn(const Tensor& x, Sizes s = std::nullopt, Dims dim = std::nullopt,
             const std::string& norm = "backward");
Tensor irfftn(const Tensor& x, Sizes s = std::nullopt, Dims dim = std::nullopt,
              const std::string& norm = "backward");

/// The sample frequencies of an n-point transform, in cycles per unit of `d` (the spacing):
/// [0, 1, ..., (n-1)/2, -(n/2), ..., -1] / (d·n). Float32 unless `options` say otherwise.
Tensor fftfreq(int64_t n, double d = 1.0, TensorOptions options = {});
/// The n/2 + 1 non-negative frequencies of an n-point rfft: [0, 1, ..., n/2] / (d·n).
Tensor rfftfreq(int64_t n, double d = 1.0, TensorOptions options = {});
/// Moves the zero frequency to the centre of each dim (default: all), and back.
Tensor fftshift(const Tensor& x, Dims dim = std::nullopt);
Tensor ifftshift(const Tensor& x, Dims dim = std::nullopt);

}  // namespace kiln::fft
