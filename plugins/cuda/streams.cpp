#include "streams.h"

#include <nvtx3/nvToolsExt.h>

#include "allocator.h"
#include "device.h"
#include "error_flags.h"
#include "kiln/sdk/status.h"

namespace kiln::cuda {

namespace {

// Tagged so a stream passed as an event (or a stale handle) is caught.
constexpr uint32_t kStreamTag = 0x5354524du;  // "STRM"
constexpr uint32_t kEventTag = 0x45564e54u;   // "EVNT"

struct StreamHandle {
  uint32_t tag;
  Device* device;
  cudaStream_t stream;
};

struct EventHandle {
  uint32_t tag;
  Device* device;
  cudaEvent_t event;
  // Set by event_record: the stream and the error-slot watermark at that point, so
  // event_synchronize checks exactly the ops the event covers.
  cudaStream_t recorded_on;
  uint64_t watermark;
};

StreamHandle& stream_handle(kiln_stream* stream, Device& device) {
  auto* h = reinterpret_cast<StreamHandle*>(stream);
  KILN_SDK_CHECK(h != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null stream");
  KILN_SDK_CHECK(h->tag == kStreamTag, KILN_STATUS_INVALID_ARGUMENT, "not a stream handle");
  KILN_SDK_CHECK(h->device == &device, KILN_STATUS_INVALID_ARGUMENT, "stream belongs to ",
                 h->device->label(), ", not ", device.label());
  return *h;
}

// `any_device`: a stream may wait for an event of another GPU (CUDA orders that), so
// stream_wait_event accepts one; everything else must match the device.
EventHandle& event_handle(kiln_event* event, Device& device, bool any_device = false) {
  auto* h = reinterpret_cast<EventHandle*>(event);
  KILN_SDK_CHECK(h != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null event");
  KILN_SDK_CHECK(h->tag == kEventTag, KILN_STATUS_INVALID_ARGUMENT, "not an event handle");
  KILN_SDK_CHECK(any_device || h->device == &device, KILN_STATUS_INVALID_ARGUMENT,
                 "event belongs to ", h->device->label(), ", not ", device.label());
  return *h;
}

}  // namespace

cudaStream_t stream_of(Device& device, kiln_stream* stream) {
  if (stream == nullptr) return device.default_stream();
  return stream_handle(stream, device).stream;
}

void synchronize_stream(Device& device, cudaStream_t stream, const char* where) {
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
}

void check_device_errors(Device& device, cudaStream_t stream, const char* where) {
  if (!device.error_flags().pending(stream)) return;
  synchronize_stream(device, stream, where);
}

kiln_status* stream_create(kiln_device* device, kiln_stream** stream) {
  return sdk::guard("stream_create", [&] {
    Device& d = from_handle(device);
    KILN_SDK_CHECK(stream != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null output pointer");
    auto* h = new StreamHandle{kStreamTag, &d, nullptr};
    d.make_current();
    if (const cudaError_t status = cudaStreamCreateWithFlags(&h->stream, cudaStreamNonBlocking);
        status != cudaSuccess) {
      delete h;
      d.fail(status, "cudaStreamCreateWithFlags");
    }
    d.user_streams().fetch_add(1, std::memory_order_relaxed);
    *stream = reinterpret_cast<kiln_stream*>(h);
  });
}

kiln_status* stream_destroy(kiln_device* device, kiln_stream* stream) {
  return sdk::guard("stream_destroy", [&] {
    Device& d = from_handle(device);
    KILN_SDK_CHECK(stream != nullptr, KILN_STATUS_INVALID_ARGUMENT,
                   "the default (NULL) stream cannot be destroyed");
    StreamHandle& h = stream_handle(stream, d);
    d.make_current();
    // Work on the stream may still be running and cudaStreamDestroy does not wait for
    // it. What the allocator cached and the error slots the stream's ops own must
    // outlive the handle, which CUDA may hand out again: make the default stream wait
    // for this one and give them to the default stream.
    cudaEvent_t done = d.events().get();
    try {
      d.record_event(done, h.stream, "stream_destroy");
      if (const cudaError_t status = cudaStreamWaitEvent(d.default_stream(), done, 0);
          status != cudaSuccess) {
        d.fail(status, "cudaStreamWaitEvent");
      }
    } catch (...) {
      d.events().put(done);
      throw;
    }
    d.events().put(done);
    d.allocator().retag_stream(h.stream, d.default_stream());
    d.error_flags().retag_stream(h.stream, d.default_stream());
    const cudaError_t status = cudaStreamDestroy(h.stream);
    h.tag = 0;  // a second destroy of the dangling handle is then likelier to be caught
    delete &h;
    d.user_streams().fetch_sub(1, std::memory_order_relaxed);
    if (status != cudaSuccess) d.fail(status, "cudaStreamDestroy");
  });
}

kiln_status* stream_synchronize(kiln_device* device, kiln_stream* stream) {
  return sdk::guard([&] {
    Device& d = from_handle(device);
    synchronize_stream(d, stream_of(d, stream), "at stream_synchronize");
  });
}

kiln_status* event_create(kiln_device* device, kiln_event** event) {
  return sdk::guard("event_create", [&] {
    Device& d = from_handle(device);
    KILN_SDK_CHECK(event != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null output pointer");
    auto* h = new EventHandle{kEventTag, &d, nullptr, nullptr, 0};
    d.make_current();
    // Timing enabled (ABI 1.2's event_elapsed times ops for Kiln's profiler); the
    // plugin's internal events, which only order work, keep cudaEventDisableTiming.
    if (const cudaError_t status = cudaEventCreateWithFlags(&h->event, cudaEventDefault);
        status != cudaSuccess) {
      delete h;
      d.fail(status, "cudaEventCreateWithFlags");
    }
    *event = reinterpret_cast<kiln_event*>(h);
  });
}

kiln_status* event_destroy(kiln_device* device, kiln_event* event) {
  return sdk::guard("event_destroy", [&] {
    Device& d = from_handle(device);
    EventHandle& h = event_handle(event, d);
    const cudaError_t status = cudaEventDestroy(h.event);
    h.tag = 0;
    delete &h;
    if (status != cudaSuccess) d.fail(status, "cudaEventDestroy");
  });
}

kiln_status* event_record(kiln_device* device, kiln_event* event, kiln_stream* stream) {
  return sdk::guard("event_record", [&] {
    Device& d = from_handle(device);
    EventHandle& h = event_handle(event, d);
    const cudaStream_t s = stream_of(d, stream);
    const uint64_t watermark = d.error_flags().watermark();
    d.record_event(h.event, s, "cudaEventRecord");
    h.recorded_on = s;
    h.watermark = watermark;
  });
}

kiln_status* stream_wait_event(kiln_device* device, kiln_stream* stream, kiln_event* event) {
  return sdk::guard("stream_wait_event", [&] {
    Device& d = from_handle(device);
    const cudaStream_t s = stream_of(d, stream);
    EventHandle& h = event_handle(event, d, /*any_device=*/true);
    if (const cudaError_t status = cudaStreamWaitEvent(s, h.event, 0); status != cudaSuccess) {
      d.fail(status, "cudaStreamWaitEvent");
    }
  });
}

kiln_status* event_elapsed(kiln_device* device, kiln_event* start, kiln_event* end,
                           double* milliseconds) {
  return sdk::guard("event_elapsed", [&] {
    Device& d = from_handle(device);
    KILN_SDK_CHECK(milliseconds != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null output pointer");
    EventHandle& a = event_handle(start, d);
    EventHandle& b = event_handle(end, d);
    d.make_current();
    float ms = 0;
    if (const cudaError_t status = cudaEventElapsedTime(&ms, a.event, b.event);
        status != cudaSuccess) {
      d.fail(status, "cudaEventElapsedTime");
    }
    *milliseconds = static_cast<double>(ms);
  });
}

void range_push(void*, const char* name) {
  if (name != nullptr) nvtxRangePushA(name);
}

void range_pop(void*) { nvtxRangePop(); }

kiln_status* event_synchronize(kiln_device* device, kiln_event* event) {
  return sdk::guard([&] {
    Device& d = from_handle(device);
    EventHandle& h = event_handle(event, d);
    d.wait_event(h.event, "event_synchronize");
    if (h.recorded_on == nullptr) return;
    // The ops the event covers are done; read their slots on the device's check stream
    // (the recording stream may have more work queued behind the event).
    ErrorFlags& flags = d.error_flags();
    if (!flags.pending(h.recorded_on, h.watermark)) return;
    ErrorFlags::Readback readback = flags.enqueue_readback(d.check_stream());
    try {
      d.wait_stream(d.check_stream(), "event_synchronize");
    } catch (...) {
      flags.abandon(readback);
      throw;
    }
    flags.check(readback, h.recorded_on, h.watermark, "at event_synchronize");
  });
}

}  // namespace kiln::cuda
