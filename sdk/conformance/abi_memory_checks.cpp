// ABI checks of one device: allocator and statistics, copies, streams and events.
// Device memory is never dereferenced here; it is only read back through copy().
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "abi_common.h"

namespace kiln::conformance {

namespace {

struct Buffer {
  kiln_buffer* handle = nullptr;
  void* data = nullptr;
  size_t bytes = 0;
};

kiln_memory_stats stats_of(AbiSession& session, Check& check) {
  kiln_memory_stats stats{};
  stats.struct_size = sizeof stats;
  check.expect_ok(session.take(session.api()->memory_stats(session.device(), &stats)),
                  "memory_stats");
  return stats;
}

std::vector<unsigned char> pattern(size_t n, unsigned seed) {
  std::vector<unsigned char> out(n);
  for (size_t i = 0; i < n; ++i)
    out[i] = static_cast<unsigned char>((i * 131 + seed * 17 + 7) & 0xFF);
  return out;
}

// Allocates `bytes`, reporting a failure in `check`; the returned handle may be null.
Buffer allocate(AbiSession& session, Check& check, size_t bytes, size_t alignment,
                kiln_stream* stream = nullptr) {
  Buffer b;
  b.bytes = bytes;
  check.expect_ok(
      session.take(
          session.api()->allocate(session.device(), bytes, alignment, stream, &b.handle, &b.data)),
      "allocate(" + std::to_string(bytes) + " bytes, alignment " + std::to_string(alignment) + ")");
  return b;
}

void release(AbiSession& session, Check& check, Buffer& b, kiln_stream* stream = nullptr) {
  if (b.handle == nullptr) return;
  check.expect_ok(session.take(session.api()->deallocate(session.device(), b.handle, stream)),
                  "deallocate");
  b.handle = nullptr;
}

bool copy(AbiSession& session, Check& check, int32_t kind, void* dst, const void* src, size_t bytes,
          kiln_stream* stream, const std::string& what) {
  return check.expect_ok(
      session.take(session.api()->copy(session.device(), stream, kind, dst, src, bytes)), what);
}

std::string hex(uintptr_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

void abi_memory(const AbiTarget& target, Reporter& reporter) {
  AbiSession session(target.path);
  if (!start_session(session, target, reporter, "memory", /*open_device=*/true)) return;
  const kiln_plugin_api* api = session.api();
  kiln_device* device = session.device();
  kiln_device_properties props{};
  props.struct_size = sizeof props;
  session.take(api->device_get_properties(api->context, target.device, &props));
  {
    Check check(reporter, "allocate and statistics");
    const kiln_memory_stats start = stats_of(session, check);
    std::vector<Buffer> buffers;
    size_t requested = 0;
    for (size_t bytes : {size_t{0}, size_t{1}, size_t{1000}, size_t{1} << 20}) {
      buffers.push_back(allocate(session, check, bytes, 64));
      requested += bytes;
      if (bytes != 0 && buffers.back().handle != nullptr && buffers.back().data == nullptr)
        check.fail("allocate(" + std::to_string(bytes) + ") returned a NULL data pointer");
    }
    for (size_t alignment : {size_t{256}, size_t{4096}}) {
      buffers.push_back(allocate(session, check, 100, alignment));
      requested += 100;
      const auto address = reinterpret_cast<uintptr_t>(buffers.back().data);
      if (buffers.back().handle != nullptr && address % alignment != 0)
        check.fail("allocate(alignment " + std::to_string(alignment) + ") returned " +
                   hex(address));
    }
    buffers.push_back(allocate(session, check, 24, 1));
    requested += 24;
    const auto address = reinterpret_cast<uintptr_t>(buffers.back().data);
    if (props.memory_alignment > 1 && buffers.back().handle != nullptr &&
        address % props.memory_alignment != 0)
      check.fail("inconsistent properties: memory_alignment is " +
                 std::to_string(props.memory_alignment) + " but allocate(alignment 1) returned " +
                 hex(address));
    const kiln_memory_stats during = stats_of(session, check);
    const uint64_t count = buffers.size();
    if (during.bytes_in_use < start.bytes_in_use + requested)
      check.fail("bytes_in_use grew by " +
                 std::to_string(during.bytes_in_use - start.bytes_in_use) + " for " +
                 std::to_string(requested) + " bytes allocated");
    if (during.num_allocations != start.num_allocations + count)
      check.fail("num_allocations grew by " +
                 std::to_string(during.num_allocations - start.num_allocations) + " for " +
                 std::to_string(count) + " allocations");
    if (during.peak_bytes_in_use < during.bytes_in_use)
      check.fail("peak_bytes_in_use is below bytes_in_use");
    if (during.bytes_reserved < during.bytes_in_use)
      check.fail("bytes_reserved is below bytes_in_use");
    for (Buffer& b : buffers) release(session, check, b);
    const kiln_memory_stats end = stats_of(session, check);
    if (end.bytes_in_use != start.bytes_in_use)
      check.fail("memory leak: bytes_in_use is " + std::to_string(end.bytes_in_use) +
                 " after freeing everything, was " + std::to_string(start.bytes_in_use));
    if (end.peak_bytes_in_use < during.bytes_in_use)
      check.fail("peak_bytes_in_use went down after the allocations were freed");
    if (api->empty_cache != nullptr)
      check.expect_ok(session.take(api->empty_cache(device)), "empty_cache");
    check.note(std::to_string(count) + " allocations; statistics consistent, back to start");
  }
  {
    Check check(reporter, "allocate refuses bad arguments");
    kiln_buffer* handle = nullptr;
    void* data = nullptr;
    check.expect_error(session.take(api->allocate(device, 64, 3, nullptr, &handle, &data)),
                       KILN_STATUS_INVALID_ARGUMENT, "allocate(alignment 3)");
    check.expect_error(session.take(api->allocate(device, 64, 64, nullptr, nullptr, &data)),
                       KILN_STATUS_INVALID_ARGUMENT, "allocate(NULL buffer pointer)");
    check.expect_error(session.take(api->allocate(device, 64, 64, nullptr, &handle, nullptr)),
                       KILN_STATUS_INVALID_ARGUMENT, "allocate(NULL data pointer)");
    // 4 EiB: no device has it; the answer must be a status, not a crash.
    const Outcome huge =
        session.take(api->allocate(device, size_t{1} << 62, 64, nullptr, &handle, &data));
    if (huge.ok()) {
      check.fail("allocate(4 EiB) succeeded");
      session.take(api->deallocate(device, handle, nullptr));
    } else if (huge.code != KILN_STATUS_OUT_OF_MEMORY) {
      check.warn("allocate(4 EiB) returned " + std::string(status_code_name(huge.code)) +
                 ", expected OUT_OF_MEMORY (\"" + huge.message + "\")");
    } else {
      check.note("out of memory reported: \"" + huge.message + "\"");
    }
    check.expect_error(session.take(api->memory_stats(device, nullptr)),
                       KILN_STATUS_INVALID_ARGUMENT, "memory_stats(NULL)");
    SentinelBox<kiln_memory_stats> small(offsetof(kiln_memory_stats, bytes_in_use) +
                                         sizeof(uint64_t));
    if (check.expect_ok(session.take(api->memory_stats(device, small.get())),
                        "memory_stats with a smaller struct_size") &&
        !small.tail_intact())
      check.fail("memory_stats wrote past the caller's struct_size");
  }
  report_status_defects(session, reporter);
}

void abi_copies(const AbiTarget& target, Reporter& reporter) {
  AbiSession session(target.path);
  if (!start_session(session, target, reporter, "copies", /*open_device=*/true)) return;
  Check check(reporter, "copies round-trip");
  const kiln_memory_stats start = stats_of(session, check);
  for (size_t bytes : {size_t{1}, size_t{1001}, (size_t{1} << 20) + 5}) {
    reporter.begin("abi: copies of " + std::to_string(bytes) + " bytes");
    Buffer a = allocate(session, check, bytes + 16, 64),
           b = allocate(session, check, bytes + 16, 64);
    if (a.handle == nullptr || b.handle == nullptr) break;
    const auto source = pattern(bytes, static_cast<unsigned>(bytes));
    std::vector<unsigned char> back(bytes, 0);
    // Host -> device -> device (at odd offsets) -> host.
    char* a_at = static_cast<char*>(a.data) + 3;
    char* b_at = static_cast<char*>(b.data) + 7;
    if (copy(session, check, KILN_COPY_HOST_TO_DEVICE, a_at, source.data(), bytes, nullptr,
             "copy host to device") &&
        copy(session, check, KILN_COPY_DEVICE_TO_DEVICE, b_at, a_at, bytes, nullptr,
             "copy device to device") &&
        copy(session, check, KILN_COPY_DEVICE_TO_HOST, back.data(), b_at, bytes, nullptr,
             "copy device to host") &&
        back != source)
      check.fail("host -> device -> device -> host changed the data (" + std::to_string(bytes) +
                 " bytes at offsets 3 and 7)");
    release(session, check, a);
    release(session, check, b);
  }
  {
    reporter.begin("abi: copy refuses bad arguments");
    Buffer a = allocate(session, check, 64, 64);
    unsigned char host[64] = {};
    if (a.handle != nullptr) {
      check.expect_ok(session.take(session.api()->copy(session.device(), nullptr,
                                                       KILN_COPY_HOST_TO_DEVICE, a.data, host, 0)),
                      "copy of 0 bytes");
      check.expect_error(
          session.take(session.api()->copy(session.device(), nullptr, 99, a.data, host, 8)),
          KILN_STATUS_INVALID_ARGUMENT, "copy(kind 99)");
      check.expect_error(
          session.take(session.api()->copy(session.device(), nullptr, KILN_COPY_HOST_TO_DEVICE,
                                           a.data, nullptr, 8)),
          KILN_STATUS_INVALID_ARGUMENT, "copy(NULL source, 8 bytes)");
    }
    release(session, check, a);
  }
  const kiln_memory_stats end = stats_of(session, check);
  if (end.bytes_in_use != start.bytes_in_use)
    check.fail("memory leak: bytes_in_use " + std::to_string(start.bytes_in_use) + " -> " +
               std::to_string(end.bytes_in_use));
  check.note("1 B, 1001 B and 1 MiB + 5 B, at unaligned offsets, in all three directions");
  check.finish();
  report_status_defects(session, reporter);
}

namespace {

// ABI 1.2 event_elapsed: the time across a copy recorded between two events on the
// default stream is finite and not negative; a NULL output is refused.
void check_event_elapsed(AbiSession& session, Check& check, void* device_data,
                         const void* host_data, size_t bytes) {
  const kiln_plugin_api* api = session.api();
  kiln_device* device = session.device();
  kiln_event *start = nullptr, *end = nullptr;
  double ms = -1;
  if (check.expect_ok(session.take(api->event_create(device, &start)), "event_create") &&
      check.expect_ok(session.take(api->event_create(device, &end)), "event_create") &&
      check.expect_ok(session.take(api->event_record(device, start, nullptr)), "event_record") &&
      copy(session, check, KILN_COPY_HOST_TO_DEVICE, device_data, host_data, bytes, nullptr,
           "copy between two events") &&
      check.expect_ok(session.take(api->event_record(device, end, nullptr)), "event_record") &&
      check.expect_ok(session.take(api->stream_synchronize(device, nullptr)),
                      "stream_synchronize") &&
      check.expect_ok(session.take(api->event_elapsed(device, start, end, &ms)), "event_elapsed")) {
    if (!(ms >= 0) || !std::isfinite(ms))
      check.fail("event_elapsed across a copy answered " + std::to_string(ms) + " ms");
    check.expect_error(session.take(api->event_elapsed(device, start, end, nullptr)),
                       KILN_STATUS_INVALID_ARGUMENT, "event_elapsed(NULL output)");
  }
  for (kiln_event* e : {start, end})
    if (e != nullptr) check.expect_ok(session.take(api->event_destroy(device, e)), "event_destroy");
}

}  // namespace

void abi_streams(const AbiTarget& target, Reporter& reporter) {
  AbiSession session(target.path);
  if (!start_session(session, target, reporter, "streams", /*open_device=*/true)) return;
  const kiln_plugin_api* api = session.api();
  kiln_device* device = session.device();
  Check check(reporter, "streams and events");
  check.expect_ok(session.take(api->stream_synchronize(device, nullptr)),
                  "stream_synchronize(default stream)");
  if (api->stream_create == nullptr) {
    check.note("no streams (stream_create is NULL): the default stream only");
    return;
  }
  kiln_stream *s1 = nullptr, *s2 = nullptr;
  if (!check.expect_ok(session.take(api->stream_create(device, &s1)), "stream_create") ||
      !check.expect_ok(session.take(api->stream_create(device, &s2)), "stream_create (second)"))
    return;
  if (s1 == nullptr || s1 == s2) check.fail("stream_create returned NULL or the same handle twice");
  const kiln_memory_stats start = stats_of(session, check);
  const size_t bytes = (size_t{1} << 22) + 3;  // large enough to be asynchronous somewhere
  const auto source = pattern(bytes, 5);
  std::vector<unsigned char> back(bytes, 0);
  Buffer a = allocate(session, check, bytes, 64, s1), b = allocate(session, check, bytes, 64, s1);
  const bool events = api->event_create != nullptr;
  if (a.handle != nullptr && b.handle != nullptr) {
    // Ordering on one stream.
    if (copy(session, check, KILN_COPY_HOST_TO_DEVICE, a.data, source.data(), bytes, s1,
             "copy host to device on a stream") &&
        copy(session, check, KILN_COPY_DEVICE_TO_DEVICE, b.data, a.data, bytes, s1,
             "copy device to device on the same stream") &&
        check.expect_ok(session.take(api->stream_synchronize(device, s1)), "stream_synchronize") &&
        copy(session, check, KILN_COPY_DEVICE_TO_HOST, back.data(), b.data, bytes, s1,
             "copy device to host") &&
        back != source)
      check.fail("work on one stream did not run in order");
    if (events) {
      // s2 waits for an event recorded on s1 after a copy there.
      kiln_event* event = nullptr;
      std::fill(back.begin(), back.end(), 0);
      const auto second = pattern(bytes, 9);
      if (check.expect_ok(session.take(api->event_create(device, &event)), "event_create") &&
          copy(session, check, KILN_COPY_HOST_TO_DEVICE, a.data, second.data(), bytes, s1,
               "copy on stream 1") &&
          check.expect_ok(session.take(api->event_record(device, event, s1)), "event_record") &&
          check.expect_ok(session.take(api->stream_wait_event(device, s2, event)),
                          "stream_wait_event") &&
          copy(session, check, KILN_COPY_DEVICE_TO_DEVICE, b.data, a.data, bytes, s2,
               "copy on stream 2") &&
          check.expect_ok(session.take(api->stream_synchronize(device, s2)),
                          "stream_synchronize(stream 2)") &&
          check.expect_ok(session.take(api->event_synchronize(device, event)),
                          "event_synchronize") &&
          copy(session, check, KILN_COPY_DEVICE_TO_HOST, back.data(), b.data, bytes, s2,
               "copy device to host") &&
          back != second)
        check.fail("stream 2 did not wait for the event recorded on stream 1");
      if (event != nullptr)
        check.expect_ok(session.take(api->event_destroy(device, event)), "event_destroy");
    }
    if (events && api->abi_minor >= 2 && api->struct_size >= KILN_PLUGIN_API_SIZE_1_2 &&
        api->event_elapsed != nullptr)
      check_event_elapsed(session, check, a.data, source.data(), bytes);
  }
  release(session, check, a, s1);
  release(session, check, b, s1);
  check.expect_ok(session.take(api->stream_synchronize(device, s1)), "stream_synchronize");
  check.expect_ok(session.take(api->stream_destroy(device, s1)), "stream_destroy");
  check.expect_ok(session.take(api->stream_destroy(device, s2)), "stream_destroy (second)");
  const kiln_memory_stats end = stats_of(session, check);
  if (end.bytes_in_use != start.bytes_in_use)
    check.fail("memory leak: bytes_in_use " + std::to_string(start.bytes_in_use) + " -> " +
               std::to_string(end.bytes_in_use));
  check.note(events ? "in-stream order and a cross-stream event wait hold"
                    : "in-stream order holds (no events: a synchronous plugin)");
  check.finish();
  report_status_defects(session, reporter);
}

}  // namespace kiln::conformance
