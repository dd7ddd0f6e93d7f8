#pragma once
/// @file transforms.h
/// Batch transforms: functions a DataLoader applies to every batch after gathering
/// it (and after moving it to the loader's device), e.g. data augmentation.
///
/// @code
///   kiln::data::DataLoader loader(kiln::data::FashionMNIST(), kiln::data::DataLoaderOptions()
///       .batch_size(64).shuffle(true).seed(1)
///       .transform(kiln::data::RandomHorizontalFlip(0.5, /*seed=*/1)));
/// @endcode
///
/// A transform sees the epoch and the dataset index of every sample in the batch,
/// so random augmentation can be a pure function of (seed, epoch, sample index):
/// the same sample gets the same augmentation whatever the batch size, the shuffle
/// order or whether the run was resumed from a checkpoint.

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "kiln/data/dataset.h"

namespace kiln::data {

/// What a transform knows about the batch it is given.
struct BatchInfo {
  int64_t epoch = 0;
  /// Dataset index of each sample, in batch order (indices.size() == batch size).
  std::span<const int64_t> indices;
};

/// Takes a batch (leading dimension = batch) and returns the transformed batch.
using Transform = std::function<Example(Example batch, const BatchInfo& info)>;

/// Applies `transforms` left to right.
Transform compose(std::vector<Transform> transforms);

/// Mirrors inputs along their last dimension (width) with probability `p`, chosen
/// independently per sample: sample `index` of epoch `epoch` is flipped exactly when
/// flips(epoch, index) is true, a pure function of (seed, epoch, index) that is the
/// same on every platform. Works for batches shaped [N, C, H, W] or [N, H, W] (any
/// rank >= 2), on any device; targets are passed through.
class RandomHorizontalFlip {
 public:
  /// 0 <= p <= 1, else kiln::Error.
  explicit RandomHorizontalFlip(double p = 0.5, uint64_t seed = 0);

  Example operator()(Example batch, const BatchInfo& info) const;

  /// Whether sample `index` is flipped in `epoch`.
  bool flips(int64_t epoch, int64_t index) const;

  double p() const { return p_; }
  uint64_t seed() const { return seed_; }

 private:
  double p_;
  uint64_t seed_;
};

}  // namespace kiln::data
