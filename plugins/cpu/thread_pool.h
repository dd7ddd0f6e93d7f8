// thread_pool.h — the CPU plugin's persistent worker pool.
//
// One process-wide pool, created at plugin init with `KILN_NUM_THREADS` threads
// (default: std::thread::hardware_concurrency()), the calling thread counted as one
// of them; resize() (the "kiln.threads.v1" extension, kiln::set_num_threads) changes
// the count while the program runs. Kernels use `parallel_for` to split index ranges:
//
//   pool().parallel_for(0, n, 32768, [&](int64_t begin, int64_t end) {
//     for (int64_t i = begin; i < end; ++i) y[i] = x[i] + 1;
//   });
//
// Contract of parallel_for:
// - `fn` is called on disjoint sub-ranges that exactly cover [begin, end), one per
//   thread at most, each at least `grain` long except possibly the last. Thread i
//   normally runs sub-range i (cache affinity across ops), but which thread runs which
//   is not guaranteed, so `fn` must make each element's result depend only on the
//   element (kernels that reduce do their own shape-based chunking).
// - Runs inline on the calling thread, with no locking or allocation, when the range
//   is at most `grain`, when the pool has one thread, when called from inside a pool
//   task (no nested parallelism), or when another thread is already using the pool
//   (ops from concurrent frontend threads then share the cores instead of queueing).
// - Blocks until every sub-range is done. An exception thrown by `fn` is rethrown on
//   the calling thread after all sub-ranges have finished.
// - After a job, workers poll for the next one for ~50 µs before sleeping, so ops
//   issued back to back do not each pay a thread wake-up (see thread_pool.cpp).
//
// OpenBLAS coordination: this pool is the only one that does Kiln's work. Kernels
// call GEMM from pool tasks with OpenBLAS in serial mode (kernels/blas.h:
// SerialBlasScope, parallel_gemm), so OpenBLAS's own pthreads, which spin for a long
// while after each threaded call, never wake up to compete with these workers for
// the cores (with both pools active, two threads ran a training step slower than one).
#ifndef KILN_CPU_THREAD_POOL_H
#define KILN_CPU_THREAD_POOL_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace kiln::cpu {

/// A non-owning reference to a callable `void(int64_t, int64_t)`: no allocation, and
/// valid only while the referenced callable lives.
class RangeFn {
 public:
  template <class F>
  RangeFn(F& fn) noexcept  // NOLINT: implicit by design, like std::function_ref
      : object_(static_cast<void*>(&fn)),
        call_([](void* object, int64_t b, int64_t e) { (*static_cast<F*>(object))(b, e); }) {}
  void operator()(int64_t begin, int64_t end) const { call_(object_, begin, end); }

 private:
  void* object_;
  void (*call_)(void*, int64_t, int64_t);
};

class ThreadPool {
 public:
  /// Starts `num_threads - 1` workers (the caller of parallel_for is the other one).
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// Threads that work on one parallel_for, the calling thread included.
  int size() const noexcept { return num_threads_.load(std::memory_order_relaxed); }

  /// Jobs submitted from now on use `num_threads` threads (at least 1). Waits for the
  /// job running now, if any; starts workers when the pool grows past every count it
  /// had so far, and leaves the surplus ones idle when it shrinks.
  void resize(int num_threads);

  template <class F>
  void parallel_for(int64_t begin, int64_t end, int64_t grain, F&& fn) {
    if (grain < 1) grain = 1;
    if (end - begin <= grain || size() == 1 || in_worker_) {
      if (begin < end) fn(begin, end);
      return;
    }
    std::remove_reference_t<F>& ref = fn;
    run_parallel(begin, end, grain, RangeFn(ref));
  }

 private:
  void run_parallel(int64_t begin, int64_t end, int64_t grain, RangeFn fn);
  void worker_loop(int id);
  // Runs chunk `preferred` of the current job if it is still unclaimed, then any other
  // unclaimed chunk, until none are left.
  void work_on_job(int preferred);

  std::atomic<int> num_threads_;      // threads a job uses; written under submit_mutex_
  std::vector<std::thread> workers_;  // every worker started so far; grows under submit_mutex_

  std::mutex submit_mutex_;  // one job at a time; try_lock so a busy pool runs inline

  std::mutex wake_mutex_;
  std::condition_variable wake_cv_;
  std::condition_variable done_cv_;
  // Bumped for every job: written under wake_mutex_, polled without it by spinning
  // workers.
  std::atomic<uint64_t> generation_{0};
  bool stopping_ = false;  // guarded by wake_mutex_
  int sleeping_ = 0;       // workers blocked on wake_cv_; guarded by wake_mutex_

  // The current job. Written under wake_mutex_ before generation_ is bumped; a worker
  // joins it (workers_in_job_) under the same mutex, and the submitter returns only
  // once every worker that joined has left, so no worker ever sees a stale job.
  RangeFn* job_fn_ = nullptr;
  int64_t job_begin_ = 0;
  int64_t job_end_ = 0;
  int64_t job_chunk_ = 0;
  int64_t job_num_chunks_ = 0;
  std::unique_ptr<std::atomic<bool>[]> claimed_;  // per chunk; one per thread started
  std::atomic<int> workers_in_job_{0};            // joined under wake_mutex_, left without it
  std::exception_ptr job_error_;                  // first exception; guarded by wake_mutex_

  // initial-exec: this plugin is dlopen'ed, so by default its thread-locals live in
  // blocks glibc allocates on first use per thread, and LeakSanitizer's scan of those
  // (gcc 12, glibc 2.36) crashed in every sanitized host; a few bytes in the static
  // TLS block (glibc keeps a surplus for dlopen'ed modules) avoid it, and are faster.
  [[gnu::tls_model("initial-exec")]] static thread_local bool in_worker_;
};

/// Creates the process-wide pool (first call wins; later calls return it unchanged).
ThreadPool& init_pool(int num_threads);

/// The process-wide pool; init_pool must have been called (plugin init does).
ThreadPool& pool();

}  // namespace kiln::cpu

#endif  // KILN_CPU_THREAD_POOL_H
