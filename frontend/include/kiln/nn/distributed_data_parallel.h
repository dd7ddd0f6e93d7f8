#pragma once
/// @file distributed_data_parallel.h
/// kiln::nn::DistributedDataParallel: one process per device, gradients averaged
/// across processes while backward runs, as torch.nn.parallel.DistributedDataParallel.
///
/// @code
///   auto group = kiln::distributed::mpi::init();            // mpirun -np 4 ./train
///   auto ddp = std::make_shared<kiln::nn::DistributedDataParallel>(model, group);
///   kiln::optim::SGD opt(ddp->parameters(), kiln::optim::SGDOptions(0.1));
///   for (auto& batch : loader) {                             // each rank its own shard
///     opt.zero_grad();
///     F::cross_entropy(ddp->forward(batch.input), batch.target).backward();
///     opt.step();                                            // same update on every rank
///   }
/// @endcode
///
/// Construction checks that every rank has the same parameters (names' order, shapes
/// and dtypes; a mismatch is an error on every rank naming the parameter and both
/// shapes) and copies rank 0's parameters and buffers to the others. The parameters
/// are divided into buckets of about `bucket_cap_mb` (25 MB, PyTorch's default; the
/// first bucket 1 MB so that communication starts early) in reverse registration
/// order, roughly the order backward produces their gradients. As soon as every
/// gradient of a bucket has been accumulated, the bucket is flattened and its
/// all-reduce (the mean over ranks) starts on the group, while backward goes on with
/// the earlier layers; buckets start in index order on every rank, as collectives
/// must. When backward ends, DDP waits for the buckets and writes the averaged
/// gradients back into each parameter's .grad(). Every parameter must receive a
/// gradient in every synchronized backward pass (else an error names the ones that
/// did not). With broadcast_buffers (default), forward first copies rank 0's
/// buffers (BatchNorm running statistics) to every rank.

#include <memory>
#include <vector>

#include "kiln/distributed.h"
#include "kiln/nn/module.h"
#include "kiln/nn/modules.h"

namespace kiln::nn {

struct DistributedDataParallelOptions {
  /// Target bucket size in MB (> 0).
  DistributedDataParallelOptions& bucket_cap_mb(double v) {
    bucket_cap_mb_ = v;
    return *this;
  }
  /// Copy rank 0's buffers to every rank at each forward.
  DistributedDataParallelOptions& broadcast_buffers(bool v) {
    broadcast_buffers_ = v;
    return *this;
  }
  double bucket_cap_mb_ = 25;
  bool broadcast_buffers_ = true;
};

class DistributedDataParallel : public Module {
 public:
  DistributedDataParallel(std::shared_ptr<Module> module,
                          std::shared_ptr<distributed::ProcessGroup> group,
                          DistributedDataParallelOptions options = {});
  ~DistributedDataParallel() override;

  Tensor forward(const Tensor& input) override;

  /// While the returned guard lives, backward passes accumulate gradients locally and
  /// reduce nothing (gradient accumulation); the first backward after it reduces
  /// everything accumulated.
  class NoSyncGuard {
   public:
    explicit NoSyncGuard(DistributedDataParallel& ddp);
    ~NoSyncGuard();
    NoSyncGuard(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;

   private:
    DistributedDataParallel& ddp_;
    bool previous_;
  };
  NoSyncGuard no_sync() { return NoSyncGuard(*this); }

  /// What the last synchronized backward pass did, for tests and profiling.
  struct Stats {
    /// Parameters per bucket, in launch order.
    std::vector<size_t> bucket_sizes;
    /// Gradients that became ready after the first bucket's all-reduce had started:
    /// > 0 means communication overlapped with backward.
    size_t grads_ready_after_first_launch = 0;
    /// Seconds from the first gradient of the pass to each bucket's launch, and to
    /// the last gradient.
    std::vector<double> launch_seconds;
    double last_grad_seconds = 0;
  };
  Stats last_stats() const;

  const std::shared_ptr<Module>& module() const { return module_; }
  const std::shared_ptr<distributed::ProcessGroup>& process_group() const { return group_; }

  struct State;

 private:
  std::shared_ptr<Module> module_;
  std::shared_ptr<distributed::ProcessGroup> group_;
  DistributedDataParallelOptions options_;
  std::shared_ptr<State> state_;
};

/// BatchNorm2d whose training statistics are those of the whole global batch: every
/// forward all-reduces the per-channel sums, sums of squares and counts over the
/// process group (and backward all-reduces their gradients), so N ranks with batch
/// B/N normalize exactly as one process with batch B would (torch.nn.SyncBatchNorm).
/// In eval mode, and with one rank, it is a plain BatchNorm2d. Plain BatchNorm under
/// DDP normalizes each rank's batch with its own statistics, as in PyTorch. Every
/// rank must run the same SyncBatchNorm layers in the same order. Input [N, C, H, W].
class SyncBatchNorm : public BatchNorm {
 public:
  SyncBatchNorm(int64_t num_features, std::shared_ptr<distributed::ProcessGroup> group,
                double eps = 1e-5, double momentum = 0.1, bool affine = true,
                bool track_running_stats = true);
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<Module> clone() const override;

 private:
  std::shared_ptr<distributed::ProcessGroup> group_;
};

/// The sum of `tensor` over the group's ranks, on every rank, recorded by autograd:
/// its backward is the sum over ranks of the incoming gradients (what SyncBatchNorm
/// builds on). Every rank must call it, and reach its backward, in the same order.
Tensor all_reduce_sum_with_grad(const Tensor& tensor,
                                const std::shared_ptr<distributed::ProcessGroup>& group);

}  // namespace kiln::nn
