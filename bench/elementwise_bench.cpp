// Elementwise add on 10^6 and 2^22 float32 elements: Kiln (output allocation
// included, as a user calls it) against a plain -O3 loop over preallocated buffers
// split across all cores with OpenMP. Target: Kiln >= 0.9 of the loop.

#include <benchmark/benchmark.h>
#include <omp.h>

#include <kiln/kiln.h>
#include <vector>

#include "ratio.h"

namespace {

void BM_KilnAdd(benchmark::State& state) {
  const int64_t n = state.range(0);
  auto a = kiln::rand({n});
  auto b = kiln::rand({n});
  for (auto _ : state) {
    auto c = a + b;
    benchmark::DoNotOptimize(c);
  }
  state.SetBytesProcessed(state.iterations() * n * 3 * int64_t(sizeof(float)));
}

__attribute__((noinline)) void loop_add(const float* __restrict a, const float* __restrict b,
                                        float* __restrict c, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

void BM_LoopAdd(benchmark::State& state) {
  const int64_t n = state.range(0);
  std::vector<float> a(n, 1.0f), b(n, 2.0f), c(n);
  for (auto _ : state) {
    loop_add(a.data(), b.data(), c.data(), n);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * 3 * int64_t(sizeof(float)));
}

BENCHMARK(BM_KilnAdd)
    ->Arg(1000000)
    ->Arg(1 << 22)
    ->UseRealTime()
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);
BENCHMARK(BM_LoopAdd)
    ->Arg(1000000)
    ->Arg(1 << 22)
    ->UseRealTime()
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

kiln::bench::RegisterRatio r1("add 10^6 float32 vs OpenMP -O3 loop",
                              "BM_KilnAdd/1000000/repeats:5/real_time",
                              "BM_LoopAdd/1000000/repeats:5/real_time", 0.9);
kiln::bench::RegisterRatio r2("add 2^22 float32 vs OpenMP -O3 loop",
                              "BM_KilnAdd/4194304/repeats:5/real_time",
                              "BM_LoopAdd/4194304/repeats:5/real_time", 0.9);

}  // namespace
