#pragma once
// kiln-train's checkpoints: one safetensors file holding everything a run needs to
// continue bit-identically (what --checkpoint writes after every epoch and --resume
// reads back), and nothing it has to trust. Written and read with kiln::save and
// kiln::read_checkpoint (kiln/io/checkpoint.h), whose entries are:
//
//   "model"      the model            tensors "model.<name>"
//   "optimizer"  the optimizer        tensors "optimizer.<name>", metadata kiln.optimizer.type
//   "scheduler"  the schedule         tensors "scheduler.last_step", "scheduler.base_lrs"
//                (absent with --schedule none)
//   "scaler"     the GradScaler       tensors "scaler.<name>" (--precision fp16 only)
//   "rng"        Kiln's generator     metadata kiln.rng.seed, kiln.rng.offset
//
// and kiln-train's own metadata:
//
//   format       "kiln-train checkpoint v2" (v1, before kiln::save, is refused: see
//                docs/design-decisions.md)
//   epochs_done  decimal, 0..epochs
//   run          JSON object: run_identity() of the run that wrote it
//   history      JSON object: History::to_json()
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
#include <kiln/io/checkpoint.h>
#include <kiln/io/safetensors.h>
#include <kiln/nn/module.h>
#include <kiln/optim/optimizer.h>
#include <kiln/optim/scheduler.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
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

/// The format tag kiln-train writes in its "format" metadata.
inline constexpr const char* kCheckpointFormat = "kiln-train checkpoint v2";

/// Writes a checkpoint after `epochs_done` epochs to `a.checkpoint` with kiln::save,
/// atomically: the model's, the optimizer's, the schedule's (`schedule` may be null)
/// and the scaler's state (`scaler` may be null), Kiln's generator state,
/// run_identity(a) and `history`. Throws kiln::Error naming the path if it cannot be
/// written.
void save_checkpoint(const Args& a, nn::Module& model, optim::Optimizer& opt,
                     optim::LRScheduler* schedule, amp::GradScaler* scaler, int64_t epochs_done,
                     const History& history);

/// Restores a run from `file`, already read from `a.checkpoint`, and returns the
/// number of epochs it had completed (0..a.epochs). kiln-train's metadata is parsed
/// and checked first, then kiln::parse_checkpoint(file).restore() checks every entry
/// (the model's, optimizer's, schedule's and scaler's state, the generator's) before it
/// sets any; `history` is set last. So a refusal changes nothing. Throws kiln::Error
/// (and nothing else) naming a.checkpoint for:
/// a checkpoint of format v1 or none; a missing metadata key; "run" or "history" that is
/// not JSON, nests deeper than kMaxMetadataDepth or has the wrong shape; a run written
/// with other options than run_identity(a); an epochs_done that is not a whole decimal
/// in range; a history whose length is not epochs_done; anything kiln::CheckpointFile::
/// restore refuses (tensors that do not match the model or optimizer, a learning rate
/// of -1 or NaN, a scaler state GradScaler::load_state_dict refuses, a generator state
/// that is not two whole decimals, ...; messages cut to about 2000 characters).
int64_t restore(const Args& a, const io::SafetensorsFile& file, nn::Module& model,
                optim::Optimizer& opt, optim::LRScheduler* schedule, amp::GradScaler* scaler,
                History& history);

/// kiln::io::load_safetensors(a.checkpoint) on the default device, then restore().
/// Throws kiln::Error naming the file for anything wrong with it; messages are cut
/// to about 2000 characters, however long the names or JSON the file holds.
int64_t load_checkpoint(const Args& a, nn::Module& model, optim::Optimizer& opt,
                        optim::LRScheduler* schedule, amp::GradScaler* scaler, History& history);

/// The learning rate for kiln-train's banner. A fresh run: --lr ("0.001"). After
/// --resume (`resumed`), the rate in effect, which the checkpoint restored (where its
/// schedule had taken it), and where it came from:
/// "0.000491 (restored from run.safetensors; --lr 0.001)".
std::string lr_source(const Args& a, bool resumed, const optim::Optimizer& opt);

/// kiln-train's advice when the loss diverges. A fresh run: "try a smaller --lr". After
/// --resume the rate came from the checkpoint, not --lr, and the advice says so,
/// naming the rate in effect and a.checkpoint.
std::string divergence_advice(const Args& a, bool resumed, const optim::Optimizer& opt);

}  // namespace kiln::train
