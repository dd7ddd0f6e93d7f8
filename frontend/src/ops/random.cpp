// The process-wide Philox generator: (seed, offset). Each call reserves numel
// counters, so consecutive calls never overlap and every backend produces the
// same numbers for the same state (the mapping is fixed in api/OPS.md).

#include "kiln/random.h"

#include <mutex>

#include "ops/common.h"
#include "runtime/graph_capture.h"
#include "runtime/registry.h"

namespace kiln {

namespace {
struct Generator {
  std::mutex mutex;
  GeneratorState state{67280421310721ULL, 0};  // PyTorch's default seed, for familiarity
};
Generator& generator() {
  static Generator g;
  return g;
}
// Reserves `n` elements of the stream and returns (seed, first offset).
GeneratorState reserve(int64_t n) {
  auto& g = generator();
  std::lock_guard lock(g.mutex);
  GeneratorState s = g.state;
  g.state.offset += static_cast<uint64_t>(n);
  return s;
}

// Fills a new tensor from the next stretch of the stream: `attrs(seed, offset)` is the
// random op's attribute struct (detail::attrs::random_uniform or random_normal).
template <class Attrs>
Tensor random(const char* name, IntArrayRef shape, TensorOptions options, const Attrs& attrs) {
  KILN_CHECK(is_floating(options.dtype()), name, ": expected a floating dtype, got ",
             options.dtype());
  Tensor t = empty(shape, options);
  GeneratorState s = detail::reserve_random(t.numel());
  detail::dispatch(attrs(static_cast<int64_t>(s.seed), static_cast<int64_t>(s.offset)), {},
                   {t.impl().get()});
  return t;
}
}  // namespace

GeneratorState detail::reserve_random(int64_t n) {
  // A capture draws nothing now: each replay draws, as the eager call would have.
  if (graph::Capture* capture = graph::active()) {
    graph::patch_next_random(*capture, n);
    return {};
  }
  return reserve(n);
}

void manual_seed(uint64_t seed) { set_generator_state({seed, 0}); }

GeneratorState generator_state() {
  auto& g = generator();
  std::lock_guard lock(g.mutex);
  return g.state;
}

void set_generator_state(const GeneratorState& state) {
  auto& g = generator();
  std::lock_guard lock(g.mutex);
  g.state = state;
}

Tensor uniform(IntArrayRef shape, double low, double high, TensorOptions options) {
  KILN_CHECK(low <= high, "uniform: low (", low, ") must not exceed high (", high, ")");
  return random("uniform", shape, options, [&](int64_t seed, int64_t offset) {
    return detail::attrs::random_uniform{.seed = seed, .offset = offset, .low = low, .high = high};
  });
}
Tensor rand(IntArrayRef shape, TensorOptions options) { return uniform(shape, 0.0, 1.0, options); }
Tensor normal(IntArrayRef shape, double mean, double std, TensorOptions options) {
  KILN_CHECK(std >= 0, "normal: std must be non-negative, got ", std);
  return random("normal", shape, options, [&](int64_t seed, int64_t offset) {
    return detail::attrs::random_normal{.seed = seed, .offset = offset, .mean = mean, .std = std};
  });
}
Tensor randn(IntArrayRef shape, TensorOptions options) { return normal(shape, 0.0, 1.0, options); }

Tensor randint(int64_t low, int64_t high, IntArrayRef shape, TensorOptions options) {
  KILN_CHECK(low < high, "randint: low (", low, ") must be below high (", high, ")");
  const DType dtype = options.has_dtype() ? options.dtype() : DType::Int64;
  // A float64 uniform on [0, high - low), truncated (the floor, being non-negative),
  // clamped (rounding may reach the upper end), then shifted by low.
  const double span = static_cast<double>(high) - static_cast<double>(low);
  Tensor u =
      uniform(shape, 0.0, span, TensorOptions(options).dtype(DType::Float64).requires_grad(false));
  Tensor k = u.to(DType::Int64).clamp(0, high - low - 1) + Scalar(low);
  return dtype == DType::Int64 ? k : k.to(dtype);
}

Tensor randint(int64_t high, IntArrayRef shape, TensorOptions options) {
  return randint(0, high, shape, std::move(options));
}

}  // namespace kiln
