#include "registry.h"

namespace kiln::cpu {

namespace {

KernelList build_table() {
  KernelList list;
  add_copy_kernels(list);
  add_creation_kernels(list);
  add_unary_kernels(list);
  add_binary_kernels(list);
  add_compare_kernels(list);
  add_reduce_kernels(list);
  add_matmul_kernels(list);
  add_indexing_kernels(list);
  add_random_kernels(list);
  add_scatter_kernels(list);
  add_scan_sort_kernels(list);
  add_conv_kernels(list);
  add_pool_kernels(list);
  add_norm_kernels(list);
  add_softmax_kernels(list);
  add_loss_kernels(list);
  add_optim_kernels(list);
  add_fft_kernels(list);
  add_attention_kernels(list);
  return list;
}

}  // namespace

const sdk::KernelTable& kernel_table() {
  static const sdk::KernelTable table(build_table());
  return table;
}

}  // namespace kiln::cpu
