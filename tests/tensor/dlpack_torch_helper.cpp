// A small C library for dlpack_torch.py: PyTorch (through ctypes) and Kiln exchange
// tensors by DLPack in both directions.
#include <kiln/dlpack.h>
#include <kiln/kiln.h>

namespace {
kiln::Tensor kept;  // the exported tensor, to show that PyTorch's writes reach it
}

extern "C" {

// [[0, 1, 2], [3, 4, 5]] float32, exported; Kiln keeps a handle to it too.
__attribute__((visibility("default"))) DLManagedTensor* kiln_test_export() {
  kept = kiln::arange(0, 6, 1, kiln::float32).reshape({2, 3});
  return kiln::to_dlpack(kept);
}

__attribute__((visibility("default"))) double kiln_test_kept_first() {
  return kept.flatten().to_vector<double>()[0];
}

__attribute__((visibility("default"))) void kiln_test_release() { kept = kiln::Tensor(); }

// Imports a float32 tensor from PyTorch, returns its sum (with its strides respected)
// and writes -1 into its first element through Kiln's pointer.
__attribute__((visibility("default"))) double kiln_test_import_sum_and_poke(DLManagedTensor* m) {
  kiln::Tensor t = kiln::from_dlpack(m);
  const double sum = t.sum().item<double>();
  *t.data_ptr<float>() = -1.0f;
  return sum;
}
}
