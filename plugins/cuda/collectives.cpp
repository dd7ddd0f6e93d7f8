#include "collectives.h"

#include <nccl.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "device.h"
#include "kiln/sdk/plugin.h"
#include "kiln/sdk/status.h"
#include "nccl_comm.h"
#include "toolkit_libraries.h"

// The handle behind kiln_comm*: one rank. A global type, as the ABI declares it; each
// plugin defines its own (plugins are separate shared objects, loaded RTLD_LOCAL).
struct kiln_comm {
  std::shared_ptr<kiln::cuda::NcclComm> nccl;
};

namespace kiln::cuda {

namespace {

using Clock = NcclComm::Clock;

static_assert(sizeof(kiln_comm_id) >= sizeof(ncclUniqueId),
              "an NCCL unique id must fit in a kiln_comm_id");

void check_timeout(double timeout_seconds) {
  KILN_SDK_CHECK(timeout_seconds > 0 && std::isfinite(timeout_seconds),
                 KILN_STATUS_INVALID_ARGUMENT,
                 "the timeout must be a positive number of seconds, got ", timeout_seconds);
}

// NCCL is opened here, by the first call that needs it, not when the plugin loads.
void require_nccl() {
  require_library(ToolkitLibrary::Nccl);
  int version = 0;
  const ncclResult_t result = ncclGetVersion(&version);
  KILN_SDK_CHECK(result == ncclSuccess, KILN_STATUS_DEVICE_ERROR,
                 "ncclGetVersion: ", ncclGetErrorString(result));
  // The ncclConfig_t the plugin fills is the one of the nccl.h it was built with;
  // older libraries do not know its fields.
  KILN_SDK_CHECK(version >= NCCL_VERSION(2, 18, 0), KILN_STATUS_UNSUPPORTED, "NCCL ", version,
                 " is too old: the CUDA plugin needs NCCL 2.18 or newer (built with ",
                 NCCL_VERSION_CODE, ")");
}

NcclComm& comm_of(kiln_comm* comm, const char* what) {
  KILN_SDK_CHECK(comm != nullptr && comm->nccl, KILN_STATUS_INVALID_ARGUMENT, what,
                 ": null communicator");
  return *comm->nccl;
}

// The CUDA stream behind `stream` for `comm`'s device. The table is not behind the
// kit's checks, so a stream of another device is refused here.
cudaStream_t stream_of(NcclComm& comm, kiln_stream* stream, const char* what) {
  if (stream == nullptr) return comm.device().default_stream();
  auto* s = sdk::stream_from_handle<CudaStream>(stream);
  KILN_SDK_CHECK(s->owner == &comm.device(), KILN_STATUS_INVALID_ARGUMENT, what, " on ",
                 comm.label(), ": the stream belongs to another device");
  return s->stream;
}

// The NCCL type that reduces `dtype`; throws UNSUPPORTED (INVALID_ARGUMENT for a
// dtype Kiln does not know).
ncclDataType_t reducible_type(int32_t dtype, const char* what) {
  switch (dtype) {
    case KILN_DTYPE_FLOAT32:
      return ncclFloat32;
    case KILN_DTYPE_FLOAT64:
      return ncclFloat64;
    case KILN_DTYPE_FLOAT16:
      return ncclFloat16;
    case KILN_DTYPE_BFLOAT16:
      return ncclBfloat16;
    case KILN_DTYPE_INT32:
      return ncclInt32;
    case KILN_DTYPE_INT64:
      return ncclInt64;
    default:
      break;
  }
  KILN_SDK_CHECK(kiln_dtype_size(dtype) != 0, KILN_STATUS_INVALID_ARGUMENT, what,
                 ": unknown dtype ", dtype);
  throw sdk::Error(KILN_STATUS_UNSUPPORTED,
                   sdk::str_cat(what, ": dtype ", dtype,
                                " cannot be reduced (float32, float64, float16, bfloat16, int32 "
                                "and int64 can)"));
}

// Bytes of `count` elements of `dtype`; INVALID_ARGUMENT for an unknown dtype.
size_t bytes_of(size_t count, int32_t dtype, const char* what) {
  const size_t size = kiln_dtype_size(dtype);
  KILN_SDK_CHECK(size != 0, KILN_STATUS_INVALID_ARGUMENT, what, ": unknown dtype ", dtype);
  return count * size;
}

ncclRedOp_t reduce_op(int32_t op, int ranks, const char* what) {
  switch (op) {
    case KILN_REDUCE_SUM:
      return ncclSum;
    case KILN_REDUCE_AVG:
      // One rank: the average is the sum, exactly. The single-rank ncclAvg of the NCCL on
      // the H200 machine left every element from 2^20 on unwritten out of place
      // (kiln-conformance, float32 × 1048579, 2026-11-26): one rank asks NCCL for a sum.
      return ranks == 1 ? ncclSum : ncclAvg;
    case KILN_REDUCE_MIN:
      return ncclMin;
    case KILN_REDUCE_MAX:
      return ncclMax;
    default:
      throw sdk::Error(KILN_STATUS_INVALID_ARGUMENT,
                       sdk::str_cat(what, ": unknown reduce op ", op,
                                    " (expected 1 sum, 2 avg, 3 min or 4 max)"));
  }
}

void check_buffers(size_t count, const void* send, const void* recv, const char* what) {
  KILN_SDK_CHECK(count == 0 || (send != nullptr && recv != nullptr), KILN_STATUS_INVALID_ARGUMENT,
                 what, ": null buffer for ", count, " elements");
}

// Hands out one kiln_comm per NcclComm, all or none.
void hand_out(std::vector<std::shared_ptr<NcclComm>>& ranks, kiln_comm** comms) {
  std::vector<std::unique_ptr<kiln_comm>> made;
  for (auto& rank : ranks) made.push_back(std::make_unique<kiln_comm>(kiln_comm{rank}));
  for (size_t i = 0; i < made.size(); ++i) comms[i] = made[i].release();
}

// -- the table --------------------------------------------------------------------------

kiln_status* comm_init_group(void*, kiln_device* const* devices, int32_t count,
                             double timeout_seconds, kiln_comm** comms) {
  return sdk::guard("comm_init_group", [&] {
    KILN_SDK_CHECK(devices != nullptr && comms != nullptr && count > 0,
                   KILN_STATUS_INVALID_ARGUMENT,
                   "needs at least one device and an output array (count ", count, ")");
    check_timeout(timeout_seconds);
    std::vector<CudaDevice*> members;
    std::vector<std::string> labels;
    std::set<int> ordinals;
    for (int32_t i = 0; i < count; ++i) {
      CudaDevice* d = &sdk::device_from_handle<CudaDevice>(devices[i]);
      // NCCL allows one rank per GPU in a communicator (two would hang).
      KILN_SDK_CHECK(ordinals.insert(d->ordinal()).second, KILN_STATUS_INVALID_ARGUMENT, d->label(),
                     " appears twice in the group (a device can hold only one rank)");
      members.push_back(d);
      labels.push_back(d->label());
    }
    require_nccl();
    auto group = std::make_shared<GroupInfo>(std::move(labels));
    std::vector<std::shared_ptr<NcclComm>> ranks;
    for (int32_t i = 0; i < count; ++i)
      ranks.push_back(std::make_shared<NcclComm>(*members[static_cast<size_t>(i)], i, count,
                                                 timeout_seconds, group));
    std::vector<std::weak_ptr<NcclComm>> weak(ranks.begin(), ranks.end());
    group->set_members(std::move(weak));

    ncclUniqueId id{};
    const ncclResult_t made = ncclGetUniqueId(&id);
    KILN_SDK_CHECK(made == ncclSuccess, KILN_STATUS_DEVICE_ERROR,
                   nccl_message(made, "ncclGetUniqueId", nullptr));
    // One thread starts every rank: NCCL needs them grouped to initialize together.
    const ncclResult_t started = ncclGroupStart();
    KILN_SDK_CHECK(started == ncclSuccess, KILN_STATUS_DEVICE_ERROR,
                   nccl_message(started, "ncclGroupStart", nullptr));
    std::string failure;
    for (auto& rank : ranks) {
      try {
        rank->start_init(id);
      } catch (const std::exception& e) {
        failure = e.what();
        break;
      }
    }
    const ncclResult_t ended = ncclGroupEnd();
    if (failure.empty() && ended != ncclSuccess && ended != ncclInProgress)
      failure = nccl_message(ended, "ncclGroupEnd (initializing the group)", nullptr);
    if (failure.empty()) {
      const Clock::time_point deadline = deadline_after(timeout_seconds);
      try {
        for (auto& rank : ranks) rank->wait_ready(deadline);
      } catch (const std::exception& e) {
        failure = e.what();
      }
    }
    if (!failure.empty()) {
      group->abort_all(KILN_STATUS_DEVICE_ERROR, failure);
      throw sdk::Error(KILN_STATUS_DEVICE_ERROR,
                       sdk::str_cat("creating the NCCL group ", group->members(), ": ", failure));
    }
    hand_out(ranks, comms);
  });
}

kiln_status* comm_id_create(void*, kiln_comm_id* id) {
  return sdk::guard("comm_id_create", [&] {
    KILN_SDK_CHECK(id != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null output pointer");
    require_nccl();
    ncclUniqueId unique{};
    const ncclResult_t result = ncclGetUniqueId(&unique);
    KILN_SDK_CHECK(result == ncclSuccess, KILN_STATUS_DEVICE_ERROR,
                   nccl_message(result, "ncclGetUniqueId", nullptr));
    std::memset(id->bytes, 0, sizeof id->bytes);
    std::memcpy(id->bytes, &unique, sizeof unique);
  });
}

kiln_status* comm_init_rank(kiln_device* device, const kiln_comm_id* id, int32_t nranks,
                            int32_t rank, double timeout_seconds, kiln_comm** comm) {
  return sdk::guard("comm_init_rank", [&] {
    KILN_SDK_CHECK(id != nullptr && comm != nullptr, KILN_STATUS_INVALID_ARGUMENT,
                   "null id or output pointer");
    KILN_SDK_CHECK(nranks > 0 && rank >= 0 && rank < nranks, KILN_STATUS_INVALID_ARGUMENT, "rank ",
                   rank, " is not a rank of a group of ", nranks);
    check_timeout(timeout_seconds);
    CudaDevice& d = sdk::device_from_handle<CudaDevice>(device);
    require_nccl();
    ncclUniqueId unique{};
    std::memcpy(&unique, id->bytes, sizeof unique);
    std::vector<std::shared_ptr<NcclComm>> ranks = {
        std::make_shared<NcclComm>(d, rank, nranks, timeout_seconds, nullptr)};
    ranks[0]->start_init(unique);
    ranks[0]->wait_ready(deadline_after(timeout_seconds));
    hand_out(ranks, comm);
  });
}

kiln_status* comm_destroy(kiln_comm* comm) {
  return sdk::guard("comm_destroy", [&] {
    std::unique_ptr<kiln_comm> owned(comm);
    comm_of(comm, "comm_destroy").destroy();
  });
}

kiln_status* all_reduce(kiln_comm* comm, kiln_stream* stream, const void* send, void* recv,
                        size_t count, int32_t dtype, int32_t op) {
  return sdk::guard("kiln.all_reduce", [&] {
    NcclComm& c = comm_of(comm, "all_reduce");
    const cudaStream_t s = stream_of(c, stream, "all_reduce");
    check_buffers(count, send, recv, "all_reduce");
    const ncclDataType_t type = reducible_type(dtype, "all_reduce");
    const ncclRedOp_t nccl_op = reduce_op(op, c.size(), "all_reduce");
    c.enqueue({"all_reduce", count, dtype, op}, s,
              [&](ncclComm_t n) { return ncclAllReduce(send, recv, count, type, nccl_op, n, s); });
  });
}

kiln_status* broadcast(kiln_comm* comm, kiln_stream* stream, const void* send, void* recv,
                       size_t count, int32_t dtype, int32_t root) {
  return sdk::guard("kiln.broadcast", [&] {
    NcclComm& c = comm_of(comm, "broadcast");
    const cudaStream_t s = stream_of(c, stream, "broadcast");
    KILN_SDK_CHECK(count == 0 || recv != nullptr, KILN_STATUS_INVALID_ARGUMENT,
                   "broadcast: null buffer for ", count, " elements");
    KILN_SDK_CHECK(count == 0 || c.rank() != root || send != nullptr, KILN_STATUS_INVALID_ARGUMENT,
                   "broadcast: null send buffer on the root");
    KILN_SDK_CHECK(root >= 0 && root < c.size(), KILN_STATUS_INVALID_ARGUMENT, "broadcast: root ",
                   root, " is not a rank of the group of ", c.size());
    const size_t bytes = bytes_of(count, dtype, "broadcast");
    c.enqueue({"broadcast", count, dtype, root}, s, [&](ncclComm_t n) {
      return ncclBroadcast(send, recv, bytes, ncclUint8, root, n, s);
    });
  });
}

kiln_status* all_gather(kiln_comm* comm, kiln_stream* stream, const void* send, void* recv,
                        size_t send_count, int32_t dtype) {
  return sdk::guard("kiln.all_gather", [&] {
    NcclComm& c = comm_of(comm, "all_gather");
    const cudaStream_t s = stream_of(c, stream, "all_gather");
    check_buffers(send_count, send, recv, "all_gather");
    const size_t bytes = bytes_of(send_count, dtype, "all_gather");
    c.enqueue({"all_gather", send_count, dtype, 0}, s,
              [&](ncclComm_t n) { return ncclAllGather(send, recv, bytes, ncclUint8, n, s); });
  });
}

kiln_status* reduce_scatter(kiln_comm* comm, kiln_stream* stream, const void* send, void* recv,
                            size_t recv_count, int32_t dtype, int32_t op) {
  return sdk::guard("kiln.reduce_scatter", [&] {
    NcclComm& c = comm_of(comm, "reduce_scatter");
    const cudaStream_t s = stream_of(c, stream, "reduce_scatter");
    check_buffers(recv_count, send, recv, "reduce_scatter");
    const ncclDataType_t type = reducible_type(dtype, "reduce_scatter");
    const ncclRedOp_t nccl_op = reduce_op(op, c.size(), "reduce_scatter");
    c.enqueue({"reduce_scatter", recv_count, dtype, op}, s, [&](ncclComm_t n) {
      return ncclReduceScatter(send, recv, recv_count, type, nccl_op, n, s);
    });
  });
}

kiln_status* barrier(kiln_comm* comm, kiln_stream* stream) {
  return sdk::guard("kiln.barrier", [&] {
    NcclComm& c = comm_of(comm, "barrier");
    c.barrier(stream_of(c, stream, "barrier"));
  });
}

const kiln_collectives_api kCollectives = {
    sizeof(kiln_collectives_api),
    &comm_init_group,
    &comm_id_create,
    &comm_init_rank,
    &comm_destroy,
    &all_reduce,
    &broadcast,
    &all_gather,
    &reduce_scatter,
    &barrier,
};

}  // namespace

const kiln_collectives_api* collectives_api() { return &kCollectives; }

}  // namespace kiln::cuda
