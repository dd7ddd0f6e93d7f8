/*
 * debug_extension.h — the CUDA plugin's "kiln.cuda.debug" extension, for tests and
 * tools that need to see what the runtime did (plain C, like the ABI).
 *
 *   const kiln_cuda_debug_v1 *dbg = api->get_extension(api->context, KILN_CUDA_DEBUG_EXTENSION);
 *   kiln_cuda_debug_counters before = {sizeof before};
 *   dbg->get_counters(device, &before);
 *   ... run a training step ...
 *   kiln_cuda_debug_counters after = {sizeof after};
 *   dbg->get_counters(device, &after);
 *   assert(after.host_synchronizations == before.host_synchronizations);
 *
 * Versioned like every ABI struct: both structs begin with struct_size and only grow
 * at the end; `version` is 1 for this layout. Not part of Kiln's stable ABI: tools
 * must check struct_size and version before use.
 */
#ifndef KILN_CUDA_DEBUG_EXTENSION_H
#define KILN_CUDA_DEBUG_EXTENSION_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/c_api.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_CUDA_DEBUG_EXTENSION "kiln.cuda.debug"
#define KILN_CUDA_DEBUG_VERSION 1

/* Counts since the device was opened. Fields are written only when they fit in the
 * caller's struct_size. */
typedef struct kiln_cuda_debug_counters {
  size_t struct_size;
  /* Times the plugin made the host wait for this device's work: stream, event and
   * device synchronizations, device-to-host copies (one per call), waits for the
   * pinned staging ring, and cudaFree under KILN_CUDA_ALLOCATOR=direct. */
  uint64_t host_synchronizations;
  /* Kernel calls (kiln_kernel.run) that enqueued their work successfully. */
  uint64_t op_calls;
  /* Times pending device-error slots were copied back at a synchronization point. */
  uint64_t error_flag_readbacks;
} kiln_cuda_debug_counters;

typedef struct kiln_cuda_debug_v1 {
  size_t struct_size;
  uint32_t version; /* KILN_CUDA_DEBUG_VERSION */
  uint32_t reserved;
  /* Fills `counters` for an opened device. */
  kiln_status* (*get_counters)(kiln_device* device, kiln_cuda_debug_counters* counters);
  /* "caching", "cuda_malloc_async" or "direct": KILN_CUDA_ALLOCATOR in force. */
  const char* (*allocator_name)(void);
  /* 1 when KILN_CUDA_SYNC=1 is in force, else 0. */
  int32_t (*sync_after_ops)(void);
} kiln_cuda_debug_v1;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_CUDA_DEBUG_EXTENSION_H */
