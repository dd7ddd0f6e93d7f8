// streams.h — kiln_stream and kiln_event on top of cudaStream_t and cudaEvent_t, and
// the synchronization points where device-side errors are reported.
//
// A NULL kiln_stream is the device's default stream, a non-blocking stream the plugin
// creates (never the legacy stream 0, which would serialize with everything). Streams
// made by stream_create are non-blocking as well. Nothing here waits for the GPU
// except stream_synchronize and event_synchronize, as the ABI says.
#ifndef KILN_CUDA_STREAMS_H
#define KILN_CUDA_STREAMS_H

#include <cuda_runtime.h>

#include "kiln/c_api.h"

namespace kiln::cuda {

class Device;

/// The CUDA stream behind `stream` on `device` (NULL: the default stream); throws
/// INVALID_ARGUMENT for a handle that is not a stream of `device`.
cudaStream_t stream_of(Device& device, kiln_stream* stream);

/// Waits for `stream` and reports what the work on it left: a CUDA error, or a
/// device-side error of an op (error_flags.h). `where` names the call for messages.
void synchronize_stream(Device& device, cudaStream_t stream, const char* where);

/// After the host has waited for work on `stream` by other means (a device-to-host
/// copy): checks the device-side errors of the ops enqueued there, if any are pending.
void check_device_errors(Device& device, cudaStream_t stream, const char* where);

kiln_status* stream_create(kiln_device* device, kiln_stream** stream);
kiln_status* stream_destroy(kiln_device* device, kiln_stream* stream);
kiln_status* stream_synchronize(kiln_device* device, kiln_stream* stream);
kiln_status* event_create(kiln_device* device, kiln_event** event);
kiln_status* event_destroy(kiln_device* device, kiln_event* event);
kiln_status* event_record(kiln_device* device, kiln_event* event, kiln_stream* stream);
kiln_status* stream_wait_event(kiln_device* device, kiln_stream* stream, kiln_event* event);
kiln_status* event_synchronize(kiln_device* device, kiln_event* event);
/// cudaEventElapsedTime between two events of this device (ABI 1.2).
kiln_status* event_elapsed(kiln_device* device, kiln_event* start, kiln_event* end,
                           double* milliseconds);
/// NVTX ranges named after Kiln's ops and record_function scopes, for Nsight (ABI 1.2;
/// NVTX is header-only and does nothing unless a tool is attached).
void range_push(void* context, const char* name);
void range_pop(void* context);

}  // namespace kiln::cuda

#endif  // KILN_CUDA_STREAMS_H
