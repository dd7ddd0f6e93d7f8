// DataLoader: batch sizes, deterministic shuffling per (seed, epoch), coverage,
// prefetch equivalence and concurrency, error propagation and clean shutdown.
#include <kiln/data/dataloader.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <set>
#include <thread>

#include "kiln_test.h"
#include "loader_helpers.h"

namespace kiln::test {
namespace {

using data::DataLoader;
using data::DataLoaderOptions;
using data::Example;
using data::TensorDataset;
using namespace std::chrono_literals;

TEST(DataLoader, BatchSizesWithAndWithoutDropLast) {
  for (bool prefetch : {false, true}) {
    SCOPED_TRACE(prefetch ? "prefetch" : "no prefetch");
    DataLoader keep(counting(10), DataLoaderOptions().batch_size(3).prefetch(prefetch));
    EXPECT_EQ(keep.size(), 4);
    std::vector<int64_t> sizes;
    for (auto& batch : keep) {
      EXPECT_EQ(batch.input.size(0), batch.target.size(0));
      sizes.push_back(batch.input.size(0));
    }
    EXPECT_EQ(sizes, (std::vector<int64_t>{3, 3, 3, 1}));

    DataLoader drop(counting(10),
                    DataLoaderOptions().batch_size(3).drop_last(true).prefetch(prefetch));
    EXPECT_EQ(drop.size(), 3);
    sizes.clear();
    for (auto& batch : drop) sizes.push_back(batch.input.size(0));
    EXPECT_EQ(sizes, (std::vector<int64_t>{3, 3, 3}));

    DataLoader exact(counting(9), DataLoaderOptions().batch_size(3).drop_last(true));
    EXPECT_EQ(exact.size(), 3);
    DataLoader too_few(counting(2), DataLoaderOptions().batch_size(3).drop_last(true));
    EXPECT_EQ(too_few.size(), 0);
    EXPECT_TRUE(too_few.begin() == too_few.end());
  }
}

TEST(DataLoader, WithoutShuffleBatchesAreInOrder) {
  DataLoader loader(counting(7), DataLoaderOptions().batch_size(3));
  EXPECT_EQ(targets_of_epoch(loader),
            (std::vector<std::vector<int64_t>>{{0, 1, 2}, {3, 4, 5}, {6}}));
  auto it = loader.begin();  // the batch lives as long as an iterator to it
  auto& first = *it;
  EXPECT_EQ(first.input.shape(), IntArrayRef({3, 1}));
  EXPECT_EQ(first.input.dtype(), float32);
}

TEST(DataLoader, ShuffleIsAFunctionOfSeedAndEpoch) {
  auto options = DataLoaderOptions().batch_size(8).shuffle(true).seed(42);
  DataLoader a(counting(100), options), b(counting(100), options);
  DataLoader other_seed(counting(100), DataLoaderOptions(options).seed(43));
  for (int64_t epoch : {0, 1, 5}) {
    a.set_epoch(epoch);
    b.set_epoch(epoch);
    EXPECT_EQ(targets_of_epoch(a), targets_of_epoch(b)) << "epoch " << epoch;
  }
  EXPECT_NE(a.sample_order(0), a.sample_order(1));
  EXPECT_NE(a.sample_order(0), other_seed.sample_order(0));
  std::vector<int64_t> identity(100);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_NE(a.sample_order(0), identity);

  // The batches iterated are the published order, cut into batch_size pieces.
  a.set_epoch(3);
  std::vector<int64_t> seen;
  for (auto& batch : a)
    for (int64_t t : batch.target.to_vector<int64_t>()) seen.push_back(t);
  EXPECT_EQ(seen, a.sample_order(3));

  // Pinned: a change to the shuffle would silently change every training run.
  DataLoader small(counting(10), DataLoaderOptions().shuffle(true).seed(42));
  EXPECT_EQ(small.sample_order(0), (std::vector<int64_t>{4, 8, 1, 6, 5, 7, 3, 9, 0, 2}));
  EXPECT_EQ(small.sample_order(1), (std::vector<int64_t>{6, 2, 5, 0, 9, 1, 4, 3, 7, 8}));
}

TEST(DataLoader, ResumingAtAnEpochReproducesTheUninterruptedRun) {
  auto options = DataLoaderOptions().batch_size(16).shuffle(true).seed(7).transform(
      data::RandomHorizontalFlip(0.5, 7));
  // Images [n, 1, 1, 2] holding (i, -i): a flip swaps them.
  const int64_t n = 50;
  std::vector<float> pixels;
  for (int64_t i = 0; i < n; ++i) pixels.insert(pixels.end(), {float(i), float(-i)});
  auto dataset =
      std::make_shared<TensorDataset>(from_vector<float>(pixels, {n, 1, 1, 2}), arange(n));

  DataLoader uninterrupted(dataset, options);
  std::vector<std::vector<float>> epoch2;
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    uninterrupted.set_epoch(epoch);
    for (auto& batch : uninterrupted)
      if (epoch == 2) epoch2.push_back(batch.input.to_vector<float>());
  }
  DataLoader resumed(dataset, options);
  resumed.set_epoch(2);
  std::vector<std::vector<float>> again;
  for (auto& batch : resumed) again.push_back(batch.input.to_vector<float>());
  EXPECT_EQ(again, epoch2);
}

TEST(DataLoader, EverySampleExactlyOncePerEpoch) {
  const int64_t n = 1000;
  DataLoader loader(counting(n), DataLoaderOptions().batch_size(64).shuffle(true).seed(3));
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    loader.set_epoch(epoch);
    std::vector<int64_t> seen;
    for (auto& batch : loader) {
      std::vector<int64_t> t = batch.target.to_vector<int64_t>();
      std::vector<float> x = batch.input.to_vector<float>();
      for (size_t i = 0; i < t.size(); ++i) ASSERT_EQ(x[i], static_cast<float>(t[i]));
      seen.insert(seen.end(), t.begin(), t.end());
    }
    std::sort(seen.begin(), seen.end());
    std::vector<int64_t> expected(n);
    std::iota(expected.begin(), expected.end(), 0);
    EXPECT_EQ(seen, expected) << "epoch " << epoch;
  }
}

TEST(DataLoader, PrefetchGivesTheSameBatchesAsNoPrefetch) {
  auto options = DataLoaderOptions().batch_size(7).shuffle(true).seed(5).transform(
      data::RandomHorizontalFlip(0.5, 5));
  auto dataset = std::make_shared<TensorDataset>(arange(0, 300, 1, float32).reshape({50, 1, 2, 3}),
                                                 arange(50));
  DataLoader with(dataset, DataLoaderOptions(options).prefetch(true).prefetch_depth(3));
  DataLoader without(dataset, DataLoaderOptions(options).prefetch(false));
  for (int64_t epoch : {0, 4}) {
    with.set_epoch(epoch);
    without.set_epoch(epoch);
    std::vector<std::vector<float>> a, b;
    for (auto& batch : with) a.push_back(batch.input.to_vector<float>());
    for (auto& batch : without) b.push_back(batch.input.to_vector<float>());
    EXPECT_EQ(a, b) << "epoch " << epoch;
    EXPECT_EQ(a.size(), 8u);
  }
}

// Counts get() calls and the threads they come from; optionally fails at one index.
class ProbeDataset : public data::Dataset {
 public:
  explicit ProbeDataset(int64_t n, int64_t fail_at = -1) : n_(n), fail_at_(fail_at) {}
  int64_t size() const override { return n_; }
  Example get(int64_t index) const override {
    if (index == fail_at_)
      throw std::runtime_error("disk on fire at sample " + std::to_string(index));
    last_thread.store(std::this_thread::get_id());
    calls.fetch_add(1);
    return {scalar_tensor(float(index)), scalar_tensor(index, TensorOptions(int64))};
  }
  mutable std::atomic<int64_t> calls{0};
  mutable std::atomic<std::thread::id> last_thread{};

 private:
  int64_t n_, fail_at_;
};

TEST(DataLoader, PrefetchPreparesTheNextBatchInTheBackground) {
  auto probe = std::make_shared<ProbeDataset>(40);
  DataLoader loader(probe, DataLoaderOptions().batch_size(4).prefetch_depth(1));
  within(30s, [&] {
    const auto consumer = std::this_thread::get_id();
    auto it = loader.begin();
    ASSERT_FALSE(it == loader.end());
    // While batch 0 is held, batch 1 (samples 4..7) gets prepared on another thread.
    auto deadline = std::chrono::steady_clock::now() + 20s;
    while (probe->calls.load() < 8 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
    EXPECT_GE(probe->calls.load(), 8);
    EXPECT_NE(probe->last_thread.load(), consumer);
    std::this_thread::sleep_for(20ms);
    EXPECT_LE(probe->calls.load(), 8) << "prefetch_depth 1 ran more than one batch ahead";
  });

  auto sync_probe = std::make_shared<ProbeDataset>(8);
  DataLoader sync(sync_probe, DataLoaderOptions().batch_size(4).prefetch(false));
  auto it = sync.begin();
  EXPECT_EQ(sync_probe->calls.load(), 4);
  EXPECT_EQ(sync_probe->last_thread.load(), std::this_thread::get_id());
}

TEST(DataLoader, DatasetErrorsReachTheConsumerAsKilnErrors) {
  for (bool prefetch : {true, false}) {
    SCOPED_TRACE(prefetch ? "prefetch" : "no prefetch");
    DataLoader loader(std::make_shared<ProbeDataset>(20, /*fail_at=*/9),
                      DataLoaderOptions().batch_size(4).prefetch(prefetch));
    int delivered = 0;
    std::string message;
    within(30s, [&] {
      try {
        for (auto& batch : loader) {
          (void)batch;
          ++delivered;
        }
      } catch (const Error& e) {
        message = e.what();
      }
    });
    EXPECT_EQ(delivered, 2);  // batches 0 and 1 come first; batch 2 holds sample 9
    EXPECT_NE(message.find("disk on fire at sample 9"), std::string::npos) << message;
    EXPECT_NE(message.find("batch 2 of epoch 0"), std::string::npos) << message;
    // The loader stays usable: the next iteration fails the same way, no hang.
    within(30s, [&] { EXPECT_KILN_ERROR(targets_of_epoch(loader), "disk on fire"); });
  }
}

TEST(DataLoader, TransformErrorsReachTheConsumer) {
  // (A capturing lambda: g++ 12 -O3 warns falsely when copying an empty one.)
  std::string message = "bad transform";
  auto options = DataLoaderOptions().batch_size(2).transform(
      [message](Example, const data::BatchInfo&) -> Example { throw std::logic_error(message); });
  DataLoader loader(counting(4), options);
  within(30s, [&] { EXPECT_KILN_ERROR(loader.begin(), "bad transform", "batch 0"); });
}

TEST(DataLoader, EarlyBreakAndDestructionMidEpochDoNotHang) {
  within(60s, [&] {
    DataLoader loader(counting(10000), DataLoaderOptions().batch_size(1).prefetch_depth(4));
    int seen = 0;
    for (auto& batch : loader) {
      (void)batch;
      if (++seen == 3) break;
    }
    EXPECT_EQ(seen, 3);
    // A new epoch after the break starts from the beginning.
    auto it = loader.begin();
    EXPECT_EQ((*it).target.to_vector<int64_t>(), (std::vector<int64_t>{0}));
    ++it;
    EXPECT_EQ(it->target.to_vector<int64_t>(), (std::vector<int64_t>{1}));
    // Restarting cancels the previous iteration.
    auto restarted = loader.begin();
    EXPECT_TRUE(it == loader.end());
    EXPECT_EQ(restarted->target.to_vector<int64_t>(), (std::vector<int64_t>{0}));
  });
  within(60s, [&] {
    // The loader dies while an iterator and its worker are still alive.
    DataLoader::Iterator survivor;
    {
      DataLoader loader(counting(10000), DataLoaderOptions().batch_size(1));
      survivor = loader.begin();
    }
    EXPECT_TRUE(survivor == std::default_sentinel);
  });
}

TEST(DataLoader, MovesBatchesToTheDevice) {
  DataLoader loader(counting(6), DataLoaderOptions().batch_size(4).device("cpu:0"));
  for (auto& batch : loader) {
    EXPECT_EQ(batch.input.device(), Device("cpu:0"));
    EXPECT_EQ(batch.target.device(), Device("cpu:0"));
  }
}

TEST(DataLoader, TakesDatasetsByValueAndChecksOptions) {
  DataLoader loader(TensorDataset(zeros({5, 2}), arange(5)), DataLoaderOptions().batch_size(2));
  EXPECT_EQ(loader.size(), 3);
  EXPECT_EQ(loader.dataset().size(), 5);
  EXPECT_KILN_ERROR(DataLoader(counting(3), DataLoaderOptions().batch_size(0)), "batch_size",
                    ">= 1");
  EXPECT_KILN_ERROR(DataLoader(std::shared_ptr<const data::Dataset>(), DataLoaderOptions()),
                    "null");
  EXPECT_KILN_ERROR(DataLoader(counting(3), DataLoaderOptions().prefetch_depth(0)),
                    "prefetch_depth");
  EXPECT_KILN_ERROR(*DataLoader::Iterator(), "end of the epoch");
}

TEST(DataLoader, EmptyDataset) {
  DataLoader loader(counting(0), DataLoaderOptions().batch_size(4));
  EXPECT_EQ(loader.size(), 0);
  int batches = 0;
  for (auto& batch : loader) {
    (void)batch;
    ++batches;
  }
  EXPECT_EQ(batches, 0);
}

TEST(DistributedSampler, ShardsAreDisjointSeededAndCoverTheEpoch) {
  for (bool drop_last : {false, true})
    for (int64_t n : {0, 1, 10, 11, 97})
      for (int64_t replicas : {1, 2, 3, 4}) {
        SCOPED_TRACE("n=" + std::to_string(n) + " replicas=" + std::to_string(replicas) +
                     (drop_last ? " drop_last" : ""));
        std::vector<int64_t> seen;
        std::vector<std::vector<int64_t>> shards;
        for (int64_t r = 0; r < replicas; ++r) {
          data::DistributedSampler s(n, replicas, r, /*shuffle=*/true, /*seed=*/9, drop_last);
          s.set_epoch(3);
          shards.push_back(s.indices());
          EXPECT_EQ(static_cast<int64_t>(shards.back().size()), s.size());
          seen.insert(seen.end(), shards.back().begin(), shards.back().end());
        }
        for (size_t r = 1; r < shards.size(); ++r) EXPECT_EQ(shards[r].size(), shards[0].size());
        std::sort(seen.begin(), seen.end());
        const auto distinct =
            static_cast<int64_t>(std::unique(seen.begin(), seen.end()) - seen.begin());
        if (drop_last) {
          EXPECT_EQ(distinct, static_cast<int64_t>(seen.size())) << "shards overlap";
          EXPECT_EQ(distinct, n / replicas * replicas);
        } else {
          EXPECT_EQ(distinct, n) << "some sample is in no shard";
        }
      }
  // The same (seed, epoch) on every rank; another epoch, another order.
  data::DistributedSampler a(100, 2, 0, true, 5), b(100, 2, 0, true, 5);
  EXPECT_EQ(a.indices(), b.indices());
  b.set_epoch(1);
  EXPECT_NE(a.indices(), b.indices());
  EXPECT_THROW(data::DistributedSampler(10, 2, 2), Error);
  EXPECT_THROW(data::DistributedSampler(10, 0, 0), Error);
}

TEST(DistributedSampler, RanksBatchesTogetherAreTheSingleProcessBatch) {
  auto dataset = counting(64);
  DataLoader whole(dataset,
                   DataLoaderOptions().batch_size(16).shuffle(true).seed(4).prefetch(false));
  whole.set_epoch(2);
  std::vector<std::vector<int64_t>> global;
  for (auto& batch : whole) {
    auto v = batch.target.to_vector<int64_t>();
    std::sort(v.begin(), v.end());
    global.push_back(v);
  }
  std::vector<std::vector<int64_t>> combined(global.size());
  for (int64_t r = 0; r < 4; ++r) {
    DataLoader part(
        dataset,
        DataLoaderOptions().batch_size(4).shuffle(true).seed(4).prefetch(false).distributed(4, r));
    part.set_epoch(2);
    EXPECT_EQ(part.size(), 4);
    size_t b = 0;
    for (auto& batch : part) {
      auto v = batch.target.to_vector<int64_t>();
      combined[b].insert(combined[b].end(), v.begin(), v.end());
      ++b;
    }
  }
  for (auto& c : combined) std::sort(c.begin(), c.end());
  EXPECT_EQ(combined, global);
  EXPECT_THROW(DataLoader(dataset, DataLoaderOptions().distributed(2, 5)), Error);
}

}  // namespace
}  // namespace kiln::test
