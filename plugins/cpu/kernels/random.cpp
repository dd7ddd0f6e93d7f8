// Philox-based ops: kiln.random_uniform, kiln.random_normal and kiln.dropout.
//
// Element i always takes its words from Philox block offset + i / (elements per
// block), computed by the SDK (kiln/sdk/philox.h), so the values are those of every
// other backend and the parallel split cannot change them.
#include <algorithm>

#include "elementwise.h"
#include "kiln/sdk/philox.h"
#include "kiln/sdk/random.h"
#include "registry.h"

namespace kiln::cpu {

namespace {

// Philox rounds and transcendental functions make generation compute-bound: go
// parallel sooner than memory-bound elementwise work does.
constexpr int64_t kGenerateGrain = 8192;

// Runs fill_block(block_index, first_element, count) over the Philox blocks that
// cover n elements at `per_block` elements each, in parallel. Element i only ever
// depends on i, so the split cannot change any value.
template <class FillBlock>
void for_each_block(int64_t n, int64_t per_block, const FillBlock& fill_block) {
  const int64_t blocks = (n + per_block - 1) / per_block;
  pool().parallel_for(0, blocks, kGenerateGrain / per_block, [&](int64_t begin, int64_t end) {
    for (int64_t q = begin; q < end; ++q) {
      const int64_t first = q * per_block;
      fill_block(q, first, std::min(per_block, n - first));
    }
  });
}

void random_uniform_impl(const OpArgs& args) {
  const sdk::RandomFill r = sdk::random_fill(args, sdk::attrs::random_uniform::read(args));
  const TensorView& y = r.y;
  const int64_t n = y.numel();
  if (y.dtype == KILN_DTYPE_FLOAT64) {
    double* out = y.ptr<double>();
    for_each_block(n, 2, [&](int64_t q, int64_t first, int64_t count) {
      const sdk::PhiloxBlock w = sdk::philox_block(r.seed, r.offset + static_cast<uint64_t>(q));
      for (int64_t j = 0; j < count; ++j) {
        out[first + j] = sdk::uniform_f64_from_words(w.w[2 * j], w.w[2 * j + 1], r.a, r.b);
      }
    });
    return;
  }
  const float low = static_cast<float>(r.a);
  const float high = static_cast<float>(r.b);
  if (!visit_dtype<TypeList<float, float16, bfloat16>>(y.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* out = y.ptr<T>();
        for_each_block(n, 4, [&](int64_t q, int64_t first, int64_t count) {
          const sdk::PhiloxBlock w = sdk::philox_block(r.seed, r.offset + static_cast<uint64_t>(q));
          for (int64_t j = 0; j < count; ++j) {
            out[first + j] = store<T>(sdk::uniform_f32_from_word(w.w[j], low, high));
          }
        });
      })) {
    unsupported_dtype(y.dtype);
  }
}

void random_normal_impl(const OpArgs& args) {
  const sdk::RandomFill r = sdk::random_fill(args, sdk::attrs::random_normal::read(args));
  const TensorView& y = r.y;
  const int64_t n = y.numel();
  if (!visit_dtype<FloatTypes>(y.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* out = y.ptr<T>();
        for_each_block(n, 2, [&](int64_t q, int64_t first, int64_t count) {
          const sdk::PhiloxBlock w = sdk::philox_block(r.seed, r.offset + static_cast<uint64_t>(q));
          for (int64_t j = 0; j < count; ++j) {
            // Rounded once from float64, as the catalogue specifies for every dtype.
            out[first + j] =
                convert<T>(sdk::normal_from_words(w.w[2 * j], w.w[2 * j + 1], r.a, r.b));
          }
        });
      })) {
    unsupported_dtype(y.dtype);
  }
}

// Keeps element i iff its float32 uniform (random_uniform's mapping with low 0,
// high 1) is >= p, and writes y = x / (1 - p) for kept elements, computed in float64
// and rounded once, so every backend gets the same bits.
void dropout_impl(const OpArgs& args) {
  const sdk::Dropout d = sdk::dropout_operands(args);
  const TensorView &x = d.x, &y = d.y, &mask = d.mask;
  const double p = d.p;
  const uint64_t seed = d.seed, offset = d.offset;
  const double keep_scale = 1.0 - p;
  const int64_t n = x.numel();
  if (!visit_dtype<FloatTypes>(x.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* in = x.ptr<const T>();
        T* out = y.ptr<T>();
        uint8_t* keep = mask.ptr<uint8_t>();
        for_each_block(n, 4, [&](int64_t q, int64_t first, int64_t count) {
          const sdk::PhiloxBlock w = sdk::philox_block(seed, offset + static_cast<uint64_t>(q));
          for (int64_t j = 0; j < count; ++j) {
            const bool kept = static_cast<double>(sdk::unit_float_from_word(w.w[j])) >= p;
            const int64_t i = first + j;
            keep[i] = kept ? 1 : 0;
            out[i] = kept ? convert<T>(static_cast<double>(load(in[i])) / keep_scale) : T(0.0f);
          }
        });
      })) {
    unsupported_dtype(x.dtype);
  }
}

}  // namespace

void add_random_kernels(KernelList& list) {
  list.push_back(catalogue_kernel<op::random_uniform>(&run_kernel<random_uniform_impl>, 0));
  list.push_back(catalogue_kernel<op::random_normal>(&run_kernel<random_normal_impl>, 0));
  list.push_back(catalogue_kernel<op::dropout>(&run_kernel<dropout_impl>, 0));
}

}  // namespace kiln::cpu
