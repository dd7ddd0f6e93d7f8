// plugin_state.h — what the CUDA plugin works out once per process: its
// configuration (environment), the GPUs it exposes and describe()'s text.
//
// Environment (read once, at the first kiln_plugin_init; an invalid value logs a
// warning through the host's log and uses the default, never failing the load):
//   KILN_CUDA_ALLOCATOR  caching (default) | cuda_malloc_async | direct
//   KILN_CUDA_SYNC       1: synchronize after every op and report the op and the
//                        CUDA error at once (the CUDA_LAUNCH_BLOCKING=1 of Kiln); 0
//                        or unset: ops run asynchronously
//
// Devices are the GPUs the CUDA runtime shows (CUDA_VISIBLE_DEVICES applies) whose
// compute capability the plugin has code for (sm_90 and newer, through PTX). Kiln
// index i maps to CUDA ordinal ordinals[i]; older GPUs are left out and named in
// the description. No driver, no GPU: zero devices, and the reason is described.
#ifndef KILN_CUDA_PLUGIN_STATE_H
#define KILN_CUDA_PLUGIN_STATE_H

#include <memory>
#include <string>
#include <vector>

namespace kiln::cuda {

class CudaDevice;

enum class AllocatorKind { Caching, MallocAsync, Direct };

/// "caching", "cuda_malloc_async", "direct".
const char* allocator_name(AllocatorKind kind);

struct Config {
  AllocatorKind allocator = AllocatorKind::Caching;
  bool sync_after_ops = false;  // KILN_CUDA_SYNC=1
};

struct PluginState {
  Config config;
  std::vector<std::unique_ptr<CudaDevice>> devices;  // by Kiln index; opened lazily
  std::string description;                           // describe()'s text
};

/// Builds the state on the first call (reads the environment, enumerates the GPUs
/// without creating a CUDA context); later calls return it unchanged. Never throws
/// for a missing driver or GPU: that is zero devices with a reason.
const PluginState& init_plugin_state();

/// The state; init_plugin_state must have run.
const PluginState& plugin_state();

}  // namespace kiln::cuda

#endif  // KILN_CUDA_PLUGIN_STATE_H
