#pragma once
/// @file transforms.h
/// Transforms a DataLoader applies, of two kinds:
///   - per-sample transforms (SampleTransform, chained by Compose, as
///     torchvision.transforms.Compose): applied to each sample Dataset::get returns,
///     in the loader's workers, before the samples are stacked into a batch;
///   - batch transforms (Transform, chained by compose()): applied to every stacked
///     batch, after the move to the loader's device, e.g. augmentation on the GPU.
///
/// @code
///   kiln::data::DataLoader loader(kiln::data::FashionMNIST(), kiln::data::DataLoaderOptions()
///       .batch_size(64).shuffle(true).seed(1).workers(2)
///       .sample_transform(kiln::data::Compose({
///           [](kiln::data::Example s, const kiln::data::SampleInfo&) {
///             s.input = s.input * 2 - 1;  // [0, 1] -> [-1, 1]
///             return s;
///           }}))
///       .transform(kiln::data::RandomHorizontalFlip(0.5, /*seed=*/1)));
/// @endcode
///
/// A transform sees the epoch and the dataset index of its sample (or of every sample
/// in its batch), so random augmentation can be a pure function of (seed, epoch,
/// sample index): the same sample gets the same augmentation whatever the batch size,
/// the shuffle order, the number of workers or whether the run was resumed from a
/// checkpoint. With workers(n >= 2) a transform is called from several threads at
/// once: it must not change shared state (a random generator included) without a lock.

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

/// Applies `transforms` left to right. Throws kiln::Error if one is empty.
Transform compose(std::vector<Transform> transforms);

/// What a per-sample transform knows about the sample it is given.
struct SampleInfo {
  int64_t epoch = 0;
  /// The sample's dataset index.
  int64_t index = 0;
};

/// Takes one sample as Dataset::get returned it (no batch dimension) and returns the
/// transformed sample.
using SampleTransform = std::function<Example(Example sample, const SampleInfo& info)>;

/// Per-sample transforms applied left to right, each to the previous one's result, as
/// torchvision.transforms.Compose; it is itself a SampleTransform, so Composes nest.
/// An empty Compose returns the sample unchanged. (compose(), lower case, chains batch
/// transforms.)
class Compose {
 public:
  Compose() = default;
  /// Throws kiln::Error naming the position of an empty transform.
  explicit Compose(std::vector<SampleTransform> transforms);

  Example operator()(Example sample, const SampleInfo& info) const;

  const std::vector<SampleTransform>& transforms() const { return transforms_; }

 private:
  std::vector<SampleTransform> transforms_;
};

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
