#pragma once
/// @file dlpack.h
/// Exchanging tensors with NumPy, PyTorch, CuPy, JAX, ... without copies, through
/// DLPack (Debian's libdlpack-dev, <dlpack/dlpack.h>):
///
/// @code
///   DLManagedTensor* out = kiln::to_dlpack(t);      // hand to torch.utils.dlpack
///   kiln::Tensor u = kiln::from_dlpack(managed);     // wrap what another library made
/// @endcode
///
/// Both directions share memory: a write through one side is seen by the other.
/// Devices: memory the host can use (cpu, and any plugin whose device is
/// host-accessible) is kDLCPU; the "cuda" plugin's devices are kDLCUDA with the same
/// index. Dtypes: float16/32/64, bfloat16, int32, int64 and uint8 map to the
/// DLPack type of the same bits; bool is exported as kDLUInt 8 (DLPack 0.6, which
/// Debian 12 ships, has no boolean type) and comes back as uint8. The versioned
/// DLManagedTensorVersioned of DLPack 1.0 is not offered: Debian 12's header lacks it.

#include <dlpack/dlpack.h>

#include "kiln/tensor.h"

namespace kiln {

/// A DLPack view of `tensor`'s memory (strides always given); the tensor's memory
/// stays alive until the consumer calls the result's deleter, exactly once. Throws
/// kiln::Error for an undefined tensor, a tensor that requires grad (detach() it, as
/// PyTorch asks), or a device DLPack cannot name.
DLManagedTensor* to_dlpack(const Tensor& tensor);

/// Wraps `managed` without copying and takes ownership: its deleter is called when the
/// last Kiln tensor using the memory is gone. Throws kiln::Error (and leaves ownership
/// with the caller) for a null or malformed tensor (bad ndim, null shape, vector
/// lanes, negative strides or sizes), a dtype Kiln lacks, or a device Kiln has not
/// loaded.
Tensor from_dlpack(DLManagedTensor* managed);

}  // namespace kiln
