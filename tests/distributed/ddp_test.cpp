// The MPI process group and DistributedDataParallel, run by mpirun on loopback with
// 2 or 4 ranks (tests/distributed/CMakeLists.txt). Every rank runs every test; a
// failure on any rank fails the CTest. The Failure.* tests need their own
// environment and run only from their own registrations.
#include <gtest/gtest.h>
#include <kiln/distributed/mpi.h>
#include <kiln/kiln.h>
#include <kiln/nn.h>
#include <kiln/optim.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <thread>

#include "distributed_test_util.h"

namespace kiln::test {
namespace {

namespace F = nn::functional;
using distributed::ReduceOp;

std::shared_ptr<distributed::ProcessGroup> group() { return distributed::mpi::init(); }

TEST(MpiGroup, KnowsItsPlace) {
  auto g = group();
  EXPECT_TRUE(distributed::mpi::launched());
  EXPECT_GE(g->size(), 2) << "run these tests with mpirun -np 2 or more";
  EXPECT_EQ(g, group()) << "init() must return the same group";
  EXPECT_EQ(distributed::mpi::local_rank(), g->rank()) << "one machine: local rank = rank";
}

TEST(MpiGroup, CollectivesAgainstAReference) {
  auto g = group();
  const int n = g->size(), me = g->rank();
  for (DType dtype : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int32,
                      DType::Int64})
    for (int64_t count : {0, 1, 1001})
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Min, ReduceOp::Max}) {
        // value(rank, i) = (i % 9 - 4) * (rank + 1): exact in every dtype.
        auto value = [&](int r, int64_t i) { return static_cast<double>((i % 9 - 4) * (r + 1)); };
        std::vector<double> mine(static_cast<size_t>(count));
        for (int64_t i = 0; i < count; ++i) mine[static_cast<size_t>(i)] = value(me, i);
        Tensor t = from_vector<double>(mine, {count}).to(dtype);
        g->all_reduce(t, op);
        const auto got = t.to_vector<double>();
        for (int64_t i = 0; i < count; ++i) {
          double e = value(0, i);
          for (int r = 1; r < n; ++r) {
            const double v = value(r, i);
            e = op == ReduceOp::Min ? std::min(e, v) : op == ReduceOp::Max ? std::max(e, v) : e + v;
          }
          if (op == ReduceOp::Avg) e = is_floating(dtype) ? e / n : std::trunc(e / n);
          ASSERT_EQ(got[static_cast<size_t>(i)], e)
              << dtype << " " << distributed::reduce_op_name(op) << " n=" << count << " element "
              << i;
        }
      }
  Tensor b = full({5}, static_cast<double>(me) + 10, TensorOptions().dtype(DType::Int64));
  g->broadcast(b, n - 1);
  EXPECT_EQ(b.to_vector<int64_t>(), std::vector<int64_t>(5, n - 1 + 10));
  Tensor all = zeros({n * 3});
  g->all_gather(full({3}, static_cast<double>(me)), all);
  for (int r = 0; r < n; ++r)
    EXPECT_EQ(all.narrow(0, r * 3, 3).to_vector<float>(),
              std::vector<float>(3, static_cast<float>(r)));
  g->barrier();
}

TEST(MpiGroup, DisagreementIsAnErrorOnEveryRankAndTheGroupGoesOn) {
  auto g = group();
  Tensor t = ones({g->rank() == 0 ? 4 : 5});
  expect_error([&] { g->all_reduce(t); }, {"disagree", "4", "5", "elements"});
  Tensor d = ones({3}, TensorOptions().dtype(g->rank() == 0 ? DType::Float32 : DType::Float64));
  expect_error([&] { g->all_reduce(d); }, {"disagree", "float32", "float64"});
  Tensor ok = ones({3});
  g->all_reduce(ok);
  EXPECT_EQ(ok.to_vector<float>(), std::vector<float>(3, static_cast<float>(g->size())));
}

struct TrainingRun {
  std::vector<float> losses;
  nn::StateDict state;
};

// Twenty SGD steps on a global batch of 32. With a group, this rank trains on its
// contiguous 32/size slice of the same batch through DDP, and the reported loss is
// the mean over ranks; the model starts from a different seed on every rank, so
// DDP's broadcast from rank 0 is what makes the runs comparable.
TrainingRun train(std::shared_ptr<distributed::ProcessGroup> g, int steps = 20) {
  manual_seed(g ? 1234 + static_cast<uint64_t>(g->rank()) : 1234);
  auto model = small_cnn();
  std::shared_ptr<nn::Module> net = model;
  if (g) net = std::make_shared<nn::DistributedDataParallel>(model, g);
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  manual_seed(99);  // the data: the same stream on every rank and in the reference
  const Tensor teacher = randn({144, 10});
  TrainingRun run;
  for (int step = 0; step < steps; ++step) {
    Tensor x = randn({32, 1, 12, 12});
    Tensor y = matmul(x.flatten(1), teacher).argmax(1);
    if (g) {
      const int64_t part = 32 / g->size();
      x = x.narrow(0, g->rank() * part, part);
      y = y.narrow(0, g->rank() * part, part);
    }
    opt.zero_grad();
    Tensor loss = F::cross_entropy(net->forward(x), y);
    loss.backward();
    opt.step();
    Tensor reported = loss.detach().clone();
    if (g) g->all_reduce(reported, ReduceOp::Avg);
    run.losses.push_back(reported.item<float>());
  }
  run.state = model->state_dict();
  return run;
}

TEST(DistributedDataParallel, TrainsLikeOneProcess) {
  auto g = group();
  ASSERT_EQ(32 % g->size(), 0);
  const TrainingRun single = train(nullptr);
  const TrainingRun ddp = train(g);
  ASSERT_LT(single.losses.back(), single.losses.front());
  for (size_t i = 0; i < single.losses.size(); ++i)
    EXPECT_NEAR(ddp.losses[i], single.losses[i], 1e-5 * std::abs(single.losses[i]) + 1e-6)
        << "step " << i;
  for (size_t i = 0; i < single.state.size(); ++i)
    EXPECT_LE(relative_difference(ddp.state[i].second, single.state[i].second), 1e-5)
        << single.state[i].first << " on rank " << g->rank();
}

TEST(DistributedDataParallel, CommunicationStartsWhileBackwardRuns) {
  auto g = group();
  manual_seed(3);
  auto model = small_cnn();
  // Small buckets: one or two layers each, so the last layers' bucket can start while
  // the first layers' gradients are still being computed.
  nn::DistributedDataParallel ddp(model, g,
                                  nn::DistributedDataParallelOptions().bucket_cap_mb(0.01));
  Tensor x = randn({16, 1, 12, 12});
  Tensor y = matmul(x.flatten(1), randn({144, 10})).argmax(1);
  F::cross_entropy(ddp.forward(x), y).backward();
  const auto stats = ddp.last_stats();
  EXPECT_GT(stats.bucket_sizes.size(), 2u);
  EXPECT_GT(stats.grads_ready_after_first_launch, 0u)
      << "every gradient was ready before the first all-reduce started: no overlap";
  ASSERT_FALSE(stats.launch_seconds.empty());
  EXPECT_LT(stats.launch_seconds.front(), stats.last_grad_seconds);
  if (g->rank() == 0)
    std::printf(
        "DDP overlap: %zu buckets, first launched at %.6f s, last gradient at %.6f s, "
        "%zu gradients computed after the first launch\n",
        stats.bucket_sizes.size(), stats.launch_seconds.front(), stats.last_grad_seconds,
        stats.grads_ready_after_first_launch);
}

TEST(DistributedDataParallel, NoSyncAccumulatesLocallyThenReducesEverything) {
  auto g = group();
  manual_seed(11);
  auto model = small_cnn();
  nn::DistributedDataParallel ddp(model, g);
  auto reference = std::static_pointer_cast<nn::Sequential>(model->clone());
  manual_seed(50 + static_cast<uint64_t>(g->rank()));  // each rank its own data
  Tensor x1 = randn({4, 1, 12, 12}), x2 = randn({4, 1, 12, 12});
  Tensor y = arange(0, 4, 1, TensorOptions().dtype(DType::Int64));
  {
    auto guard = ddp.no_sync();
    F::cross_entropy(ddp.forward(x1), y).backward();
  }
  // Not reduced: the ranks' gradients differ.
  Tensor g1 = model->parameters()[0].grad().clone();
  Tensor gathered = zeros({g->size() * g1.numel()});
  g->all_gather(g1.flatten(), gathered);
  EXPECT_GT(relative_difference(gathered.narrow(0, 0, g1.numel()),
                                gathered.narrow(0, g1.numel(), g1.numel())),
            1e-3);
  F::cross_entropy(ddp.forward(x2), y).backward();
  // Reference: this rank's g1 + g2 without DDP, averaged over ranks.
  F::cross_entropy(reference->forward(x1), y).backward();
  F::cross_entropy(reference->forward(x2), y).backward();
  auto params = model->parameters(), ref = reference->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor expected = ref[i].grad().clone();
    g->all_reduce(expected, ReduceOp::Avg);
    EXPECT_LE(relative_difference(params[i].grad(), expected), 1e-5) << "parameter " << i;
  }
}

// Identity forward; its backward throws while `fail` is set.
bool fail_backward = false;
struct Boom : autograd::Function<Boom> {
  static Tensor forward(autograd::AutogradContext&, const Tensor& x) { return x.clone(); }
  static std::vector<Tensor> backward(autograd::AutogradContext&, std::vector<Tensor> grads) {
    if (fail_backward) throw Error("boom in backward");
    return {grads[0]};
  }
};
struct BoomNet : nn::Module {
  BoomNet() : Module("BoomNet") {
    a = register_module("a", std::make_shared<nn::Linear>(4, 4));
    b = register_module("b", std::make_shared<nn::Linear>(4, 3));
  }
  Tensor forward(const Tensor& x) override { return b->forward(Boom::apply(a->forward(x))); }
  std::shared_ptr<nn::Linear> a, b;
};

TEST(DistributedDataParallel, RecoversFromABackwardThatFailedHalfWay) {
  // b's gradients are ready (and its bucket started) before Boom throws; the next
  // step must still reduce every gradient, on every rank alike.
  auto g = group();
  manual_seed(4);
  auto model = std::make_shared<BoomNet>();
  nn::DistributedDataParallel ddp(model, g,
                                  nn::DistributedDataParallelOptions().bucket_cap_mb(1e-5));
  manual_seed(60 + static_cast<uint64_t>(g->rank()));
  Tensor x = randn({5, 4});
  fail_backward = true;
  expect_error([&] { ddp.forward(x).sum().backward(); }, {"boom in backward"});
  fail_backward = false;
  model->zero_grad();
  ddp.forward(x).sum().backward();
  for (const Tensor& p : model->parameters()) {
    Tensor all = zeros({g->size() * p.numel()});
    g->all_gather(p.grad().flatten(), all);
    for (int r = 1; r < g->size(); ++r)
      EXPECT_EQ(all.narrow(0, r * p.numel(), p.numel()).to_vector<float>(),
                all.narrow(0, 0, p.numel()).to_vector<float>())
          << "rank " << r << " has other gradients: the step was not reduced";
  }
}

TEST(DistributedDataParallel, DifferentModelsAreRefusedOnEveryRank) {
  auto g = group();
  auto model = std::make_shared<nn::Linear>(4, g->rank() == 0 ? 6 : 5);
  expect_error([&] { nn::DistributedDataParallel ddp(model, g); },
               {"parameter 'weight'", "[6, 4]", "[5, 4]", "rank 0"});
  auto different_count = std::make_shared<nn::Sequential>();
  different_count->push_back(std::make_shared<nn::Linear>(4, 4));
  if (g->rank() == 1) different_count->push_back(std::make_shared<nn::Linear>(4, 4));
  expect_error([&] { nn::DistributedDataParallel ddp(different_count, g); },
               {"different parameters"});
  g->barrier();  // and the group still works
}

TEST(SyncBatchNorm, NormalizesWithTheGlobalBatchAndPlainBatchNormDoesNot) {
  auto g = group();
  const int n = g->size();
  manual_seed(21);
  auto plain = std::make_shared<nn::BatchNorm2d>(3);
  auto sync = std::make_shared<nn::SyncBatchNorm>(3, g);
  {
    NoGradGuard no_grad;  // the same non-trivial affine parameters everywhere
    plain->weight.copy_(from_vector<float>({0.5f, 1.5f, -1.0f}, {3}));
    plain->bias.copy_(from_vector<float>({0.1f, -0.2f, 0.3f}, {3}));
    sync->weight.copy_(plain->weight);
    sync->bias.copy_(plain->bias);
  }
  // Rank r's part of the global batch, shifted and scaled per rank so that the
  // ranks' own statistics differ from the global ones.
  manual_seed(77);
  std::vector<Tensor> parts;
  for (int r = 0; r < n; ++r) parts.push_back(randn({2, 3, 4, 4}) * (r + 1) + r);
  Tensor global = cat(parts, 0).requires_grad_();
  Tensor mine = parts[static_cast<size_t>(g->rank())].clone().requires_grad_();
  Tensor weights = randn({2 * n, 3, 4, 4});  // a fixed projection, for a scalar loss

  // Reference: one process, plain BatchNorm on the whole batch.
  auto whole = std::static_pointer_cast<nn::BatchNorm2d>(plain->clone());
  Tensor expected = whole->forward(global);
  (expected * weights).sum().backward();
  // SyncBatchNorm on this rank's part.
  Tensor out = sync->forward(mine);
  (out * weights.narrow(0, 2 * g->rank(), 2)).sum().backward();
  EXPECT_LE(relative_difference(out, expected.narrow(0, 2 * g->rank(), 2)), 1e-5);
  EXPECT_LE(relative_difference(mine.grad(), global.grad().narrow(0, 2 * g->rank(), 2)), 1e-4);
  EXPECT_LE(relative_difference(sync->running_mean, whole->running_mean), 1e-5);
  EXPECT_LE(relative_difference(sync->running_var, whole->running_var), 1e-5);
  Tensor weight_grad = sync->weight.grad().clone();
  g->all_reduce(weight_grad);  // what DDP does with parameter gradients (as a mean)
  EXPECT_LE(relative_difference(weight_grad, whole->weight.grad()), 1e-4);

  // Plain BatchNorm on this rank's part uses this rank's statistics: not the global.
  Tensor local = plain->forward(parts[static_cast<size_t>(g->rank())]);
  EXPECT_GT(relative_difference(local, expected.narrow(0, 2 * g->rank(), 2)), 1e-2);
  // A channel far from zero with a tiny spread: E[x^2] - E[x]^2 must not go negative.
  Tensor far = randn({2, 3, 4, 4}) * 0.01 + 1000;
  Tensor far_out = sync->forward(far);
  for (float v : far_out.to_vector<float>())
    ASSERT_TRUE(std::isfinite(v)) << "SyncBatchNorm produced " << v;
  // Eval mode: the running statistics, no communication.
  sync->eval();
  EXPECT_EQ(sync->forward(mine).shape().vec(), mine.shape().vec());
}

// -- failures: each from its own CTest registration --------------------------------------

TEST(Failure, AStuckRankIsNamedOnTheOthers) {
  // KILN_COLLECTIVE_TIMEOUT=2: rank 1 stops taking part; the others must get an error
  // naming it within the timeout, not hang.
  auto g = group();
  if (g->rank() == 1) {
    std::this_thread::sleep_for(std::chrono::seconds(6));
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  Tensor t = ones({8});
  expect_error([&] { g->all_reduce(t); }, {"all_reduce", "timed out", "did not arrive: 1", "mpi"});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 10.0);
  std::printf("SURVIVOR rank %d: error after %.2f s\n", g->rank(), seconds);
  expect_error([&] { g->all_reduce(t); }, {"unusable"});
}

TEST(Failure, AKilledRankDoesNotHangTheOthers) {
  // Run with mpirun --enable-recovery and KILN_COLLECTIVE_TIMEOUT=2: rank 1 dies in
  // the middle of training; the others get an error instead of waiting forever.
  auto g = group();
  manual_seed(1);
  auto model = small_cnn();
  nn::DistributedDataParallel ddp(model, g);
  Tensor x = randn({4, 1, 12, 12});
  Tensor y = arange(0, 4, 1, TensorOptions().dtype(DType::Int64));
  F::cross_entropy(ddp.forward(x), y).backward();  // one good step
  if (g->rank() == 1) std::raise(SIGKILL);
  const auto start = std::chrono::steady_clock::now();
  expect_error([&] { F::cross_entropy(ddp.forward(x), y).backward(); }, {"mpi"});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 15.0);
  std::printf("SURVIVOR rank %d: error after %.2f s\n", g->rank(), seconds);
}

}  // namespace
}  // namespace kiln::test
