#pragma once
// Progress of one epoch: a live bar redrawn in place on a terminal, or a plain line
// every tenth of the epoch when the output is a file or a pipe.

#include <chrono>
#include <cstdint>
#include <string>

namespace kiln::train {

class Progress {
 public:
  /// `visible` false: print nothing (the other ranks of a multi-process run).
  Progress(int64_t epoch, int64_t epochs, int64_t batches, int64_t batch_size, bool visible = true);
  /// Called after each batch with that batch's loss.
  void update(int64_t batches_done, double loss);
  /// Seconds since the epoch started.
  double elapsed() const;
  /// Ends the line and returns the seconds the epoch took.
  double finish(const std::string& summary);

 private:
  void draw(int64_t done, bool final);
  int64_t epoch_, epochs_, batches_, batch_size_;
  bool visible_;
  bool tty_;
  double running_loss_ = 0;
  int64_t last_printed_ = -1;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace kiln::train
