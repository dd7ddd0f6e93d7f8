// kernels/scratch.h — per-thread scratch memory for kernels.
//
// Convolutions need column buffers (im2col) and partial sums on every call. Taking
// them from malloc each time costs a system call and a page fault per 4 KiB page
// whenever they are large (glibc serves those by mmap and gives them back on free);
// a training step would fault on the same few megabytes every time. Scratch buffers
// instead belong to the thread that asks, grow on demand and are kept for its next
// call. Kernels bound what they ask for (see the budgets in conv.cpp), so the memory
// kept is a few megabytes per thread.
//
//   float* col = scratch<float>(ScratchSlot::Columns, rows * cols);
//
// Contents are undefined. A slot's pointer stays valid until the same thread asks
// that slot for more; two slots never alias. A thread's buffers are freed when it
// exits.
#ifndef KILN_CPU_KERNELS_SCRATCH_H
#define KILN_CPU_KERNELS_SCRATCH_H

#include <cstddef>

namespace kiln::cpu {

enum class ScratchSlot {
  Columns,   // a pool task's own buffer (im2col columns, Winograd tiles)
  Runs,      // a pool task's small index lists (Winograd tile runs)
  Partials,  // the op's calling thread: buffers shared with its pool tasks
  Count
};

/// At least `bytes` bytes, 64-byte aligned, owned by the calling thread. Throws
/// kiln::sdk::Error (OUT_OF_MEMORY) when the system has no memory.
void* scratch_bytes(ScratchSlot slot, size_t bytes);

template <class T>
T* scratch(ScratchSlot slot, size_t count) {
  return static_cast<T*>(scratch_bytes(slot, count * sizeof(T)));
}

}  // namespace kiln::cpu

#endif  // KILN_CPU_KERNELS_SCRATCH_H
