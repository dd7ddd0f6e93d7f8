#pragma once
// Helpers shared by the DataLoader tests: a counting dataset, one pass's targets, and
// a guard that turns a deadlock into a failure instead of a hung suite.

#include <gtest/gtest.h>
#include <kiln/data/dataloader.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <vector>

namespace kiln::test {

// n samples: input i (float32 [1]), target i (int64).
inline std::shared_ptr<data::TensorDataset> counting(int64_t n) {
  return std::make_shared<data::TensorDataset>(arange(0, n, 1, float32).reshape({n, 1}), arange(n));
}

// The targets of one pass over `loader`, batch by batch.
inline std::vector<std::vector<int64_t>> targets_of_epoch(data::DataLoader& loader) {
  std::vector<std::vector<int64_t>> batches;
  for (auto& batch : loader) batches.push_back(batch.target.to_vector<int64_t>());
  return batches;
}

// Runs `body` and fails (instead of hanging the suite) if it does not finish in time.
inline void within(std::chrono::seconds limit, const std::function<void()>& body) {
  auto done = std::async(std::launch::async, body);
  if (done.wait_for(limit) != std::future_status::ready) {
    ADD_FAILURE() << "did not finish within " << limit.count() << " s (deadlock?)";
    std::fflush(stdout);
    std::_Exit(1);
  }
  done.get();
}

}  // namespace kiln::test
