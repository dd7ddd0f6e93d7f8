// kernels/registry.h — how kernel files publish their ops to get_kernel.
//
// Each kernels/*.cpp file defines its ops as `void impl(const OpArgs &)` functions
// (kiln/sdk/kernel_table.h) and lists them with `add_*_kernels`.
#ifndef KILN_CPU_KERNELS_REGISTRY_H
#define KILN_CPU_KERNELS_REGISTRY_H

#include "kiln/c_api.h"
#include "kiln/sdk/catalogue.h"
#include "kiln/sdk/kernel_table.h"
#include "kiln/sdk/op_attrs.h"
#include "kiln/sdk/status.h"
#include "op_args.h"

namespace kiln::cpu {

using sdk::catalogue_entry;
using sdk::catalogue_kernel;
/// Catalogue ops by short name, for the kernel lists: op::add is "kiln.add".
namespace op = sdk::catalogue;
using sdk::KernelEntry;
using sdk::KernelList;
using sdk::kStridedInOut;
using sdk::run_kernel;
using sdk::supports_catalogue_dtypes;

// One per kernel file.
void add_copy_kernels(KernelList& list);       // copy, fill
void add_creation_kernels(KernelList& list);   // arange, linspace
void add_random_kernels(KernelList& list);     // random_uniform, random_normal, dropout
void add_unary_kernels(KernelList& list);      // unary ops and gelu_backward
void add_binary_kernels(KernelList& list);     // arithmetic, maximum, minimum, pow
void add_compare_kernels(KernelList& list);    // comparisons, logical_and/or, where
void add_reduce_kernels(KernelList& list);     // sum ... var
void add_matmul_kernels(KernelList& list);     // matmul
void add_indexing_kernels(KernelList& list);   // index_select, gather
void add_scatter_kernels(KernelList& list);    // index_add, scatter_add
void add_scan_sort_kernels(KernelList& list);  // cumsum, sort
void add_conv_kernels(KernelList& list);       // conv2d and its backward kernels
void add_pool_kernels(KernelList& list);       // max/avg/adaptive pooling and backward
void add_norm_kernels(KernelList& list);       // batch_norm, layer_norm and backward
void add_softmax_kernels(KernelList& list);    // softmax, log_softmax and backward
void add_loss_kernels(KernelList& list);       // nll_loss and backward
void add_optim_kernels(KernelList& list);      // sgd_step, adam_step
void add_fft_kernels(KernelList& list);        // fft_c2c, fft_r2c, fft_c2r
void add_attention_kernels(KernelList& list);  // scaled_dot_product_attention and backward

/// Every kernel of the plugin; built on first use, lives for the process.
const sdk::KernelTable& kernel_table();

}  // namespace kiln::cpu

#endif  // KILN_CPU_KERNELS_REGISTRY_H
