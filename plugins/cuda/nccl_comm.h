// nccl_comm.h — one rank of an NCCL communicator with the ABI's failure rules laid
// over it: collectives that never finish become errors, not hangs.
//
// Every NCCL communicator is created non-blocking (ncclConfig_t::blocking = 0): no
// NCCL call ever blocks the calling thread waiting for a peer. A call that answers
// ncclInProgress is polled (ncclCommGetAsyncError) until it is done or the
// communicator's timeout passes; then the communicator is aborted (ncclCommAbort).
//
// Collectives run on the caller's stream and the call returns once they are enqueued.
// A watchdog thread (one per process, started with the first collective) then
// follows each one through two events around it: the timeout counts from the moment
// the GPU reaches the collective (the start event), so long work queued before it is
// not mistaken for a missing peer. When the end event has not completed within the
// timeout, or NCCL reports an asynchronous error, the watchdog aborts the
// communicator, which makes its kernels return, and posts the error to the device
// (CudaDevice::post_deferred_error): the next synchronization point of that device throws
// it, and every later call on the communicator fails at once.
//
// Ranks of one in-process group (comm_init_group) share a GroupInfo: each collective
// is posted there with its arguments in call order, so a rank whose arguments differ
// from another's is refused with INVALID_ARGUMENT and the whole group is aborted (the
// ranks already enqueued would otherwise wait forever), and a timeout names the ranks
// that never called. Across processes NCCL alone sees the other ranks: mismatched
// arguments there are whatever NCCL makes of them (usually the timeout).
//
// Thread safety: every NCCL call on one communicator holds its mutex, released between
// polls, so the watchdog (or another rank detecting a mismatch) can abort it at any
// time; after an abort the ncclComm_t is gone and only the failure remains.
#ifndef KILN_CUDA_NCCL_COMM_H
#define KILN_CUDA_NCCL_COMM_H

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kiln/c_api.h"

namespace kiln::cuda {

class CudaDevice;
/// now + `seconds`, at most about 115 days ahead (a huge timeout must not overflow
/// the clock's range and land in the past).
std::chrono::steady_clock::time_point deadline_after(double seconds);

class NcclComm;

/// What every rank of a collective must agree on.
struct CollectiveCall {
  const char* name = "";  // "all_reduce", ..., a string literal
  size_t count = 0;
  int32_t dtype = 0;
  int32_t op_or_root = 0;
};

/// The shared view of an in-process group: its members' labels, the calls each has
/// posted, and the communicators (to abort them all together).
class GroupInfo {
 public:
  explicit GroupInfo(std::vector<std::string> labels);

  /// "[cuda:0, cuda:1]", for messages.
  std::string members() const;
  void set_members(std::vector<std::weak_ptr<NcclComm>> comms);

  /// Posts rank `rank`'s next collective; "" when it agrees with what the other ranks
  /// posted for the same position so far, else the disagreement, naming both ranks.
  std::string post(int rank, const CollectiveCall& call);
  /// The ranks (labels) that have posted fewer than `calls` collectives.
  std::string ranks_behind(uint64_t calls) const;
  /// Aborts every member with `code` and `reason` (see NcclComm::abort).
  void abort_all(kiln_status_code code, const std::string& reason);

 private:
  struct Slot {
    CollectiveCall call;
    int first_rank = 0;
    int seen = 0;
  };
  mutable std::mutex mutex_;
  std::vector<std::string> labels_;
  std::vector<uint64_t> posted_;  // per rank
  std::deque<Slot> slots_;        // the calls from position `base_` on
  uint64_t base_ = 0;
  std::vector<std::weak_ptr<NcclComm>> comms_;
};

/// One rank. Created by start() with its NCCL initialization under way; wait_ready()
/// finishes it.
class NcclComm : public std::enable_shared_from_this<NcclComm> {
 public:
  using Clock = std::chrono::steady_clock;

  NcclComm(CudaDevice& device, int rank, int size, double timeout_seconds,
           std::shared_ptr<GroupInfo> group);
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  /// Starts ncclCommInitRankConfig (non-blocking) for this rank with `id`; with
  /// several ranks of one process, call it for each between ncclGroupStart and
  /// ncclGroupEnd. Throws DEVICE_ERROR when NCCL refuses at once.
  void start_init(const ncclUniqueId& id);
  /// Polls until the initialization is done; on the deadline aborts and throws
  /// DEVICE_ERROR ("did not complete: rank(s) that never joined").
  void wait_ready(Clock::time_point deadline);

  /// Enqueues one collective on `stream` of the device: `launch(comm)` makes the NCCL
  /// call. Posts `call` to the group first (a disagreement is INVALID_ARGUMENT on this
  /// rank and aborts the group), then hands the collective to the watchdog. Throws at
  /// once if the communicator was aborted. Returns without waiting for the GPU.
  void enqueue(const CollectiveCall& call, cudaStream_t stream,
               const std::function<ncclResult_t(ncclComm_t)>& launch);

  /// Enqueues a one-element all-reduce on `stream` and waits on the host for it (the
  /// ABI's barrier). The wait ends when the all-reduce completes or the watchdog aborts
  /// it (the timeout, counted from when the GPU reaches it).
  void barrier(cudaStream_t stream);

  /// Waits for the work enqueued so far (up to the timeout: then aborts), and releases
  /// NCCL's communicator (ncclCommFinalize, ncclCommDestroy). Throws what went wrong;
  /// the object may then only be deleted.
  void destroy();

  /// Aborts the communicator (ncclCommAbort, once) and remembers why: every later
  /// call throws `code` with `reason`. Posts the reason to the device when work was
  /// still in flight. Never throws.
  void abort(kiln_status_code code, const std::string& reason) noexcept;

  CudaDevice& device() const noexcept { return device_; }
  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  double timeout_seconds() const noexcept { return timeout_; }
  /// "rank 1 of 2 on cuda:1", for messages.
  std::string label() const;

  // -- for the watchdog -----------------------------------------------------------------
  /// NCCL's asynchronous error (ncclSuccess if none or aborted). Never throws.
  ncclResult_t async_error() noexcept;
  /// "rank(s) that did not call it: ..." for collective number `position`.
  std::string who_is_missing(uint64_t position) const;

 private:
  bool aborted() const {
    std::lock_guard lock(mutex_);
    return aborted_;
  }
  /// Throws if aborted, or (unless `destroyed_is_ok`) if the communicator is gone.
  void throw_if_aborted(const char* what, bool destroyed_is_ok = false) const;
  void free_barrier_word() noexcept;
  // Runs `call` (one NCCL function on comm_) under the mutex, then polls while NCCL
  // says it is in progress; throws naming `what` (aborting first on the deadline).
  void nccl_call(const char* what, Clock::time_point deadline,
                 const std::function<ncclResult_t(ncclComm_t)>& call);
  // Polls until no NCCL call on comm_ is in progress; throws as nccl_call, with
  // `missing` (who may be to blame) in a timeout's message.
  void poll(const char* what, Clock::time_point deadline, const std::string& missing);

  CudaDevice& device_;
  int rank_;
  int size_;
  double timeout_;
  std::shared_ptr<GroupInfo> group_;
  void* barrier_word_ = nullptr;  // device memory, one int32, for barrier()

  mutable std::mutex mutex_;
  ncclComm_t comm_ = nullptr;  // null once aborted or destroyed
  bool aborted_ = false;
  kiln_status_code abort_code_ = KILN_STATUS_DEVICE_ERROR;
  std::string abort_reason_;
  uint64_t calls_ = 0;  // collectives called (the next one's position in the order)
  int in_flight_ = 0;   // collectives the watchdog follows

  friend class Watchdog;
};

/// The (pretty) message of an NCCL failure: "<what>: <error string> (<NCCL's last
/// message>)".
std::string nccl_message(ncclResult_t result, const char* what, ncclComm_t comm);

}  // namespace kiln::cuda

#endif  // KILN_CUDA_NCCL_COMM_H
