#include "collectives.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "device.h"
#include "kiln/sdk/half.h"
#include "kiln/sdk/status.h"

// Not in an unnamed namespace: kiln_comm below, a global type, holds a Group.
namespace kiln::cpu::coll {

enum class Kind { AllReduce, Broadcast, AllGather, ReduceScatter, Barrier };

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::AllReduce:
      return "all_reduce";
    case Kind::Broadcast:
      return "broadcast";
    case Kind::AllGather:
      return "all_gather";
    case Kind::ReduceScatter:
      return "reduce_scatter";
    case Kind::Barrier:
      return "barrier";
  }
  return "?";
}

// What one rank asked for; every rank's must agree (but the buffers).
struct Call {
  Kind kind = Kind::Barrier;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  int32_t dtype = 0;
  int32_t op_or_root = 0;   // the reduce op, or broadcast's root
  std::string local_error;  // what was wrong with this rank's own arguments
  kiln_status_code local_code = KILN_STATUS_INVALID_ARGUMENT;
};

// Why a collective cannot run, decided once for all ranks (empty message: it can).
struct Verdict {
  std::string message;
  kiln_status_code code = KILN_STATUS_INVALID_ARGUMENT;
};

// The group of ranks one comm_init_group made. Ranks meet at rendezvous points; each
// point is one generation of a reusable barrier, so the same group serves any number
// of collectives in a row.
class Group {
 public:
  Group(std::vector<CpuDevice*> devices, double timeout_seconds)
      : devices_(std::move(devices)),
        timeout_(timeout_seconds),
        present_(devices_.size(), 0),
        calls_(devices_.size()) {}

  int size() const { return static_cast<int>(devices_.size()); }
  const Call& call(int rank) const { return calls_[static_cast<size_t>(rank)]; }

  // First meeting of a collective: publishes `call`, waits for every rank, and throws
  // on every rank if their calls disagree.
  void post(int rank, const Call& call) {
    Verdict verdict;
    rendezvous(
        rank, call.kind, [&] { calls_[static_cast<size_t>(rank)] = call; },
        [&] { verdict_ = check_agreement(); }, &verdict);
    if (!verdict.message.empty()) throw sdk::Error(verdict.code, verdict.message);
  }

  // A later meeting of the same collective: no rank continues before all are here.
  void meet(int rank, Kind kind) {
    rendezvous(
        rank, kind, [] {}, [] {}, nullptr);
  }

  // For a rank that fails between meetings of one collective: the others must not
  // pair its next call with this one's later meetings, so the group is aborted.
  void abort(const std::string& reason) {
    std::lock_guard lock(mutex_);
    if (!aborted_) {
      aborted_ = true;
      abort_reason_ = reason;
    }
    cv_.notify_all();
  }

 private:
  std::string members() const {
    std::string out = "[";
    for (size_t i = 0; i < devices_.size(); ++i) out += (i ? ", " : "") + devices_[i]->label();
    return out + "]";
  }

  // Runs under the lock in the last rank to arrive at post(). A rank with bad
  // arguments still arrives, so that every rank fails together instead of the others
  // waiting for it until the timeout.
  Verdict check_agreement() const {
    for (size_t r = 0; r < calls_.size(); ++r)
      if (!calls_[r].local_error.empty())
        return {sdk::str_cat(kind_name(calls_[r].kind), " on the group ", members(), ": rank ", r,
                             " (", devices_[r]->label(), "): ", calls_[r].local_error),
                calls_[r].local_code};
    const Call& first = calls_[0];
    for (size_t r = 1; r < calls_.size(); ++r) {
      const Call& c = calls_[r];
      const char* field = nullptr;
      int64_t a = 0, b = 0;
      if (c.kind != first.kind) {
        return {sdk::str_cat("mismatched collectives on the group ", members(), ": rank 0 (",
                             devices_[0]->label(), ") called ", kind_name(first.kind), ", rank ", r,
                             " (", devices_[r]->label(), ") called ", kind_name(c.kind))};
      }
      if (c.count != first.count) {
        field = "element count";
        a = static_cast<int64_t>(first.count);
        b = static_cast<int64_t>(c.count);
      } else if (c.dtype != first.dtype) {
        field = "dtype";
        a = first.dtype;
        b = c.dtype;
      } else if (c.op_or_root != first.op_or_root) {
        field = first.kind == Kind::Broadcast ? "root" : "reduce op";
        a = first.op_or_root;
        b = c.op_or_root;
      }
      if (field) {
        return {sdk::str_cat(kind_name(first.kind), ": ranks disagree on the ", field,
                             " on the group ", members(), ": rank 0 (", devices_[0]->label(),
                             ") passed ", a, ", rank ", r, " (", devices_[r]->label(), ") passed ",
                             b)};
      }
    }
    return {};
  }

  // One barrier generation with a timeout. `publish` runs under the lock as the rank
  // arrives, `on_last` under the lock in the last rank to arrive; `verdict`, if given,
  // receives verdict_ as the last rank left it.
  template <class Publish, class OnLast>
  void rendezvous(int rank, Kind kind, Publish&& publish, OnLast&& on_last, Verdict* verdict) {
    std::unique_lock lock(mutex_);
    if (aborted_)
      throw sdk::Error(KILN_STATUS_DEVICE_ERROR,
                       sdk::str_cat(kind_name(kind), ": the communicator was aborted (",
                                    abort_reason_, "); destroy it and create a new one"));
    publish();
    present_[static_cast<size_t>(rank)] = 1;
    if (++arrived_ == size()) {
      on_last();
      if (verdict) *verdict = verdict_;
      arrived_ = 0;
      std::fill(present_.begin(), present_.end(), 0);
      ++generation_;
      cv_.notify_all();
      return;
    }
    const uint64_t generation = generation_;
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_);
    bool passed =
        cv_.wait_until(lock, deadline, [&] { return generation_ != generation || aborted_; });
    if (passed && generation_ != generation) {
      if (verdict) *verdict = verdict_;
      return;
    }
    if (!aborted_) {
      std::string missing;
      for (size_t r = 0; r < present_.size(); ++r)
        if (!present_[r])
          missing += sdk::str_cat(missing.empty() ? "" : ", ", r, " (", devices_[r]->label(), ")");
      aborted_ = true;
      abort_reason_ =
          sdk::str_cat(kind_name(kind), " timed out after ", timeout_, " s on the group ",
                       members(), ": rank(s) that did not arrive: ", missing);
      cv_.notify_all();
    }
    throw sdk::Error(KILN_STATUS_DEVICE_ERROR,
                     sdk::str_cat(abort_reason_, "; the communicator is aborted"));
  }

  std::vector<CpuDevice*> devices_;
  double timeout_;
  std::mutex mutex_;
  std::condition_variable cv_;
  uint64_t generation_ = 0;
  int arrived_ = 0;
  std::vector<char> present_;
  std::vector<Call> calls_;
  Verdict verdict_;
  bool aborted_ = false;
  std::string abort_reason_;
};

}  // namespace kiln::cpu::coll

// The handle behind kiln_comm*: one rank of a group.
struct kiln_comm {
  std::shared_ptr<kiln::cpu::coll::Group> group;
  int rank = 0;
};

namespace kiln::cpu {

namespace {

using coll::Call;
using coll::Group;
using coll::Kind;

// -- element types ----------------------------------------------------------------------

template <class T>
struct Accumulator {
  using type = T;
};
template <>
struct Accumulator<sdk::float16> {
  using type = float;
};
template <>
struct Accumulator<sdk::bfloat16> {
  using type = float;
};
template <>
struct Accumulator<int32_t> {
  using type = int64_t;
};

// Calls f(T{}) for the dtypes collectives reduce (reducible() says which).
template <class F>
void with_reducible_type(int32_t dtype, F&& f) {
  switch (dtype) {
    case KILN_DTYPE_FLOAT32:
      return f(float{});
    case KILN_DTYPE_FLOAT64:
      return f(double{});
    case KILN_DTYPE_FLOAT16:
      return f(sdk::float16{});
    case KILN_DTYPE_BFLOAT16:
      return f(sdk::bfloat16{});
    case KILN_DTYPE_INT32:
      return f(int32_t{});
    case KILN_DTYPE_INT64:
      return f(int64_t{});
    default:
      throw sdk::Error(KILN_STATUS_INTERNAL, "unchecked dtype");
  }
}

bool reducible(int32_t dtype) {
  switch (dtype) {
    case KILN_DTYPE_FLOAT32:
    case KILN_DTYPE_FLOAT64:
    case KILN_DTYPE_FLOAT16:
    case KILN_DTYPE_BFLOAT16:
    case KILN_DTYPE_INT32:
    case KILN_DTYPE_INT64:
      return true;
    default:
      return false;
  }
}

// dst[i] = op over ranks r = 0..n-1 (in that order) of src_r[i], i in [0, count). `dst`
// may be one of the sources (in place): each block is read whole before it is written.
template <class T>
void reduce_into(T* dst, const std::vector<const T*>& sources, size_t count, int32_t op) {
  using Acc = typename Accumulator<T>::type;
  constexpr size_t kBlock = 512;
  Acc acc[kBlock];
  const auto n = static_cast<Acc>(sources.size());
  for (size_t begin = 0; begin < count; begin += kBlock) {
    const size_t len = std::min(kBlock, count - begin);
    for (size_t i = 0; i < len; ++i) acc[i] = static_cast<Acc>(sources[0][begin + i]);
    for (size_t r = 1; r < sources.size(); ++r) {
      const T* src = sources[r] + begin;
      switch (op) {
        case KILN_REDUCE_SUM:
        case KILN_REDUCE_AVG:
          if constexpr (std::is_integral_v<Acc>) {
            // Wrapping, as two's complement hardware adds (signed overflow is UB).
            using U = std::make_unsigned_t<Acc>;
            for (size_t i = 0; i < len; ++i)
              acc[i] = static_cast<Acc>(static_cast<U>(acc[i]) +
                                        static_cast<U>(static_cast<Acc>(src[i])));
          } else {
            for (size_t i = 0; i < len; ++i) acc[i] = acc[i] + static_cast<Acc>(src[i]);
          }
          break;
        case KILN_REDUCE_MIN:
          for (size_t i = 0; i < len; ++i) {
            Acc v = static_cast<Acc>(src[i]);
            acc[i] = (v < acc[i] || v != v) ? v : acc[i];  // NaN wins, as torch.minimum
          }
          break;
        case KILN_REDUCE_MAX:
          for (size_t i = 0; i < len; ++i) {
            Acc v = static_cast<Acc>(src[i]);
            acc[i] = (v > acc[i] || v != v) ? v : acc[i];
          }
          break;
      }
    }
    if (op == KILN_REDUCE_AVG)
      for (size_t i = 0; i < len; ++i) acc[i] = acc[i] / n;
    for (size_t i = 0; i < len; ++i) dst[begin + i] = static_cast<T>(acc[i]);
  }
}

kiln_comm& comm_of(kiln_comm* comm, const char* what) {
  KILN_SDK_CHECK(comm != nullptr && comm->group, KILN_STATUS_INVALID_ARGUMENT, what,
                 ": null communicator");
  return *comm;
}

// Records in `call` what is wrong with this rank's own arguments, if anything, and
// the status code that says so.
void check_arguments(Call& call, int group_size) {
  auto bad = [&](kiln_status_code code, std::string message) {
    call.local_code = code;
    call.local_error = std::move(message);
  };
  if (call.count != 0 && (call.send == nullptr || call.recv == nullptr))
    return bad(KILN_STATUS_INVALID_ARGUMENT,
               sdk::str_cat("null buffer for ", call.count, " elements"));
  if (call.kind == Kind::Barrier) return;
  if (kiln_dtype_size(call.dtype) == 0)
    return bad(KILN_STATUS_INVALID_ARGUMENT, sdk::str_cat("unknown dtype ", call.dtype));
  if (call.kind == Kind::Broadcast) {
    if (call.op_or_root < 0 || call.op_or_root >= group_size)
      bad(KILN_STATUS_INVALID_ARGUMENT,
          sdk::str_cat("root ", call.op_or_root, " is not a rank of the group of ", group_size));
    return;
  }
  if (call.kind == Kind::AllGather) return;
  if (call.op_or_root < KILN_REDUCE_SUM || call.op_or_root > KILN_REDUCE_MAX)
    return bad(KILN_STATUS_INVALID_ARGUMENT,
               sdk::str_cat("unknown reduce op ", call.op_or_root,
                            " (expected 1 sum, 2 avg, 3 min or 4 max)"));
  if (!reducible(call.dtype))
    bad(KILN_STATUS_UNSUPPORTED, sdk::str_cat("dtype ", call.dtype,
                                              " cannot be reduced (float32, float64, float16, "
                                              "bfloat16, int32 and int64 can)"));
}

// Runs what a rank does after begin(); if it throws, the group is aborted so that no
// rank is left waiting for (or pairing up with) a meeting this one will not attend.
template <class F>
void after_begin(Group& g, const char* what, F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    g.abort(sdk::str_cat(what, " failed on a rank between its meetings: ", e.what()));
    throw;
  }
}

// Publishes this rank's call and waits for the group; throws on every rank if any
// rank's arguments are bad or the ranks disagree.
Group& begin(kiln_comm& c, Call call) {
  check_arguments(call, c.group->size());
  c.group->post(c.rank, call);
  return *c.group;
}

// The part [begin, end) of `count` elements rank `rank` of `n` works on.
std::pair<size_t, size_t> chunk(size_t count, int rank, int n) {
  const auto r = static_cast<size_t>(rank), size = static_cast<size_t>(n);
  return {count * r / size, count * (r + 1) / size};
}

// -- the table --------------------------------------------------------------------------

kiln_status* comm_init_group(void*, kiln_device* const* devices, int32_t count,
                             double timeout_seconds, kiln_comm** comms) {
  return sdk::guard("comm_init_group", [&] {
    KILN_SDK_CHECK(devices != nullptr && comms != nullptr && count > 0,
                   KILN_STATUS_INVALID_ARGUMENT,
                   "needs at least one device and an output array "
                   "(count ",
                   count, ")");
    KILN_SDK_CHECK(timeout_seconds > 0 && std::isfinite(timeout_seconds),
                   KILN_STATUS_INVALID_ARGUMENT,
                   "the timeout must be a positive number of seconds, got ", timeout_seconds);
    std::vector<CpuDevice*> members;
    std::set<CpuDevice*> seen;
    for (int32_t i = 0; i < count; ++i) {
      CpuDevice* d = &sdk::device_from_handle<CpuDevice>(devices[i]);
      KILN_SDK_CHECK(seen.insert(d).second, KILN_STATUS_INVALID_ARGUMENT, d->label(),
                     " appears twice in the group (a device can hold only one rank)");
      members.push_back(d);
    }
    auto group = std::make_shared<Group>(std::move(members), timeout_seconds);
    std::vector<std::unique_ptr<kiln_comm>> made;
    for (int32_t i = 0; i < count; ++i) {
      made.push_back(std::make_unique<kiln_comm>());
      made.back()->group = group;
      made.back()->rank = i;
    }
    for (int32_t i = 0; i < count; ++i) comms[i] = made[static_cast<size_t>(i)].release();
  });
}

kiln_status* comm_destroy(kiln_comm* comm) {
  return sdk::guard("comm_destroy", [&] { delete &comm_of(comm, "comm_destroy"); });
}

kiln_status* all_reduce(kiln_comm* comm, kiln_stream*, const void* send, void* recv, size_t count,
                        int32_t dtype, int32_t op) {
  return sdk::guard("kiln.all_reduce", [&] {
    kiln_comm& c = comm_of(comm, "all_reduce");
    Group& g = begin(c, {Kind::AllReduce, send, recv, count, dtype, op, {}});
    after_begin(g, "all_reduce", [&] {
      with_reducible_type(dtype, [&](auto zero) {
        using T = decltype(zero);
        // Each rank reduces its chunk into its own recv (in place is safe: no other
        // rank reads this rank's chunk), then copies the other ranks' finished chunks.
        auto [lo, hi] = chunk(count, c.rank, g.size());
        std::vector<const T*> sources;
        for (int r = 0; r < g.size(); ++r)
          sources.push_back(static_cast<const T*>(g.call(r).send) + lo);
        reduce_into(static_cast<T*>(recv) + lo, sources, hi - lo, op);
      });
    });
    g.meet(c.rank, Kind::AllReduce);
    const size_t size = kiln_dtype_size(dtype);
    for (int r = 0; r < g.size(); ++r) {
      auto [b, e] = chunk(count, r, g.size());
      if (r == c.rank || e == b) continue;
      std::memcpy(static_cast<char*>(recv) + b * size,
                  static_cast<const char*>(g.call(r).recv) + b * size, (e - b) * size);
    }
    g.meet(c.rank, Kind::AllReduce);  // no rank's recv changes while others read it
  });
}

kiln_status* broadcast(kiln_comm* comm, kiln_stream*, const void* send, void* recv, size_t count,
                       int32_t dtype, int32_t root) {
  return sdk::guard("kiln.broadcast", [&] {
    kiln_comm& c = comm_of(comm, "broadcast");
    // Only the root's send is read, so the others may pass NULL for it.
    Group& g =
        begin(c, {Kind::Broadcast, c.rank == root ? send : recv, recv, count, dtype, root, {}});
    const void* source = g.call(root).send;
    if (recv != source && count != 0) std::memcpy(recv, source, count * kiln_dtype_size(dtype));
    g.meet(c.rank, Kind::Broadcast);
  });
}

kiln_status* all_gather(kiln_comm* comm, kiln_stream*, const void* send, void* recv,
                        size_t send_count, int32_t dtype) {
  return sdk::guard("kiln.all_gather", [&] {
    kiln_comm& c = comm_of(comm, "all_gather");
    Group& g = begin(c, {Kind::AllGather, send, recv, send_count, dtype, 0, {}});
    const size_t bytes = send_count * kiln_dtype_size(dtype);
    for (int r = 0; r < g.size(); ++r) {
      char* dst = static_cast<char*>(recv) + static_cast<size_t>(r) * bytes;
      // In place, each rank's send is its own slot of its recv, which no one writes.
      if (dst != g.call(r).send && bytes != 0) std::memcpy(dst, g.call(r).send, bytes);
    }
    g.meet(c.rank, Kind::AllGather);
  });
}

kiln_status* reduce_scatter(kiln_comm* comm, kiln_stream*, const void* send, void* recv,
                            size_t recv_count, int32_t dtype, int32_t op) {
  return sdk::guard("kiln.reduce_scatter", [&] {
    kiln_comm& c = comm_of(comm, "reduce_scatter");
    Group& g = begin(c, {Kind::ReduceScatter, send, recv, recv_count, dtype, op, {}});
    after_begin(g, "reduce_scatter", [&] {
      with_reducible_type(dtype, [&](auto zero) {
        using T = decltype(zero);
        // Rank r reads slot r of every send; in place, its recv is its own slot r.
        std::vector<const T*> sources;
        for (int r = 0; r < g.size(); ++r)
          sources.push_back(static_cast<const T*>(g.call(r).send) +
                            static_cast<size_t>(c.rank) * recv_count);
        reduce_into(static_cast<T*>(recv), sources, recv_count, op);
      });
    });
    g.meet(c.rank, Kind::ReduceScatter);
  });
}

kiln_status* barrier(kiln_comm* comm, kiln_stream*) {
  return sdk::guard("kiln.barrier", [&] {
    kiln_comm& c = comm_of(comm, "barrier");
    begin(c, {Kind::Barrier, nullptr, nullptr, 0, 0, 0, {}});
  });
}

const kiln_collectives_api kCollectives = {
    sizeof(kiln_collectives_api),
    &comm_init_group,
    nullptr,  // comm_id_create: one process only (processes meet through MPI)
    nullptr,  // comm_init_rank
    &comm_destroy,
    &all_reduce,
    &broadcast,
    &all_gather,
    &reduce_scatter,
    &barrier,
};

}  // namespace

const kiln_collectives_api* collectives_api() { return &kCollectives; }

}  // namespace kiln::cpu
