#pragma once
/// @file dataloader.h
/// kiln::data::DataLoader: batches of a Dataset, optionally shuffled, prepared by
/// worker threads while the previous batch trains.
///
/// @code
///   kiln::data::DataLoader loader(kiln::data::FashionMNIST(),
///                                 kiln::data::DataLoaderOptions().batch_size(64)
///                                     .shuffle(true).seed(42).workers(2).device("cuda"));
///   for (int64_t epoch = start_epoch; epoch < epochs; ++epoch) {
///     loader.set_epoch(epoch);                   // optional; needed to resume or for DDP
///     for (auto& batch : loader) {               // batch.input [64,1,28,28], batch.target [64]
///       auto logits = model->forward(batch.input);
///       kiln::nn::functional::cross_entropy(logits, batch.target).backward();  // then a step
///     }
///   }
/// @endcode
///
/// Workers: workers(n) prepares batches on n background threads, each worker a whole
/// batch at a time (the dataset's get_batch, or get + the per-sample transform +
/// stacking, then the device move and the batch transform); workers(0) prepares each
/// batch on the caller's thread when the loop asks for it, as PyTorch's num_workers=0.
/// The default is one worker, the loader's behaviour before workers existed.
/// prefetch(false) is a shorthand for workers(0), prefetch(true) for "at least one
/// worker"; the last of the two setters called wins. The workers together run at most
/// workers * prefetch_depth batches ahead of the batch the caller holds.
///
/// Why threads and not processes (PyTorch forks one process per worker): a Kiln dataset
/// is a C++ object, often holding tensors on a device, that cannot be copied into
/// another process without a serialization format, and a batch made in another
/// process would have to be copied back. Threads share the dataset and the tensors
/// they make. The price: with n >= 2 workers, Dataset::get / get_batch and both kinds
/// of transform are called from several threads at once and must be safe to call
/// concurrently (see dataset.h); a dataset that is not should use workers(0) or
/// workers(1). The loop body runs on the caller's thread meanwhile, so Kiln ops run on
/// several threads at once. Loading that sleeps or waits for I/O overlaps fully; loading
/// that computes shares the machine's cores with the ops of the training step.
///
/// Determinism: the order of epoch e is a pure function of (seed, e) computed with
/// Kiln's own generator (not std::shuffle, which differs between standard
/// libraries), and independent of the global generator in random.h. Batches are handed
/// out in that order whatever the number of workers and whichever finishes first, so
/// an epoch's batches are the same run to run and for any workers(n); a run resumed at
/// epoch k (set_epoch(k)) sees exactly the batches an uninterrupted run saw at epoch
/// k. The epoch advances by itself: every pass over the loader (every begin(), so
/// every range-for) runs epoch() and then moves it on by one, so consecutive passes
/// are shuffled differently without any call. set_epoch(e) fixes the epoch of the
/// next pass: call it every epoch when resuming, or with distributed(), where every
/// rank must shuffle the same epoch.
///
/// Threads: a DataLoader and its iterators belong to one thread at a time, the one
/// iterating (as a PyTorch DataLoader and its iterator): begin(), the iterators and
/// the loader's destructor are not called from several threads at once. The workers
/// are the loader's own business.

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
///   batch_size 1, shuffle off, seed 0, drop_last off, 1 worker (prefetch on),
///   prefetch_depth 2, no device move, no transforms.
struct DataLoaderOptions {
  DataLoaderOptions() = default;

  /// Samples per batch (>= 1).
  DataLoaderOptions& batch_size(int64_t v) {
    batch_size_ = v;
    return *this;
  }
  /// Visit the samples in a new random order every epoch (a function of seed and epoch;
  /// the epoch advances at every pass, see DataLoader::set_epoch).
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
  /// Threads that prepare batches while the caller works on the current one (>= 0;
  /// 0 prepares them on the caller's thread). Each worker prepares whole batches; the
  /// batches still arrive in sampler order. With n >= 2 the dataset and the transforms
  /// must be safe to call from several threads at once (dataset.h).
  DataLoaderOptions& workers(int64_t n) {
    workers_ = n;
    return *this;
  }
  /// Shorthand kept from before workers(): false is workers(0); true gives one worker
  /// when there were none and leaves a count >= 1 as it is.
  DataLoaderOptions& prefetch(bool v) {
    if (!v)
      workers_ = 0;
    else if (workers_ == 0)
      workers_ = 1;
    return *this;
  }
  /// How many batches each worker may prepare ahead of the caller (>= 1): at most
  /// workers * prefetch_depth batches are in preparation or ready at once.
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
  /// Applied to every sample, in the worker, before the samples are stacked into a
  /// batch (see transforms.h; Compose chains several). With one, the loader calls
  /// Dataset::get for each sample instead of Dataset::get_batch, and the transformed
  /// samples must have equal shapes.
  DataLoaderOptions& sample_transform(SampleTransform v) {
    sample_transform_ = std::move(v);
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
  int64_t workers() const { return workers_; }
  /// Whether batches are prepared in the background: workers() != 0.
  bool prefetch() const { return workers_ != 0; }
  int64_t prefetch_depth() const { return prefetch_depth_; }
  const std::optional<Device>& device() const { return device_; }
  const Transform& transform() const { return transform_; }
  const SampleTransform& sample_transform() const { return sample_transform_; }
  int64_t num_replicas() const { return num_replicas_; }
  int64_t rank() const { return rank_; }

 private:
  int64_t batch_size_ = 1;
  bool shuffle_ = false;
  uint64_t seed_ = 0;
  bool drop_last_ = false;
  int64_t workers_ = 1;
  int64_t prefetch_depth_ = 2;
  std::optional<Device> device_;
  Transform transform_;
  SampleTransform sample_transform_;
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
  /// Throws kiln::Error for a null dataset, batch_size < 1, workers < 0 or
  /// prefetch_depth < 1.
  DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options = {});
  /// Takes ownership of a dataset object: DataLoader loader(FashionMNIST(), opts).
  template <typename D>
  requires std::derived_from<D, Dataset> DataLoader(D dataset,
                                                    DataLoaderOptions options = {})  // NOLINT
      : DataLoader(std::shared_ptr<const Dataset>(std::make_shared<const D>(std::move(dataset))),
                   std::move(options)) {}

  /// Stops the workers of an iteration still in progress and joins them.
  ~DataLoader();
  DataLoader(DataLoader&&) noexcept;
  DataLoader& operator=(DataLoader&&) noexcept;
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  /// Fixes the epoch the next pass (begin()) runs: its shuffle order and the epoch the
  /// transforms see. Passes after it continue from there (epoch + 1, ...). Calling it
  /// every epoch, as with torch's DistributedSampler, gives the same batches as not
  /// calling it when the passes are 0, 1, 2, ...
  void set_epoch(int64_t epoch);
  /// The epoch the next pass runs: 0 for a new loader, then one more after every
  /// begin() that started its pass, unless set_epoch() fixed it.
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
  /// the last copy is destroyed (e.g. on `break`), the workers are stopped and
  /// joined: they finish the batch each is preparing (with a sample transform, the
  /// sample), drop the rest and exit. The batch `*it` refers to lives until the iterator
  /// advances or dies: `auto& b = *loader.begin();` dangles, keep the iterator
  /// (`auto it = loader.begin(); auto& b = *it;`) or copy the Batch (two handles). Errors while
  /// preparing a batch (in the dataset, a transform or the device move, on whichever thread)
  /// are thrown from begin() / operator++ as kiln::Error naming the batch, the epoch and
  /// (with a sample transform) the dataset index, in the position of the failing batch:
  /// the batches before it are delivered first, and the iteration then ends. The loader
  /// stays usable: the next begin() starts a new pass.
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

  /// Starts a pass over epoch() and advances epoch() by one. Starting one cancels the
  /// previous pass of this loader (its iterators then compare equal to end()). The
  /// epoch advances once the pass has started, also when its first batch then throws;
  /// a begin() that throws before (a worker thread that cannot start) leaves epoch()
  /// as it was, so a retry runs the same epoch.
  Iterator begin();
  std::default_sentinel_t end() const { return {}; }

 private:
  std::shared_ptr<const Dataset> dataset_;
  DataLoaderOptions options_;
  int64_t epoch_ = 0;
  std::weak_ptr<detail::EpochRun> current_;
};

}  // namespace kiln::data
