#include "scratch.h"

#include <pthread.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "kiln/sdk/status.h"

namespace kiln::cpu {

namespace {

struct Buffer {
  void* data = nullptr;
  size_t capacity = 0;
};

// One thread's buffers. Every live one is on a global list, so memory held for the
// pool's threads (which never exit) stays reachable for LeakSanitizer; a thread that
// exits frees its own through the pthread key's destructor. (A C++ thread_local
// with a destructor would do the same, but registers through __cxa_thread_atexit,
// whose bookkeeping for never-exiting threads LeakSanitizer reports as leaked.)
struct ThreadScratch {
  Buffer slots[static_cast<size_t>(ScratchSlot::Count)];
  ThreadScratch* prev = nullptr;
  ThreadScratch* next = nullptr;
};

std::mutex registry_mutex;
ThreadScratch* registry_head = nullptr;  // guarded by registry_mutex

void release(void* p) {
  auto* scratch = static_cast<ThreadScratch*>(p);
  {
    std::lock_guard lock(registry_mutex);
    if (scratch->prev)
      scratch->prev->next = scratch->next;
    else
      registry_head = scratch->next;
    if (scratch->next) scratch->next->prev = scratch->prev;
  }
  for (Buffer& b : scratch->slots) std::free(b.data);
  delete scratch;
}

pthread_key_t scratch_key;
std::once_flag key_once;

// initial-exec: in the static TLS block, not a dynamically allocated one (see
// thread_pool.h, in_worker_).
[[gnu::tls_model("initial-exec")]] thread_local ThreadScratch* this_thread = nullptr;

ThreadScratch& thread_scratch() {
  if (this_thread) [[likely]] {
    return *this_thread;
  }
  std::call_once(key_once, [] {
    KILN_SDK_CHECK(pthread_key_create(&scratch_key, release) == 0, KILN_STATUS_INTERNAL,
                   "cannot create the kernel scratch key");
  });
  auto* scratch = new ThreadScratch();
  {
    std::lock_guard lock(registry_mutex);
    scratch->next = registry_head;
    if (registry_head) registry_head->prev = scratch;
    registry_head = scratch;
  }
  if (pthread_setspecific(scratch_key, scratch) != 0) {
    release(scratch);
    throw sdk::Error(KILN_STATUS_INTERNAL, "cannot register the kernel scratch of a thread");
  }
  this_thread = scratch;
  return *scratch;
}

}  // namespace

void* scratch_bytes(ScratchSlot slot, size_t bytes) {
  Buffer& b = thread_scratch().slots[static_cast<size_t>(slot)];
  if (bytes <= b.capacity && b.data != nullptr) return b.data;
  // Grow by at least half again, so a slowly growing request does not reallocate
  // every call; round to whole 64-byte lines as aligned_alloc requires.
  size_t capacity = std::max(bytes, b.capacity + b.capacity / 2);
  capacity = (std::max<size_t>(capacity, 64) + 63) / 64 * 64;
  std::free(b.data);
  b.data = nullptr;
  b.capacity = 0;
  void* data = std::aligned_alloc(64, capacity);
  KILN_SDK_CHECK(data != nullptr, KILN_STATUS_OUT_OF_MEMORY, "out of memory: cannot allocate ",
                 capacity, " bytes of kernel scratch");
  b.data = data;
  b.capacity = capacity;
  return data;
}

}  // namespace kiln::cpu
