// streams.h — the synchronization points where device-side errors are reported.
// streams.cpp also implements CudaDevice's streams and events (kiln_stream and kiln_event
// on top of cudaStream_t and cudaEvent_t).
//
// A NULL kiln_stream is the device's default stream, a non-blocking stream the plugin
// creates (never the legacy stream 0, which would serialize with everything). Streams
// made by stream_create are non-blocking as well. Nothing here waits for the GPU
// except stream_synchronize and event_synchronize, as the ABI says.
#ifndef KILN_CUDA_STREAMS_H
#define KILN_CUDA_STREAMS_H

#include <cuda_runtime.h>

namespace kiln::cuda {

class CudaDevice;

/// Waits for `stream` and reports what the work on it left: a CUDA error, or a
/// device-side error of an op (error_flags.h). `where` names the call for messages.
void synchronize_stream(CudaDevice& device, cudaStream_t stream, const char* where);

}  // namespace kiln::cuda

#endif  // KILN_CUDA_STREAMS_H
