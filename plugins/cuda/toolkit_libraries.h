// toolkit_libraries.h — cuBLAS, cuBLASLt, cuDNN, cuFFT and NCCL, opened on first use.
//
// The plugin is not linked against them: together they are ~1 GB of shared objects
// whose loading cost every Kiln process ~0.1 s and ~200 MB resident even on a machine
// with no GPU. Instead toolkit_libraries.cpp defines each library function the plugin
// calls (same name and signature, hidden like everything else in the plugin) as a
// forwarder that dlopens the library by its soname the first time and calls the real
// function. The plugin's RUNPATH (the toolkit's folder) is searched by dlopen, as it
// would be for a link-time dependency.
//
// A device's handle getters (CudaDevice::cublas_handle and the others) call
// require_library first, so a missing or broken library is a clear kiln error naming
// it, at the first op that needs it, not a crash at load time. NCCL is opened by the
// first comm_init_group, comm_id_create or comm_init_rank (collectives.cpp); the
// plugin is built with it only where the toolkit has nccl.h (KILN_CUDA_NCCL).
#ifndef KILN_CUDA_TOOLKIT_LIBRARIES_H
#define KILN_CUDA_TOOLKIT_LIBRARIES_H

namespace kiln::cuda {

enum class ToolkitLibrary { Cublas, CublasLt, Cudnn, Nccl, Cufft };

/// Opens `library` if it is not open yet; throws kiln::sdk::Error (DEVICE_ERROR) naming
/// the library and dlopen's reason when it cannot be opened. Thread-safe; the first
/// outcome is kept for the life of the process.
void require_library(ToolkitLibrary library);

}  // namespace kiln::cuda

#endif  // KILN_CUDA_TOOLKIT_LIBRARIES_H
