// copies.h — the ABI's `copy`: host<->device through pinned staging (staging.h),
// device<->device on the copy engines, and peer copies between GPUs.
#ifndef KILN_CUDA_COPIES_H
#define KILN_CUDA_COPIES_H

#include "kiln/c_api.h"

namespace kiln::cuda {

/// HOST_TO_DEVICE returns once `src` may be reused (the GPU copy may still be queued);
/// DEVICE_TO_HOST returns once `dst` holds the data, and reports any device-side error
/// of the ops before it on the stream; DEVICE_TO_DEVICE is enqueued only. A
/// DEVICE_TO_DEVICE copy whose source or destination lives on another GPU (unified
/// addressing tells) becomes a peer copy, ordered on `stream` of this device only:
/// work on the other GPU must be ordered with events by the caller.
kiln_status* copy(kiln_device* device, kiln_stream* stream, int32_t kind, void* dst,
                  const void* src, size_t bytes);

}  // namespace kiln::cuda

#endif  // KILN_CUDA_COPIES_H
