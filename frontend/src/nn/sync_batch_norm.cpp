// SyncBatchNorm: BatchNorm2d over the global batch of a process group, built from
// differentiable ops and one differentiable all-reduce of the statistics.

#include "kiln/autograd.h"
#include "kiln/error.h"
#include "kiln/nn/distributed_data_parallel.h"
#include "kiln/ops.h"

namespace kiln::nn {

Tensor all_reduce_sum_with_grad(const Tensor& tensor,
                                const std::shared_ptr<distributed::ProcessGroup>& group) {
  KILN_CHECK(tensor.defined() && group, "all_reduce_sum_with_grad: needs a tensor and a group");
  Tensor out;
  {
    NoGradGuard no_grad;
    out = tensor.detach().contiguous().clone();
    group->all_reduce(out, distributed::ReduceOp::Sum);
  }
  auto ctx = std::make_shared<autograd::AutogradContext>();
  return autograd::detail::record_function(
      "AllReduceSumBackward", ctx, {tensor}, out,
      [group, like = out](autograd::AutogradContext&,
                          std::vector<Tensor> grads) -> std::vector<Tensor> {
        // Every rank reaches this node in its backward and must take part even when no
        // gradient flowed into it here.
        Tensor g =
            grads.empty() || !grads[0].defined() ? zeros_like(like) : grads[0].contiguous().clone();
        group->all_reduce(g, distributed::ReduceOp::Sum);
        return {g};
      });
}

SyncBatchNorm::SyncBatchNorm(int64_t num_features, std::shared_ptr<distributed::ProcessGroup> group,
                             double eps, double momentum, bool affine, bool track_running_stats)
    : BatchNorm("SyncBatchNorm", 4, num_features, eps, momentum, affine, track_running_stats),
      group_(std::move(group)) {
  KILN_CHECK(group_, "SyncBatchNorm: needs a process group");
}

std::shared_ptr<Module> SyncBatchNorm::clone() const {
  return copy_state_into(std::make_shared<SyncBatchNorm>(features_, group_, eps_, momentum_,
                                                         weight.defined(), running_mean.defined()));
}

Tensor SyncBatchNorm::forward(const Tensor& x) {
  if (!is_training() || group_->size() == 1) return BatchNorm::forward(x);
  KILN_CHECK(x.dim() == 4 && x.size(1) == features_, "SyncBatchNorm: expected [N, ", features_,
             ", H, W], got shape ", x.shape());
  const int64_t c = features_;
  const std::vector<int64_t> dims = {0, 2, 3};
  Tensor xf = x.to(DType::Float32);
  // [sum, sum of squares, count] per rank -> over the group, in one all-reduce, in
  // float64: E[x^2] - E[x]^2 cancels badly in float32 for channels far from zero.
  Tensor xd = x.to(DType::Float64);
  Tensor count = full({1}, static_cast<double>(x.numel() / c),
                      TensorOptions().dtype(DType::Float64).device(x.device()));
  Tensor stats =
      all_reduce_sum_with_grad(cat({xd.sum(dims), (xd * xd).sum(dims), count}, 0), group_);
  Tensor total = stats.narrow(0, 2 * c, 1);
  Tensor mean = stats.narrow(0, 0, c) / total;
  // Biased, as normalization uses; never below 0 whatever the rounding.
  Tensor var = clamp(stats.narrow(0, c, c) / total - mean * mean, 0.0, std::nullopt);
  mean = mean.to(DType::Float32);
  var = var.to(DType::Float32);
  Tensor y = (xf - mean.reshape({1, c, 1, 1})) * (var + eps_).rsqrt().reshape({1, c, 1, 1});
  if (weight.defined()) y = y * weight.reshape({1, c, 1, 1}) + bias.reshape({1, c, 1, 1});
  if (running_mean.defined()) {
    NoGradGuard no_grad;
    const double n = total.item<double>();
    KILN_CHECK(n > 1, "SyncBatchNorm: the global batch has ", n,
               " value(s) per channel; "
               "training needs more than one");
    running_mean.mul_(1 - momentum_).add_(mean.detach() * momentum_);
    running_var.mul_(1 - momentum_).add_(var.detach() * (momentum_ * n / (n - 1)));
    num_batches_tracked.add_(1);
  }
  return y.to(x.dtype());
}

}  // namespace kiln::nn
