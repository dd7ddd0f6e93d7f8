#pragma once
// The run whose checkpoints fuzz_checkpoint restores and kiln_fuzz_seeds writes as
// seeds: kiln-train's checkpoint code (examples/train/checkpoint.h) with a model
// small enough that a whole checkpoint is a few hundred bytes, so the fuzzer spends
// its time on the header and the metadata rather than on tensor data.
#include <kiln/kiln.h>
#include <kiln/nn/modules.h>
#include <kiln/optim/adam.h>
#include <kiln/optim/scheduler.h>

#include <memory>
#include <string>

#include "checkpoint.h"

namespace kiln::fuzz {

struct TinyRun {
  train::Args args;
  std::shared_ptr<nn::Linear> model;
  std::unique_ptr<optim::Adam> optimizer;
  std::unique_ptr<optim::CosineAnnealingLR> schedule;

  /// Linear(4, 3), Adam (kiln-train's default, whose state holds an int64 step
  /// besides two tensors per parameter) after one step, a cosine schedule over 12
  /// steps; a 3-epoch run whose checkpoint goes to `checkpoint`.
  explicit TinyRun(const std::string& checkpoint) {
    args.model = "tiny";
    args.epochs = 3;
    args.batch_size = 2;
    args.lr = 0.1;
    args.checkpoint = checkpoint;
    manual_seed(1);
    model = std::make_shared<nn::Linear>(4, 3);
    optimizer = std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions(args.lr));
    schedule = std::make_unique<optim::CosineAnnealingLR>(*optimizer, 12);
    model->forward(ones({2, 4})).sum().backward();
    optimizer->step();
    schedule->step();
  }
};

}  // namespace kiln::fuzz
