#include "streams.h"

#include <chrono>

#include "device.h"
#include "kiln/sdk/status.h"

namespace kiln::cpu {

namespace {

// Tagged so a stream passed as an event (or a handle from another device) is caught.
constexpr uint32_t kStreamTag = 0x5354524du;  // "STRM"
constexpr uint32_t kEventTag = 0x45564e54u;   // "EVNT"

struct Handle {
  uint32_t tag;
  Device* device;
  std::chrono::steady_clock::time_point recorded_at{};  // events: the last event_record
};

// `any_device`: waiting on another CPU device's event is fine (it is already complete),
// which multi-device code relies on; everything else must match the device.
Handle* check_handle(void* handle, uint32_t tag, Device& device, const char* what,
                     bool any_device = false) {
  auto* h = static_cast<Handle*>(handle);
  KILN_SDK_CHECK(h != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null ", what);
  KILN_SDK_CHECK(h->tag == tag, KILN_STATUS_INVALID_ARGUMENT, "not a ", what, " handle");
  KILN_SDK_CHECK(any_device || h->device == &device, KILN_STATUS_INVALID_ARGUMENT, what,
                 " belongs to cpu:", h->device->index(), ", not ", device.label());
  return h;
}

// NULL is the default stream and always valid.
void check_stream(kiln_stream* stream, Device& device) {
  if (stream != nullptr) check_handle(stream, kStreamTag, device, "stream");
}

}  // namespace

kiln_status* stream_create(kiln_device* device, kiln_stream** stream) {
  return sdk::guard("stream_create", [&] {
    Device& d = from_handle(device);
    KILN_SDK_CHECK(stream != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null output pointer");
    *stream = reinterpret_cast<kiln_stream*>(new Handle{kStreamTag, &d, {}});
  });
}

kiln_status* stream_destroy(kiln_device* device, kiln_stream* stream) {
  return sdk::guard("stream_destroy", [&] {
    Device& d = from_handle(device);
    KILN_SDK_CHECK(stream != nullptr, KILN_STATUS_INVALID_ARGUMENT,
                   "the default (NULL) stream cannot be destroyed");
    Handle* h = check_handle(stream, kStreamTag, d, "stream");
    h->tag = 0;  // a second destroy of a dangling handle is then likelier to be caught
    delete h;
  });
}

kiln_status* stream_synchronize(kiln_device* device, kiln_stream* stream) {
  return sdk::guard("stream_synchronize", [&] { check_stream(stream, from_handle(device)); });
}

kiln_status* event_create(kiln_device* device, kiln_event** event) {
  return sdk::guard("event_create", [&] {
    Device& d = from_handle(device);
    KILN_SDK_CHECK(event != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null output pointer");
    *event = reinterpret_cast<kiln_event*>(new Handle{kEventTag, &d, {}});
  });
}

kiln_status* event_destroy(kiln_device* device, kiln_event* event) {
  return sdk::guard("event_destroy", [&] {
    Handle* h = check_handle(event, kEventTag, from_handle(device), "event");
    h->tag = 0;
    delete h;
  });
}

kiln_status* event_record(kiln_device* device, kiln_event* event, kiln_stream* stream) {
  return sdk::guard("event_record", [&] {
    Device& d = from_handle(device);
    Handle* h = check_handle(event, kEventTag, d, "event");
    check_stream(stream, d);
    h->recorded_at = std::chrono::steady_clock::now();  // the work before it is done
  });
}

kiln_status* event_elapsed(kiln_device* device, kiln_event* start, kiln_event* end,
                           double* milliseconds) {
  return sdk::guard("event_elapsed", [&] {
    Device& d = from_handle(device);
    KILN_SDK_CHECK(milliseconds != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null output pointer");
    const Handle* a = check_handle(start, kEventTag, d, "event");
    const Handle* b = check_handle(end, kEventTag, d, "event");
    *milliseconds =
        std::chrono::duration<double, std::milli>(b->recorded_at - a->recorded_at).count();
  });
}

kiln_status* stream_wait_event(kiln_device* device, kiln_stream* stream, kiln_event* event) {
  return sdk::guard("stream_wait_event", [&] {
    Device& d = from_handle(device);
    check_stream(stream, d);
    check_handle(event, kEventTag, d, "event", /*any_device=*/true);
  });
}

kiln_status* event_synchronize(kiln_device* device, kiln_event* event) {
  return sdk::guard("event_synchronize",
                    [&] { check_handle(event, kEventTag, from_handle(device), "event"); });
}

}  // namespace kiln::cpu
