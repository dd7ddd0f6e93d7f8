#include "kernels/registry.h"

#include <algorithm>
#include <cstring>

#include "kiln/sdk/status.h"

namespace kiln::cuda {

namespace {

bool name_less(const KernelEntry& a, const KernelEntry& b) {
  return std::strcmp(a.name, b.name) < 0;
}

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
  add_optim_kernels(list);
  return list;
}

}  // namespace

KernelTable::KernelTable(KernelList entries) : entries_(std::move(entries)) {
  std::sort(entries_.begin(), entries_.end(), name_less);
  const auto twice = std::adjacent_find(
      entries_.begin(), entries_.end(),
      [](const KernelEntry& a, const KernelEntry& b) { return std::strcmp(a.name, b.name) == 0; });
  KILN_SDK_CHECK(twice == entries_.end(), KILN_STATUS_INTERNAL, "two kernels are registered for ",
                 twice->name);
}

std::ptrdiff_t KernelTable::find(const char* name, int32_t version) const {
  if (name == nullptr || version != 1) return -1;
  const KernelEntry key{name, nullptr, nullptr, 0};
  const auto it = std::lower_bound(entries_.begin(), entries_.end(), key, name_less);
  if (it == entries_.end() || std::strcmp(it->name, name) != 0) return -1;
  return it - entries_.begin();
}

const KernelTable& kernel_table() {
  // Deliberately never destroyed: every device's bindings point into it, and a kernel
  // may still run while static objects are destroyed at exit.
  static const KernelTable* table = new KernelTable(build_table());
  return *table;
}

}  // namespace kiln::cuda
