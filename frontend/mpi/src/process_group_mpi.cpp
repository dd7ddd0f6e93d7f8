// The MPI process group: one worker thread makes every MPI call; each collective is
// a task on it, preceded by a point-to-point exchange of what every rank is about
// to do, under a deadline, so disagreements and absent ranks become errors.

#include "kiln/distributed/mpi.h"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "kiln/autograd.h"
#include "kiln/error.h"
#include "kiln/graph.h"
#include "kiln/ops.h"

namespace kiln::distributed::mpi {

namespace {

using Clock = std::chrono::steady_clock;

enum class Kind : int64_t { AllReduce = 1, Broadcast = 2, AllGather = 3, Barrier = 4 };

const char* kind_name(int64_t kind) {
  switch (static_cast<Kind>(kind)) {
    case Kind::AllReduce:
      return "all_reduce";
    case Kind::Broadcast:
      return "broadcast";
    case Kind::AllGather:
      return "all_gather";
    case Kind::Barrier:
      return "barrier";
  }
  return "an unknown collective";
}

constexpr int kHeaderTag = 0x4b31;  // "K1": Kiln's agreement messages

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(length));
}

void check_mpi(int code, const char* call) {
  if (code != MPI_SUCCESS) throw Error(detail::concat(call, " failed: ", mpi_error(code)));
}

// The dtype MPI reduces for `dtype` (half types travel as float32).
DType wire_dtype(DType dtype) {
  return dtype == DType::Float16 || dtype == DType::BFloat16 ? DType::Float32 : dtype;
}

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return MPI_FLOAT;
    case DType::Float64:
      return MPI_DOUBLE;
    case DType::Int32:
      return MPI_INT32_T;
    case DType::Int64:
      return MPI_INT64_T;
    case DType::UInt8:
    case DType::Bool:
      return MPI_UINT8_T;
    default:
      return MPI_BYTE;
  }
}

// One thread, a queue of tasks, a future per task.
class Worker {
 public:
  Worker() : thread_([this] { run(); }) {}
  ~Worker() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  std::future<void> submit(std::function<void()> task) {
    std::packaged_task<void()> packaged(std::move(task));
    std::future<void> result = packaged.get_future();
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(packaged));
    }
    cv_.notify_one();
    return result;
  }
  // For a group broken by a rank that never came: the thread may be stuck inside MPI
  // for good, so it must not be joined. Drops the queued tasks, detaches the thread,
  // and the caller leaks this object (its mutex and queue stay valid for the thread
  // until the process exits).
  void abandon() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      queue_.clear();
    }
    cv_.notify_one();
    thread_.detach();
  }

 private:
  void run() {
    for (;;) {
      std::packaged_task<void()> task;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (stopping_) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<void()>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

class MpiGroup;

class MpiWork final : public Work {
 public:
  MpiWork(std::future<void> done, std::string what, MpiGroup* group, double timeout)
      : done_(std::move(done)), what_(std::move(what)), group_(group), timeout_(timeout) {}
  void wait() override;

 private:
  std::future<void> done_;
  std::string what_;
  MpiGroup* group_;
  double timeout_;
  bool waited_ = false;
};

class MpiGroup final : public ProcessGroup {
 public:
  explicit MpiGroup(double timeout) : timeout_(timeout), worker_(std::make_unique<Worker>()) {
    worker_->submit([this] { start(); }).get();
    if (!start_error_.empty()) throw Error("kiln::distributed::mpi::init: " + start_error_);
  }

  ~MpiGroup() override {
    if (broken()) {
      // A rank is gone or stuck: MPI_Finalize would wait for it forever, and the
      // worker may be inside an MPI call that never returns.
      worker_->abandon();
      (void)worker_.release();  // deliberately leaked, see Worker::abandon
      return;
    }
    if (owns_mpi_) worker_->submit([] { MPI_Finalize(); }).wait();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string str() const override { return detail::concat("mpi, rank ", rank_, " of ", size_); }
  double timeout() const { return timeout_; }

  bool broken() const {
    std::lock_guard lock(mutex_);
    return !broken_reason_.empty();
  }
  void mark_broken(const std::string& reason) {
    std::lock_guard lock(mutex_);
    if (broken_reason_.empty()) broken_reason_ = reason;
  }

  std::shared_ptr<Work> all_reduce_async(const Tensor& tensor, ReduceOp op) override {
    check_tensor("all_reduce", tensor);
    KILN_CHECK(is_floating(tensor.dtype()) || tensor.dtype() == DType::Int32 ||
                   tensor.dtype() == DType::Int64,
               "all_reduce on ", str(), ": cannot reduce ", tensor.dtype(),
               " (float dtypes, int32 and int64 can be reduced)");
    Tensor t = tensor;
    return enqueue("all_reduce", [this, t, op]() mutable {
      const DType wire = wire_dtype(t.dtype());
      std::vector<char> buffer = to_host(t, wire);
      agree(Kind::AllReduce, t.numel(), t.dtype(), static_cast<int64_t>(op));
      MPI_Op mpi_op = op == ReduceOp::Min ? MPI_MIN : op == ReduceOp::Max ? MPI_MAX : MPI_SUM;
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(t.numel()),
                              mpi_type(wire), mpi_op, MPI_COMM_WORLD),
                "MPI_Allreduce");
      Tensor result =
          copy_from_blob(buffer.data(), t.shape(), wire, TensorOptions().device(t.device()));
      if (op == ReduceOp::Avg) {
        result = is_floating(wire)
                     ? result / static_cast<double>(size_)
                     : (result.to(DType::Float64) / static_cast<double>(size_)).to(wire);
      }
      Tensor(t).copy_(result);
      give_back(std::move(buffer));
    });
  }

  void broadcast(const Tensor& tensor, int root) override {
    check_tensor("broadcast", tensor);
    KILN_CHECK(root >= 0 && root < size_, "broadcast on ", str(), ": root ", root,
               " is not a rank (0..", size_ - 1, ")");
    Tensor t = tensor;
    enqueue("broadcast", [this, t, root] {
      std::vector<char> buffer =
          rank_ == root ? to_host(t, t.dtype()) : take_buffer(bytes_of(t.numel(), t.dtype()));
      agree(Kind::Broadcast, t.numel(), t.dtype(), root);
      check_mpi(
          MPI_Bcast(buffer.data(), static_cast<int>(buffer.size()), MPI_BYTE, root, MPI_COMM_WORLD),
          "MPI_Bcast");
      if (rank_ != root)
        Tensor(t).copy_(copy_from_blob(buffer.data(), t.shape(), t.dtype(),
                                       TensorOptions().device(t.device())));
      give_back(std::move(buffer));
    })->wait();
  }

  void all_gather(const Tensor& input, const Tensor& output) override {
    check_tensor("all_gather", input);
    check_tensor("all_gather", output);
    KILN_CHECK(output.numel() == input.numel() * size_ && output.dtype() == input.dtype(),
               "all_gather on ", str(), ": the output must hold ", size_, " x ", input.numel(),
               " elements of ", input.dtype(), ", got ", output.numel(), " of ", output.dtype());
    Tensor in = input, out = output;
    enqueue("all_gather", [this, in, out] {
      std::vector<char> mine = to_host(in, in.dtype());
      std::vector<char> all(mine.size() * static_cast<size_t>(size_));
      agree(Kind::AllGather, in.numel(), in.dtype(), 0);
      check_mpi(MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, all.data(),
                              static_cast<int>(mine.size()), MPI_BYTE, MPI_COMM_WORLD),
                "MPI_Allgather");
      Tensor(out).copy_(copy_from_blob(all.data(), out.shape(), out.dtype(),
                                       TensorOptions().device(out.device())));
    })->wait();
  }

  void barrier() override {
    KILN_CHECK(!kiln::is_capturing(), "barrier on ", str(),
               " inside a graph capture: collectives are not recorded in a graph");
    enqueue("barrier", [this] {
      agree(Kind::Barrier, 0, DType::Float32, 0);
      check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    })->wait();
  }

 private:
  // On the worker thread.
  void start() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    int provided = 0;
    if (initialized) {
      MPI_Query_thread(&provided);
    } else {
      if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
        start_error_ = "MPI_Init_thread failed (was the program started by mpirun?)";
        return;
      }
      owns_mpi_ = true;  // then Kiln finalizes it, at exit
    }
    // All calls come from this one thread, which is not the main thread: that needs
    // MPI_THREAD_SERIALIZED at least.
    if (provided < MPI_THREAD_SERIALIZED) {
      start_error_ = detail::concat("this MPI provides thread level ", provided,
                                    ", Kiln needs MPI_THREAD_SERIALIZED (", MPI_THREAD_SERIALIZED,
                                    ") to call it from its worker thread");
      return;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }

  static size_t bytes_of(int64_t numel, DType dtype) {
    return static_cast<size_t>(numel) * element_size(dtype);
  }

  void check_tensor(const char* what, const Tensor& t) const {
    // A replay would skip the collective (kiln/graph.h).
    KILN_CHECK(!kiln::is_capturing(), what, " on ", str(),
               " inside a graph capture: collectives are not recorded in a graph (a replay "
               "would skip them)");
    KILN_CHECK(t.defined(), what, " on ", str(), ": undefined tensor");
    KILN_CHECK(t.numel() <= INT32_MAX / 8, what, " on ", str(), ": ", t.numel(),
               " elements is more than one MPI call carries here; split the tensor");
  }

  // The tensor's values as `wire` dtype in a host buffer. The buffer's memory is
  // recycled from one collective to the next (worker thread only): fresh pages for
  // every 64 MB bucket cost more than the copy itself.
  std::vector<char> to_host(const Tensor& t, DType wire) {
    Tensor src = t.to(wire).contiguous();
    std::vector<char> buffer = take_buffer(bytes_of(src.numel(), wire));
    if (!buffer.empty()) src.copy_to_host(buffer.data(), buffer.size());
    return buffer;
  }
  std::vector<char> take_buffer(size_t bytes) {
    std::vector<char> buffer = std::move(spare_);
    spare_.clear();
    buffer.resize(bytes);
    return buffer;
  }
  void give_back(std::vector<char>&& buffer) {
    if (buffer.capacity() > spare_.capacity()) spare_ = std::move(buffer);
  }

  std::shared_ptr<Work> enqueue(const char* what, std::function<void()> body) {
    {
      std::lock_guard lock(mutex_);
      if (!broken_reason_.empty())
        throw Error(detail::concat(what, " on ", str(),
                                   ": the group is unusable after an earlier "
                                   "failure (",
                                   broken_reason_, ")"));
    }
    std::future<void> done = worker_->submit([this, what, body = std::move(body)] {
      // A task queued before the group broke must not start a collective after it.
      {
        std::lock_guard lock(mutex_);
        if (!broken_reason_.empty())
          throw Error(detail::concat(what, " on ", str(),
                                     ": the group is unusable after an "
                                     "earlier failure (",
                                     broken_reason_, ")"));
      }
      NoGradGuard no_grad;  // the caller's tensors may require grad; this is no op
      body();
    });
    return std::make_shared<MpiWork>(std::move(done), detail::concat(what, " on ", str()), this,
                                     timeout_);
  }

  // Every rank tells every other what it is about to run, point to point; a rank whose
  // message does not come before the deadline is named, and disagreement is reported
  // identically on every rank (each compares every rank's header with rank 0's).
  void agree(Kind kind, int64_t count, DType dtype, int64_t arg) {
    const int64_t sequence = static_cast<int64_t>(++sequence_);
    if (size_ == 1) return;
    // The messages' buffers live on the heap: after a timeout they are leaked, since
    // a late rank's message may still land in them (see below).
    struct Exchange {
      std::array<int64_t, 5> mine;
      std::vector<std::array<int64_t, 5>> headers;
      std::vector<MPI_Request> receives, sends;
      std::vector<int> peers;
    };
    auto ex = std::make_unique<Exchange>();
    ex->mine = {sequence, static_cast<int64_t>(kind), count, static_cast<int64_t>(dtype), arg};
    ex->headers.resize(static_cast<size_t>(size_));
    ex->headers[static_cast<size_t>(rank_)] = ex->mine;
    ex->receives.reserve(static_cast<size_t>(size_));
    ex->sends.reserve(static_cast<size_t>(size_));
    for (int p = 0; p < size_; ++p) {
      if (p == rank_) continue;
      ex->peers.push_back(p);
      ex->receives.emplace_back();
      ex->sends.emplace_back();
      check_mpi(MPI_Irecv(ex->headers[static_cast<size_t>(p)].data(), 5, MPI_INT64_T, p, kHeaderTag,
                          MPI_COMM_WORLD, &ex->receives.back()),
                "MPI_Irecv");
      check_mpi(MPI_Isend(ex->mine.data(), 5, MPI_INT64_T, p, kHeaderTag, MPI_COMM_WORLD,
                          &ex->sends.back()),
                "MPI_Isend");
    }
    const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_);
    std::vector<char> arrived(ex->peers.size(), 0);
    auto pause = std::chrono::microseconds(5);
    for (;;) {
      bool all = true;
      for (size_t i = 0; i < ex->peers.size(); ++i) {
        if (arrived[i]) continue;
        int flag = 0;
        check_mpi(MPI_Test(&ex->receives[i], &flag, MPI_STATUS_IGNORE), "MPI_Test");
        arrived[i] = static_cast<char>(flag);
        all = all && flag;
      }
      if (all) break;
      if (Clock::now() > deadline) {
        std::string missing;
        for (size_t i = 0; i < ex->peers.size(); ++i) {
          if (arrived[i]) continue;
          missing += detail::concat(missing.empty() ? "" : ", ", ex->peers[i]);
          // Withdraw the receive, so that the late rank's header cannot be matched
          // with a later collective's.
          MPI_Cancel(&ex->receives[i]);
          MPI_Request_free(&ex->receives[i]);
        }
        const std::string reason = detail::concat(
            kind_name(static_cast<int64_t>(kind)), " #", sequence, " timed out after ", timeout_,
            " s on ", str(), ": rank(s) that did not arrive: ", missing);
        mark_broken(reason);
        (void)ex.release();  // pending sends may still read `mine`
        throw Error(reason + "; the group is now unusable");
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
    check_mpi(
        MPI_Waitall(static_cast<int>(ex->sends.size()), ex->sends.data(), MPI_STATUSES_IGNORE),
        "MPI_Waitall");
    const auto& headers = ex->headers;
    const auto& first = headers[0];
    for (int r = 1; r < size_; ++r) {
      const auto& h = headers[static_cast<size_t>(r)];
      if (h == first) continue;
      std::string what;
      if (h[0] != first[0] || h[1] != first[1])
        what = detail::concat("rank 0 runs collective #", first[0], " (", kind_name(first[1]),
                              "), rank ", r, " #", h[0], " (", kind_name(h[1]), ")");
      else if (h[2] != first[2])
        what = detail::concat("rank 0 passes ", first[2], " elements, rank ", r, " passes ", h[2]);
      else if (h[3] != first[3])
        what = detail::concat("rank 0 passes ", static_cast<DType>(first[3]), ", rank ", r,
                              " passes ", static_cast<DType>(h[3]));
      else
        what = detail::concat("rank 0 passes ",
                              first[1] == static_cast<int64_t>(Kind::Broadcast) ? "root " : "op ",
                              first[4], ", rank ", r, " passes ", h[4]);
      throw Error(
          detail::concat(kind_name(first[1]), " on ", str(), ": the ranks disagree: ", what));
    }
  }

  double timeout_;
  int rank_ = 0;
  int size_ = 1;
  std::string start_error_;
  uint64_t sequence_ = 0;    // on the worker thread only
  std::vector<char> spare_;  // on the worker thread only
  mutable std::mutex mutex_;
  std::string broken_reason_;
  bool owns_mpi_ = false;           // MPI_Init_thread was ours to call
  std::unique_ptr<Worker> worker_;  // last: stopped first, before the members its tasks use
};

void MpiWork::wait() {
  KILN_CHECK(!waited_, what_, ": wait() called twice");
  waited_ = true;
  // The worker enforces the timeout while the ranks agree; this one catches a rank
  // that dies inside the MPI call itself.
  const auto limit = std::chrono::duration<double>(timeout_ * 2 + 5);
  if (done_.wait_for(limit) != std::future_status::ready) {
    const std::string reason = detail::concat(what_, " did not complete within ", timeout_ * 2 + 5,
                                              " s (a rank died or stopped inside MPI)");
    group_->mark_broken(reason);
    throw Error(reason + "; the group is now unusable");
  }
  try {
    done_.get();
  } catch (const Error& e) {
    throw Error(detail::concat(what_, ": ", e.what()));
  } catch (const std::exception& e) {
    throw Error(detail::concat(what_, ": ", e.what()));
  }
}

}  // namespace

bool launched() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return true;
  return false;
}

int local_rank() {
  for (const char* v : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMIX_LOCAL_RANK"})
    if (const char* s = std::getenv(v)) return std::atoi(s);
  return 0;
}

std::shared_ptr<ProcessGroup> init(std::optional<double> timeout_seconds) {
  static std::mutex mutex;
  static std::shared_ptr<ProcessGroup> world;  // one per process, finalized at exit
  std::lock_guard lock(mutex);
  if (!world) {
    const double timeout = timeout_seconds ? *timeout_seconds : default_collective_timeout();
    KILN_CHECK(timeout >= kMinCollectiveTimeout && timeout <= kMaxCollectiveTimeout,
               "kiln::distributed::mpi::init: the timeout must be from ", kMinCollectiveTimeout,
               " to ", kMaxCollectiveTimeout, " seconds, got ", timeout);
    world = std::make_shared<MpiGroup>(timeout);
  }
  return world;
}

}  // namespace kiln::distributed::mpi
