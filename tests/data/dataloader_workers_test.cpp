// DataLoader workers, per-sample transforms and the self-advancing shuffle (issue 26):
// the batch order is the same for any number of workers, batches that finish out of
// order are still delivered in order, every pass reshuffles by itself and set_epoch(k)
// reproduces pass k, Compose applies sample transforms in order, worker errors reach
// the caller and leave the loader usable, and bad options are refused.
#include <kiln/data/dataloader.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kiln_test.h"
#include "loader_helpers.h"

namespace kiln::test {
namespace {

using data::Compose;
using data::DataLoader;
using data::DataLoaderOptions;
using data::Example;
using data::SampleInfo;
using namespace std::chrono_literals;

// Sample i is (float i, int64 i). get() sleeps 0-400 us, varying with the index, so
// that concurrent workers finish their batches in a scrambled order; it fails at
// `fail_at` while failing() is on, and counts its calls.
class JitteryDataset : public data::Dataset {
 public:
  explicit JitteryDataset(int64_t n, int64_t fail_at = -1) : n_(n), fail_at_(fail_at) {}
  int64_t size() const override { return n_; }
  Example get(int64_t index) const override {
    std::this_thread::sleep_for(std::chrono::microseconds((index * 7919) % 5 * 100));
    if (index == fail_at_ && failing.load())
      throw std::runtime_error("disk on fire at sample " + std::to_string(index));
    calls.fetch_add(1);
    return {scalar_tensor(float(index)), scalar_tensor(index, TensorOptions(int64))};
  }
  mutable std::atomic<int64_t> calls{0};
  std::atomic<bool> failing{true};

 private:
  int64_t n_, fail_at_;
};

TEST(DataLoaderWorkers, BatchOrderIsTheSameForAnyNumberOfWorkers) {
  auto dataset = std::make_shared<JitteryDataset>(53);
  for (bool per_sample : {false, true}) {
    SCOPED_TRACE(per_sample ? "sample transform (get per sample)" : "get_batch");
    auto options = DataLoaderOptions().batch_size(5).shuffle(true).seed(11);
    if (per_sample)
      options.sample_transform([](Example s, const SampleInfo&) {
        s.input = s.input + 1000;
        return s;
      });
    DataLoader serial(dataset, DataLoaderOptions(options).workers(0));
    serial.set_epoch(1);
    const auto expected_targets = targets_of_epoch(serial);
    ASSERT_EQ(expected_targets.size(), 11u);
    // The batches are the published order cut into pieces of 5.
    std::vector<int64_t> flat;
    for (const auto& b : expected_targets) flat.insert(flat.end(), b.begin(), b.end());
    EXPECT_EQ(flat, serial.sample_order(1));

    for (int64_t workers : {0, 1, 2, 4}) {
      SCOPED_TRACE("workers " + std::to_string(workers));
      DataLoader loader(dataset, DataLoaderOptions(options).workers(workers));
      within(60s, [&] {
        for (int repeat = 0; repeat < 3; ++repeat) {
          loader.set_epoch(1);
          std::vector<std::vector<int64_t>> targets;
          std::vector<std::vector<float>> inputs;
          for (auto& batch : loader) {
            targets.push_back(batch.target.to_vector<int64_t>());
            inputs.push_back(batch.input.to_vector<float>());
          }
          EXPECT_EQ(targets, expected_targets);
          ASSERT_EQ(inputs.size(), targets.size());
          for (size_t b = 0; b < inputs.size(); ++b)
            for (size_t i = 0; i < inputs[b].size(); ++i)
              EXPECT_EQ(inputs[b][i], float(targets[b][i]) + (per_sample ? 1000.0f : 0.0f));
        }
      });
    }
  }
}

// Sample 0 (in batch 0) waits until sample `release_at` (in batch 1) has been loaded,
// so with two workers batch 1 is finished before batch 0. Logs the order in which
// get() calls return.
class LatchDataset : public data::Dataset {
 public:
  LatchDataset(int64_t n, int64_t release_at) : n_(n), release_at_(release_at) {}
  int64_t size() const override { return n_; }
  Example get(int64_t index) const override {
    std::unique_lock lock(mutex_);
    if (index == 0) released_changed_.wait_for(lock, 20s, [&] { return released_; });
    if (index == release_at_) {
      released_ = true;
      released_changed_.notify_all();
    }
    returned.push_back(index);
    return {scalar_tensor(float(index)), scalar_tensor(index, TensorOptions(int64))};
  }
  mutable std::vector<int64_t> returned;  // under mutex_; read once the pass is over

 private:
  int64_t n_, release_at_;
  mutable std::mutex mutex_;
  mutable std::condition_variable released_changed_;
  mutable bool released_ = false;
};

TEST(DataLoaderWorkers, BatchesFinishedOutOfOrderAreDeliveredInOrder) {
  for (int64_t workers : {2, 4}) {
    SCOPED_TRACE("workers " + std::to_string(workers));
    auto dataset = std::make_shared<LatchDataset>(12, /*release_at=*/4);
    DataLoader loader(dataset, DataLoaderOptions().batch_size(4).workers(workers));
    std::vector<std::vector<int64_t>> targets;
    within(60s, [&] { targets = targets_of_epoch(loader); });
    EXPECT_EQ(targets,
              (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}}));
    // Batch 1 (samples 4..7) was being loaded while batch 0 waited.
    const auto& log = dataset->returned;
    auto position = [&](int64_t index) { return std::find(log.begin(), log.end(), index); };
    ASSERT_EQ(log.size(), 12u);
    EXPECT_LT(position(4), position(0)) << "batch 1 was not loaded concurrently with batch 0";
  }
}

TEST(DataLoaderWorkers, WorkersRunAtMostWorkersTimesDepthBatchesAhead) {
  auto dataset = std::make_shared<JitteryDataset>(80);
  DataLoader loader(dataset, DataLoaderOptions().batch_size(4).workers(2).prefetch_depth(1));
  within(30s, [&] {
    auto it = loader.begin();
    ASSERT_FALSE(it == loader.end());
    // While batch 0 is held, the two workers prepare batches 1 and 2, and no more.
    auto deadline = std::chrono::steady_clock::now() + 20s;
    while (dataset->calls.load() < 12 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
    EXPECT_EQ(dataset->calls.load(), 12);
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(dataset->calls.load(), 12) << "the workers ran more than 2 batches ahead";
  });
}

TEST(DataLoaderEpochs, EveryPassReshufflesByItselfReproducibly) {
  auto options = DataLoaderOptions().batch_size(10).shuffle(true).seed(21).workers(2);
  DataLoader a(counting(40), options), b(counting(40), options);
  EXPECT_EQ(a.epoch(), 0);
  std::vector<std::vector<std::vector<int64_t>>> passes_a, passes_b;
  for (int pass = 0; pass < 3; ++pass) {
    passes_a.push_back(targets_of_epoch(a));
    passes_b.push_back(targets_of_epoch(b));
    EXPECT_EQ(a.epoch(), pass + 1);
  }
  EXPECT_NE(passes_a[0], passes_a[1]);
  EXPECT_NE(passes_a[1], passes_a[2]);
  EXPECT_EQ(passes_a, passes_b);  // reproducible: the same seed gives the same passes
  for (int pass = 0; pass < 3; ++pass) {
    std::vector<int64_t> flat;
    for (const auto& batch : passes_a[static_cast<size_t>(pass)])
      flat.insert(flat.end(), batch.begin(), batch.end());
    EXPECT_EQ(flat, a.sample_order(pass)) << "pass " << pass << " is not epoch " << pass;
  }
  // A pass cut short still counts as a pass.
  DataLoader c(counting(40), options);
  { auto it = c.begin(); }
  EXPECT_EQ(c.epoch(), 1);
  EXPECT_EQ(targets_of_epoch(c), passes_a[1]);
  // Without shuffle every pass is in index order.
  DataLoader plain(counting(6), DataLoaderOptions().batch_size(3));
  for (int pass = 0; pass < 2; ++pass)
    EXPECT_EQ(targets_of_epoch(plain), (std::vector<std::vector<int64_t>>{{0, 1, 2}, {3, 4, 5}}));
}

TEST(DataLoaderEpochs, SetEpochFixesTheNextPassAndResumesTheUninterruptedRun) {
  // The transforms see the epoch too: a flip per (seed, epoch, index) and a sample
  // transform that adds 100 * epoch to the target.
  const int64_t n = 30;
  std::vector<float> pixels;
  for (int64_t i = 0; i < n; ++i) pixels.insert(pixels.end(), {float(i), float(-i)});
  auto dataset =
      std::make_shared<data::TensorDataset>(from_vector<float>(pixels, {n, 1, 1, 2}), arange(n));
  auto options = DataLoaderOptions()
                     .batch_size(8)
                     .shuffle(true)
                     .seed(5)
                     .workers(2)
                     .transform(data::RandomHorizontalFlip(0.5, 5))
                     .sample_transform([](Example s, const SampleInfo& info) {
                       s.target = s.target + 100 * info.epoch;
                       return s;
                     });
  auto pass = [](DataLoader& loader) {
    std::vector<std::vector<float>> out;
    for (auto& batch : loader) {
      out.push_back(batch.input.to_vector<float>());
      for (int64_t t : batch.target.to_vector<int64_t>()) out.back().push_back(float(t));
    }
    return out;
  };

  DataLoader uninterrupted(dataset, options);  // never calls set_epoch
  std::vector<std::vector<std::vector<float>>> epochs;
  for (int e = 0; e < 4; ++e) epochs.push_back(pass(uninterrupted));
  EXPECT_NE(epochs[2], epochs[3]);

  DataLoader resumed(dataset, options);
  resumed.set_epoch(2);
  EXPECT_EQ(resumed.epoch(), 2);
  EXPECT_EQ(pass(resumed), epochs[2]);
  EXPECT_EQ(resumed.epoch(), 3);
  EXPECT_EQ(pass(resumed), epochs[3]);  // and continues from there

  // Calling set_epoch every epoch (kiln-train, DDP) sees the same batches.
  DataLoader explicit_epochs(dataset, DataLoaderOptions(options).workers(0));
  for (int e = 0; e < 4; ++e) {
    explicit_epochs.set_epoch(e);
    EXPECT_EQ(pass(explicit_epochs), epochs[static_cast<size_t>(e)]) << "epoch " << e;
  }
  // set_epoch between passes replays an epoch.
  explicit_epochs.set_epoch(1);
  EXPECT_EQ(pass(explicit_epochs), epochs[1]);
}

TEST(DataLoaderTransforms, ComposeAppliesSampleTransformsInOrder) {
  auto plus_one = [](Example s, const SampleInfo&) {
    s.input = s.input + 1;
    return s;
  };
  auto twice = [](Example s, const SampleInfo&) {
    s.input = s.input * 2;
    return s;
  };
  Example sample{scalar_tensor(3.0f), Tensor()};
  EXPECT_EQ(Compose({plus_one, twice})(sample, {}).input.item<float>(), 8.0f);  // (3 + 1) * 2
  EXPECT_EQ(Compose({twice, plus_one})(sample, {}).input.item<float>(), 7.0f);  // 3 * 2 + 1
  EXPECT_EQ(Compose()(sample, {}).input.item<float>(), 3.0f);
  EXPECT_EQ(Compose({Compose({plus_one}), twice})(sample, {}).input.item<float>(), 8.0f);
  EXPECT_KILN_ERROR(Compose({plus_one, data::SampleTransform()}), "Compose", "transform 1");

  // In a loader: per sample (seeing its index and epoch) in the workers, then stacked,
  // then the batch transform on the whole batch.
  auto tag = [](Example s, const SampleInfo& info) {
    s.target = scalar_tensor(info.index * 100 + info.epoch, TensorOptions(int64));
    return s;
  };
  std::atomic<int64_t> batch_calls{0};
  auto options = DataLoaderOptions()
                     .batch_size(4)
                     .workers(2)
                     .sample_transform(Compose({plus_one, twice, tag}))
                     .transform([&batch_calls](Example b, const data::BatchInfo&) {
                       EXPECT_EQ(b.input.dim(), 2);  // [batch, 1]: after stacking
                       batch_calls.fetch_add(1);
                       b.input = b.input - 1;
                       return b;
                     });
  DataLoader loader(counting(10), options);
  loader.set_epoch(3);
  std::vector<float> inputs;
  std::vector<int64_t> targets;
  for (auto& batch : loader) {
    for (float v : batch.input.to_vector<float>()) inputs.push_back(v);
    for (int64_t t : batch.target.to_vector<int64_t>()) targets.push_back(t);
  }
  ASSERT_EQ(inputs.size(), 10u);
  for (int64_t i = 0; i < 10; ++i) {
    EXPECT_EQ(inputs[static_cast<size_t>(i)], float((i + 1) * 2 - 1)) << "sample " << i;
    EXPECT_EQ(targets[static_cast<size_t>(i)], i * 100 + 3) << "sample " << i;
  }
  EXPECT_EQ(batch_calls.load(), 3);
}

TEST(DataLoaderWorkers, ErrorsReachTheCallerAndTheLoaderStaysUsable) {
  for (int64_t workers : {0, 1, 2, 4}) {
    for (bool per_sample : {false, true}) {
      SCOPED_TRACE("workers " + std::to_string(workers) + (per_sample ? ", per sample" : ""));
      auto dataset = std::make_shared<JitteryDataset>(20, /*fail_at=*/9);
      auto options = DataLoaderOptions().batch_size(4).workers(workers);
      if (per_sample) options.sample_transform(Compose());
      auto loader = std::make_unique<DataLoader>(dataset, options);
      int delivered = 0;
      std::string message;
      within(30s, [&] {
        try {
          for (auto& batch : *loader) {
            EXPECT_EQ(batch.target.size(0), 4);
            ++delivered;
          }
        } catch (const Error& e) {
          message = e.what();
        }
      });
      EXPECT_EQ(delivered, 2);  // batches 0 and 1 first; batch 2 holds sample 9
      EXPECT_TRUE(contains(message, "disk on fire at sample 9")) << message;
      EXPECT_TRUE(contains(message, "batch 2 of epoch 0")) << message;
      if (per_sample) {
        EXPECT_TRUE(contains(message, "get(9)")) << message;
      }
      // The loader is usable again: once the dataset recovers, a full pass.
      dataset->failing.store(false);
      within(30s, [&] { EXPECT_EQ(targets_of_epoch(*loader).size(), 5u); });
      // And destructible mid-pass, with the error still pending in a worker.
      dataset->failing.store(true);
      within(30s, [&] {
        auto it = loader->begin();
        loader.reset();
        EXPECT_TRUE(it == std::default_sentinel);
      });
    }
  }
  // An error in a sample transform names the sample.
  auto options = DataLoaderOptions().batch_size(4).workers(2).sample_transform(
      [](Example s, const SampleInfo& info) {
        if (info.index == 6) throw std::invalid_argument("bad pixel");
        return s;
      });
  DataLoader loader(counting(8), options);
  within(30s, [&] {
    EXPECT_KILN_ERROR(targets_of_epoch(loader), "bad pixel", "dataset index 6", "batch 1");
  });
}

TEST(DataLoaderWorkers, DestroyingAnIteratorMidEpochJoinsTheWorkers) {
  auto dataset = std::make_shared<JitteryDataset>(4000);
  for (bool per_sample : {false, true}) {
    auto options = DataLoaderOptions().batch_size(2).workers(4).prefetch_depth(3);
    if (per_sample) options.sample_transform(Compose());
    DataLoader loader(dataset, options);
    within(60s, [&] {
      {
        int seen = 0;
        for (auto& batch : loader) {
          (void)batch;
          if (++seen == 3) break;  // destroys the iterator: the workers are joined here
        }
      }
      const int64_t calls = dataset->calls.load();
      std::this_thread::sleep_for(20ms);
      EXPECT_EQ(dataset->calls.load(), calls) << "a worker still ran after the iterator died";
      EXPECT_LT(calls, 4000);
    });
  }
}

TEST(DataLoaderWorkers, OptionsAreCheckedAndPrefetchIsAShorthand) {
  EXPECT_KILN_ERROR(DataLoader(counting(3), DataLoaderOptions().workers(-1)), "workers", ">= 0",
                    "-1");
  EXPECT_EQ(DataLoaderOptions().workers(), 1);
  EXPECT_TRUE(DataLoaderOptions().prefetch());
  EXPECT_EQ(DataLoaderOptions().workers(3).prefetch(true).workers(), 3);
  EXPECT_EQ(DataLoaderOptions().workers(3).prefetch(false).workers(), 0);
  EXPECT_EQ(DataLoaderOptions().prefetch(false).workers(2).workers(), 2);
  EXPECT_EQ(DataLoaderOptions().workers(0).prefetch(true).workers(), 1);
  EXPECT_FALSE(DataLoaderOptions().workers(0).prefetch());
  // More workers than batches, and an empty dataset.
  DataLoader few(counting(3), DataLoaderOptions().batch_size(2).workers(8));
  EXPECT_EQ(targets_of_epoch(few), (std::vector<std::vector<int64_t>>{{0, 1}, {2}}));
  DataLoader empty(counting(0), DataLoaderOptions().workers(4));
  EXPECT_TRUE(empty.begin() == empty.end());
}

}  // namespace
}  // namespace kiln::test
