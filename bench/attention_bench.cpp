// scaled_dot_product_attention, forward + backward, float32 on the CPU: the fused op
// against the composed version (matmul, softmax, matmul, and their gradients) in the
// same process. q, k, v [1, 2, T, 64], causal as in a GPT. Target: fused ≥ 2× composed
// at T = 4096 (issue 41). BM_AttentionFusedLong runs T = 16384, which the composed
// version would need 3 GiB of [T, T] float32 matrices for, and reports the peak memory
// the CPU allocator saw (counter peak_MiB: the whole process's peak so far).

#include <benchmark/benchmark.h>

#include <kiln/kiln.h>
#include <kiln/nn.h>

#include "ratio.h"

namespace {

namespace F = kiln::nn::functional;

void attention_step(benchmark::State& state, F::AttentionBackend backend) {
  const int64_t t = state.range(0);
  kiln::manual_seed(1);
  kiln::Tensor q = kiln::randn({1, 2, t, 64}).requires_grad_();
  kiln::Tensor k = kiln::randn({1, 2, t, 64}).requires_grad_();
  kiln::Tensor v = kiln::randn({1, 2, t, 64}).requires_grad_();
  const F::AttentionBackend previous = F::set_attention_backend(backend);
  for (auto _ : state) {
    kiln::Tensor out = F::scaled_dot_product_attention(q, k, v, {}, 0, true);
    out.sum().backward();
    benchmark::DoNotOptimize(q.grad().data_ptr());
    for (kiln::Tensor* t : {&q, &k, &v}) t->set_grad({});
  }
  F::set_attention_backend(previous);
  state.counters["peak_MiB"] =
      static_cast<double>(kiln::memory_stats(kiln::Device("cpu")).peak_bytes_in_use) / (1 << 20);
}

void BM_AttentionFused(benchmark::State& state) {
  attention_step(state, F::AttentionBackend::Fused);
}
void BM_AttentionComposed(benchmark::State& state) {
  attention_step(state, F::AttentionBackend::Composed);
}
void BM_AttentionFusedLong(benchmark::State& state) {
  attention_step(state, F::AttentionBackend::Fused);
}

// Fused first, so that peak_MiB of the long run is not the composed version's.
BENCHMARK(BM_AttentionFusedLong)->Arg(16384)->Iterations(1)->UseRealTime();
BENCHMARK(BM_AttentionFused)->Arg(1024)->Arg(4096)->UseRealTime()->MinTime(2.0);
BENCHMARK(BM_AttentionComposed)->Arg(1024)->Arg(4096)->UseRealTime()->MinTime(2.0);

kiln::bench::RegisterRatio r1("attention fwd+bwd T=1024 d=64 causal: fused vs composed",
                              "BM_AttentionFused/1024/min_time:2.000/real_time",
                              "BM_AttentionComposed/1024/min_time:2.000/real_time", 2.0);
kiln::bench::RegisterRatio r2("attention fwd+bwd T=4096 d=64 causal: fused vs composed",
                              "BM_AttentionFused/4096/min_time:2.000/real_time",
                              "BM_AttentionComposed/4096/min_time:2.000/real_time", 2.0);

}  // namespace
