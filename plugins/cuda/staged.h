// staged.h — CUDA code that was built but has not run on a GPU yet, and the switch that
// turns it on.
//
// Kiln's GPU is lent rarely and briefly, so CUDA code may land "staged" (the rule:
// docs/design-decisions.md, "Staged CUDA code"): built by CI, tested on the host as far
// as a machine without a GPU can, and off unless KILN_CUDA_STAGED turns it on ("1" or
// "all": everything; "name,name": those). Off, a staged kernel answers supports() 0 (the
// op takes the counted CPU fallback) and a staged rewrite of a verified kernel leaves
// the verified one running; a staged extension is not offered. Every staged thing is an
// entry of staged.cpp's one list, with the gpu-labelled test that covers it; kiln-info
// prints the list ("kiln.staged.v1"). Whoever next has a GPU runs the device check
// (bench/gpu_staged_check.sh) with everything on, fixes what fails and moves what
// passed out of the list.
#ifndef KILN_CUDA_STAGED_H
#define KILN_CUDA_STAGED_H

#include "kiln/c_api.h"

namespace kiln::cuda {

/// The names kernel files ask about (each must be in staged.cpp's list).
inline constexpr char kStagedIntegerPow[] = "pow.integer";
inline constexpr char kStagedSoftmaxShift[] = "softmax.shift_by_max";
inline constexpr char kStagedMaxPoolLastNaN[] = "max_pool.last_nan";
inline constexpr char kStagedHalfNorm[] = "norm.half";
inline constexpr char kStagedHalfOptim[] = "optim.half";
inline constexpr char kStagedUnscale[] = "amp.unscale";
inline constexpr char kStagedGraphs[] = "graphs";
inline constexpr char kStagedLog1p[] = "op.log1p";
inline constexpr char kStagedAttention[] = "op.attention";

/// Whether KILN_CUDA_STAGED turns the staged entry `name` on. Throws sdk::Error
/// (INTERNAL) for a name that is not in the list: a misspelt name in a kernel file.
bool staged_on(const char* name);

/// Reads KILN_CUDA_STAGED once: throws sdk::Error (INVALID_ARGUMENT) naming the entries
/// when it names one that is not staged, so a typo fails the plugin's load loudly
/// instead of leaving the code off.
void check_staged_switch();

/// The "kiln.staged.v1" extension table: every entry, and whether it is on.
const kiln_staged_api* staged_api();

}  // namespace kiln::cuda

#endif  // KILN_CUDA_STAGED_H
