#include "kernels/registry.h"

#include <utility>

#include "kernel_call.h"

namespace kiln::cuda {

namespace {

KernelList build_table() {
  KernelList list;
  add_copy_kernels(list);
  add_creation_kernels(list);
  add_random_kernels(list);
  add_unary_kernels(list);
  add_binary_kernels(list);
  add_compare_kernels(list);
  add_reduce_kernels(list);
  add_indexing_kernels(list);
  add_matmul_kernels(list);
  add_conv_kernels(list);
  add_pool_kernels(list);
  add_norm_kernels(list);
  add_softmax_kernels(list);
  add_loss_kernels(list);
  add_scatter_kernels(list);
  add_scan_sort_kernels(list);
  add_fft_kernels(list);
  add_optim_kernels(list);
  add_attention_kernels(list);
  return list;
}

}  // namespace

const sdk::KernelTable& kernel_table() {
  // Both live for the process (held by static pointers, so leak checkers see them as
  // reachable): a kernel may still run while statics are destroyed at exit.
  static const KernelList* const kernels = new KernelList(build_table());  // the entries' data
  static const sdk::KernelTable* const table = [] {
    sdk::KernelList entries;
    entries.reserve(kernels->size());
    for (const KernelEntry& k : *kernels) {
      entries.push_back({k.name, &run_bound_kernel, k.supports, k.flags, &k});
    }
    return new sdk::KernelTable(std::move(entries));
  }();
  return *table;
}

}  // namespace kiln::cuda
