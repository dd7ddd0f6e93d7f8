// libtorch C++ (PyTorch's own, from its pip package) on the GPU: sum of 2^24 float32,
// the reduction issue 22's target names libtorch for. Not built by CMake (libtorch is
// not a dependency): bench/gpu_same_run.sh compiles it on the GPU machine against the
// python3's torch and runs it beside bench/torch_reference.py; bench/same_run_table.py
// reads its JSON lines.
//
// Timed as Kiln's bench/cuda_bench.cpp times: warm-up, then per repetition 10 calls
// enqueued and a device synchronize before a host clock stops; the median over 15
// repetitions of the time per call.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace {

constexpr int kBatch = 10;
constexpr int kReps = 15;
constexpr int kWarmup = 3;

template <class F>
double median_us(F call) {
  for (int i = 0; i < kWarmup; ++i) call();
  torch::cuda::synchronize();
  std::vector<double> times;
  for (int r = 0; r < kReps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kBatch; ++i) call();
    torch::cuda::synchronize();
    const std::chrono::duration<double, std::micro> elapsed =
        std::chrono::steady_clock::now() - start;
    times.push_back(elapsed.count() / kBatch);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main() {
  if (!torch::cuda::is_available()) {
    std::fprintf(stderr, "libtorch_reference: no CUDA device\n");
    return 1;
  }
  const torch::Device dev(torch::kCUDA, 0);
  std::printf("{\"kind\": \"context\", \"torch\": \"%s\", \"clock\": \"host\"}\n", TORCH_VERSION);
  const int64_t n = int64_t{1} << 24;
  auto x = torch::randn({n}, dev);
  const double us = median_us([&] {
    auto s = x.sum();
    (void)s;
  });
  std::printf(
      "{\"kind\": \"result\", \"name\": \"sum\", \"what\": \"sum of 2^24 float32, libtorch C++\", "
      "\"median_us\": %.3f, \"bytes\": %lld, \"GB_per_s\": %.1f}\n",
      us, static_cast<long long>(n * 4), n * 4 / us / 1e3);
  return 0;
}
