// exit_guard.h — an orderly exit while other threads are still running Kiln ops.
//
// When a program returns from main (or calls exit) while detached threads are inside
// Kiln ops, the exit runs library destructors under them: OpenBLAS frees its buffers
// and stops its threads while another thread is in cblas_sgemm, and the process dies
// with SIGSEGV. Kiln makes that exit orderly: every call into a plugin runs inside a
// PluginCallScope, and an atexit handler (registered as plugins load, so that it runs
// before their destructors; see arm_exit_guard below) marks the process as exiting,
// waits (at most 2 s) for the other threads' calls in flight to return, and from then
// on parks any other thread that tries to enter a plugin: it sleeps until the process
// is gone, or at most 2 s, after which it goes on (a thread the exit itself waits for,
// one a static destructor joins, must not hang the exit). Freeing memory never parks:
// the exit's own destructors (the MPI group's worker, say) free tensors on other
// threads. The exiting thread itself goes on.
//
// Exit handlers run in the reverse order of their registration, so the handler must be
// registered after whatever a plugin registers for its statics' destructors (the kit's
// kernel tables are function-local statics, built on the first lookup). arm_exit_guard()
// registers it (again): the registry calls it before and after loading plugins, after
// opening a device and after resolving a kernel; the first run does the work, later
// ones return. A plugin static first built inside a kernel is not covered: the SDK
// guide asks plugins to leak such process-lifetime state, as Kiln does.
//
// Cost on the hot path: a thread-local pointer load, two plain stores and one relaxed
// load of a global. The exit side orders its flag against the threads' stores with
// membarrier(2) (an asymmetric fence, as folly's), or, where the kernel lacks it, by
// waiting 2 ms, far longer than any store takes to become visible.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::detail {

struct ThreadSlot {
  std::atomic<uint32_t> depth{0};  ///< plugin calls this thread is inside (nested: fallback)
  /// The kernel this thread is running (KernelInFlight), for the last word of a crash,
  /// an exit or a hang inside a plugin (crash_report.cpp); null between kernels.
  /// `op` is always a static string, safe to read from another thread (a watchdog's):
  /// the catalogue name, or "an op outside the catalogue". `own_op` is the real name,
  /// which for a plugin-defined op lives only as long as the call: read only by this
  /// thread (its signal handler, its exit).
  std::atomic<const char*> op{nullptr};
  std::atomic<const char*> own_op{nullptr};
  std::atomic<const char*> device{nullptr};  ///< "cuda:0", alive as long as its DeviceContext
};

extern thread_local ThreadSlot* tls_thread_slot [[gnu::tls_model("initial-exec")]];
extern std::atomic<bool> process_exiting;

ThreadSlot* register_thread_slot();
/// (Re-)registers the exit handler so that it runs before every exit handler
/// registered so far (see above).
void arm_exit_guard();
/// Called by the outermost scope when the process is exiting: returns at once on the
/// exiting thread or when `may_park` is false, parks any other (at most 2 s).
void on_process_exiting(ThreadSlot& slot, bool may_park);

class PluginCallScope {
 public:
  /// `may_park`: false for calls that only release resources (deallocation).
  explicit PluginCallScope(bool may_park = true) {
    ThreadSlot* s = tls_thread_slot;
    if (s == nullptr) [[unlikely]]
      s = register_thread_slot();
    slot_ = s;
    const uint32_t depth = s->depth.load(std::memory_order_relaxed);
    s->depth.store(depth + 1, std::memory_order_relaxed);
    // Ordered against the exit side's flag by its membarrier: the compiler must not
    // move the load above the store, the CPU may (membarrier covers that).
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (depth == 0 && process_exiting.load(std::memory_order_relaxed)) [[unlikely]]
      on_process_exiting(*s, may_park);
  }
  ~PluginCallScope() {
    slot_->depth.store(slot_->depth.load(std::memory_order_relaxed) - 1, std::memory_order_release);
  }
  PluginCallScope(const PluginCallScope&) = delete;
  PluginCallScope& operator=(const PluginCallScope&) = delete;

 private:
  ThreadSlot* slot_;
};

/// kiln::kernels_in_flight (kiln/diagnostics.h): every registered thread's mark.
std::vector<std::string> describe_kernels_in_flight();

/// Marks the calling thread as running kernel `op` on `device` for its lifetime.
/// `op_is_static`: `op` outlives the call (a catalogue name); otherwise other threads
/// see "an op outside the catalogue". Marks do not nest: a kernel cannot call a Kiln
/// op (a plugin sees only the C ABI), so the end of a call clears the mark. Three
/// relaxed stores in, two out.
class KernelInFlight {
 public:
  KernelInFlight(const char* op, const char* device, bool op_is_static) {
    ThreadSlot* s = tls_thread_slot;
    if (s == nullptr) [[unlikely]]
      s = register_thread_slot();
    slot_ = s;
    s->own_op.store(op, std::memory_order_relaxed);
    s->device.store(device, std::memory_order_relaxed);
    s->op.store(op_is_static ? op : "an op outside the catalogue", std::memory_order_relaxed);
  }
  ~KernelInFlight() {
    slot_->op.store(nullptr, std::memory_order_relaxed);
    slot_->own_op.store(nullptr, std::memory_order_relaxed);
  }
  KernelInFlight(const KernelInFlight&) = delete;
  KernelInFlight& operator=(const KernelInFlight&) = delete;

 private:
  ThreadSlot* slot_;
};

}  // namespace kiln::detail
