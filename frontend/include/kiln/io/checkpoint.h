#pragma once
/// @file checkpoint.h
/// Training checkpoints in one call: a model, its optimizers, schedulers, loss scaler,
/// Kiln's random generator and plain values, saved by name into one safetensors file
/// and restored from it (torch.save / torch.load of a dict of state dicts).
///
/// @code
///   auto model = std::make_shared<kiln::nn::Linear>(784, 10);
///   kiln::optim::Adam opt(model->parameters(), kiln::optim::AdamOptions(1e-3));
///   kiln::optim::CosineAnnealingLR sched(opt, 100);
///   kiln::amp::GradScaler scaler;
///   int64_t epoch = 3;
///   kiln::save({{"model", model}, {"optimizer", opt}, {"scheduler", sched},
///               {"scaler", scaler}, {"rng", kiln::global_generator}, {"epoch", epoch}},
///              "ckpt.safetensors");
///   kiln::load({{"model", model}, {"optimizer", opt}, {"scheduler", sched},
///               {"scaler", scaler}, {"rng", kiln::global_generator}, {"epoch", epoch}},
///              "ckpt.safetensors");   // all restored, or none and a kiln::Error
/// @endcode
///
/// The file. Each entry's state dict is stored under "<name>.<key>" ("model.fc1.weight",
/// "optimizer.param_groups.0.lr", "scheduler.last_step", "scaler.scale"); a tensor
/// entry as "<name>"; an int64_t or double entry as a 0-d I64 or F64 tensor "<name>".
/// The metadata says what the file is, with string values:
///   kiln.format          "kiln checkpoint"
///   kiln.version         "1"
///   kiln.entries         "model:module,optimizer:optimizer,scheduler:lr_scheduler,..."
///                        (name:kind, in the order saved; kinds below)
///   kiln.<name>.type     an optimizer's algorithm ("Adam", "SGD", ...)
///   kiln.<name>.seed     a generator's seed and offset, as decimal uint64
///   kiln.<name>.offset
/// plus the caller's own metadata, whose keys must not start with "kiln.". So PyTorch
/// reads it with safetensors.torch.load_file, and another tool can see what it holds.
///
/// Kinds: module (nn::Module), optimizer (optim::Optimizer), lr_scheduler
/// (optim::LRScheduler), grad_scaler (amp::GradScaler), generator (Kiln's global
/// random generator, kiln/random.h), tensor (a Tensor), int64 (an int64_t), float64 (a
/// double). Entry names are 1 to 128 letters, digits, '_' or '-' (no '.': it
/// separates the name from the keys).

#include <concepts>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "kiln/io/safetensors.h"
#include "kiln/nn/module.h"
#include "kiln/tensor.h"

namespace kiln {

namespace optim {
class Optimizer;
class LRScheduler;
}  // namespace optim
namespace amp {
class GradScaler;
}

/// Stands for Kiln's one global random generator (seed and offset, kiln/random.h) in a
/// checkpoint: {"rng", kiln::global_generator}.
struct GlobalGenerator {};
inline constexpr GlobalGenerator global_generator{};

/// One thing a checkpoint saves and restores, held by reference: the object must
/// outlive the save or load call it is passed to (and nothing longer).
class CheckpointEntry {
 public:
  using Target = std::variant<nn::Module*, optim::Optimizer*, optim::LRScheduler*, amp::GradScaler*,
                              GlobalGenerator, Tensor*, int64_t*, double*>;

  CheckpointEntry(nn::Module& module) : target_(&module) {}
  /// A module held by pointer, as models usually are; throws kiln::Error when null.
  template <typename M>
  requires std::derived_from<M, nn::Module> CheckpointEntry(const std::shared_ptr<M>& module)
      : target_(static_cast<nn::Module*>(checked(module.get()))) {}
  CheckpointEntry(optim::Optimizer& optimizer) : target_(&optimizer) {}
  CheckpointEntry(optim::LRScheduler& scheduler) : target_(&scheduler) {}
  CheckpointEntry(amp::GradScaler& scaler) : target_(&scaler) {}
  CheckpointEntry(GlobalGenerator generator) : target_(generator) {}
  /// Saved as is; load copies into it when it is defined (same shape and dtype
  /// required, keeping its device and the handles that share it), else sets it.
  CheckpointEntry(Tensor& tensor) : target_(&tensor) {}
  CheckpointEntry(int64_t& value) : target_(&value) {}
  CheckpointEntry(double& value) : target_(&value) {}

  const Target& target() const { return target_; }
  /// "module", "optimizer", "lr_scheduler", "grad_scaler", "generator", "tensor",
  /// "int64" or "float64": how the file's kiln.entries names this entry's kind.
  const char* kind() const;

 private:
  static nn::Module* checked(nn::Module* module);
  Target target_;
};

/// A named entry: {"model", model}.
struct CheckpointItem {
  std::string name;
  CheckpointEntry entry;
};

/// Writes every item's state to `path` as one safetensors file, atomically (see
/// io::save_safetensors: a failure leaves the previous file as it was), with
/// `metadata` beside Kiln's own. Throws kiln::Error, writing nothing, for a name that
/// is not 1 to 128 of [A-Za-z0-9_-], a name given twice, a metadata key starting with
/// "kiln.", or an undefined tensor entry; and naming `path` when the file cannot be
/// written.
void save(const std::vector<CheckpointItem>& items, const std::filesystem::path& path,
          const io::Metadata& metadata = {});

/// A checkpoint file read and checked as a file (kiln::read_checkpoint), not yet
/// restored into anything: look at its metadata first, then restore().
class CheckpointFile {
 public:
  struct Entry {
    std::string name;
    std::string kind;
    /// The entry's tensors, without the "<name>." prefix (a tensor, int64 or float64
    /// entry: one, keyed by its name).
    nn::StateDict state;
  };

  const std::filesystem::path& path() const { return path_; }
  /// The caller's metadata: the file's, without the "kiln." keys.
  const io::Metadata& metadata() const { return metadata_; }
  /// In the order saved.
  const std::vector<Entry>& entries() const { return entries_; }

  /// Restores every item from the entry of its name. Everything is checked first, and
  /// only then is anything changed: each item must have an entry of its kind, each
  /// entry an item (no missing or extra entries); tensors must have the dtype the
  /// object holds now where it holds the key, and pass the object's own
  /// check_state_dict (keys, shapes, ranges: a learning rate of -1 or NaN, a loss
  /// scale of 0, a step of 1e30); an optimizer must be the algorithm that saved it.
  /// A failure throws kiln::Error naming the file and the entry, and the full key
  /// ("optimizer.param_groups.0.lr") where the object's message names one. Optimizers
  /// are set last, so the learning rates they hold are the file's even where a
  /// scheduler sets them too. An optimizer's state is replaced, not merged: what the
  /// entry does not hold is dropped (Optimizer::load_state_dict).
  ///
  /// The copies are made before anything is set too: tensors are moved to the devices
  /// the objects keep them on (an optimizer's state also converted to its parameters'
  /// dtypes), a tensor item gets its own copy, values are read. What remains in the
  /// setting step, and can still leave the objects set before it changed when it fails
  /// (a device running out of memory or failing a copy), is each module's and tensor's
  /// same-device copy_ and each optimizer's copy of its new state.
  void restore(const std::vector<CheckpointItem>& items) const;

 private:
  friend CheckpointFile parse_checkpoint(io::SafetensorsFile file,
                                         const std::filesystem::path& source);
  std::filesystem::path path_;
  io::Metadata metadata_;
  io::Metadata kiln_metadata_;
  std::vector<Entry> entries_;
};

/// Reads `path` (io::load_safetensors, on the default device) and checks that it is a
/// Kiln checkpoint: kiln.format, a kiln.version this build reads, a well-formed
/// kiln.entries, and every tensor belonging to one entry. Throws kiln::Error naming
/// the file otherwise (a truncated file, a huge header, wrong metadata, ...).
CheckpointFile read_checkpoint(const std::filesystem::path& path);
/// The checks of read_checkpoint on a file already read (or made in memory); `source`
/// names it in messages.
CheckpointFile parse_checkpoint(io::SafetensorsFile file, const std::filesystem::path& source);

/// read_checkpoint(path).restore(items), returning the caller's metadata.
io::Metadata load(const std::vector<CheckpointItem>& items, const std::filesystem::path& path);

}  // namespace kiln
