// matmul of two 1024x1024 float32 matrices through Kiln against cblas_sgemm on
// preallocated buffers in the same process. Target: Kiln >= 0.95 of cblas_sgemm.

#include <benchmark/benchmark.h>
#include <cblas.h>

#include <kiln/kiln.h>
#include <vector>

#include "ratio.h"

namespace {

void report_flops(benchmark::State& state, int64_t n) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * double(n) * double(n) * double(n) * double(state.iterations()) / 1e9,
                         benchmark::Counter::kIsRate);
}

void BM_KilnMatmul(benchmark::State& state) {
  const int64_t n = state.range(0);
  auto a = kiln::rand({n, n});
  auto b = kiln::rand({n, n});
  for (auto _ : state) {
    auto c = kiln::matmul(a, b);
    benchmark::DoNotOptimize(c);
  }
  report_flops(state, n);
}

void BM_CblasSgemm(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::vector<float> a(size_t(n) * n, 0.5f), b(size_t(n) * n, 0.25f), c(size_t(n) * n);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
                0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  report_flops(state, n);
}

BENCHMARK(BM_KilnMatmul)
    ->Arg(1024)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);
BENCHMARK(BM_CblasSgemm)
    ->Arg(1024)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

kiln::bench::RegisterRatio ratio("matmul 1024^2 float32 vs cblas_sgemm",
                                 "BM_KilnMatmul/1024/repeats:5/real_time",
                                 "BM_CblasSgemm/1024/repeats:5/real_time", 0.95);

}  // namespace
