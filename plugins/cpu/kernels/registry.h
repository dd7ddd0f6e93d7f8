// kernels/registry.h — how kernel files publish their ops to get_kernel.
//
// Each kernels/*.cpp file defines its ops as `void impl(const OpArgs &)` functions
// that throw kiln::sdk::Error on bad arguments, and lists them with `add_*_kernels`.
// `run_kernel<impl>` is the ABI-facing wrapper: it catches everything and prefixes
// messages with the op's name ("kiln.gather: index 7 is out of range ...").
#ifndef KILN_CPU_KERNELS_REGISTRY_H
#define KILN_CPU_KERNELS_REGISTRY_H

#include <cstdint>
#include <vector>

#include "kiln/c_api.h"
#include "kiln/sdk/status.h"
#include "op_args.h"

namespace kiln::cpu {

using SupportsFn = int32_t (*)(void* context, const kiln_op_args* args);

struct KernelEntry {
  const char* name;     // catalogue name, e.g. "kiln.add"
  kiln_kernel_fn run;   // receives a pointer to this entry as its context
  SupportsFn supports;  // nullptr: every valid argument list
  uint32_t flags;       // KILN_KERNEL_*
};

using KernelList = std::vector<KernelEntry>;

inline constexpr uint32_t kStridedInOut = KILN_KERNEL_STRIDED_INPUTS | KILN_KERNEL_STRIDED_OUTPUTS;

template <void (*Impl)(const OpArgs&)>
kiln_status* run_kernel(void* context, const kiln_op_args* args) noexcept {
  const auto* entry = static_cast<const KernelEntry*>(context);
  return sdk::guard(entry != nullptr ? entry->name : "kiln op", [&] { Impl(OpArgs(args)); });
}

// One per kernel file.
void add_copy_kernels(KernelList& list);      // copy, fill
void add_creation_kernels(KernelList& list);  // arange, linspace
void add_random_kernels(KernelList& list);    // random_uniform, random_normal, dropout
void add_unary_kernels(KernelList& list);     // unary ops and gelu_backward
void add_binary_kernels(KernelList& list);    // arithmetic, maximum, minimum, pow
void add_compare_kernels(KernelList& list);   // comparisons, logical_and/or, where
void add_reduce_kernels(KernelList& list);    // sum ... var
void add_matmul_kernels(KernelList& list);    // matmul
void add_indexing_kernels(KernelList& list);  // index_select, gather
void add_scatter_kernels(KernelList& list);   // index_add, scatter_add
void add_conv_kernels(KernelList& list);      // conv2d and its backward kernels
void add_pool_kernels(KernelList& list);      // max/avg/adaptive pooling and backward
void add_norm_kernels(KernelList& list);      // batch_norm, layer_norm and backward
void add_softmax_kernels(KernelList& list);   // softmax, log_softmax and backward
void add_loss_kernels(KernelList& list);      // nll_loss and backward
void add_optim_kernels(KernelList& list);     // sgd_step, adam_step

/// The entry for (name, version), or nullptr. The table is built on first use and
/// lives for the process.
const KernelEntry* find_kernel(const char* name, int32_t version);

}  // namespace kiln::cpu

#endif  // KILN_CPU_KERNELS_REGISTRY_H
