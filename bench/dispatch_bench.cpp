// Dispatch overhead: `a + b` on 1-element float32 tensors through the whole
// frontend (checks, output allocation, one kernel call, release). Target: a
// median <= 0.4 us (libtorch 1.13 on the same machine: 0.56-0.58 us).

#include <benchmark/benchmark.h>

#include <kiln/kiln.h>

namespace {

void BM_KilnAddOneElement(benchmark::State& state) {
  auto a = kiln::ones({1});
  auto b = kiln::ones({1});
  for (auto _ : state) {
    auto c = a + b;
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(BM_KilnAddOneElement)->Repetitions(5)->ReportAggregatesOnly(true);

// The same with a scalar operand, which also creates and fills a 0-d tensor.
void BM_KilnAddScalarOneElement(benchmark::State& state) {
  auto a = kiln::ones({1});
  for (auto _ : state) {
    auto c = a + 1.0f;
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(BM_KilnAddScalarOneElement)->Repetitions(5)->ReportAggregatesOnly(true);

}  // namespace
