#include "streams.h"

#include "allocator.h"
#include "device.h"
#include "error_flags.h"
#include "kiln/sdk/status.h"

namespace kiln::cuda {

namespace {

CudaEvent& cuda_event(sdk::Event& event) { return static_cast<CudaEvent&>(event); }

}  // namespace

void synchronize_stream(CudaDevice& device, cudaStream_t stream, const char* where) {
  ErrorFlags& flags = device.error_flags();
  const bool pending = flags.pending(stream);
  // The readback rides along in stream order, so one wait covers both.
  ErrorFlags::Readback readback;
  if (pending) readback = flags.enqueue_readback(stream);
  try {
    device.wait_stream(stream, where);
  } catch (...) {
    flags.abandon(readback);
    throw;
  }
  if (pending) flags.check(readback, stream, ErrorFlags::kAll, where);
  device.raise_deferred_error(where);
}

std::unique_ptr<sdk::Stream> CudaDevice::create_stream() {
  auto created = std::make_unique<CudaStream>();
  created->owner = this;
  make_current();
  if (const cudaError_t status = cudaStreamCreateWithFlags(&created->stream, cudaStreamNonBlocking);
      status != cudaSuccess) {
    fail(status, "cudaStreamCreateWithFlags");
  }
  user_streams_.fetch_add(1, std::memory_order_relaxed);
  return created;
}

void CudaDevice::destroy_stream(sdk::Stream& stream) {
  const cudaStream_t s = static_cast<CudaStream&>(stream).stream;
  make_current();
  // Work on the stream may still be running and cudaStreamDestroy does not wait for
  // it. What the allocator cached and the error slots the stream's ops own must
  // outlive the handle, which CUDA may hand out again: make the default stream wait
  // for this one and give them to the default stream.
  cudaEvent_t done = events_.get();
  try {
    record_cuda_event(done, s, "stream_destroy");
    if (const cudaError_t status = cudaStreamWaitEvent(default_stream_, done, 0);
        status != cudaSuccess) {
      fail(status, "cudaStreamWaitEvent");
    }
  } catch (...) {
    events_.put(done);
    throw;
  }
  events_.put(done);
  allocator_->retag_stream(s, default_stream_);
  error_flags_->retag_stream(s, default_stream_);
  const cudaError_t status = cudaStreamDestroy(s);
  user_streams_.fetch_sub(1, std::memory_order_relaxed);
  if (status != cudaSuccess) fail(status, "cudaStreamDestroy");
}

void CudaDevice::synchronize(sdk::Stream* stream) {
  synchronize_stream(*this, cuda_stream(stream), "at stream_synchronize");
}

std::unique_ptr<sdk::Event> CudaDevice::create_event() {
  auto created = std::make_unique<CudaEvent>();
  make_current();
  // Timing enabled (ABI 1.2's event_elapsed times ops for Kiln's profiler); the
  // plugin's internal events, which only order work, keep cudaEventDisableTiming.
  if (const cudaError_t status = cudaEventCreateWithFlags(&created->event, cudaEventDefault);
      status != cudaSuccess) {
    fail(status, "cudaEventCreateWithFlags");
  }
  return created;
}

void CudaDevice::destroy_event(sdk::Event& event) {
  if (const cudaError_t status = cudaEventDestroy(cuda_event(event).event); status != cudaSuccess) {
    fail(status, "cudaEventDestroy");
  }
}

void CudaDevice::record_event(sdk::Event& event, sdk::Stream* stream) {
  CudaEvent& e = cuda_event(event);
  const cudaStream_t s = cuda_stream(stream);
  const uint64_t watermark = error_flags_->watermark();
  record_cuda_event(e.event, s, "cudaEventRecord");
  e.recorded_on = s;
  e.watermark = watermark;
}

// `event` may be another GPU's (the kit allows any device of the plugin): CUDA orders that.
void CudaDevice::wait_event(sdk::Stream* stream, sdk::Event& event) {
  if (const cudaError_t status =
          cudaStreamWaitEvent(cuda_stream(stream), cuda_event(event).event, 0);
      status != cudaSuccess) {
    fail(status, "cudaStreamWaitEvent");
  }
}

double CudaDevice::elapsed_ms(sdk::Event& start, sdk::Event& end) {
  make_current();
  float ms = 0;
  if (const cudaError_t status =
          cudaEventElapsedTime(&ms, cuda_event(start).event, cuda_event(end).event);
      status != cudaSuccess) {
    fail(status, "cudaEventElapsedTime");
  }
  return static_cast<double>(ms);
}

void CudaDevice::synchronize_event(sdk::Event& event) {
  CudaEvent& e = cuda_event(event);
  wait_for_event(e.event, "event_synchronize");
  raise_deferred_error("at event_synchronize");
  if (e.recorded_on == nullptr) return;
  // The ops the event covers are done; read their slots on the device's check stream
  // (the recording stream may have more work queued behind the event).
  ErrorFlags& flags = *error_flags_;
  if (!flags.pending(e.recorded_on, e.watermark)) return;
  ErrorFlags::Readback readback = flags.enqueue_readback(check_stream_);
  try {
    wait_stream(check_stream_, "event_synchronize");
  } catch (...) {
    flags.abandon(readback);
    throw;
  }
  flags.check(readback, e.recorded_on, e.watermark, "at event_synchronize");
}

}  // namespace kiln::cuda
