#pragma once
// kiln-train's command-line options with their defaults, in one place: main.cpp
// fills them from the command line (and checks their ranges, cli_checks.h), the
// training loop reads them, and a checkpoint records the ones that identify a run
// (run_identity, checkpoint.h).

#include <cstdint>
#include <string>

namespace kiln::train {

struct Args {
  std::string model = "cnn";
  std::string optimizer = "adam";
  std::string schedule = "cosine";
  std::string device;
  std::string devices;
  std::string data;
  std::string checkpoint;
  std::string metrics_json;
  std::string profile;             // --profile FILE.json
  std::string precision = "fp32";  // fp32, bf16 (autocast) or fp16 (autocast and GradScaler)
  int64_t profile_steps = 20;
  int64_t epochs = 8;
  int64_t batch_size = 64;
  int64_t limit_batches = 0;
  int64_t limit_test_batches = 0;  // 0: the whole test set, in batches of 1000
  int64_t stop_after = 0;
  double lr = 1e-3;
  double weight_decay = -1;  // negative: each optimizer's own default
  double dropout = 0.25;
  double label_smoothing = 0;
  double watchdog = 0;  // seconds without progress before giving up; 0: off
  uint64_t seed = 0;
  bool resume = false;
  bool no_batch_norm = false;
  bool no_augment = false;
  bool graph = false;  // capture the training step once, replay it (kiln/graph.h)
};

}  // namespace kiln::train
