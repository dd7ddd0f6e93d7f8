// nn::DataParallel over the CPU plugin's logical devices (KILN_CPU_DEVICES=4): the
// same math as one device, step by step; BatchNorm's per-replica statistics; and the
// errors a user can run into.
#include <gtest/gtest.h>
#include <kiln/kiln.h>
#include <kiln/nn.h>
#include <kiln/optim.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "distributed_test_util.h"

namespace kiln::test {
namespace {

namespace F = nn::functional;

std::vector<Device> devices(int n) {
  std::vector<Device> out;
  for (int i = 0; i < n; ++i) out.emplace_back("cpu", i);
  return out;
}

struct TrainingRun {
  std::vector<float> losses;
  nn::StateDict state;
};

// Twenty SGD steps with momentum on a fixed synthetic batch stream of 32 images;
// `replicas` = 0 trains the model directly, otherwise through DataParallel.
TrainingRun train(int replicas, int steps = 20) {
  manual_seed(1234);
  auto model = small_cnn();
  std::shared_ptr<nn::Module> net = model;
  if (replicas > 0) net = std::make_shared<nn::DataParallel>(model, devices(replicas));
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  TrainingRun run;
  const Tensor teacher = randn({144, 10});  // labels: argmax of a fixed projection
  for (int step = 0; step < steps; ++step) {
    Tensor x = randn({32, 1, 12, 12});
    Tensor y = matmul(x.flatten(1), teacher).argmax(1);
    opt.zero_grad();
    Tensor loss = F::cross_entropy(net->forward(x), y);
    loss.backward();
    opt.step();
    run.losses.push_back(loss.item<float>());
  }
  run.state = model->state_dict();
  return run;
}

// GPT's weight tying (lm_head.weight = wte.weight): the replicas are tied too, so the
// tied weight's gradient sums both uses on every device, as on one.
struct TiedLM : nn::Module {
  TiedLM() : nn::Module("TiedLM") {
    wte = register_module<nn::Embedding>("wte", 7, 4);
    head = register_module<nn::Linear>("head", 4, 7, /*bias=*/false);
    head->weight = wte->weight;
  }
  Tensor forward(const Tensor& indices) override { return head->forward(wte->forward(indices)); }
  std::shared_ptr<Module> clone() const override {
    return copy_state_into(std::make_shared<TiedLM>());
  }
  std::shared_ptr<nn::Embedding> wte;
  std::shared_ptr<nn::Linear> head;
};

TEST(DataParallel, KeepsWeightTyingInTheReplicas) {
  manual_seed(7);
  auto model = std::make_shared<TiedLM>();
  const Tensor indices = from_vector<int64_t>({1, 2, 3, 4, 5, 6, 0, 1}, {8});
  const Tensor r = randn({8, 7});
  (model->forward(indices) * r).sum().backward();
  const Tensor single = model->wte->weight.grad().clone();
  model->zero_grad();

  nn::DataParallel dp(model, devices(2));
  EXPECT_EQ(dp.parameters().size(), 1u);
  (dp.forward(indices) * r).sum().backward();
  ASSERT_TRUE(model->head->weight.grad().defined());
  EXPECT_TRUE(allclose(model->wte->weight.grad(), single, 1e-5, 1e-6));
}

TEST(DataParallel, TrainsLikeOneDevice) {
  // Each replica computes its chunk's gradients; autograd sums them into the wrapped
  // module's, in device order. The mean loss over the batch is the same sum in a
  // different grouping, so results agree to float rounding, not bit for bit.
  const TrainingRun single = train(0);
  ASSERT_LT(single.losses.back(), single.losses.front()) << "the reference run must learn";
  for (int replicas : {2, 4}) {
    SCOPED_TRACE("devices: " + std::to_string(replicas));
    const TrainingRun dp = train(replicas);
    ASSERT_EQ(dp.losses.size(), single.losses.size());
    for (size_t i = 0; i < dp.losses.size(); ++i)
      EXPECT_NEAR(dp.losses[i], single.losses[i], 1e-5 * std::abs(single.losses[i]) + 1e-6)
          << "step " << i;
    ASSERT_EQ(dp.state.size(), single.state.size());
    for (size_t i = 0; i < dp.state.size(); ++i) {
      EXPECT_EQ(dp.state[i].second.device(), Device("cpu", 0)) << dp.state[i].first;
      EXPECT_LE(relative_difference(dp.state[i].second, single.state[i].second), 1e-5)
          << dp.state[i].first;
    }
  }
}

TEST(DataParallel, GradientsAreThoseOfTheWholeBatch) {
  manual_seed(5);
  auto model = small_cnn();
  auto dp = std::make_shared<nn::DataParallel>(model, devices(3));
  Tensor x = randn({7, 1, 12, 12});  // 3 + 3 + 1: uneven chunks
  Tensor y = arange(0, 7, 1, TensorOptions().dtype(DType::Int64));
  const uint64_t allocations_on_2 = memory_stats(Device("cpu", 2)).num_allocations;
  F::cross_entropy(dp->forward(x), y).backward();
  EXPECT_GT(memory_stats(Device("cpu", 2)).num_allocations, allocations_on_2)
      << "the third replica did not run on cpu:2";
  std::vector<Tensor> dp_grads;
  for (const Tensor& p : model->parameters()) dp_grads.push_back(p.grad().clone());
  model->zero_grad();
  F::cross_entropy(model->forward(x), y).backward();
  auto params = model->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(dp_grads[i].device(), Device("cpu", 0));
    EXPECT_LE(relative_difference(dp_grads[i], params[i].grad()), 1e-5) << "parameter " << i;
  }
}

TEST(DataParallel, SmallBatchesUseFewerDevicesAndNoGradWorks) {
  manual_seed(6);
  auto model = small_cnn();
  auto dp = std::make_shared<nn::DataParallel>(model, devices(4));
  NoGradGuard no_grad;
  for (int64_t n : {1, 2, 3, 5}) {
    Tensor x = randn({n, 1, 12, 12});
    Tensor out = dp->forward(x);
    EXPECT_EQ(out.shape().vec(), (std::vector<int64_t>{n, 10}));
    EXPECT_EQ(out.device(), Device("cpu", 0));
    EXPECT_FALSE(out.requires_grad());
    EXPECT_LE(relative_difference(out, model->forward(x)), 1e-6) << "batch " << n;
  }
}

TEST(DataParallel, BatchNormUsesEachReplicasOwnStatistics) {
  // As in PyTorch: each replica normalizes its chunk with the chunk's statistics, and
  // only the wrapped module (device 0) updates the running statistics, from chunk 0.
  manual_seed(8);
  auto bn = std::make_shared<nn::BatchNorm2d>(3);
  auto reference = std::static_pointer_cast<nn::BatchNorm2d>(bn->clone());
  auto dp = std::make_shared<nn::DataParallel>(bn, devices(2));
  Tensor x = randn({8, 3, 4, 4}) * 2 + 1;
  x = cat({x.narrow(0, 0, 4), x.narrow(0, 4, 4) * 5 - 3}, 0);  // chunks differ
  Tensor out = dp->forward(x);
  Tensor first = reference->forward(x.narrow(0, 0, 4));
  auto second_module = std::static_pointer_cast<nn::BatchNorm2d>(bn->clone());
  EXPECT_LE(relative_difference(out.narrow(0, 0, 4), first), 1e-5);
  EXPECT_LE(relative_difference(out.narrow(0, 4, 4), second_module->forward(x.narrow(0, 4, 4))),
            1e-5);
  // Not the whole batch's statistics:
  auto whole = std::static_pointer_cast<nn::BatchNorm2d>(reference->clone());
  EXPECT_GT(relative_difference(out, whole->forward(x)), 1e-2);
  EXPECT_LE(relative_difference(bn->running_mean, reference->running_mean), 1e-6);
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
}

TEST(DataParallel, WrapsTheModuleUnderTheNameModule) {
  auto model = small_cnn();
  auto dp = std::make_shared<nn::DataParallel>(model, devices(2));
  auto state = dp->state_dict();
  ASSERT_FALSE(state.empty());
  EXPECT_EQ(state[0].first, "module.0.weight");
  EXPECT_EQ(dp->parameters().size(), model->parameters().size());
  EXPECT_EQ(dp->module(), model);
}

struct NoClone : nn::Module {
  NoClone() : Module("NoClone") { w = register_parameter("w", ones({2})); }
  Tensor forward(const Tensor& x) override { return x * w; }
  Tensor w;
};

// A group that is never used: SyncBatchNorm needs one to be built.
struct UnusedGroup : distributed::ProcessGroup {
  int rank() const override { return 0; }
  int size() const override { return 2; }
  std::string str() const override { return "unused"; }
  std::shared_ptr<distributed::Work> all_reduce_async(const Tensor&,
                                                      distributed::ReduceOp) override {
    throw Error("UnusedGroup was used");
  }
  void broadcast(const Tensor&, int) override { throw Error("UnusedGroup was used"); }
  void all_gather(const Tensor&, const Tensor&) override { throw Error("UnusedGroup was used"); }
  void barrier() override { throw Error("UnusedGroup was used"); }
};

TEST(DataParallel, ErrorsNameTheCause) {
  auto with_sync_bn = std::make_shared<nn::Sequential>();
  with_sync_bn->push_back(std::make_shared<nn::SyncBatchNorm>(3, std::make_shared<UnusedGroup>()));
  expect_error([&] { nn::DataParallel dp(with_sync_bn, devices(2)); },
               {"SyncBatchNorm", "DistributedDataParallel"});
  expect_error([] { nn::DataParallel dp(std::make_shared<NoClone>(), devices(2)); },
               {"NoClone", "clone()"});
  // One device needs no replica, so any module works.
  nn::DataParallel single(std::make_shared<NoClone>(), devices(1));
  EXPECT_EQ(single.forward(ones({3, 2})).to_vector<float>(), std::vector<float>(6, 1.0f));

  expect_error(
      [] {
        nn::DataParallel dp(small_cnn(), {Device("cpu", 1), Device("cpu", 0)});
      },
      {"first device", "cpu:1", "cpu:0"});
  expect_error(
      [] {
        nn::DataParallel dp(small_cnn(), {Device("cpu", 0), Device("cpu", 0)});
      },
      {"twice"});
  auto dp = std::make_shared<nn::DataParallel>(small_cnn(), devices(2));
  expect_error([&] { dp->forward(randn({4, 2, 12, 12})); }, {"DataParallel", "replica", "cpu:"});
  expect_error([&] { dp->forward(Tensor()); }, {"DataParallel"});
  // Still usable.
  EXPECT_EQ(dp->forward(randn({4, 1, 12, 12})).shape().vec(), (std::vector<int64_t>{4, 10}));
}

TEST(ModuleClone, CopiesValuesAndSharesNothing) {
  auto model = small_cnn(/*batch_norm=*/true);
  model->eval();
  auto copy = model->clone();
  EXPECT_FALSE(copy->is_training());
  auto a = model->state_dict(), b = copy->state_dict();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_EQ(a[i].second.to_vector<double>(), b[i].second.to_vector<double>()) << a[i].first;
  }
  NoGradGuard no_grad;
  model->parameters()[0].fill_(0.5);
  EXPECT_NE(copy->parameters()[0].to_vector<float>()[0], 0.5f) << "the clone shares storage";
}

}  // namespace
}  // namespace kiln::test
