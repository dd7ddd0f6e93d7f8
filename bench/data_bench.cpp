// DataLoader workers (issue 26): one epoch over a dataset whose get() sleeps 1 ms per
// sample (loading bound by I/O or decoding, not by the cores), 96 samples in batches of
// 32, with workers 0 (every batch on the caller's thread), 2 and 4; the loop body does
// nothing. The ratios are workers 0's time over workers n's, all measured in this run.
// Each worker prepares a whole batch, so with 3 batches per epoch the ceiling is 1.5x
// for 2 workers (2 batches, then 1) and 3x for 4 (the 3 batches at once). Sleeping takes
// no core, so a 2-core machine can reach both; the targets (1.3x, 2.4x) stay below the
// ceilings by what a busy machine's scheduling delays cost.

#include <benchmark/benchmark.h>

#include <kiln/kiln.h>
#include <chrono>
#include <memory>
#include <thread>

#include "ratio.h"

namespace {

class SleepyDataset : public kiln::data::Dataset {
 public:
  int64_t size() const override { return 96; }
  kiln::data::Example get(int64_t index) const override {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return {kiln::full({16}, static_cast<double>(index)),
            kiln::scalar_tensor(index, kiln::TensorOptions(kiln::int64))};
  }
};

void BM_DataLoaderEpoch(benchmark::State& state) {
  kiln::data::DataLoader loader(
      std::make_shared<SleepyDataset>(),
      kiln::data::DataLoaderOptions().batch_size(32).workers(state.range(0)));
  int64_t samples = 0;
  for (auto _ : state) {
    for (auto& batch : loader) {
      samples += batch.input.size(0);
      benchmark::DoNotOptimize(batch.input);
    }
  }
  state.SetItemsProcessed(samples);
}
BENCHMARK(BM_DataLoaderEpoch)
    ->ArgName("workers")
    ->Arg(0)
    ->Arg(2)
    ->Arg(4)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

using kiln::bench::RegisterRatio;
RegisterRatio workers2("DataLoader epoch 96 x 1 ms, workers 2 vs 0",
                       "BM_DataLoaderEpoch/workers:2/real_time",
                       "BM_DataLoaderEpoch/workers:0/real_time", 1.3);
RegisterRatio workers4("DataLoader epoch 96 x 1 ms, workers 4 vs 0",
                       "BM_DataLoaderEpoch/workers:4/real_time",
                       "BM_DataLoaderEpoch/workers:0/real_time", 2.4);

}  // namespace
