#pragma once
/// @file random.h
/// Random numbers. Kiln has one process-wide generator: a 64-bit seed and an offset
/// into the Philox4x32-10 stream (share/doc/kiln/OPS.md). Every backend maps (seed,
/// offset, element) to the same number, so a seed gives the same tensors on every
/// device.
///
/// @code
///   kiln::manual_seed(42);
///   auto a = kiln::randn({3});          // same values on cpu and cuda
///   auto b = kiln::rand({2, 2}, kiln::TensorOptions().device("cuda"));
/// @endcode

#include <cstdint>

#include "kiln/tensor.h"

namespace kiln {

/// Resets the generator: seed = `seed`, offset = 0.
void manual_seed(uint64_t seed);

/// A snapshot of the generator, to save and restore (e.g. in a checkpoint).
struct GeneratorState {
  uint64_t seed = 0;
  uint64_t offset = 0;
};
GeneratorState generator_state();
void set_generator_state(const GeneratorState& state);

/// Uniform on [low, high) (float dtypes only).
Tensor rand(IntArrayRef shape, TensorOptions options = {});
Tensor uniform(IntArrayRef shape, double low, double high, TensorOptions options = {});
/// Normal with mean 0 and standard deviation 1 (float dtypes only).
Tensor randn(IntArrayRef shape, TensorOptions options = {});
Tensor normal(IntArrayRef shape, double mean, double std, TensorOptions options = {});
/// Integers uniform on [low, high), as torch.randint; int64 unless the options name
/// another dtype. Throws kiln::Error when low >= high.
Tensor randint(int64_t low, int64_t high, IntArrayRef shape, TensorOptions options = {});
Tensor randint(int64_t high, IntArrayRef shape, TensorOptions options = {});
/// A random permutation of 0..n-1 (int64 unless the options name another integer
/// dtype), as torch.randperm: the argsort of n float64 uniform draws.
Tensor randperm(int64_t n, TensorOptions options = {});
/// `num_samples` category indices (int64) drawn from the weights `probs`, as
/// torch.multinomial: `probs` is one distribution ([categories]) or one per row
/// ([rows, categories]); the weights need not sum to 1 but must be finite,
/// non-negative and not all 0. With `replacement` each draw is independent; without,
/// no category is drawn twice in a row (and `num_samples` may not exceed the number of
/// categories of non-zero weight). The result is [num_samples] or [rows, num_samples],
/// on probs' device, from Kiln's generator; runs on every backend (composed of cumsum,
/// comparisons and argsort). Throws kiln::Error for any other input.
/// @code
///   auto probs = kiln::nn::functional::softmax(logits / 0.8, -1);  // temperature 0.8
///   auto next = kiln::multinomial(probs, 1);                         // one token per row
/// @endcode
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement = false);
/// The next token of a language model, drawn as generation samples it: `logits`
/// ([vocab], or [rows, vocab] for one draw per row) divided by `temperature` (0: the
/// largest logit, no draw), cut to the `top_k` largest (0: all) and to the fewest most
/// likely tokens whose probability reaches `top_p` (nucleus sampling; 1: all), then one
/// draw from what remains (multinomial). The result is int64 [1] or [rows, 1], ready
/// to append to the sequence. Throws kiln::Error for a temperature below 0, a negative
/// top_k, a top_p outside (0, 1] or logits that are all −∞ or NaN in a row.
Tensor sample_logits(const Tensor& logits, double temperature = 1.0, int64_t top_k = 0,
                     double top_p = 1.0);

}  // namespace kiln
