#include "thread_pool.h"

#include <algorithm>
#include <chrono>

namespace kiln::cpu {

[[gnu::tls_model("initial-exec")]] thread_local bool ThreadPool::in_worker_ = false;

namespace {

// How long a thread keeps polling before it blocks on a condition variable. Ops tend to
// come back to back, and a futex wake-up costs several microseconds, as much as a
// 100K-element add: polling for a little while after each job makes the next one
// start almost at once. Long enough to span the gap between ops, short enough that
// an idle pool (or OpenBLAS taking over the cores) costs next to nothing.
constexpr std::chrono::microseconds kSpinTime{50};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// Polls `ready` for up to kSpinTime; returns whether it became true.
template <class Ready>
bool spin_until(const Ready& ready) {
  const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
  for (uint32_t i = 0;; ++i) {
    if (ready()) return true;
    cpu_relax();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() >= deadline) return false;
  }
}

}  // namespace

ThreadPool::ThreadPool(int num_threads) : num_threads_(1), claimed_(new std::atomic<bool>[1] {}) {
  resize(num_threads);
}

void ThreadPool::resize(int num_threads) {
  num_threads = std::max(1, num_threads);
  // Holding submit_mutex_, no job is running (submitters try_lock it, and run inline
  // while it is held); workers read claimed_ only inside a job.
  std::lock_guard submit(submit_mutex_);
  // Worker i is workers_[i - 1]; the caller of parallel_for is thread 0. If starting a
  // thread fails (std::system_error, a status for the caller), the workers started so
  // far stay and the count stays as it was: claimed_ already covers them.
  const int threads = static_cast<int>(workers_.size()) + 1;
  if (num_threads > threads) {
    std::unique_ptr<std::atomic<bool>[]> claimed(
        new std::atomic<bool>[static_cast<size_t>(num_threads)] {});
    claimed_ = std::move(claimed);
    for (int i = threads; i < num_threads; ++i)
      workers_.emplace_back([this, i] { worker_loop(i); });
  }
  num_threads_.store(num_threads, std::memory_order_relaxed);
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(wake_mutex_);
    stopping_ = true;
  }
  wake_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_parallel(int64_t begin, int64_t end, int64_t grain, RangeFn fn) {
  std::unique_lock submit(submit_mutex_, std::try_to_lock);
  if (!submit.owns_lock()) {
    // Another thread's op is using the workers: sharing the cores by running inline
    // beats waiting for them.
    fn(begin, end);
    return;
  }
  const int64_t range = end - begin;
  // One chunk per thread, and thread i always starts with chunk i: an op repeated on
  // the same tensors finds its slice of them still in the same core's cache (memory-
  // bound ops over cache-resident data only scale that way). Chunks a late thread has
  // not claimed yet are taken by whoever is done first, so nobody waits on a sleeper.
  const int64_t num_chunks = std::min<int64_t>(size(), (range + grain - 1) / grain);
  const int64_t chunk = (range + num_chunks - 1) / num_chunks;
  bool wake = false;
  {
    std::lock_guard lock(wake_mutex_);
    job_fn_ = &fn;
    job_begin_ = begin;
    job_end_ = end;
    job_chunk_ = chunk;
    job_num_chunks_ = (range + chunk - 1) / chunk;
    for (int64_t i = 0; i < job_num_chunks_; ++i)
      claimed_[i].store(false, std::memory_order_relaxed);
    job_error_ = nullptr;
    generation_.store(generation_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    wake = sleeping_ > 0;
  }
  // Spinning workers see the new generation by themselves; only sleepers need a call.
  if (wake) wake_cv_.notify_all();

  in_worker_ = true;  // nested parallel_for calls from fn run inline
  work_on_job(0);
  in_worker_ = false;

  // Every chunk has been claimed (our own loop ran dry); the ones workers claimed are
  // finished once those workers have left the job.
  spin_until([this] { return workers_in_job_.load(std::memory_order_acquire) == 0; });
  std::unique_lock lock(wake_mutex_);
  done_cv_.wait(lock, [this] { return workers_in_job_.load(std::memory_order_acquire) == 0; });
  job_fn_ = nullptr;
  if (job_error_) {
    std::exception_ptr error = std::exchange(job_error_, nullptr);
    lock.unlock();
    std::rethrow_exception(error);
  }
}

void ThreadPool::work_on_job(int preferred) {
  auto try_claim = [this](int64_t index) {
    return !claimed_[index].load(std::memory_order_relaxed) &&
           !claimed_[index].exchange(true, std::memory_order_acq_rel);
  };
  auto run_chunk = [this](int64_t index) {
    const int64_t b = job_begin_ + index * job_chunk_;
    const int64_t e = std::min(job_end_, b + job_chunk_);
    try {
      (*job_fn_)(b, e);
    } catch (...) {
      std::lock_guard lock(wake_mutex_);
      if (!job_error_) job_error_ = std::current_exception();
    }
  };
  if (preferred < job_num_chunks_ && try_claim(preferred)) run_chunk(preferred);
  for (int64_t index = 0; index < job_num_chunks_; ++index) {
    if (try_claim(index)) run_chunk(index);
  }
}

void ThreadPool::worker_loop(int id) {
  in_worker_ = true;
  uint64_t seen = 0;
  for (;;) {
    spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; });
    {
      std::unique_lock lock(wake_mutex_);
      if (generation_.load(std::memory_order_relaxed) == seen && !stopping_) {
        ++sleeping_;
        wake_cv_.wait(
            lock, [&] { return stopping_ || generation_.load(std::memory_order_relaxed) != seen; });
        --sleeping_;
      }
      if (stopping_) return;
      seen = generation_.load(std::memory_order_relaxed);
      // A worker that arrives after the job is over finds no job and waits again; one
      // past the current size (after a resize down) stays out of every job.
      if (job_fn_ == nullptr || id >= size()) continue;
      workers_in_job_.fetch_add(1, std::memory_order_relaxed);
    }
    work_on_job(id);
    if (workers_in_job_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // Last one out. Notify under the mutex so the wake-up cannot slip between the
      // submitter's check and its wait.
      std::lock_guard lock(wake_mutex_);
      done_cv_.notify_all();
    }
  }
}

namespace {
ThreadPool* global_pool = nullptr;
std::once_flag global_pool_once;
}  // namespace

ThreadPool& init_pool(int num_threads) {
  // Deliberately never destroyed: plugins are never unloaded, and joining workers
  // from a static destructor races with other libraries' teardown at exit.
  std::call_once(global_pool_once, [&] { global_pool = new ThreadPool(num_threads); });
  return *global_pool;
}

ThreadPool& pool() { return *global_pool; }

}  // namespace kiln::cpu
