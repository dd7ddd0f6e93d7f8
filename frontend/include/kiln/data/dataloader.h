#pragma once
/// @file dataloader.h
/// kiln::data::DataLoader: batches of a Dataset, optionally shuffled, prepared by a
/// background thread while the previous batch trains.
///
/// @code
///   kiln::data::DataLoader loader(kiln::data::FashionMNIST(),
///                                 kiln::data::DataLoaderOptions().batch_size(64)
///                                     .shuffle(true).seed(42).device("cuda"));
///   for (int64_t epoch = start_epoch; epoch < epochs; ++epoch) {
///     loader.set_epoch(epoch);                   // the shuffle of this epoch
///     for (auto& batch : loader) {               // batch.input [64,1,28,28], batch.target [64]
///       auto logits = model->forward(batch.input);
///       kiln::nn::functional::cross_entropy(logits, batch.target).backward();  // then a step
///     }
///   }
/// @endcode
///
/// Threads: with prefetch, Dataset::get_batch, the device move and the transform
/// run on the loader's background thread (one at a time); the loop body runs on
/// the caller's, so Kiln ops run on two threads at once (set prefetch(false) to
/// keep everything on the caller's thread).
///
/// Determinism: the order of epoch e is a pure function of (seed, e) computed with
/// Kiln's own generator (not std::shuffle, which differs between standard
/// libraries), and independent of the global generator in random.h. An epoch's
/// batches are therefore the same run to run, with or without prefetch, and a run
/// resumed at epoch k (set_epoch(k)) sees exactly the batches an uninterrupted run
/// saw at epoch k. The loader does not advance the epoch by itself: call
/// set_epoch() once per epoch, or every epoch repeats epoch 0's order.

#include <concepts>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <vector>

#include "kiln/data/dataset.h"
#include "kiln/data/transforms.h"
#include "kiln/device.h"

namespace kiln::data {

/// A batch: input and target with a leading batch dimension.
using Batch = Example;

/// DataLoader settings, chainable, with every default here:
///   batch_size 1, shuffle off, seed 0, drop_last off, prefetch on (2 batches
///   ahead), no device move, no transform.
struct DataLoaderOptions {
  DataLoaderOptions() = default;

  /// Samples per batch (>= 1).
  DataLoaderOptions& batch_size(int64_t v) {
    batch_size_ = v;
    return *this;
  }
  /// Visit the samples in a new random order every epoch (a function of seed and epoch).
  DataLoaderOptions& shuffle(bool v) {
    shuffle_ = v;
    return *this;
  }
  DataLoaderOptions& seed(uint64_t v) {
    seed_ = v;
    return *this;
  }
  /// Skip the last batch when it would be smaller than batch_size.
  DataLoaderOptions& drop_last(bool v) {
    drop_last_ = v;
    return *this;
  }
  /// Prepare batches on a background thread while the caller works on the current one.
  DataLoaderOptions& prefetch(bool v) {
    prefetch_ = v;
    return *this;
  }
  /// How many batches the background thread may hold ready (>= 1).
  DataLoaderOptions& prefetch_depth(int64_t v) {
    prefetch_depth_ = v;
    return *this;
  }
  /// Move every batch (input and target) to this device before the transform runs.
  DataLoaderOptions& device(const Device& v) {
    device_ = v;
    return *this;
  }
  /// Applied to every batch, after the device move (see transforms.h).
  DataLoaderOptions& transform(Transform v) {
    transform_ = std::move(v);
    return *this;
  }
  /// Visit only this rank's shard of every epoch, as torch's DistributedSampler
  /// (see DistributedSampler below): with shuffle, all ranks must use the same seed.
  DataLoaderOptions& distributed(int64_t num_replicas, int64_t rank) {
    num_replicas_ = num_replicas;
    rank_ = rank;
    return *this;
  }

  int64_t batch_size() const { return batch_size_; }
  bool shuffle() const { return shuffle_; }
  uint64_t seed() const { return seed_; }
  bool drop_last() const { return drop_last_; }
  bool prefetch() const { return prefetch_; }
  int64_t prefetch_depth() const { return prefetch_depth_; }
  const std::optional<Device>& device() const { return device_; }
  const Transform& transform() const { return transform_; }
  int64_t num_replicas() const { return num_replicas_; }
  int64_t rank() const { return rank_; }

 private:
  int64_t batch_size_ = 1;
  bool shuffle_ = false;
  uint64_t seed_ = 0;
  bool drop_last_ = false;
  bool prefetch_ = true;
  int64_t prefetch_depth_ = 2;
  std::optional<Device> device_;
  Transform transform_;
  int64_t num_replicas_ = 1;
  int64_t rank_ = 0;
};

/// Which samples each of `num_replicas` ranks visits, as torch.utils.data's
/// DistributedSampler: the epoch's order (0..n-1, or with shuffle a permutation that
/// depends only on (seed, epoch), the same on every rank) is padded by repeating its
/// first samples to a multiple of num_replicas (or, with drop_last, cut down to one),
/// and rank r takes every num_replicas-th sample from position r. The ranks' shards
/// are then disjoint (with drop_last, or when n divides evenly) and together cover
/// the epoch, and the j-th batches of all ranks together hold the samples of one
/// single-process batch num_replicas times larger.
///
/// @code
///   DistributedSampler sampler(dataset.size(), group->size(), group->rank(), true, 42);
///   sampler.set_epoch(epoch);
///   for (int64_t i : sampler.indices()) seen.push_back(i);  // this rank's share, in order
/// @endcode
class DistributedSampler {
 public:
  /// Throws kiln::Error unless num_replicas >= 1 and 0 <= rank < num_replicas.
  DistributedSampler(int64_t dataset_size, int64_t num_replicas, int64_t rank, bool shuffle = true,
                     uint64_t seed = 0, bool drop_last = false);
  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  int64_t epoch() const { return epoch_; }
  /// Samples per rank and epoch.
  int64_t size() const;
  /// This rank's samples for the current epoch, in order.
  std::vector<int64_t> indices() const;

 private:
  int64_t n_, replicas_, rank_;
  bool shuffle_;
  uint64_t seed_;
  bool drop_last_;
  int64_t epoch_ = 0;
};

namespace detail {
class EpochRun;
}

class DataLoader {
 public:
  /// Throws kiln::Error for a null dataset, batch_size < 1 or prefetch_depth < 1.
  DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options = {});
  /// Takes ownership of a dataset object: DataLoader loader(FashionMNIST(), opts).
  template <typename D>
  requires std::derived_from<D, Dataset> DataLoader(D dataset,
                                                    DataLoaderOptions options = {})  // NOLINT
      : DataLoader(std::shared_ptr<const Dataset>(std::make_shared<const D>(std::move(dataset))),
                   std::move(options)) {}

  /// Stops the background thread of an iteration still in progress and joins it.
  ~DataLoader();
  DataLoader(DataLoader&&) noexcept;
  DataLoader& operator=(DataLoader&&) noexcept;
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  /// The epoch the next iteration (begin()) runs; its shuffle order and the
  /// BatchInfo::epoch the transform sees. Default 0.
  void set_epoch(int64_t epoch);
  int64_t epoch() const { return epoch_; }

  /// Batches per epoch.
  int64_t size() const;
  const Dataset& dataset() const { return *dataset_; }
  const DataLoaderOptions& options() const { return options_; }

  /// The dataset indices epoch `epoch` visits, in order: 0..n-1 without shuffle,
  /// else a permutation determined by (seed, epoch); with distributed(), this rank's
  /// shard of it (DistributedSampler). Batch b is the slice
  /// [b * batch_size, (b + 1) * batch_size) of it.
  std::vector<int64_t> sample_order(int64_t epoch) const;

  /// An input iterator over one epoch's batches. Copies share the iteration. When
  /// the last copy is destroyed (e.g. on `break`), the background thread is
  /// stopped and joined. The batch `*it` refers to lives until the iterator
  /// advances or dies: `auto& b = *loader.begin();` dangles, keep the iterator
  /// (`auto it = loader.begin(); auto& b = *it;`) or copy the Batch (two handles). Errors while
  /// preparing a batch (in the dataset, the device move or the transform) are thrown from begin() /
  /// operator++ as kiln::Error, in the position of the failing batch.
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    using pointer = Batch*;
    using reference = Batch&;

    Iterator() = default;
    Batch& operator*() const;
    Batch* operator->() const { return &**this; }
    Iterator& operator++();
    void operator++(int) { ++*this; }
    friend bool operator==(const Iterator& it, std::default_sentinel_t) { return it.at_end(); }

   private:
    friend class DataLoader;
    explicit Iterator(std::shared_ptr<detail::EpochRun> run) : run_(std::move(run)) {}
    bool at_end() const;
    std::shared_ptr<detail::EpochRun> run_;
  };

  /// Starts an iteration over epoch(). Starting one cancels the previous iteration
  /// of this loader (its iterators then compare equal to end()).
  Iterator begin();
  std::default_sentinel_t end() const { return {}; }

 private:
  std::shared_ptr<const Dataset> dataset_;
  DataLoaderOptions options_;
  int64_t epoch_ = 0;
  std::weak_ptr<detail::EpochRun> current_;
};

}  // namespace kiln::data
