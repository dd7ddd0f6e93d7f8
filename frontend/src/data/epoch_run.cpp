#include "data/epoch_run.h"

#include <algorithm>
#include <limits>
#include <system_error>

#include "kiln/autograd.h"
#include "kiln/error.h"
#include "kiln/ops.h"

namespace kiln::data::detail {

namespace {

int64_t claim_window(int64_t workers, int64_t depth) {
  if (workers <= 0) return 0;
  return depth > std::numeric_limits<int64_t>::max() / workers ? std::numeric_limits<int64_t>::max()
                                                               : workers * depth;
}

}  // namespace

EpochRun::EpochRun(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options, int64_t epoch,
                   std::vector<int64_t> order, int64_t batches)
    : dataset_(std::move(dataset)),
      options_(std::move(options)),
      epoch_(epoch),
      order_(std::move(order)),
      batches_(batches),
      window_(claim_window(options_.workers(), options_.prefetch_depth())) {}

void EpochRun::start() {
  const int64_t count = std::min(options_.workers(), batches_);
  workers_.reserve(static_cast<size_t>(std::max<int64_t>(count, 0)));
  for (int64_t i = 0; i < count; ++i) {
    try {
      workers_.emplace_back([this] { work(); });
    } catch (const std::system_error& e) {
      cancel();
      KILN_FAIL("DataLoader: cannot start worker thread ", i + 1, " of ", count, " (", e.what(),
                "); use fewer workers, or DataLoaderOptions().workers(0)");
    }
  }
}

Batch& EpochRun::current() {
  KILN_CHECK(!at_end(), "DataLoader: dereferencing an iterator at the end of the epoch");
  return current_;
}

void EpochRun::advance() {
  if (at_end()) return;
  ++position_;
  current_ = {};
  if (at_end()) return;
  if (options_.workers() == 0) {
    try {
      current_ = produce(position_);
    } catch (...) {
      position_ = batches_;
      throw;
    }
    return;
  }
  Slot slot;
  {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return stopping() || ready_.count(position_) != 0; });
    if (stopping()) {
      position_ = batches_;
      return;
    }
    slot = std::move(ready_.extract(position_).mapped());
    taken_ = position_ + 1;
  }
  changed_.notify_all();  // a worker may claim the next batch
  if (slot.error) {
    position_ = batches_;
    std::rethrow_exception(slot.error);
  }
  current_ = std::move(slot.batch);
}

void EpochRun::cancel() noexcept {
  {
    std::lock_guard lock(mutex_);
    stop_.store(true);
    ready_.clear();
  }
  changed_.notify_all();
  std::lock_guard join_lock(join_mutex_);
  for (std::thread& worker : workers_)
    if (worker.joinable()) worker.join();
}

// Claims batches in order while the window allows, prepares them, files them by
// number. A failed batch is filed too (the consumer rethrows it in its place) and
// stops further claims; the batches claimed before it are still finished.
void EpochRun::work() {
  for (;;) {
    int64_t b = 0;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] {
        return stopping() || failed_ || next_claim_ >= batches_ || next_claim_ - taken_ < window_;
      });
      if (stopping() || failed_ || next_claim_ >= batches_) return;
      b = next_claim_++;
    }
    Slot slot;
    try {
      slot.batch = produce(b);
    } catch (...) {
      slot.error = std::current_exception();
    }
    {
      std::lock_guard lock(mutex_);
      if (stopping()) return;
      if (slot.error) failed_ = true;
      ready_.emplace(b, std::move(slot));
    }
    changed_.notify_all();
  }
}

Batch EpochRun::produce(int64_t b) const {
  const int64_t batch_size = options_.batch_size();
  const int64_t first = b * batch_size;
  const int64_t count = std::min(batch_size, static_cast<int64_t>(order_.size()) - first);
  std::span<const int64_t> indices(order_.data() + first, static_cast<size_t>(count));
  try {
    NoGradGuard no_grad;
    Batch batch =
        options_.sample_transform() ? load_samples(indices) : dataset_->get_batch(indices);
    if (stopping()) return {};  // cancelled meanwhile: nobody will take this batch
    KILN_CHECK(batch.input.defined(), "the dataset returned an undefined input");
    if (const auto& device = options_.device()) {
      batch.input = batch.input.to(*device);
      if (batch.target.defined()) batch.target = batch.target.to(*device);
    }
    if (options_.transform()) {
      batch = options_.transform()(std::move(batch), BatchInfo{epoch_, indices});
      KILN_CHECK(batch.input.defined(), "the transform returned an undefined input");
    }
    return batch;
  } catch (const std::exception& e) {
    KILN_FAIL("DataLoader: preparing batch ", b, " of epoch ", epoch_, " (", count,
              " samples, the first being dataset index ", indices.front(), ") failed: ", e.what());
  } catch (...) {
    KILN_FAIL("DataLoader: preparing batch ", b, " of epoch ", epoch_,
              " failed with an exception that is not a std::exception");
  }
}

// get() and the sample transform for each sample, then one stack per tensor, as
// Dataset::get_batch's default does; errors name the dataset index. Returns an empty
// batch when the pass is cancelled between two samples.
Batch EpochRun::load_samples(std::span<const int64_t> indices) const {
  std::vector<Tensor> inputs, targets;
  inputs.reserve(indices.size());
  targets.reserve(indices.size());
  for (const int64_t index : indices) {
    if (stopping()) return {};
    Example sample;
    try {
      sample = dataset_->get(index);
    } catch (const std::exception& e) {
      KILN_FAIL("Dataset::get(", index, ") failed: ", e.what());
    }
    try {
      sample = options_.sample_transform()(std::move(sample), SampleInfo{epoch_, index});
    } catch (const std::exception& e) {
      KILN_FAIL("the sample transform failed on dataset index ", index, ": ", e.what());
    }
    KILN_CHECK(sample.input.defined(), "dataset index ", index,
               ": the sample (after the sample transform) has an undefined input");
    KILN_CHECK(inputs.empty() || sample.input.shape() == inputs.front().shape(),
               "cannot stack the samples: dataset index ", index, " has input shape ",
               sample.input.shape(), " but dataset index ", indices.front(), " has ",
               inputs.front().shape());
    inputs.push_back(std::move(sample.input));
    if (sample.target.defined()) targets.push_back(std::move(sample.target));
  }
  KILN_CHECK(targets.empty() || targets.size() == inputs.size(), "only ", targets.size(), " of ",
             inputs.size(), " samples have a target");
  Batch batch;
  batch.input = stack(inputs);
  if (!targets.empty()) batch.target = stack(targets);
  return batch;
}

}  // namespace kiln::data::detail
