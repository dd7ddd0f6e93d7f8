// A training step of a small CNN through the frontend, on cuda:0: every op runs on the
// GPU (no CPU fallback) and the step makes the host wait for the GPU zero times
// (counted by the plugin, kiln.cuda.debug). Only reading the loss synchronizes.
#include <kiln/nn.h>
#include <kiln/optim.h>

#include "cuda_test_util.h"
#include "support/kiln_test.h"

namespace kiln::test::cuda {
namespace {

namespace F = kiln::nn::functional;

std::shared_ptr<nn::Sequential> small_cnn() {
  auto net = std::make_shared<nn::Sequential>();
  net->push_back(std::make_shared<nn::Conv2d>(1, 8, 3, nn::Conv2dOptions().padding(1)));
  net->push_back(std::make_shared<nn::BatchNorm2d>(8));
  net->push_back(std::make_shared<nn::ReLU>());
  net->push_back(std::make_shared<nn::MaxPool2d>(2));
  net->push_back(std::make_shared<nn::Flatten>());
  net->push_back(std::make_shared<nn::Linear>(8 * 14 * 14, 32));
  net->push_back(std::make_shared<nn::ReLU>());
  net->push_back(std::make_shared<nn::Dropout>(0.25));
  net->push_back(std::make_shared<nn::Linear>(32, 10));
  return net;
}

TEST(CudaTraining, AStepDoesNotSynchronize) {
  KILN_REQUIRE_CUDA();
  manual_seed(7);
  auto model = small_cnn();
  model->to(kCuda0);
  model->train();
  optim::Adam optimizer(model->parameters(), optim::AdamOptions(1e-3));
  const TensorOptions on_cuda = TensorOptions().device(kCuda0);
  const Tensor images = randn({16, 1, 28, 28}, on_cuda);
  const Tensor labels = from_vector<int64_t>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5}, {16},
                                             TensorOptions().dtype(int64).device(kCuda0));
  auto step = [&] {
    optimizer.zero_grad();
    Tensor loss = F::cross_entropy(model->forward(images), labels);
    loss.backward();
    optimizer.step();
    return loss;
  };
  // Warm-up: kernel lookups, library handles, the allocator's first segments.
  reset_fallback_report();
  step();
  const double first = step().item<double>();
  EXPECT_TRUE(std::isfinite(first));
  ASSERT_TRUE(fallback_report().empty()) << "ops of the step ran on the CPU instead of cuda:0:\n"
                                         << fallback_report().str();

  const kiln_cuda_debug_counters before = counters();
  Tensor loss = step();
  const kiln_cuda_debug_counters after = counters();
  EXPECT_EQ(after.host_synchronizations, before.host_synchronizations)
      << "the training step made the host wait for the GPU";
  EXPECT_GT(after.op_calls, before.op_calls + 20) << "the step's ops did not run on cuda:0";
  // Reading the loss is the one synchronization.
  EXPECT_TRUE(std::isfinite(loss.item<double>()));
  EXPECT_EQ(counters().host_synchronizations, after.host_synchronizations + 1);
}

}  // namespace
}  // namespace kiln::test::cuda
