#include "workloads.h"

#include <kiln/kiln.h>
#include <kiln/nn.h>
#include <kiln/optim.h>

#include <memory>

#include "model.h"
#include "models.h"

namespace kiln::bench {

namespace {

namespace F = kiln::nn::functional;

// Operands are drawn on the host in float32 (the same values on every device) and then
// converted and moved, so that a device without a random-number kernel still runs.
Tensor operand(IntArrayRef shape, const Device& device, DType dtype) {
  return kiln::rand(shape, TensorOptions().device(Device("cpu"))).to(dtype).to(device);
}

// The size in each of tiny, small, medium.
template <typename T>
T pick(Size size, T tiny, T small, T medium) {
  return size == Size::Tiny ? tiny : size == Size::Small ? small : medium;
}

PreparedWorkload prepare_gemm(const Device& device, DType dtype, Size size) {
  const int64_t n = pick<int64_t>(size, 64, 512, 1024);
  Tensor a = operand({n, n}, device, dtype), b = operand({n, n}, device, dtype);
  return {std::to_string(n) + "x" + std::to_string(n) + "x" + std::to_string(n),
          2.0 * double(n) * double(n) * double(n), WorkUnit::Flops, [a, b] { kiln::matmul(a, b); }};
}

// The CNN's second convolution (3x3, padding 1, 32 -> 64 channels at 14x14).
PreparedWorkload prepare_conv(const Device& device, DType dtype, Size size) {
  const int64_t n = pick<int64_t>(size, 2, 16, 64), c = pick<int64_t>(size, 8, 32, 32),
                o = pick<int64_t>(size, 16, 64, 64), hw = pick<int64_t>(size, 8, 14, 14);
  Tensor x = operand({n, c, hw, hw}, device, dtype), w = operand({o, c, 3, 3}, device, dtype),
         bias = operand({o}, device, dtype);
  const double flops = 2.0 * double(n * o * hw * hw) * double(c * 9);
  return {"batch " + std::to_string(n) + ", " + std::to_string(c) + "->" + std::to_string(o) +
              " ch, " + std::to_string(hw) + "x" + std::to_string(hw) + ", 3x3",
          flops, WorkUnit::Flops, [x, w, bias] { F::conv2d(x, w, bias, 1, 1); }};
}

// c = a + b with a new output, as a user writes it: 3 elements moved per element.
PreparedWorkload prepare_elementwise(const Device& device, DType dtype, Size size) {
  const int64_t n = pick<int64_t>(size, int64_t(1) << 12, int64_t(1) << 20, int64_t(1) << 22);
  Tensor a = operand({n}, device, dtype), b = operand({n}, device, dtype);
  return {"add, " + std::to_string(n) + " elements", 3.0 * double(n) * double(element_size(dtype)),
          WorkUnit::Bytes, [a, b] { kiln::add(a, b); }};
}

PreparedWorkload prepare_reduce(const Device& device, DType dtype, Size size) {
  const int64_t n = pick<int64_t>(size, int64_t(1) << 12, int64_t(1) << 22, int64_t(1) << 24);
  Tensor x = operand({n}, device, dtype);
  return {"sum, " + std::to_string(n) + " elements", double(n) * double(element_size(dtype)),
          WorkUnit::Bytes, [x] { x.sum(); }};
}

// One training step (zero_grad, forward, cross-entropy, backward, optimizer step) of
// a model kiln-train trains, on Fashion-MNIST-shaped random data. The optimizer runs
// with learning rate 0: the same kernels and the same work as training, but the model
// stays where it started. Thousands of real steps on one batch overfit it: its softmax
// saturates and values inside the step become denormal floats, slow on x86 CPUs (the
// MLP step went from 0.12 to 0.9-1.4 ms after ~1000 steps here, and back to 0.12 ms
// with flush-to-zero), which would time the overfitting rather than the device.
// With `graph`, the step is captured after three eager warm-up steps and each step of
// the benchmark replays it (kiln/graph.h); a device that cannot capture it (a CPU
// fallback in the step) throws here.
PreparedWorkload prepare_training(
    std::shared_ptr<nn::Sequential> model,
    std::unique_ptr<optim::Optimizer> (*make_optimizer)(std::vector<Tensor>), const Device& device,
    DType dtype, int64_t batch, bool graph = false) {
  model->to(dtype);
  model->to(device);
  std::shared_ptr<optim::Optimizer> optimizer = make_optimizer(model->parameters());
  Tensor x = operand({batch, 1, 28, 28}, device, dtype);
  Tensor y = kiln::randint(0, 10, {batch}, TensorOptions().device(Device("cpu"))).to(device);
  auto step = [model, optimizer, x, y] {
    optimizer->zero_grad();
    F::cross_entropy(model->forward(x), y).backward();
    optimizer->step();
  };
  const std::string shape = "batch " + std::to_string(batch);
  if (!graph) return {shape, double(batch), WorkUnit::Samples, step};
  for (int i = 0; i < 3; ++i) step();
  optimizer->zero_grad();  // the captured backward takes its gradients from the pool
  auto captured = std::make_shared<Graph>();
  try {
    GraphCapture capture(*captured, device);
    F::cross_entropy(model->forward(x), y).backward();
    optimizer->step();
  } catch (const Error& e) {
    throw NotApplicable(std::string("the step cannot be captured: ") + e.what());
  }
  // The model, optimizer and static batch stay alive with the step: the graph uses them.
  return {shape + ", replayed", double(batch), WorkUnit::Samples,
          [captured, model, optimizer, x, y] { captured->replay(); }};
}

PreparedWorkload prepare_cnn_step(const Device& device, DType dtype, Size size, bool graph) {
  kiln::train::ModelOptions options;
  options.batch_norm = false;  // the plain CNN of the suites' training figures
  options.dropout = 0;
  auto adam = [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
    return std::make_unique<optim::Adam>(p, optim::AdamOptions(0));
  };
  return prepare_training(kiln::train::make_cnn(options), adam, device, dtype,
                          pick<int64_t>(size, 2, 16, 64), graph);
}

PreparedWorkload prepare_train_cnn(const Device& device, DType dtype, Size size) {
  return prepare_cnn_step(device, dtype, size, false);
}

PreparedWorkload prepare_train_cnn_graph(const Device& device, DType dtype, Size size) {
  return prepare_cnn_step(device, dtype, size, true);
}

PreparedWorkload prepare_train_mlp(const Device& device, DType dtype, Size size) {
  kiln::train::ModelOptions options;
  options.dropout = 0;
  options.hidden = 256;
  auto sgd = [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
    optim::SGDOptions o(0);
    o.momentum(0.9);
    return std::make_unique<optim::SGD>(p, o);
  };
  return prepare_training(kiln::train::make_mlp(options), sgd, device, dtype,
                          pick<int64_t>(size, 4, 64, 256));
}

// One training step of kiln-gpt's model (examples/gpt/model.h: causal attention on the
// fused op, tied embeddings) on random tokens of a 65-character vocabulary, AdamW at
// learning rate 0 (see prepare_training). Small is nanoGPT's 4 layers, 4 heads, 128
// wide at context 64; medium its 6 layers, 6 heads, 384 wide at context 256.
PreparedWorkload prepare_train_gpt(const Device& device, DType dtype, Size size) {
  gpt::Config config;
  config.vocab_size = 65;
  config.n_layer = pick<int64_t>(size, 1, 4, 6);
  config.n_head = pick<int64_t>(size, 2, 4, 6);
  config.n_embd = pick<int64_t>(size, 16, 128, 384);
  config.block_size = pick<int64_t>(size, 8, 64, 256);
  const int64_t batch = pick<int64_t>(size, 2, 16, 8), t = config.block_size;
  auto model = std::make_shared<gpt::GPT>(config);
  model->to(dtype);
  model->to(device);
  auto optimizer = std::make_shared<optim::AdamW>(model->parameters(), optim::AdamWOptions(0));
  const auto on_cpu = TensorOptions().device(Device("cpu"));
  const Tensor x = kiln::randint(0, config.vocab_size, {batch, t}, on_cpu).to(device);
  const Tensor y = kiln::randint(0, config.vocab_size, {batch, t}, on_cpu).to(device);
  return {
      "batch " + std::to_string(batch) + " x " + std::to_string(t) + " tokens, " +
          std::to_string(config.n_layer) + " layers of " + std::to_string(config.n_embd),
      double(batch), WorkUnit::Samples, [model, optimizer, x, y, config] {
        optimizer->zero_grad();
        F::cross_entropy(model->forward(x).view({-1, config.vocab_size}), y.view({-1})).backward();
        optimizer->step();
      }};
}

}  // namespace

const char* size_name(Size size) {
  return size == Size::Tiny ? "tiny" : size == Size::Small ? "small" : "medium";
}

const char* throughput_unit(WorkUnit unit) {
  return unit == WorkUnit::Flops ? "GFLOP/s" : unit == WorkUnit::Bytes ? "GB/s" : "samples/s";
}

double throughput_scale(WorkUnit unit) { return unit == WorkUnit::Samples ? 1.0 : 1e9; }

const std::vector<Workload>& workloads() {
  static const std::vector<Workload> all = {
      {"gemm", "matmul of two square matrices (2n^3 flops)", prepare_gemm},
      {"conv", "conv2d forward, 3x3, padding 1, with bias", prepare_conv},
      {"elementwise", "a + b into a new tensor (3 elements moved per element)",
       prepare_elementwise},
      {"reduce", "sum of every element of a vector", prepare_reduce},
      {"train-cnn", "training step of kiln-train's CNN (no batch norm), Adam at learning rate 0",
       prepare_train_cnn},
      {"train-cnn-graph", "train-cnn captured once into a kiln::Graph and replayed",
       prepare_train_cnn_graph},
      {"train-mlp", "training step of the MLP 784-256-10, SGD + momentum at learning rate 0",
       prepare_train_mlp},
      {"train-gpt", "training step of kiln-gpt's character GPT, AdamW at learning rate 0",
       prepare_train_gpt},
  };
  return all;
}

const Workload* find_workload(const std::string& name) {
  for (const Workload& w : workloads())
    if (w.name == name) return &w;
  return nullptr;
}

std::string workload_names() {
  std::string names;
  for (const Workload& w : workloads()) names += (names.empty() ? "" : ", ") + w.name;
  return names;
}

}  // namespace kiln::bench
