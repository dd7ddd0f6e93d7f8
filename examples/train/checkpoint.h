#pragma once
// kiln-train's checkpoints: one safetensors file holding everything a run needs to
// continue bit-identically (what --checkpoint writes after every epoch and --resume
// reads back), and nothing it has to trust.
//
//   tensors     "model.<name>"      the model's state_dict
//               "optimizer.<name>"  the optimizer's state_dict
//               "scaler.<name>"     the GradScaler's state_dict (--precision fp16)
//   metadata    format              "kiln-train checkpoint v1"
//               epochs_done         decimal, 0..epochs
//               generator_seed      decimal uint64 (Kiln's global generator)
//               generator_offset    decimal uint64
//               schedule_step       decimal, >= 0 (0 without a schedule)
//               run                 JSON object: run_identity() of the run that wrote it
//               history             JSON object: History::to_json()
//
//   kiln::train::save_checkpoint(args, model, optimizer, schedule.get(), scaler, epoch + 1,
//                                history);
//   int64_t done = kiln::train::load_checkpoint(args, model, optimizer, schedule.get(), scaler,
//                                               history);
//
// A checkpoint may come from anywhere, so reading one is hardened: JSON nesting deeper
// than kMaxMetadataDepth is refused while it is parsed (no deep tree is ever built),
// numbers must be whole decimal strings in range, and messages quote at most a short
// excerpt of what the file holds.

#include <kiln/amp.h>
#include <kiln/io/safetensors.h>
#include <kiln/nn/module.h>
#include <kiln/optim/optimizer.h>
#include <kiln/optim/scheduler.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "args.h"

namespace kiln::train {

/// The deepest JSON nesting accepted in a checkpoint's "run" and "history" metadata
/// (kiln-train writes 2 levels).
constexpr int kMaxMetadataDepth = 16;

/// Per-epoch results of a run, saved in every checkpoint and in --metrics-json.
struct History {
  std::vector<double> train_loss, test_accuracy, seconds;

  /// {"train_loss": [...], "test_accuracy": [...], "seconds": [...]}
  nlohmann::json to_json() const;
  /// The inverse; throws nlohmann::json::exception for anything else.
  static History from_json(const nlohmann::json& j);
};

/// The options that must match for --resume to continue the same run (model,
/// optimizer, schedule, epochs, batch size, lr, weight decay, dropout, label
/// smoothing, seed, batch norm, augmentation, limit_batches, precision), as a JSON
/// object.
nlohmann::json run_identity(const Args& a);

/// Writes a checkpoint after `epochs_done` epochs to `a.checkpoint`, atomically (see
/// kiln::io::save_safetensors): the model's and the optimizer's state, Kiln's
/// generator state, the schedule's step (`schedule` may be null), run_identity(a)
/// and `history`. Throws kiln::Error naming the path if it cannot be written.
void save_checkpoint(const Args& a, const nn::Module& model, const optim::Optimizer& opt,
                     const optim::LRScheduler* schedule, const amp::GradScaler* scaler,
                     int64_t epochs_done, const History& history);

/// Restores a run from `file`, already read from `a.checkpoint`, and returns the
/// number of epochs it had completed (0..a.epochs). All metadata is parsed and
/// checked before any state changes; then the loss scaler's (when `scaler` is not
/// null), the model's and the optimizer's state, the schedule's step (when `schedule`
/// is not null), Kiln's generator state and `history` are set, each refusing bad
/// values before it changes (a refusal after the scaler's leaves the scaler restored
/// and the run is not started). Throws kiln::Error (and nothing else) naming
/// a.checkpoint for:
/// a missing metadata key; "run" or "history" that is not JSON, nests deeper than
/// kMaxMetadataDepth or has the wrong shape; a run written with other options than
/// run_identity(a); a number that is not a whole decimal in range; a history whose
/// length is not epochs_done; tensors that do not match the model or optimizer, or a
/// scaler state GradScaler::load_state_dict refuses (messages cut to about 2000
/// characters).
int64_t restore(const Args& a, const io::SafetensorsFile& file, nn::Module& model,
                optim::Optimizer& opt, optim::LRScheduler* schedule, amp::GradScaler* scaler,
                History& history);

/// kiln::io::load_safetensors(a.checkpoint) on the default device, then restore().
/// Throws kiln::Error naming the file for anything wrong with it; messages are cut
/// to about 2000 characters, however long the names or JSON the file holds.
int64_t load_checkpoint(const Args& a, nn::Module& model, optim::Optimizer& opt,
                        optim::LRScheduler* schedule, amp::GradScaler* scaler, History& history);

}  // namespace kiln::train
