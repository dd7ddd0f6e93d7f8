// Training-step benchmarks (issue 3): one step = zero_grad + forward + loss +
// backward + optimizer step, on the models kiln-train trains, with random data of
// Fashion-MNIST's shape. Reference figures (PyTorch 1.13 C++ API, same machine,
// OpenBLAS, malloc tuned): CNN + Adam 12.1 ms at batch 64, 44-48 ms at 256;
// MLP 784-256-10 + SGD momentum 0.51-0.57 ms at 64, 1.36-1.46 ms at 256;
// (a*b).sum() forward+backward on 1-element tensors 11.5 us. Targets: ratio
// reference/Kiln >= 1 for the steps, and <= 5 us for the tiny round trip.

#include <benchmark/benchmark.h>

#include <kiln/kiln.h>
#include <kiln/nn.h>
#include <kiln/optim.h>

#include "models.h"
#include "ratio.h"

namespace {

namespace F = kiln::nn::functional;

struct Batch {
  kiln::Tensor x, y;
};

Batch random_batch(int64_t n) {
  return {kiln::randn({n, 1, 28, 28}), (kiln::rand({n}) * 10).to(kiln::int64).clamp(0, 9)};
}

template <typename MakeOptimizer>
void run_steps(benchmark::State& state, std::shared_ptr<kiln::nn::Sequential> model,
               MakeOptimizer make_optimizer) {
  const int64_t n = state.range(0);
  kiln::manual_seed(0);
  auto optimizer = make_optimizer(model->parameters());
  Batch b = random_batch(n);
  for (auto _ : state) {
    optimizer->zero_grad();
    auto loss = F::cross_entropy(model->forward(b.x), b.y);
    loss.backward();
    optimizer->step();
    benchmark::DoNotOptimize(loss);
  }
  kiln::synchronize(kiln::default_device());
  state.SetItemsProcessed(state.iterations() * n);
}

void BM_CnnAdamStep(benchmark::State& state) {
  kiln::train::ModelOptions o;
  o.batch_norm = false;  // the plain CNN of the reference figures
  o.dropout = 0;
  run_steps(state, kiln::train::make_cnn(o), [](std::vector<kiln::Tensor> p) {
    return std::make_unique<kiln::optim::Adam>(p, kiln::optim::AdamOptions(1e-3));
  });
}
BENCHMARK(BM_CnnAdamStep)->Arg(64)->Arg(256)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_MlpSgdStep(benchmark::State& state) {
  kiln::train::ModelOptions o;
  o.dropout = 0;
  o.hidden = 256;
  run_steps(state, kiln::train::make_mlp(o), [](std::vector<kiln::Tensor> p) {
    kiln::optim::SGDOptions so(0.01);
    so.momentum(0.9);
    return std::make_unique<kiln::optim::SGD>(p, so);
  });
}
BENCHMARK(BM_MlpSgdStep)->Arg(64)->Arg(256)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_TinyAutogradRoundTrip(benchmark::State& state) {
  auto a = kiln::ones({1}).requires_grad_();
  auto b = kiln::ones({1}).requires_grad_();
  for (auto _ : state) {
    (a * b).sum().backward();
  }
}
BENCHMARK(BM_TinyAutogradRoundTrip)->Repetitions(5)->ReportAggregatesOnly(true);

using kiln::bench::RegisterReference;
RegisterReference r1("CNN+Adam step, batch 64 vs ref 12.1 ms", "BM_CnnAdamStep/64/real_time",
                     12.1e-3, 1.0);
RegisterReference r2("CNN+Adam step, batch 256 vs ref 46 ms", "BM_CnnAdamStep/256/real_time", 46e-3,
                     1.0);
RegisterReference r3("MLP+SGD step, batch 64 vs ref 0.54 ms", "BM_MlpSgdStep/64/real_time", 0.54e-3,
                     1.0);
RegisterReference r4("MLP+SGD step, batch 256 vs ref 1.41 ms", "BM_MlpSgdStep/256/real_time",
                     1.41e-3, 1.0);
RegisterReference r5("tiny autograd round trip vs ref 11.5 us",
                     "BM_TinyAutogradRoundTrip/repeats:5", 11.5e-6, 2.3);

}  // namespace
