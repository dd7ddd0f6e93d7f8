#include "kiln/data/dataset.h"

#include <vector>

#include "kiln/error.h"
#include "kiln/ops.h"

namespace kiln::data {

Example Dataset::get_batch(std::span<const int64_t> indices) const {
  KILN_CHECK(!indices.empty(), "Dataset::get_batch: no indices");
  std::vector<Tensor> inputs, targets;
  inputs.reserve(indices.size());
  targets.reserve(indices.size());
  for (int64_t index : indices) {
    Example sample = get(index);
    KILN_CHECK(sample.input.defined(), "Dataset::get_batch: sample ", index,
               " has an undefined input");
    inputs.push_back(std::move(sample.input));
    if (sample.target.defined()) targets.push_back(std::move(sample.target));
  }
  KILN_CHECK(targets.empty() || targets.size() == inputs.size(), "Dataset::get_batch: only ",
             targets.size(), " of ", inputs.size(), " samples have a target");
  Example batch;
  batch.input = stack(inputs);
  if (!targets.empty()) batch.target = stack(targets);
  return batch;
}

TensorDataset::TensorDataset(Tensor inputs, Tensor targets)
    : inputs_(std::move(inputs)), targets_(std::move(targets)) {
  KILN_CHECK(inputs_.defined(), "TensorDataset: the inputs tensor is undefined");
  KILN_CHECK(inputs_.dim() >= 1, "TensorDataset: inputs must be at least 1-D, got a 0-d tensor");
  if (targets_.defined()) {
    KILN_CHECK(targets_.dim() >= 1,
               "TensorDataset: targets must be at least 1-D, got a 0-d tensor");
    KILN_CHECK(inputs_.size(0) == targets_.size(0), "TensorDataset: inputs ", inputs_.shape(),
               " and targets ", targets_.shape(), " differ in size(0)");
    KILN_CHECK(inputs_.device() == targets_.device(), "TensorDataset: inputs on ", inputs_.device(),
               " but targets on ", targets_.device());
  }
}

int64_t TensorDataset::size() const { return inputs_.size(0); }

Example TensorDataset::get(int64_t index) const {
  KILN_CHECK(index >= 0 && index < size(), "TensorDataset: index ", index, " is out of range for ",
             size(), " samples");
  Example sample;
  sample.input = inputs_.select(0, index);
  if (targets_.defined()) sample.target = targets_.select(0, index);
  return sample;
}

Example TensorDataset::get_batch(std::span<const int64_t> indices) const {
  KILN_CHECK(!indices.empty(), "TensorDataset::get_batch: no indices");
  const int64_t n = size();
  for (int64_t index : indices)
    KILN_CHECK(index >= 0 && index < n, "TensorDataset::get_batch: index ", index,
               " is out of range for ", n, " samples");
  Tensor index = from_vector(std::vector<int64_t>(indices.begin(), indices.end()), {},
                             TensorOptions(int64).device(inputs_.device()));
  Example batch;
  batch.input = index_select(inputs_, 0, index);
  if (targets_.defined()) batch.target = index_select(targets_, 0, index);
  return batch;
}

}  // namespace kiln::data
