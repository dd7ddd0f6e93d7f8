// collectives.h — the CUDA plugin's "kiln.collectives.v1" table, on NCCL.
//
// NCCL (libnccl.so.2) is opened with dlopen by the first comm_init_group,
// comm_id_create or comm_init_rank (toolkit_libraries.h), so loading the plugin and
// asking for the table cost nothing; a machine without NCCL gets a DEVICE_ERROR
// naming it from those calls. Each kiln_comm is one NCCL rank (nccl_comm.h: the
// timeout, the watchdog and argument checks across an in-process group):
//   comm_init_group   one unique id, every device's ncclCommInitRankConfig in one
//                     ncclGroupStart/ncclGroupEnd (what ncclCommInitAll does, but
//                     non-blocking, so initialization obeys the timeout too)
//   comm_id_create    ncclGetUniqueId (its 128 bytes are the kiln_comm_id)
//   comm_init_rank    ncclCommInitRankConfig, polled up to the timeout
//   collectives       ncclAllReduce, ncclBroadcast, ncclAllGather, ncclReduceScatter
//                     on the caller's stream of the rank's device; enqueued only
//   barrier           a one-word all-reduce, then a host wait for it
//
// Reductions take float32, float64, float16, bfloat16, int32 and int64 (the set every
// Kiln plugin reduces); another dtype is UNSUPPORTED, as the ABI says. Broadcast and
// all-gather move any dtype, as bytes. AVG is NCCL's ncclAvg (integers truncate).
// NCCL's reduction order is fixed for a given group, size and dtype (it depends on
// the topology and the algorithm NCCL picks for the size), so results repeat run to
// run, but they are not the rank-order sums of the CPU plugin: with more than two
// ranks float results may differ from it in the last bits, and float16/bfloat16 are
// added in their own precision.
#ifndef KILN_CUDA_COLLECTIVES_H
#define KILN_CUDA_COLLECTIVES_H

#include "kiln/c_api.h"

namespace kiln::cuda {

/// The extension table, for get_extension(KILN_EXTENSION_COLLECTIVES).
const kiln_collectives_api* collectives_api();

}  // namespace kiln::cuda

#endif  // KILN_CUDA_COLLECTIVES_H
