// The last check: a tiny CNN trained for a few steps on the device under test and on
// the CPU, from the same initial weights and data; the loss curves must agree.
#include "training_check.h"

#include <kiln/error.h>
#include <kiln/nn.h>
#include <kiln/optim.h>

#include <cmath>
#include <sstream>

#include "op_runner.h"
#include "op_suite.h"

namespace kiln::conformance {

namespace {

namespace F = kiln::nn::functional;

constexpr int kSteps = 8;

std::shared_ptr<nn::Sequential> tiny_cnn() {
  auto net = std::make_shared<nn::Sequential>();
  net->push_back(std::make_shared<nn::Conv2d>(1, 4, 3, nn::Conv2dOptions().padding(1)));
  net->push_back(std::make_shared<nn::BatchNorm2d>(4));
  net->push_back(std::make_shared<nn::ReLU>());
  net->push_back(std::make_shared<nn::MaxPool2d>(2));
  net->push_back(std::make_shared<nn::Flatten>());
  net->push_back(std::make_shared<nn::Linear>(4 * 4 * 4, 4));
  return net;
}

// The loss after each of kSteps Adam steps on `device`. Weights and data are built on
// the CPU from fixed seeds and copied over, so both runs start identically.
std::vector<double> train(const Device& device) {
  const Device cpu("cpu", 0);
  manual_seed(1234);
  auto net = tiny_cnn();
  net->to(device);
  net->train();
  const std::vector<double> pixels = random_values(16 * 64, 7, 0, 1);
  std::vector<double> labels(16);
  for (size_t i = 0; i < labels.size(); ++i) {
    double s = 0;  // a learnable rule: which quarter of the image is brightest
    int best = 0;
    for (int q = 0; q < 4; ++q) {
      double v = 0;
      for (int k = 0; k < 16; ++k) v += pixels[i * 64 + static_cast<size_t>(q * 16 + k)];
      if (q == 0 || v > s) s = v, best = q;
    }
    labels[i] = best;
  }
  Tensor x = make_tensor(pixels, {16, 1, 8, 8}, DType::Float32, device);
  Tensor y = make_tensor(labels, {16}, DType::Int64, device);
  optim::Adam optimizer(net->parameters(), optim::AdamOptions(0.01));
  std::vector<double> losses;
  for (int step = 0; step < kSteps; ++step) {
    optimizer.zero_grad();
    Tensor loss = F::cross_entropy(net->forward(x), y);
    loss.backward();
    optimizer.step();
    losses.push_back(loss.item<double>());
  }
  return losses;
}

std::string curve(const std::vector<double>& losses) {
  std::ostringstream out;
  out.precision(5);
  for (size_t i = 0; i < losses.size(); ++i) out << (i ? " " : "") << losses[i];
  return out.str();
}

}  // namespace

void training_check(const Device& device, Reporter& reporter) {
  CheckResult result;
  result.section = "training";
  result.name = "tiny CNN, 8 Adam steps";
  reporter.begin("training: tiny CNN on " + device.str());
  const uint64_t baseline = memory_stats(device).bytes_in_use;
  reset_fallback_report();
  std::vector<double> on_device;
  try {
    on_device = train(device);
  } catch (const kiln::Error& e) {
    // This check's failure, in words that tell a kernel's returned error from an ABI
    // violation (an exception that escaped the plugin).
    result.status = Status::Failed;
    result.message = plugin_error_text(e.what(), device);
    reporter.result(result);
    return;
  }
  const size_t fallbacks = fallback_report().entries.size();
  reporter.begin("training: tiny CNN on the CPU");
  const std::vector<double> on_cpu = train(Device("cpu", 0));
  double worst = 0;
  std::string failure;
  for (int i = 0; i < kSteps; ++i) {
    const double diff =
        std::abs(on_device[static_cast<size_t>(i)] - on_cpu[static_cast<size_t>(i)]);
    if (!std::isnan(diff)) worst = std::max(worst, diff);
    if (!(diff <= 1e-4 + 1e-3 * std::abs(on_cpu[static_cast<size_t>(i)])) && failure.empty())
      failure = "step " + std::to_string(i + 1) + ": loss " +
                std::to_string(on_device[static_cast<size_t>(i)]) + ", the CPU's " +
                std::to_string(on_cpu[static_cast<size_t>(i)]);
  }
  result.max_error = worst;
  kiln::synchronize(device);
  const uint64_t after = memory_stats(device).bytes_in_use;
  if (!failure.empty()) {
    result.status = Status::Failed;
    result.message = "the loss curves differ at " + failure + "\n  device: " + curve(on_device) +
                     "\n  cpu:    " + curve(on_cpu);
  } else if (after != baseline) {
    result.status = Status::Failed;
    result.message = "memory leak: bytes_in_use was " + std::to_string(baseline) +
                     " before training and " + std::to_string(after) + " after";
  } else if (!(on_cpu.back() < on_cpu.front())) {
    result.status = Status::Failed;
    result.message = "the reference loss did not decrease (" + curve(on_cpu) + "): a runner bug";
  } else {
    result.message = "loss " + curve(on_device) + " (" + std::to_string(fallbacks) +
                     " ops through the CPU fallback)";
  }
  reporter.result(result);
}

}  // namespace kiln::conformance
