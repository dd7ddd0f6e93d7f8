#pragma once
/// @file distributed.h
/// Collectives over a group of devices in this process: all-reduce, broadcast,
/// all-gather, reduce-scatter and barrier, as torch.distributed and NCCL offer them.
///
/// @code
///   kiln::distributed::Communicator comm({"cpu:0", "cpu:1"});
///   std::vector<kiln::Tensor> grads = {g0, g1};          // g0 on cpu:0, g1 on cpu:1
///   comm.all_reduce(grads, kiln::distributed::ReduceOp::Avg);  // both now hold the mean
/// @endcode
///
/// Rank i of the group is `devices()[i]`; every collective takes one tensor per rank,
/// tensor i on device i, all of one dtype and element count. When the devices' plugin
/// implements the ABI's collectives (the CPU plugin does, across KILN_CPU_DEVICES), it
/// runs them device side; otherwise Kiln copies the tensors to the host, reduces
/// there and copies back, so any backend works (slowly); that path is counted in
/// `kiln::fallback_report()` under "kiln.all_reduce" etc. and refused under
/// KILN_FALLBACK=error.
///
/// Results are deterministic: reductions combine the ranks in rank order 0, 1, ...
/// (float16/bfloat16 accumulate in float32 and round once; int32 in int64).
/// A rank that does not arrive within the timeout (KILN_COLLECTIVE_TIMEOUT, default
/// 300 s) makes the collective throw kiln::Error naming it; the communicator is
/// then unusable. Errors name the collective, the group and the offending rank.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/device.h"
#include "kiln/tensor.h"

namespace kiln::distributed {

enum class ReduceOp { Sum, Avg, Min, Max };

/// "sum", "avg", "min", "max".
const char* reduce_op_name(ReduceOp op);

/// The range of a collective timeout, in seconds: below a millisecond even a healthy
/// collective would time out; above 1e9 s (31 years) it bounds nothing.
inline constexpr double kMinCollectiveTimeout = 1e-3;
inline constexpr double kMaxCollectiveTimeout = 1e9;

struct CommunicatorOptions {
  /// How long a rank waits for the others (seconds, from kMinCollectiveTimeout to
  /// kMaxCollectiveTimeout). Default: the environment variable KILN_COLLECTIVE_TIMEOUT,
  /// else 300.
  CommunicatorOptions& timeout(double seconds) {
    timeout_ = seconds;
    return *this;
  }
  /// Ignore the plugin's collectives and reduce through host copies (for testing
  /// and debugging a plugin's collectives against the reference path).
  CommunicatorOptions& host_staged(bool on) {
    host_staged_ = on;
    return *this;
  }
  std::optional<double> timeout_;
  bool host_staged_ = false;
};

/// The timeout a CommunicatorOptions without one gets: KILN_COLLECTIVE_TIMEOUT
/// (seconds), or 300 when it is unset or empty. Throws kiln::Error naming the variable
/// and its value when that is not a number from kMinCollectiveTimeout to
/// kMaxCollectiveTimeout (garbage, NaN, inf, 0, negative, 1e-300): a collective must
/// not wait 300 s when asked for a different bound, nor give up at once.
double default_collective_timeout();

/// One rank per device, all devices of one plugin, each at most once.
class Communicator {
 public:
  explicit Communicator(std::vector<Device> devices, CommunicatorOptions options = {});
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int size() const;
  const std::vector<Device>& devices() const;
  /// True when the plugin's collectives do the work, false on the host-staged path.
  bool native() const;
  double timeout_seconds() const;

  /// outputs[i] = op over ranks of inputs[i]. In place when they are the same tensors.
  void all_reduce(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                  ReduceOp op = ReduceOp::Sum);
  void all_reduce(const std::vector<Tensor>& tensors, ReduceOp op = ReduceOp::Sum) {
    all_reduce(tensors, tensors, op);
  }
  /// outputs[i] = inputs[root] on every rank (inputs[i] is read on the root only).
  void broadcast(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                 int root = 0);
  void broadcast(const std::vector<Tensor>& tensors, int root = 0) {
    broadcast(tensors, tensors, root);
  }
  /// outputs[i], of size() * n elements, holds every rank's input (n elements each)
  /// in rank order, flattened.
  void all_gather(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs);
  /// outputs[i] (n elements) = op over ranks of elements [i*n, (i+1)*n) of the
  /// flattened inputs (size() * n elements each).
  void reduce_scatter(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                      ReduceOp op = ReduceOp::Sum);
  /// Returns when every rank's device has finished the work queued before it.
  void barrier();

  /// "[cpu:0, cpu:1]", for messages.
  std::string str() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// -- many processes ----------------------------------------------------------------------

/// A collective started by a ProcessGroup and not yet waited for.
class Work {
 public:
  virtual ~Work() = default;
  /// Blocks until the collective is done. Throws kiln::Error naming the collective and
  /// the group when it failed, or when it did not finish within the group's timeout.
  virtual void wait() = 0;
};

/// This process's rank in a group of processes, as torch.distributed's
/// ProcessGroup: every rank calls the same collectives in the same order, each with
/// one tensor of its own (contiguous, on any device; the group stages through the
/// host what its transport cannot reach). Arguments that disagree between ranks are
/// detected and reported on every rank, never mis-reduced. Implementations:
/// kiln::distributed::mpi (kiln/distributed/mpi.h, library Kiln::mpi).
class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// "mpi, rank 1 of 4", for messages.
  virtual std::string str() const = 0;

  /// Starts reducing `tensor` in place across the ranks; wait() on the result before
  /// reading or writing the tensor again.
  virtual std::shared_ptr<Work> all_reduce_async(const Tensor& tensor,
                                                 ReduceOp op = ReduceOp::Sum) = 0;
  void all_reduce(const Tensor& tensor, ReduceOp op = ReduceOp::Sum) {
    all_reduce_async(tensor, op)->wait();
  }
  /// tensor = rank `root`'s tensor, on every rank.
  virtual void broadcast(const Tensor& tensor, int root = 0) = 0;
  /// output (size() * input.numel() elements) = every rank's input, in rank order.
  virtual void all_gather(const Tensor& input, const Tensor& output) = 0;
  /// Returns when every rank has called it.
  virtual void barrier() = 0;

  /// True on rank 0: the rank that writes checkpoints and logs (is_main_process()).
  bool is_main() const { return rank() == 0; }
};

}  // namespace kiln::distributed
