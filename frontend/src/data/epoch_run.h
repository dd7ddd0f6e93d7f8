#pragma once
// One pass over an epoch's batches, made by DataLoader::begin(). With workers(0) the
// consumer (the thread iterating) prepares each batch in advance(); otherwise a pool
// of worker threads claims batches in sampler order, prepares them concurrently and
// files them by batch number, and advance() hands them out in that order, so the
// order never depends on which worker finishes first.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "kiln/data/dataloader.h"

namespace kiln::data::detail {

class EpochRun {
 public:
  EpochRun(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options, int64_t epoch,
           std::vector<int64_t> order, int64_t batches);
  ~EpochRun() { cancel(); }
  EpochRun(const EpochRun&) = delete;
  EpochRun& operator=(const EpochRun&) = delete;

  // Starts min(workers, batches) threads. Throws kiln::Error (after joining those
  // started) when one cannot start.
  void start();

  // Also true once cancelled.
  bool at_end() const { return position_ >= batches_ || stopping(); }
  Batch& current();

  // Moves to the next batch (the first call moves to batch 0); rethrows the error of
  // a batch that failed and ends the pass.
  void advance();

  // Ends the pass: stops and joins the workers, drops prepared batches. Idempotent.
  // Touches only what the workers share, never the consumer's fields.
  void cancel() noexcept;

 private:
  struct Slot {
    Batch batch;
    std::exception_ptr error;
  };

  Batch produce(int64_t b) const;
  Batch load_samples(std::span<const int64_t> indices) const;
  void work();
  bool stopping() const { return stop_.load(std::memory_order_relaxed); }

  const std::shared_ptr<const Dataset> dataset_;
  const DataLoaderOptions options_;
  const int64_t epoch_;
  const std::vector<int64_t> order_;
  const int64_t batches_;
  const int64_t window_;  // batches claimed but not yet taken by the consumer, at most

  // Consumer-thread state.
  int64_t position_ = -1;
  Batch current_;

  // Shared with the workers, under mutex_ (stop_ is also read without it, to abandon
  // a batch between samples).
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<int64_t, Slot> ready_;  // prepared batches by number, not yet taken
  int64_t next_claim_ = 0;         // the next batch a worker will prepare
  int64_t taken_ = 0;              // batches the consumer has taken
  bool failed_ = false;            // a batch failed: claim no more
  std::atomic<bool> stop_{false};

  std::mutex join_mutex_;
  std::vector<std::thread> workers_;
};

}  // namespace kiln::data::detail
