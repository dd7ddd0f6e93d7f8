#include "nccl_comm.h"

#include <algorithm>
#include <cstdlib>
#include <thread>
#include <utility>

#include "device.h"
#include "kiln/sdk/plugin.h"
#include "kiln/sdk/status.h"
#include "nccl_watchdog.h"

namespace kiln::cuda {

namespace {

using Clock = NcclComm::Clock;

// Polling backs off from spinning to 1 ms: an enqueue usually finishes at once, a
// connection set-up or a slow peer takes milliseconds or more.
void back_off(int attempt) {
  if (attempt < 16)
    std::this_thread::yield();
  else
    std::this_thread::sleep_for(std::chrono::microseconds(attempt < 64 ? 50 : 1000));
}

}  // namespace

Clock::time_point deadline_after(double seconds) {
  constexpr double kMaxSeconds = 1e7;
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(std::min(seconds, kMaxSeconds)));
}

std::string nccl_message(ncclResult_t result, const char* what, ncclComm_t comm) {
  const char* last = ncclGetLastError(comm);
  return sdk::str_cat(what, ": ", ncclGetErrorString(result),
                      last != nullptr && *last != '\0' ? sdk::str_cat(" (", last, ")") : "");
}

// -- GroupInfo ---------------------------------------------------------------------------

GroupInfo::GroupInfo(std::vector<std::string> labels)
    : labels_(std::move(labels)), posted_(labels_.size(), 0) {}

std::string GroupInfo::members() const {
  std::string out = "[";
  for (size_t i = 0; i < labels_.size(); ++i) out += (i ? ", " : "") + labels_[i];
  return out + "]";
}

void GroupInfo::set_members(std::vector<std::weak_ptr<NcclComm>> comms) {
  std::lock_guard lock(mutex_);
  comms_ = std::move(comms);
}

// Each position in the order of calls is compared with the first rank that posted it;
// a position is forgotten once every rank has posted it.
std::string GroupInfo::post(int rank, const CollectiveCall& call) {
  std::lock_guard lock(mutex_);
  const auto r = static_cast<size_t>(rank);
  const uint64_t position = posted_[r]++;
  const auto index = static_cast<size_t>(position - base_);
  if (index == slots_.size()) slots_.push_back({call, rank, 0});
  Slot& slot = slots_[index];
  ++slot.seen;
  std::string mismatch;
  const CollectiveCall& first = slot.call;
  const std::string ranks =
      sdk::str_cat("rank ", slot.first_rank, " (", labels_[static_cast<size_t>(slot.first_rank)],
                   ") and rank ", rank, " (", labels_[r], ")");
  if (std::string(first.name) != call.name) {
    mismatch = sdk::str_cat("mismatched collectives on the group ", members(), ": ", ranks,
                            " called ", first.name, " and ", call.name);
  } else if (first.count != call.count || first.dtype != call.dtype ||
             first.op_or_root != call.op_or_root) {
    const bool root = std::string(call.name) == "broadcast";
    const char* field = first.count != call.count   ? "element count"
                        : first.dtype != call.dtype ? "dtype"
                        : root                      ? "root"
                                                    : "reduce op";
    const auto value = [&](const CollectiveCall& c) -> int64_t {
      return first.count != call.count   ? static_cast<int64_t>(c.count)
             : first.dtype != call.dtype ? c.dtype
                                         : c.op_or_root;
    };
    mismatch = sdk::str_cat(call.name, ": ranks disagree on the ", field, " on the group ",
                            members(), ": ", ranks, " passed ", value(first), " and ", value(call));
  }
  while (!slots_.empty() && slots_.front().seen == static_cast<int>(labels_.size())) {
    slots_.pop_front();
    ++base_;
  }
  return mismatch;
}

std::string GroupInfo::ranks_behind(uint64_t calls) const {
  std::lock_guard lock(mutex_);
  std::string out;
  for (size_t r = 0; r < labels_.size(); ++r)
    if (posted_[r] < calls) out += sdk::str_cat(out.empty() ? "" : ", ", r, " (", labels_[r], ")");
  return out;
}

void GroupInfo::abort_all(kiln_status_code code, const std::string& reason) {
  std::vector<std::shared_ptr<NcclComm>> comms;
  {
    std::lock_guard lock(mutex_);
    for (const auto& weak : comms_)
      if (auto comm = weak.lock()) comms.push_back(std::move(comm));
  }
  for (const auto& comm : comms) comm->abort(code, reason);
}

// -- NcclComm ------------------------------------------------------------------------------

NcclComm::NcclComm(CudaDevice& device, int rank, int size, double timeout_seconds,
                   std::shared_ptr<GroupInfo> group)
    : device_(device),
      rank_(rank),
      size_(size),
      timeout_(timeout_seconds),
      group_(std::move(group)) {
  device_.make_current();
  if (const cudaError_t status = cudaMalloc(&barrier_word_, sizeof(int32_t));
      status != cudaSuccess) {
    barrier_word_ = nullptr;
    device_.fail(status, "cudaMalloc (the barrier's word)");
  }
}

// Only where destroy() never ran (a communicator leaked to exit) is there anything left.
NcclComm::~NcclComm() {
  if (comm_ == nullptr && barrier_word_ == nullptr) return;
  try {
    device_.make_current();
  } catch (...) {
  }
  if (comm_ != nullptr) ncclCommAbort(comm_);  // nothing may use it any more
  if (barrier_word_ != nullptr) cudaFree(barrier_word_);
}

void NcclComm::free_barrier_word() noexcept {
  if (barrier_word_ == nullptr) return;
  try {
    device_.make_current();
  } catch (...) {
  }
  cudaFree(barrier_word_);
  barrier_word_ = nullptr;
}

std::string NcclComm::label() const {
  return sdk::str_cat("rank ", rank_, " of ", size_, " on ", device_.label());
}

void NcclComm::throw_if_aborted(const char* what, bool destroyed_is_ok) const {
  std::lock_guard lock(mutex_);
  if (aborted_)
    throw sdk::Error(abort_code_,
                     sdk::str_cat(what, " on ", label(),
                                  ": the communicator was "
                                  "aborted (",
                                  abort_reason_, "); destroy it and create a new one"));
  KILN_SDK_CHECK(destroyed_is_ok || comm_ != nullptr, KILN_STATUS_INVALID_ARGUMENT, what, " on ",
                 label(), ": the communicator was destroyed");
}

void NcclComm::start_init(const ncclUniqueId& id) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // every wait is ours, with the timeout (see the header)
  device_.make_current();
  std::lock_guard lock(mutex_);
  const ncclResult_t result = ncclCommInitRankConfig(&comm_, size_, id, rank_, &config);
  if (result != ncclSuccess && result != ncclInProgress) {
    const std::string message =
        nccl_message(result, sdk::str_cat("ncclCommInitRankConfig for ", label()).c_str(), nullptr);
    if (comm_ != nullptr) ncclCommAbort(comm_);
    comm_ = nullptr;
    aborted_ = true;
    abort_reason_ = message;
    throw sdk::Error(KILN_STATUS_DEVICE_ERROR, message);
  }
}

void NcclComm::wait_ready(Clock::time_point deadline) {
  try {
    poll("initializing NCCL", deadline,
         group_ ? "NCCL did not finish setting up the group"
                : "rank(s) of the group did not join (NCCL cannot tell which)");
  } catch (const sdk::Error& e) {
    throw sdk::Error(e.code(),
                     sdk::str_cat(e.what(), group_ ? ""
                                                   : "; did every rank call comm_init_rank "
                                                     "with the same id and rank count?"));
  }
}

ncclResult_t NcclComm::async_error() noexcept {
  std::lock_guard lock(mutex_);
  if (comm_ == nullptr) return ncclSuccess;
  ncclResult_t state = ncclSuccess;
  const ncclResult_t result = ncclCommGetAsyncError(comm_, &state);
  return result != ncclSuccess ? result : state;
}

std::string NcclComm::who_is_missing(uint64_t position) const {
  if (!group_) {
    return "a rank of the group did not call it, died, or called it with other arguments "
           "(across processes NCCL cannot tell which)";
  }
  const std::string behind = group_->ranks_behind(position + 1);
  return behind.empty() ? sdk::str_cat("every rank of ", group_->members(),
                                       " called it; the GPU work did not finish")
                        : "rank(s) that did not call it: " + behind;
}

void NcclComm::poll(const char* what, Clock::time_point deadline, const std::string& missing) {
  for (int attempt = 0;; ++attempt) {
    ncclResult_t state = ncclSuccess;
    {
      std::unique_lock lock(mutex_);
      if (comm_ == nullptr) {
        lock.unlock();
        throw_if_aborted(what);
        return;
      }
      const ncclResult_t result = ncclCommGetAsyncError(comm_, &state);
      if (result != ncclSuccess) state = result;
      if (state == ncclSuccess) return;
      if (state != ncclInProgress) {
        const std::string message =
            nccl_message(state, sdk::str_cat(what, " on ", label()).c_str(), comm_);
        lock.unlock();
        abort(KILN_STATUS_DEVICE_ERROR, message);
        throw sdk::Error(KILN_STATUS_DEVICE_ERROR, message);
      }
    }
    if (Clock::now() > deadline) {
      const std::string message = sdk::str_cat(what, " on ", label(), " did not complete within ",
                                               timeout_, " s: ", missing);
      abort(KILN_STATUS_DEVICE_ERROR, message);
      if (group_) group_->abort_all(KILN_STATUS_DEVICE_ERROR, message);
      throw sdk::Error(KILN_STATUS_DEVICE_ERROR, message);
    }
    back_off(attempt);
  }
}

void NcclComm::nccl_call(const char* what, Clock::time_point deadline,
                         const std::function<ncclResult_t(ncclComm_t)>& call) {
  uint64_t position = 0;
  {
    std::unique_lock lock(mutex_);
    if (comm_ == nullptr) {
      lock.unlock();
      throw_if_aborted(what);
    }
    position = calls_ > 0 ? calls_ - 1 : 0;
    const ncclResult_t result = call(comm_);
    if (result != ncclSuccess && result != ncclInProgress) {
      const std::string message =
          nccl_message(result, sdk::str_cat(what, " on ", label()).c_str(), comm_);
      lock.unlock();
      // An argument NCCL refuses is refused by the same call on every rank, but the
      // others may already have enqueued theirs: abort so that they fail rather than hang.
      const kiln_status_code code = result == ncclInvalidArgument || result == ncclInvalidUsage
                                        ? KILN_STATUS_INVALID_ARGUMENT
                                        : KILN_STATUS_DEVICE_ERROR;
      abort(code, message);
      if (group_) group_->abort_all(code, message);
      throw sdk::Error(code, message);
    }
    if (result == ncclSuccess) return;
  }
  poll(what, deadline, who_is_missing(position));
}

void NcclComm::enqueue(const CollectiveCall& call, cudaStream_t stream,
                       const std::function<ncclResult_t(ncclComm_t)>& launch) {
  throw_if_aborted(call.name);
  uint64_t position = 0;
  {
    std::lock_guard lock(mutex_);
    position = calls_++;
  }
  if (group_) {
    if (std::string mismatch = group_->post(rank_, call); !mismatch.empty()) {
      group_->abort_all(KILN_STATUS_INVALID_ARGUMENT, mismatch);
      throw_if_aborted(call.name);
    }
  }
  if (call.count == 0) return;  // every rank agreed that there is nothing to move
  device_.make_current();
  EventPool& events = device_.events();
  cudaEvent_t start = events.get();
  cudaEvent_t end = nullptr;
  // Counted in flight before NCCL enqueues it: an abort from another thread from then
  // on posts the deferred error that reports the collective's undefined output.
  {
    std::lock_guard lock(mutex_);
    ++in_flight_;
  }
  try {
    end = events.get();
    device_.record_cuda_event(start, stream, call.name);
    nccl_call(call.name, deadline_after(timeout_), launch);
    device_.note_op(call.name);
    device_.record_cuda_event(end, stream, call.name);
  } catch (...) {
    {
      std::lock_guard lock(mutex_);
      --in_flight_;
    }
    events.put(start);
    events.put(end);
    throw;
  }
  Watchdog::get().add({shared_from_this(), call.name, position, start, end});
}

void NcclComm::barrier(cudaStream_t stream) {
  // An all-reduce of one word, checked like any collective, then a host wait for it:
  // the ABI's barrier returns only when every rank has reached it.
  enqueue({"barrier", 1, KILN_DTYPE_INT32, KILN_REDUCE_SUM}, stream, [&](ncclComm_t comm) {
    return ncclAllReduce(barrier_word_, barrier_word_, 1, ncclInt32, ncclSum, comm, stream);
  });
  cudaEvent_t done = device_.events().get();
  try {
    device_.record_cuda_event(done, stream, "barrier");
    device_.count_host_wait();
    // Polled rather than waited for: the watchdog aborts the collective on the timeout,
    // and the wait must end then too.
    // An abort posted a deferred error to the device: thrown here, once (not again
    // at the device's next synchronization).
    auto fail_if_aborted = [&] {
      if (!aborted()) return;
      device_.raise_deferred_error("at barrier");
      throw_if_aborted("barrier");
    };
    for (int attempt = 0; !device_.event_done(done); ++attempt) {
      fail_if_aborted();
      back_off(attempt);
    }
    fail_if_aborted();
  } catch (...) {
    device_.events().put(done);
    throw;
  }
  device_.events().put(done);
  device_.raise_deferred_error("at barrier");
}

void NcclComm::destroy() {
  const Clock::time_point deadline = deadline_after(timeout_);
  // The ABI says work is done before destroy; a collective still running past the
  // timeout is aborted rather than waited for without end.
  for (int attempt = 0;; ++attempt) {
    {
      std::lock_guard lock(mutex_);
      if (in_flight_ == 0 || comm_ == nullptr) break;
    }
    if (Clock::now() > deadline) {
      abort(KILN_STATUS_DEVICE_ERROR,
            sdk::str_cat("comm_destroy on ", label(), ": its collectives did not complete within ",
                         timeout_, " s"));
      break;
    }
    back_off(attempt);
  }
  // The barrier's word is freed here, on the caller's thread: cudaFree may wait for the
  // device, which the watchdog (where the last reference may drop) must never do.
  bool gone = false;
  {
    std::lock_guard lock(mutex_);
    gone = comm_ == nullptr;  // aborted: NCCL's communicator is already gone
  }
  if (gone) {
    free_barrier_word();  // outside the lock: the watchdog takes it to release entries
    return;
  }
  device_.make_current();
  nccl_call("ncclCommFinalize", deadline, [](ncclComm_t comm) { return ncclCommFinalize(comm); });
  ncclResult_t result = ncclSuccess;
  {
    std::lock_guard lock(mutex_);
    if (comm_ != nullptr) {  // else an abort came in between: its reason is the error
      result = ncclCommDestroy(comm_);
      comm_ = nullptr;
    }
  }
  free_barrier_word();
  throw_if_aborted("comm_destroy", /*destroyed_is_ok=*/true);  // comm_ is null: destroyed here
  KILN_SDK_CHECK(
      result == ncclSuccess, KILN_STATUS_DEVICE_ERROR,
      nccl_message(result, sdk::str_cat("ncclCommDestroy on ", label()).c_str(), nullptr));
}

void NcclComm::abort(kiln_status_code code, const std::string& reason) noexcept {
  ncclComm_t doomed = nullptr;
  bool in_flight = false;
  try {
    std::lock_guard lock(mutex_);
    if (aborted_) return;
    aborted_ = true;
    abort_code_ = code;
    abort_reason_ = reason;
    doomed = comm_;
    comm_ = nullptr;
    in_flight = in_flight_ > 0;
  } catch (...) {
  }
  if (doomed != nullptr) {
    try {
      device_.make_current();
    } catch (...) {
    }
    // Makes this rank's NCCL kernels return, so its stream moves on (with undefined
    // output, which the deferred error below reports).
    ncclCommAbort(doomed);
  }
  if (in_flight) {
    std::string message;
    try {
      message = reason + "; the collective's output is undefined and its communicator was aborted";
    } catch (...) {
    }
    device_.post_deferred_error(code, message);
  }
}

}  // namespace kiln::cuda
