#include "kiln/data/transforms.h"

#include <vector>

#include "data/sample_random.h"
#include "kiln/error.h"
#include "kiln/ops.h"

namespace kiln::data {

Transform compose(std::vector<Transform> transforms) {
  for (size_t i = 0; i < transforms.size(); ++i)
    KILN_CHECK(static_cast<bool>(transforms[i]), "compose: transform ", i, " is empty");
  return [transforms = std::move(transforms)](Example batch, const BatchInfo& info) {
    for (const Transform& t : transforms) batch = t(std::move(batch), info);
    return batch;
  };
}

Compose::Compose(std::vector<SampleTransform> transforms) : transforms_(std::move(transforms)) {
  for (size_t i = 0; i < transforms_.size(); ++i)
    KILN_CHECK(static_cast<bool>(transforms_[i]), "Compose: transform ", i, " of ",
               transforms_.size(), " is empty");
}

Example Compose::operator()(Example sample, const SampleInfo& info) const {
  for (const SampleTransform& t : transforms_) sample = t(std::move(sample), info);
  return sample;
}

RandomHorizontalFlip::RandomHorizontalFlip(double p, uint64_t seed) : p_(p), seed_(seed) {
  KILN_CHECK(p >= 0.0 && p <= 1.0, "RandomHorizontalFlip: p must be in [0, 1], got ", p);
}

bool RandomHorizontalFlip::flips(int64_t epoch, int64_t index) const {
  uint64_t bits = detail::hash_coordinates(detail::kFlipSalt, seed_, static_cast<uint64_t>(epoch),
                                           static_cast<uint64_t>(index));
  return detail::unit_interval(bits) < p_;
}

Example RandomHorizontalFlip::operator()(Example batch, const BatchInfo& info) const {
  const Tensor& x = batch.input;
  KILN_CHECK(x.defined() && x.dim() >= 2,
             "RandomHorizontalFlip: expected a batch of images [N, ..., W], got ",
             x.defined() ? x.shape() : IntArrayRef());
  const int64_t n = x.size(0);
  KILN_CHECK(static_cast<int64_t>(info.indices.size()) == n, "RandomHorizontalFlip: the batch has ",
             n, " samples but BatchInfo lists ", info.indices.size(), " indices");

  std::vector<bool> mask(static_cast<size_t>(n));
  int64_t flipped = 0;
  for (int64_t i = 0; i < n; ++i) {
    mask[static_cast<size_t>(i)] = flips(info.epoch, info.indices[static_cast<size_t>(i)]);
    flipped += mask[static_cast<size_t>(i)] ? 1 : 0;
  }
  if (flipped == 0) return batch;

  const int64_t last = x.dim() - 1;
  const int64_t width = x.size(last);
  Tensor reversed = arange(width - 1, -1, -1, TensorOptions(int64).device(x.device()));
  Tensor mirrored = index_select(x, last, reversed);
  if (flipped == n) {
    batch.input = mirrored;
    return batch;
  }
  std::vector<int64_t> mask_shape(static_cast<size_t>(x.dim()), 1);
  mask_shape[0] = n;
  Tensor choose = from_vector(mask, mask_shape, TensorOptions(kbool).device(x.device()));
  batch.input = where(choose, mirrored, x);
  return batch;
}

}  // namespace kiln::data
