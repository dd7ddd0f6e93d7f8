// kiln-bench-mpi: the MPI process group and DistributedDataParallel under mpirun
// (issue 10). Run as `mpirun -np 2 kiln-bench-mpi` (add --oversubscribe for more
// ranks than cores). Rank 0 prints:
//   - all-reduce (sum, float32) through kiln::distributed::mpi, per size: the median
//     time of 20 calls, algbw = bytes / time, busbw = algbw * 2(n-1)/n (the
//     nccl-tests definitions), next to a plain memcpy of the same bytes;
//   - the CNN + Adam step at 64 samples per rank through DDP, against the same step
//     of one process with 64 samples (what each rank computes) — the overhead of
//     the gradient all-reduce — and the total samples/s of all ranks.

#include <kiln/distributed/mpi.h>
#include <kiln/kiln.h>
#include <kiln/nn.h>
#include <kiln/optim.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#include "models.h"

namespace {

namespace F = kiln::nn::functional;
using Clock = std::chrono::steady_clock;

// Median seconds of `reps` calls after 3 warm-ups; every rank starts each call together.
double median_seconds(kiln::distributed::ProcessGroup& g, int reps,
                      const std::function<void()>& f) {
  for (int i = 0; i < 3; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    g.barrier();
    auto start = Clock::now();
    f();
    t.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

double train_step_seconds(const std::shared_ptr<kiln::distributed::ProcessGroup>& g, bool ddp) {
  kiln::manual_seed(0);
  kiln::train::ModelOptions o;
  o.batch_norm = false;
  o.dropout = 0;
  auto model = kiln::train::make_cnn(o);
  std::shared_ptr<kiln::nn::Module> net = model;
  if (ddp) net = std::make_shared<kiln::nn::DistributedDataParallel>(model, g);
  kiln::optim::Adam opt(model->parameters(), kiln::optim::AdamOptions(1e-3));
  kiln::Tensor x = kiln::randn({64, 1, 28, 28});
  kiln::Tensor y = (kiln::rand({64}) * 10).to(kiln::int64).clamp(0, 9);
  return median_seconds(*g, 10, [&] {
    opt.zero_grad();
    F::cross_entropy(net->forward(x), y).backward();
    opt.step();
  });
}

}  // namespace

int main() {
  try {
    auto g = kiln::distributed::mpi::init();
    const int n = g->size();
    const bool main_rank = g->is_main();
    if (main_rank)
      std::printf("kiln-bench-mpi: %d ranks (%s)\n\n%12s %12s %12s %12s %14s\n", n,
                  g->str().c_str(), "bytes", "time us", "algbw GB/s", "busbw GB/s", "memcpy GB/s");
    for (int64_t bytes : {int64_t{1} << 10, int64_t{1} << 16, int64_t{1} << 20, int64_t{16} << 20,
                          int64_t{64} << 20}) {
      kiln::Tensor t = kiln::ones({bytes / 4});
      const double s = median_seconds(*g, 20, [&] { g->all_reduce(t); });
      std::vector<char> a(static_cast<size_t>(bytes), 1), b(static_cast<size_t>(bytes));
      auto start = Clock::now();
      for (int i = 0; i < 10; ++i) std::memcpy(b.data(), a.data(), a.size());
      const double copy = std::chrono::duration<double>(Clock::now() - start).count() / 10;
      const double algbw = static_cast<double>(bytes) / s / 1e9;
      if (main_rank)
        std::printf("%12lld %12.1f %12.3f %12.3f %14.3f\n", static_cast<long long>(bytes), s * 1e6,
                    algbw, algbw * 2.0 * (n - 1) / n, static_cast<double>(bytes) / copy / 1e9);
    }
    const double single = train_step_seconds(g, false);
    const double ddp = train_step_seconds(g, true);
    if (main_rank)
      std::printf(
          "\nCNN + Adam step, 64 samples per rank: one process %.2f ms, DDP over %d ranks "
          "%.2f ms (%.2fx); %.0f samples/s in total\n",
          single * 1e3, n, ddp * 1e3, ddp / single, 64.0 * n / ddp);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln-bench-mpi: %s\n", e.what());
    return 1;
  }
}
