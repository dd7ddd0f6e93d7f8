// DistributedDataParallel: the bucketed gradient reducer (see the header for the
// contract). Gradient hooks mark parameters ready; full buckets start their
// all-reduce on the process group at once; a callback at the end of backward waits
// for them and writes the means back.

#include "kiln/nn/distributed_data_parallel.h"

#include <algorithm>
#include <chrono>
#include <sstream>

#include "kiln/autograd.h"
#include "kiln/error.h"
#include "kiln/ops.h"

namespace kiln::nn {

using Clock = std::chrono::steady_clock;

struct DistributedDataParallel::State {
  struct Bucket {
    std::vector<size_t> params;
    size_t pending = 0;
    Tensor flat;
    std::shared_ptr<distributed::Work> work;
  };

  std::shared_ptr<distributed::ProcessGroup> group;
  std::vector<Tensor> params;
  std::vector<std::string> names;
  std::vector<Bucket> buckets;
  std::vector<size_t> bucket_of;
  std::vector<char> ready;
  size_t next_launch = 0;
  bool sync = true;
  bool in_pass = false;
  Clock::time_point pass_start;
  Stats stats;

  double since_start() const {
    return std::chrono::duration<double>(Clock::now() - pass_start).count();
  }

  void on_grad(size_t i, const std::weak_ptr<State>& self) {
    if (!sync) return;
    if (!in_pass) {
      in_pass = true;
      pass_start = Clock::now();
      stats = {};
      autograd::queue_callback([self] {
        if (auto s = self.lock()) s->finish();
      });
    }
    if (ready[i]) return;
    ready[i] = 1;
    if (!stats.launch_seconds.empty()) ++stats.grads_ready_after_first_launch;
    stats.last_grad_seconds = since_start();
    Bucket& b = buckets[bucket_of[i]];
    --b.pending;
    // Collectives must start in the same order on every rank: bucket index order.
    while (next_launch < buckets.size() && buckets[next_launch].pending == 0) launch(next_launch++);
  }

  void launch(size_t index) {
    Bucket& b = buckets[index];
    std::vector<Tensor> grads;
    grads.reserve(b.params.size());
    for (size_t p : b.params) grads.push_back(params[p].grad().detach().flatten());
    b.flat = cat(grads, 0);
    stats.launch_seconds.push_back(since_start());
    stats.bucket_sizes.push_back(b.params.size());
    b.work = group->all_reduce_async(b.flat, distributed::ReduceOp::Avg);
  }

  void reset() {
    in_pass = false;
    next_launch = 0;
    std::fill(ready.begin(), ready.end(), 0);
    for (Bucket& b : buckets) {
      b.pending = b.params.size();
      b.flat = Tensor();
      b.work.reset();
    }
  }

  // Waits for the buckets an interrupted pass started (ignoring their outcome) and
  // forgets the pass.
  void abandon_pass() {
    for (Bucket& b : buckets) {
      if (!b.work) continue;
      try {
        b.work->wait();
      } catch (const std::exception&) {
      }
    }
    reset();
  }

  void finish() {
    std::string missing;
    if (next_launch < buckets.size())
      for (size_t i = 0; i < params.size(); ++i)
        if (!ready[i]) missing += (missing.empty() ? "" : ", ") + names[i];
    // Wait for everything started, whatever happens next, so no collective is left
    // running over buffers we drop.
    std::string failure;
    for (Bucket& b : buckets) {
      if (!b.work) continue;
      try {
        b.work->wait();
      } catch (const std::exception& e) {
        if (failure.empty()) failure = e.what();
      }
    }
    if (!failure.empty() || !missing.empty()) {
      reset();
      if (!failure.empty())
        throw Error("DistributedDataParallel: reducing gradients failed: " + failure);
      throw Error(
          "DistributedDataParallel: these parameters received no gradient in this "
          "backward pass, so their buckets could not be reduced: " +
          missing + " (every rank must use every parameter in every step)");
    }
    NoGradGuard no_grad;
    for (Bucket& b : buckets) {
      int64_t offset = 0;
      for (size_t p : b.params) {
        Tensor grad = params[p].grad();
        const int64_t n = grad.numel();
        grad.copy_(b.flat.narrow(0, offset, n).reshape(grad.shape()));
        offset += n;
      }
    }
    reset();
  }
};

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<Module> module,
                                                 std::shared_ptr<distributed::ProcessGroup> group,
                                                 DistributedDataParallelOptions options)
    : Module("DistributedDataParallel"),
      module_(std::move(module)),
      group_(std::move(group)),
      options_(options),
      state_(std::make_shared<State>()) {
  KILN_CHECK(module_ && group_, "DistributedDataParallel: needs a module and a process group");
  KILN_CHECK(options_.bucket_cap_mb_ > 0,
             "DistributedDataParallel: bucket_cap_mb must be "
             "positive, got ",
             options_.bucket_cap_mb_);
  register_module("module", module_);
  const std::string where = "DistributedDataParallel on " + group_->str();

  // Every rank must hold the same parameters: first the length of the description,
  // then the description itself (per parameter: dtype, rank, sizes).
  const StateDict named = module_->named_parameters();
  std::vector<int64_t> signature;
  for (const auto& [name, p] : named) {
    // dtype and requires_grad in one number: frozen parameters change the buckets.
    signature.push_back(static_cast<int64_t>(p.dtype()) * 2 + (p.requires_grad() ? 1 : 0));
    signature.push_back(p.dim());
    for (int64_t d : p.shape()) signature.push_back(d);
  }
  const int world = group_->size();
  const Device host("cpu", 0);
  Tensor length = full({1}, static_cast<int64_t>(signature.size()),
                       TensorOptions().dtype(DType::Int64).device(host));
  Tensor lengths = zeros({world}, TensorOptions().dtype(DType::Int64).device(host));
  group_->all_gather(length, lengths);
  const std::vector<int64_t> all_lengths = lengths.to_vector<int64_t>();
  for (int r = 0; r < world; ++r)
    KILN_CHECK(all_lengths[static_cast<size_t>(r)] == all_lengths[0], where,
               ": ranks hold different parameters: rank 0 describes its ", named.size(),
               " parameters in ", all_lengths[0], " numbers, rank ", r, " in ",
               all_lengths[static_cast<size_t>(r)], " (different models?)");
  if (!signature.empty()) {
    Tensor mine = from_vector<int64_t>(signature, {static_cast<int64_t>(signature.size())});
    Tensor all = zeros({world * static_cast<int64_t>(signature.size())},
                       TensorOptions().dtype(DType::Int64).device(host));
    group_->all_gather(mine, all);
    const std::vector<int64_t> v = all.to_vector<int64_t>();
    for (int r = 1; r < world; ++r) {
      size_t at = 0;
      for (const auto& [name, p] : named) {
        const size_t len = 2 + static_cast<size_t>(p.dim());
        const size_t theirs = static_cast<size_t>(r) * signature.size() + at;
        if (!std::equal(v.begin() + static_cast<std::ptrdiff_t>(at),
                        v.begin() + static_cast<std::ptrdiff_t>(at + len),
                        v.begin() + static_cast<std::ptrdiff_t>(theirs))) {
          std::ostringstream a, b;
          auto describe = [](std::ostringstream& out, int64_t code) {
            out << (code % 2 ? "" : "frozen ") << dtype_name(static_cast<DType>(code / 2)) << "[";
          };
          describe(a, v[at]);
          for (size_t k = 2; k < len; ++k) a << (k > 2 ? ", " : "") << v[at + k];
          describe(b, v[theirs]);
          for (size_t k = 2; k < len && theirs + k < v.size(); ++k)
            b << (k > 2 ? ", " : "") << v[theirs + k];
          KILN_FAIL(where, ": parameter '", name, "' is ", a.str(), "] on rank 0 but ", b.str(),
                    "] on rank ", r, " (different models?)");
        }
        at += len;
      }
    }
  }

  // Rank 0's values everywhere.
  {
    NoGradGuard no_grad;
    for (const auto& [name, p] : named) group_->broadcast(p, 0);
    for (const auto& [name, b] : module_->named_buffers())
      if (b.defined()) group_->broadcast(b, 0);
  }

  // Buckets in reverse registration order; the first holds about 1 MB.
  State& s = *state_;
  s.group = group_;
  for (const auto& [name, p] : named) {
    if (!p.requires_grad()) continue;
    s.params.push_back(p);
    s.names.push_back(name);
  }
  s.bucket_of.assign(s.params.size(), 0);
  s.ready.assign(s.params.size(), 0);
  const double cap = options_.bucket_cap_mb_ * 1024 * 1024;
  double filled = 0;
  for (size_t k = s.params.size(); k-- > 0;) {
    const double bytes = static_cast<double>(s.params[k].numel()) *
                         static_cast<double>(element_size(s.params[k].dtype()));
    const double limit = s.buckets.size() <= 1 ? std::min(cap, 1024.0 * 1024) : cap;
    if (s.buckets.empty() || (filled > 0 && filled + bytes > limit)) {
      s.buckets.emplace_back();
      filled = 0;
    }
    s.buckets.back().params.push_back(k);
    s.bucket_of[k] = s.buckets.size() - 1;
    filled += bytes;
  }
  s.reset();
  std::weak_ptr<State> weak = state_;
  for (size_t i = 0; i < s.params.size(); ++i)
    autograd::register_post_accumulate_grad_hook(s.params[i], [weak, i](const Tensor&) {
      if (auto st = weak.lock()) st->on_grad(i, weak);
    });
}

DistributedDataParallel::~DistributedDataParallel() = default;

Tensor DistributedDataParallel::forward(const Tensor& input) {
  // A backward that failed half-way (an op error, out of memory) never reached its
  // end-of-pass callback: wait for what it started and start clean.
  if (state_->in_pass) state_->abandon_pass();
  if (options_.broadcast_buffers_ && group_->size() > 1) {
    NoGradGuard no_grad;
    for (const auto& [name, b] : module_->named_buffers())
      if (b.defined()) group_->broadcast(b, 0);
  }
  return module_->forward(input);
}

DistributedDataParallel::NoSyncGuard::NoSyncGuard(DistributedDataParallel& ddp)
    : ddp_(ddp), previous_(ddp.state_->sync) {
  ddp_.state_->sync = false;
}

DistributedDataParallel::NoSyncGuard::~NoSyncGuard() { ddp_.state_->sync = previous_; }

DistributedDataParallel::Stats DistributedDataParallel::last_stats() const { return state_->stats; }

}  // namespace kiln::nn
