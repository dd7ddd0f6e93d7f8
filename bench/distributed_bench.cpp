// Many devices in one process (issue 10), run with KILN_CPU_DEVICES=2 or 4:
//   - all-reduce (sum, float32) across the CPU plugin's logical devices, reported as
//     nccl-tests do: algbw = bytes / time, busbw = algbw * 2(n-1)/n, next to a plain
//     memcpy of the same bytes (the bandwidth a shared-memory all-reduce is bounded by);
//   - the CNN + Adam training step at batch 256 through nn::DataParallel over 2
//     devices, against the same step on one device (BM_CnnAdamStep in train_bench).
// On this 2-core machine the logical devices share the cores, so DataParallel can
// not be faster than one device; the figure measures its overhead.

#include <benchmark/benchmark.h>

#include <kiln/kiln.h>
#include <kiln/nn.h>
#include <kiln/optim.h>
#include <cstring>
#include <vector>

#include "models.h"

namespace {

namespace F = kiln::nn::functional;

int cpu_devices() { return kiln::device_count("cpu"); }

void BM_CpuDevicesAllReduce(benchmark::State& state) {
  const int n = static_cast<int>(state.range(1));
  if (cpu_devices() < n) {
    state.SkipWithError("needs KILN_CPU_DEVICES >= the rank count");
    return;
  }
  const int64_t bytes = state.range(0), elements = bytes / 4;
  std::vector<kiln::Device> devices;
  std::vector<kiln::Tensor> tensors;
  for (int r = 0; r < n; ++r) {
    devices.emplace_back("cpu", r);
    tensors.push_back(kiln::ones({elements}, kiln::TensorOptions().device(devices.back())));
  }
  kiln::distributed::Communicator comm(devices);
  for (auto _ : state) comm.all_reduce(tensors);
  state.counters["algbw_GBps"] =
      benchmark::Counter(static_cast<double>(bytes) * static_cast<double>(state.iterations()) / 1e9,
                         benchmark::Counter::kIsRate);
  state.counters["busbw_GBps"] =
      benchmark::Counter(static_cast<double>(bytes) * static_cast<double>(state.iterations()) *
                             2.0 * (n - 1) / n / 1e9,
                         benchmark::Counter::kIsRate);
  state.SetBytesProcessed(state.iterations() * bytes);
}
BENCHMARK(BM_CpuDevicesAllReduce)
    ->ArgsProduct({{1 << 20, 16 << 20, 64 << 20}, {2, 4}})
    ->ArgNames({"bytes", "ranks"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

void BM_Memcpy(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  std::vector<char> a(bytes, 1), b(bytes);
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), bytes);
    benchmark::DoNotOptimize(b.data());
    benchmark::ClobberMemory();
  }
  state.counters["GBps"] =
      benchmark::Counter(static_cast<double>(bytes) * static_cast<double>(state.iterations()) / 1e9,
                         benchmark::Counter::kIsRate);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
}
BENCHMARK(BM_Memcpy)->Arg(1 << 20)->Arg(16 << 20)->Arg(64 << 20)->UseRealTime()->Unit(
    benchmark::kMicrosecond);

void BM_CnnAdamStepDataParallel(benchmark::State& state) {
  const int n = static_cast<int>(state.range(1));
  if (cpu_devices() < n) {
    state.SkipWithError("needs KILN_CPU_DEVICES >= the device count");
    return;
  }
  const int64_t batch = state.range(0);
  kiln::manual_seed(0);
  kiln::train::ModelOptions o;
  o.batch_norm = false;
  o.dropout = 0;
  auto model = kiln::train::make_cnn(o);
  std::vector<kiln::Device> devices;
  for (int r = 0; r < n; ++r) devices.emplace_back("cpu", r);
  auto dp = std::make_shared<kiln::nn::DataParallel>(model, devices);
  kiln::optim::Adam opt(model->parameters(), kiln::optim::AdamOptions(1e-3));
  kiln::Tensor x = kiln::randn({batch, 1, 28, 28});
  kiln::Tensor y = (kiln::rand({batch}) * 10).to(kiln::int64).clamp(0, 9);
  for (auto _ : state) {
    opt.zero_grad();
    auto loss = F::cross_entropy(dp->forward(x), y);
    loss.backward();
    opt.step();
    benchmark::DoNotOptimize(loss);
  }
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(BM_CnnAdamStepDataParallel)
    ->ArgsProduct({{256}, {1, 2}})
    ->ArgNames({"batch", "devices"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
