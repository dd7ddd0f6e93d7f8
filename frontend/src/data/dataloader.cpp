#include "kiln/data/dataloader.h"

#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include "data/epoch_run.h"
#include "data/sample_random.h"
#include "kiln/error.h"

namespace kiln::data {

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(std::move(options)) {
  KILN_CHECK(dataset_ != nullptr, "DataLoader: the dataset is null");
  KILN_CHECK(options_.batch_size() >= 1, "DataLoader: batch_size must be >= 1, got ",
             options_.batch_size());
  KILN_CHECK(options_.workers() >= 0,
             "DataLoader: workers must be >= 0 (0 prepares batches on the caller's thread), got ",
             options_.workers());
  KILN_CHECK(options_.prefetch_depth() >= 1, "DataLoader: prefetch_depth must be >= 1, got ",
             options_.prefetch_depth());
  KILN_CHECK(dataset_->size() >= 0, "DataLoader: the dataset reports a negative size ",
             dataset_->size());
  KILN_CHECK(options_.num_replicas() >= 1 && options_.rank() >= 0 &&
                 options_.rank() < options_.num_replicas(),
             "DataLoader: distributed(", options_.num_replicas(), ", ", options_.rank(),
             "): the rank must be in [0, num_replicas)");
}

DataLoader::~DataLoader() {
  if (auto run = current_.lock()) run->cancel();
}

DataLoader::DataLoader(DataLoader&&) noexcept = default;

DataLoader& DataLoader::operator=(DataLoader&& other) noexcept {
  if (this != &other) {
    if (auto run = current_.lock()) run->cancel();
    dataset_ = std::move(other.dataset_);
    options_ = std::move(other.options_);
    epoch_ = other.epoch_;
    current_ = std::move(other.current_);
  }
  return *this;
}

void DataLoader::set_epoch(int64_t epoch) { epoch_ = epoch; }

namespace {

// 0..n-1, or with shuffle the permutation of (seed, epoch): Fisher-Yates with a
// stream seeded by (seed, epoch), the same on every platform, unlike std::shuffle.
std::vector<int64_t> epoch_order(int64_t n, bool shuffle, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (shuffle && order.size() > 1) {
    detail::SplitMixStream stream(
        detail::hash_coordinates(detail::kShuffleSalt, seed, static_cast<uint64_t>(epoch)));
    for (size_t i = order.size() - 1; i > 0; --i)
      std::swap(order[i], order[static_cast<size_t>(stream.below(i + 1))]);
  }
  return order;
}

int64_t shard_size(int64_t n, int64_t replicas, bool drop_last) {
  return drop_last ? n / replicas : (n + replicas - 1) / replicas;
}

// Rank `rank`'s every-`replicas`-th sample of `order`, padded or cut as
// DistributedSampler documents.
std::vector<int64_t> shard(const std::vector<int64_t>& order, int64_t replicas, int64_t rank,
                           bool drop_last) {
  const auto n = static_cast<int64_t>(order.size());
  const int64_t per_rank = shard_size(n, replicas, drop_last);
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(per_rank));
  for (int64_t k = 0; k < per_rank; ++k) {
    const int64_t position = k * replicas + rank;  // in the padded order
    out.push_back(order[static_cast<size_t>(position % n)]);
  }
  return out;
}

}  // namespace

DistributedSampler::DistributedSampler(int64_t dataset_size, int64_t num_replicas, int64_t rank,
                                       bool shuffle, uint64_t seed, bool drop_last)
    : n_(dataset_size),
      replicas_(num_replicas),
      rank_(rank),
      shuffle_(shuffle),
      seed_(seed),
      drop_last_(drop_last) {
  KILN_CHECK(dataset_size >= 0, "DistributedSampler: negative dataset size ", dataset_size);
  KILN_CHECK(num_replicas >= 1 && rank >= 0 && rank < num_replicas, "DistributedSampler: rank ",
             rank, " is not in [0, ", num_replicas, ")");
}

int64_t DistributedSampler::size() const {
  return n_ == 0 ? 0 : shard_size(n_, replicas_, drop_last_);
}

std::vector<int64_t> DistributedSampler::indices() const {
  if (n_ == 0) return {};
  return shard(epoch_order(n_, shuffle_, seed_, epoch_), replicas_, rank_, drop_last_);
}

int64_t DataLoader::size() const {
  int64_t n = dataset_->size();
  if (options_.num_replicas() > 1 && n > 0) n = shard_size(n, options_.num_replicas(), false);
  const int64_t b = options_.batch_size();
  return options_.drop_last() ? n / b : n / b + (n % b != 0);  // no n + b - 1 to overflow
}

std::vector<int64_t> DataLoader::sample_order(int64_t epoch) const {
  std::vector<int64_t> order =
      epoch_order(dataset_->size(), options_.shuffle(), options_.seed(), epoch);
  if (options_.num_replicas() > 1 && !order.empty())
    order = shard(order, options_.num_replicas(), options_.rank(), false);
  return order;
}

DataLoader::Iterator DataLoader::begin() {
  if (auto previous = current_.lock()) previous->cancel();
  const int64_t epoch = epoch_;
  auto run =
      std::make_shared<detail::EpochRun>(dataset_, options_, epoch, sample_order(epoch), size());
  run->start();
  // A pass that started consumes its epoch (even when its first batch fails below), so
  // the next one reshuffles by itself; one that could not start leaves it to the retry.
  current_ = run;
  if (epoch_ < std::numeric_limits<int64_t>::max()) ++epoch_;
  run->advance();
  return Iterator(std::move(run));
}

Batch& DataLoader::Iterator::operator*() const {
  KILN_CHECK(run_ != nullptr, "DataLoader: dereferencing an iterator at the end of the epoch");
  return run_->current();
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  if (run_) run_->advance();
  return *this;
}

bool DataLoader::Iterator::at_end() const { return !run_ || run_->at_end(); }

}  // namespace kiln::data
