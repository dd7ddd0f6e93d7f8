// kernels/registry.h — how kernel files publish their ops to get_kernel.
//
// Each kernels/*.cu file defines its ops as
//   void impl(const sdk::OpArgs& args, const Launch& launch)     (launch.h)
// and lists them, with their `supports` function and KILN_KERNEL_* flags, in its
// add_*_kernels function. To add a file: declare its function here, call it in
// registry.cpp, and list the file in plugins/cuda/CMakeLists.txt.
#ifndef KILN_CUDA_KERNELS_REGISTRY_H
#define KILN_CUDA_KERNELS_REGISTRY_H

#include <string>
#include <string_view>

#include "kiln/sdk/catalogue.h"
#include "kiln/sdk/kernel_table.h"
#include "kiln/sdk/op_attrs.h"
#include "kiln/sdk/status.h"
#include "launch.h"
#include "staged.h"

namespace kiln::cuda {

// One per kernel file.
void add_copy_kernels(KernelList& list);       // copy, fill
void add_creation_kernels(KernelList& list);   // arange, linspace
void add_random_kernels(KernelList& list);     // random_uniform, random_normal, dropout
void add_unary_kernels(KernelList& list);      // unary ops, relu_backward, gelu_backward
void add_binary_kernels(KernelList& list);     // add ... minimum, pow
void add_compare_kernels(KernelList& list);    // comparisons, logical_and/or, where
void add_reduce_kernels(KernelList& list);     // sum ... var
void add_indexing_kernels(KernelList& list);   // index_select, gather
void add_matmul_kernels(KernelList& list);     // matmul (cuBLASLt, cuBLAS)
void add_conv_kernels(KernelList& list);       // conv2d and its backward kernels (cuDNN)
void add_pool_kernels(KernelList& list);       // max/avg/adaptive pooling and backward
void add_norm_kernels(KernelList& list);       // batch_norm, layer_norm and backward
void add_softmax_kernels(KernelList& list);    // softmax, log_softmax and backward
void add_loss_kernels(KernelList& list);       // nll_loss and backward
void add_scatter_kernels(KernelList& list);    // index_add, scatter_add
void add_scan_sort_kernels(KernelList& list);  // cumsum, sort (CUB)
void add_fft_kernels(KernelList& list);        // fft_c2c, fft_r2c, fft_c2r (cuFFT)
void add_optim_kernels(KernelList& list);      // the catalogue's optimizer section
void add_attention_kernels(KernelList& list);  // scaled_dot_product_attention (staged)

/// The entry of catalogue op `Op` for a kernel that takes exactly the catalogue's
/// dtypes (the name and `supports` come from the catalogue).
template <const sdk::CatalogueOp& Op>
KernelEntry catalogue_kernel(KernelImpl impl, uint32_t flags) {
  return {Op.name, impl, &sdk::supports_catalogue_dtypes<Op>, flags};
}
/// The same, with the layout flags the catalogue allows.
template <const sdk::CatalogueOp& Op>
KernelEntry catalogue_kernel(KernelImpl impl) {
  return catalogue_kernel<Op>(impl, Op.kernel_flags);
}
/// The entry of catalogue op `Op` with a `supports` of the kernel's own: the name comes
/// from the catalogue, so a misspelt op is a compile error.
template <const sdk::CatalogueOp& Op>
KernelEntry catalogue_entry(KernelImpl impl, sdk::SupportsFn supports, uint32_t flags) {
  return {Op.name, impl, supports, flags};
}

/// The `supports` of a staged kernel (staged.h): the catalogue's dtypes while
/// KILN_CUDA_STAGED turns `Staged` on, 0 otherwise (the op takes the counted CPU fallback).
template <const sdk::CatalogueOp& Op, const char* Staged>
int32_t supports_while_staged(void* context, const kiln_op_args* args) noexcept {
  static const bool on = staged_on(Staged);
  return on ? sdk::supports_catalogue_dtypes<Op>(context, args) : 0;
}

/// Stages the kernel of catalogue op `Op` already in `list`: a catalogue op whose kernel
/// the generated lists add (KILN_*_POINTWISE_OPS) and that has not run on a GPU yet.
template <const sdk::CatalogueOp& Op, const char* Staged>
void stage_kernel(KernelList& list) {
  for (KernelEntry& entry : list)
    if (std::string_view(entry.name) == Op.name) {
      entry.supports = &supports_while_staged<Op, Staged>;
      return;
    }
  throw sdk::Error(KILN_STATUS_INTERNAL, std::string("stage_kernel: no kernel for ") + Op.name);
}

/// Catalogue ops by short name, for the kernel lists: op::add is "kiln.add".
namespace op = sdk::catalogue;

/// Every kernel of the plugin, for the kit's get_kernel: one sdk::KernelEntry per
/// KernelEntry, each running through the per-call hook run_bound_kernel (kernel_call.h)
/// with the KernelEntry as its `data`. Built once (two kernels for one op throw
/// INTERNAL), never destroyed: a kernel may still run while statics are destroyed at exit.
const sdk::KernelTable& kernel_table();

}  // namespace kiln::cuda

#endif  // KILN_CUDA_KERNELS_REGISTRY_H
