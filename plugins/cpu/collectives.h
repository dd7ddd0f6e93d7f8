// collectives.h — the CPU plugin's "kiln.collectives.v1" table: all-reduce, broadcast,
// all-gather, reduce-scatter and barrier across its logical devices (KILN_CPU_DEVICES)
// in one process, through shared memory.
//
// Every rank's call blocks until the whole group has arrived (the CPU plugin is
// synchronous), so the ranks' calls come from different threads, as the ABI says.
// Work is split across the ranks: for an all-reduce each rank reduces its own chunk
// of the elements over all ranks, in rank order 0, 1, ..., n-1 (so results are the
// same on every call, and equal to a left-to-right sum on one device), and then
// every rank copies the whole result. float16/bfloat16 accumulate in float32 and
// round once.
#ifndef KILN_CPU_COLLECTIVES_H
#define KILN_CPU_COLLECTIVES_H

#include "kiln/c_api.h"

namespace kiln::cpu {

/// The extension table, for get_extension(KILN_EXTENSION_COLLECTIVES).
const kiln_collectives_api* collectives_api();

}  // namespace kiln::cpu

#endif  // KILN_CPU_COLLECTIVES_H
