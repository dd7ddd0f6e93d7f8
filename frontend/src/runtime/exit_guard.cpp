// The exit side of exit_guard.h: the registry of threads that have called into a
// plugin, the atexit handler, and parking.
#include "runtime/exit_guard.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "kiln/error.h"
#include "runtime/log.h"

namespace kiln::detail {

thread_local ThreadSlot* tls_thread_slot [[gnu::tls_model("initial-exec")]] = nullptr;
std::atomic<bool> process_exiting{false};

namespace {

constexpr auto kExitWait = std::chrono::seconds(2);

struct Threads {
  std::mutex mutex;
  std::vector<ThreadSlot*> live;  // slots of threads that have not ended
  bool initialized = false;
  pthread_key_t key{};
  bool membarrier_registered = false;
  std::atomic<pthread_t> exiting_thread{};
};

// Leaked: used until the very end of the process.
Threads& threads() {
  static Threads* t = new Threads();
  return *t;
}

int membarrier(int cmd) { return static_cast<int>(syscall(__NR_membarrier, cmd, 0U, 0)); }

// pthread key destructor: the thread is ending; forget its slot.
void forget_thread(void* p) {
  auto* slot = static_cast<ThreadSlot*>(p);
  Threads& t = threads();
  {
    std::lock_guard lock(t.mutex);
    std::erase(t.live, slot);
  }
  delete slot;
}

void wait_for_calls_in_flight() {
  static std::atomic<bool> ran{false};
  if (ran.exchange(true)) return;  // an earlier registration of this handler ran
  // exit() called by a kernel: the plugin ends the process; say which kernel did.
  if (ThreadSlot* self = tls_thread_slot) {
    const char* op = self->own_op.load(std::memory_order_relaxed);
    const char* device = self->device.load(std::memory_order_relaxed);
    if (op != nullptr)
      log(KILN_LOG_ERROR, "exit",
          concat("exit() was called inside the kernel ", op, " on ", device ? device : "?",
                 ": the plugin ended the process"));
  }
  Threads& t = threads();
  t.exiting_thread.store(pthread_self());
  process_exiting.store(true, std::memory_order_seq_cst);
  std::lock_guard lock(t.mutex);
  // Every thread now either sees process_exiting at its next outermost scope, or has
  // its depth store visible to the loop below.
  if (!t.membarrier_registered || membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const auto deadline = std::chrono::steady_clock::now() + kExitWait;
  for (ThreadSlot* slot : t.live) {
    if (slot == tls_thread_slot) continue;
    while (slot->depth.load(std::memory_order_acquire) != 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        log(KILN_LOG_WARNING, "exit",
            "a thread was still inside a plugin call 2 s after exit began; exiting anyway");
        return;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
}

}  // namespace

ThreadSlot* register_thread_slot() {
  Threads& t = threads();
  auto* slot = new ThreadSlot();
  {
    std::lock_guard lock(t.mutex);
    if (!t.initialized) {
      // The first thread: set up the thread registry.
      t.initialized = true;
      pthread_key_create(&t.key, &forget_thread);
      t.membarrier_registered = membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
    }
    t.live.push_back(slot);
  }
  pthread_setspecific(t.key, slot);
  tls_thread_slot = slot;
  return slot;
}

std::vector<std::string> describe_kernels_in_flight() {
  Threads& t = threads();
  std::lock_guard lock(t.mutex);
  std::vector<std::string> running;
  for (ThreadSlot* slot : t.live) {
    const char* op = slot->op.load(std::memory_order_relaxed);
    if (op == nullptr) continue;
    const char* device = slot->device.load(std::memory_order_relaxed);
    running.push_back(concat(op, " on ", device ? device : "?"));
  }
  return running;
}

void arm_exit_guard() { std::atexit(&wait_for_calls_in_flight); }

void on_process_exiting(ThreadSlot& slot, bool may_park) {
  if (!may_park || pthread_equal(threads().exiting_thread.load(), pthread_self())) return;
  // Not the exiting thread: leave the call unstarted and sleep, normally until the
  // process is gone. If it is still here after kExitWait, the exit is waiting for this
  // thread (a static destructor joining it): go on rather than hang.
  slot.depth.store(0, std::memory_order_release);
  std::this_thread::sleep_for(kExitWait);
  slot.depth.store(1, std::memory_order_relaxed);
}

}  // namespace kiln::detail
