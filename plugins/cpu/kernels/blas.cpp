#include "blas.h"

#include <mutex>

namespace kiln::cpu {

namespace {

// Scopes alive across all threads, and the thread count to restore after the last.
std::mutex serial_mutex;
int serial_depth = 0;
int saved_threads = 1;

}  // namespace

SerialBlasScope::SerialBlasScope() {
  std::lock_guard lock(serial_mutex);
  if (serial_depth++ == 0) {
    saved_threads = openblas_get_num_threads();
    // With OpenBLAS built without thread affinity this only stores the count.
    if (saved_threads != 1) openblas_set_num_threads(1);
  }
}

SerialBlasScope::~SerialBlasScope() {
  std::lock_guard lock(serial_mutex);
  if (--serial_depth == 0 && saved_threads != 1) openblas_set_num_threads(saved_threads);
}

void set_blas_threads(int num_threads) {
  std::lock_guard lock(serial_mutex);
  if (serial_depth > 0)
    saved_threads = num_threads;  // an op is running serially: the last scope restores it
  else
    openblas_set_num_threads(num_threads);
}

}  // namespace kiln::cpu
