#include "registry.h"

#include <algorithm>
#include <cstring>

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
  add_conv_kernels(list);
  add_pool_kernels(list);
  add_norm_kernels(list);
  add_softmax_kernels(list);
  add_loss_kernels(list);
  add_optim_kernels(list);
  std::sort(list.begin(), list.end(), [](const KernelEntry& a, const KernelEntry& b) {
    return std::strcmp(a.name, b.name) < 0;
  });
  return list;
}

}  // namespace

const KernelEntry* find_kernel(const char* name, int32_t version) {
  // Every catalogue op is at version 1 (api/OPS.md); other versions are not provided.
  if (name == nullptr || version != 1) return nullptr;
  static const KernelList table = build_table();
  auto it = std::lower_bound(
      table.begin(), table.end(), name,
      [](const KernelEntry& e, const char* n) { return std::strcmp(e.name, n) < 0; });
  if (it == table.end() || std::strcmp(it->name, name) != 0) return nullptr;
  return &*it;
}

}  // namespace kiln::cpu
