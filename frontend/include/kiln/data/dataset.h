#pragma once
/// @file dataset.h
/// kiln::data::Dataset, the source a DataLoader draws samples from, and
/// TensorDataset, a dataset held in two tensors.
///
/// @code
///   auto x = kiln::randn({100, 3});
///   auto y = kiln::arange(100);
///   kiln::data::TensorDataset ds(x, y);
///   auto [input, target] = ds.get(7);              // x[7], y[7]
///   auto batch = ds.get_batch(std::vector<int64_t>{3, 1, 4});  // x[[3,1,4]], y[[3,1,4]]
/// @endcode

#include <cstdint>
#include <span>

#include "kiln/tensor.h"

namespace kiln::data {

/// One sample, or a batch of samples (then both tensors carry a leading batch
/// dimension). `target` may be undefined for datasets without labels.
struct Example {
  Tensor input;
  Tensor target;
};

/// A finite, indexable collection of samples.
///
/// Threads: a DataLoader calls get() / get_batch() from its worker threads rather than
/// from the thread that built the dataset, so implementations must not depend on
/// thread-local state. With DataLoaderOptions().workers(n), n >= 2, they are called
/// from n threads at once, so they must be safe to call concurrently: a const method
/// that only reads (TensorDataset, FashionMNIST) is; one that moves a shared file
/// position, fills a cache or draws from a shared generator is not, and must take a
/// lock or be used with workers(0) or workers(1) (one call at a time).
class Dataset {
 public:
  virtual ~Dataset() = default;

  /// Number of samples.
  virtual int64_t size() const = 0;

  /// Sample `index`, 0 <= index < size(); throws kiln::Error when out of range.
  virtual Example get(int64_t index) const = 0;

  /// Samples `indices` (in that order) stacked along a new leading dimension. The
  /// default calls get() for each index and stacks the inputs and the targets
  /// (targets only when every sample has one); in-memory datasets override it with
  /// one gather. Throws kiln::Error for an empty list or an index out of range.
  virtual Example get_batch(std::span<const int64_t> indices) const;
};

/// Sample i is (inputs[i], targets[i]): both tensors are indexed along dim 0.
/// get() returns views into them; get_batch() is one index_select per tensor, on
/// the tensors' device.
class TensorDataset : public Dataset {
 public:
  /// Both tensors must be at least 1-D, with the same size(0) and the same device;
  /// `targets` may be undefined (then every Example's target is undefined).
  TensorDataset(Tensor inputs, Tensor targets);

  int64_t size() const override;
  Example get(int64_t index) const override;
  Example get_batch(std::span<const int64_t> indices) const override;

  const Tensor& inputs() const { return inputs_; }
  const Tensor& targets() const { return targets_; }

 private:
  Tensor inputs_;
  Tensor targets_;
};

}  // namespace kiln::data
