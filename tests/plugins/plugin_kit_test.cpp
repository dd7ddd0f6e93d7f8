// The plugin kit (kiln/sdk/plugin.h) on its own: a small backend compiled into this
// test executable, driven through the kiln_plugin_api table the kit builds, as the
// loader would. kiln-conformance certifies kit-built plugins as a whole
// (tests/conformance); this checks what conformance cannot provoke: handles used
// twice or from elsewhere, exceptions of each kind, a backend whose constructor
// throws, and the host's log.
#include <gtest/gtest.h>
#include <kiln/sdk/plugin.h>
#include <chrono>
#include <thread>

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace kittest {

bool fail_next_construction = true;  // the first construction throws

class TestDevice : public kiln::sdk::BackendDevice {
 public:
  void* allocate(size_t bytes, size_t alignment, kiln::sdk::Stream*) override {
    return std::aligned_alloc(alignment < 64 ? 64 : alignment,
                              bytes < 64 ? 64 : (bytes + 63) / 64 * 64);
  }
  void deallocate(void* data, kiln::sdk::Stream*) override { std::free(data); }
  void copy(kiln::sdk::CopyKind, void* dst, const void* src, size_t bytes,
            kiln::sdk::Stream*) override {
    std::memcpy(dst, src, bytes);
  }
  void copy_peer(void* dst, kiln::sdk::BackendDevice&, const void* src, size_t bytes,
                 kiln::sdk::Stream*) override {
    std::memcpy(dst, src, bytes);
  }
  void memory_stats(kiln_memory_stats& stats) override { stats.bytes_reserved += 1000; }
  const kiln::sdk::KernelTable* kernels() override;
};

// Keeps its own block records (as a caching allocator does): they are the handles.
class CachingTestDevice : public kiln::sdk::CachingDevice {
 public:
  struct Record {
    uint32_t tag;
    void* data;
    size_t bytes;
  };
  static constexpr uint32_t kLive = 0x4c495645u;
  Block allocate_block(size_t bytes, size_t alignment, kiln::sdk::Stream*) override {
    auto* record = new Record{
        kLive, std::aligned_alloc(alignment, (bytes / alignment + 1) * alignment), bytes};
    live_bytes += bytes;
    return {reinterpret_cast<kiln_buffer*>(record), record->data};
  }
  void deallocate_block(kiln_buffer* handle, kiln::sdk::Stream*) override {
    auto* record = reinterpret_cast<Record*>(handle);
    KILN_SDK_CHECK(record->tag == kLive, KILN_STATUS_INVALID_ARGUMENT, "not a live block");
    live_bytes -= record->bytes;
    std::free(record->data);
    record->tag = 0;  // kept, so that a second free is caught (a test's leak)
  }
  void copy(kiln::sdk::CopyKind, void* dst, const void* src, size_t bytes,
            kiln::sdk::Stream*) override {
    std::memcpy(dst, src, bytes);
  }
  void memory_stats(kiln_memory_stats& stats) override { stats.bytes_in_use = live_bytes; }
  uint64_t live_bytes = 0;
};

class OtherDevice : public kiln::sdk::BackendDevice {
 public:
  void open() override { ++opens; }
  int opens = 0;
  void* allocate(size_t, size_t, kiln::sdk::Stream*) override { return nullptr; }
  void deallocate(void*, kiln::sdk::Stream*) override {}
  void copy(kiln::sdk::CopyKind, void*, const void*, size_t, kiln::sdk::Stream*) override {}
};

class TestBackend : public kiln::sdk::Backend {
 public:
  TestBackend() {
    if (fail_next_construction) {
      fail_next_construction = false;
      throw std::runtime_error("no test device found");
    }
    kiln::sdk::log(KILN_LOG_INFO, "constructed");
  }
  int32_t device_count() override { return 3; }
  kiln::sdk::BackendDevice& device(int32_t index) override {
    if (index == 2) return third_;
    return index == 0 ? static_cast<kiln::sdk::BackendDevice&>(first_) : second_;
  }
  std::string describe() override { return "three test devices"; }
  bool peer_copies() override { return true; }

 private:
  TestDevice first_;
  OtherDevice second_;
  CachingTestDevice third_;
};

// kiln.test_throw: throws what its "mode" attribute names.
void test_throw(const kiln::sdk::OpArgs& args) {
  const std::string mode = args.attr_string("mode");
  if (mode == "error") throw kiln::sdk::Error(KILN_STATUS_UNSUPPORTED, "not for these shapes");
  if (mode == "bad_alloc") throw std::bad_alloc();
  if (mode == "runtime") throw std::runtime_error("something broke");
  if (mode == "int") throw 42;
  // "device": the kernel finds its own BackendDevice from an operand's handle.
  kiln::sdk::device_from_handle<TestDevice>(args.raw().outputs[0].device);
  kiln::sdk::device_from_handle<OtherDevice>(args.raw().outputs[0].device);  // throws
}

const kiln::sdk::KernelTable* TestDevice::kernels() {
  static const kiln::sdk::KernelTable table({
      {"kiln.test_throw", &kiln::sdk::run_kernel<test_throw>, nullptr, 0},
  });
  return &table;
}

}  // namespace kittest

KILN_SDK_PLUGIN(kittest::TestBackend, "kittest", "9.8.7")

namespace {

std::vector<std::string> log_lines;
void capture_log(int32_t level, const char* plugin, const char* message) {
  log_lines.push_back(std::to_string(level) + " " + plugin + ": " + message);
}

kiln_host_api host(int32_t log_level = KILN_LOG_INFO) {
  kiln_host_api h{};
  h.struct_size = sizeof h;
  h.abi_major = KILN_ABI_MAJOR;
  h.abi_minor = KILN_ABI_MINOR;
  h.kiln_version = "test";
  h.log = &capture_log;
  h.log_level = log_level;
  return h;
}

struct Outcome {
  int32_t code = KILN_STATUS_OK;
  std::string message;
};
Outcome take(kiln_status* s) {
  Outcome o;
  if (s == nullptr) return o;
  o.code = s->code;
  o.message = s->message;
  s->destroy(s);
  return o;
}

// Initialized once per process (the tests below run in order, after InitFirstFails).
const kiln_plugin_api* api = nullptr;
kiln_device* device = nullptr;

class PluginKit : public ::testing::Test {
 protected:
  void SetUp() override {
    if (api == nullptr) {
      const kiln_host_api h = host();
      // The first construction throws (see PluginKitInit) unless that test ran.
      if (take(kiln_plugin_init(&h, &api)).code != KILN_STATUS_OK) {
        ASSERT_EQ(take(kiln_plugin_init(&h, &api)).code, KILN_STATUS_OK);
      }
      ASSERT_EQ(take(api->device_open(api->context, 0, &device)).code, KILN_STATUS_OK);
    }
  }
};

TEST(PluginKitInit, AThrowingConstructorIsAnErrorAndIsRetried) {
  ASSERT_TRUE(kittest::fail_next_construction);
  const kiln_host_api h = host();
  const kiln_plugin_api* table = nullptr;
  const Outcome first = take(kiln_plugin_init(&h, &table));
  EXPECT_EQ(first.code, KILN_STATUS_INTERNAL);
  EXPECT_NE(first.message.find("kittest: no test device found"), std::string::npos)
      << first.message;
  EXPECT_EQ(table, nullptr);
  ASSERT_EQ(take(kiln_plugin_init(&h, &table)).code, KILN_STATUS_OK);
  ASSERT_NE(table, nullptr);
  const kiln_plugin_api* again = nullptr;
  ASSERT_EQ(take(kiln_plugin_init(&h, &again)).code, KILN_STATUS_OK);
  EXPECT_EQ(again, table) << "a second init returns the same table";
  EXPECT_EQ(std::string(table->name), "kittest");
  EXPECT_EQ(std::string(table->version), "9.8.7");
  EXPECT_EQ(table->struct_size, sizeof(kiln_plugin_api));
  EXPECT_EQ(std::string(table->describe(table->context)), "three test devices");
  // The backend logged through the host while it was being built.
  ASSERT_FALSE(log_lines.empty());
  EXPECT_EQ(log_lines.back(), "2 kittest: constructed");
}

TEST_F(PluginKit, BuffersFreedTwiceOrFromElsewhereAreRefused) {
  kiln_buffer* buffer = nullptr;
  void* data = nullptr;
  ASSERT_EQ(take(api->allocate(device, 100, 64, nullptr, &buffer, &data)).code, KILN_STATUS_OK);
  kiln_memory_stats stats{};
  stats.struct_size = sizeof stats;
  ASSERT_EQ(take(api->memory_stats(device, &stats)).code, KILN_STATUS_OK);
  EXPECT_EQ(stats.bytes_in_use, 100u);
  EXPECT_EQ(stats.bytes_reserved, 1100u) << "BackendDevice::memory_stats refines the kit's figures";
  EXPECT_EQ(take(api->deallocate(device, buffer, nullptr)).code, KILN_STATUS_OK);
  const Outcome twice = take(api->deallocate(device, buffer, nullptr));
  EXPECT_EQ(twice.code, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(twice.message.find("already freed"), std::string::npos) << twice.message;
  EXPECT_NE(twice.message.find("kittest: deallocate on kittest:0"), std::string::npos)
      << twice.message;
  ASSERT_EQ(take(api->memory_stats(device, &stats)).code, KILN_STATUS_OK);
  EXPECT_EQ(stats.bytes_in_use, 0u);
  EXPECT_EQ(stats.peak_bytes_in_use, 100u);
  // A handle that is not a device of this plugin.
  uint64_t not_a_device[8] = {};
  const Outcome foreign = take(
      api->allocate(reinterpret_cast<kiln_device*>(not_a_device), 8, 64, nullptr, &buffer, &data));
  EXPECT_EQ(foreign.code, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(foreign.message.find("not a device handle"), std::string::npos) << foreign.message;
  // A slot with the kit's magic that another kit-built plugin handed out.
  kiln::sdk::detail::DeviceSlot other_plugins;
  const Outcome other = take(api->allocate(reinterpret_cast<kiln_device*>(&other_plugins), 8, 64,
                                           nullptr, &buffer, &data));
  EXPECT_EQ(other.code, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(other.message.find("not a device handle of this plugin"), std::string::npos)
      << other.message;
}

TEST_F(PluginKit, SynchronousDevicesTimeEventsByTheirRecords) {
  // The kit fills ABI 1.2's event_elapsed (the host time between two event_record
  // calls, right for a synchronous device) and the range hooks.
  ASSERT_NE(api->event_elapsed, nullptr);
  ASSERT_NE(api->range_push, nullptr);
  ASSERT_NE(api->range_pop, nullptr);
  kiln_event *a = nullptr, *b = nullptr;
  ASSERT_EQ(take(api->event_create(device, &a)).code, KILN_STATUS_OK);
  ASSERT_EQ(take(api->event_create(device, &b)).code, KILN_STATUS_OK);
  ASSERT_EQ(take(api->event_record(device, a, nullptr)).code, KILN_STATUS_OK);
  std::this_thread::sleep_for(std::chrono::milliseconds(15));
  ASSERT_EQ(take(api->event_record(device, b, nullptr)).code, KILN_STATUS_OK);
  double ms = -1;
  ASSERT_EQ(take(api->event_elapsed(device, a, b, &ms)).code, KILN_STATUS_OK);
  EXPECT_GE(ms, 15.0);
  EXPECT_LT(ms, 2000.0);
  EXPECT_EQ(take(api->event_elapsed(device, a, b, nullptr)).code, KILN_STATUS_INVALID_ARGUMENT);
  api->range_push(api->context, "a scope");  // the default backend ignores ranges
  api->range_pop(api->context);
  EXPECT_EQ(take(api->event_destroy(device, a)).code, KILN_STATUS_OK);
  EXPECT_EQ(take(api->event_destroy(device, b)).code, KILN_STATUS_OK);
}

TEST_F(PluginKit, StreamsAndEventsAreCheckedHandles) {
  kiln_stream* stream = nullptr;
  kiln_event* event = nullptr;
  ASSERT_EQ(take(api->stream_create(device, &stream)).code, KILN_STATUS_OK);
  ASSERT_EQ(take(api->event_create(device, &event)).code, KILN_STATUS_OK);
  EXPECT_EQ(take(api->event_record(device, event, stream)).code, KILN_STATUS_OK);
  EXPECT_EQ(take(api->stream_wait_event(device, nullptr, event)).code, KILN_STATUS_OK);
  EXPECT_EQ(take(api->event_synchronize(device, nullptr)).code, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(take(api->event_destroy(device, event)).code, KILN_STATUS_OK);
  EXPECT_EQ(take(api->event_record(device, event, stream)).code, KILN_STATUS_INVALID_ARGUMENT)
      << "a destroyed event";
  EXPECT_EQ(take(api->stream_destroy(device, stream)).code, KILN_STATUS_OK);
  EXPECT_EQ(take(api->stream_destroy(device, stream)).code, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(take(api->stream_synchronize(device, stream)).code, KILN_STATUS_INVALID_ARGUMENT);
}

TEST_F(PluginKit, CachingDevicesHandOutTheirOwnBlocks) {
  kiln_device* caching = nullptr;
  ASSERT_EQ(take(api->device_open(api->context, 2, &caching)).code, KILN_STATUS_OK);
  kiln_buffer* buffer = nullptr;
  void* data = nullptr;
  ASSERT_EQ(take(api->allocate(caching, 100, 64, nullptr, &buffer, &data)).code, KILN_STATUS_OK);
  const auto* record = reinterpret_cast<const kittest::CachingTestDevice::Record*>(buffer);
  EXPECT_EQ(record->data, data) << "the handle is the device's own record";
  EXPECT_EQ(take(api->allocate(caching, 8, 3, nullptr, &buffer, &data)).code,
            KILN_STATUS_INVALID_ARGUMENT)
      << "the kit still checks the arguments";
  kiln_memory_stats stats{};
  stats.struct_size = sizeof stats;
  ASSERT_EQ(take(api->memory_stats(caching, &stats)).code, KILN_STATUS_OK);
  EXPECT_EQ(stats.bytes_in_use, 100u);
  EXPECT_EQ(stats.num_allocations, 0u) << "the kit keeps no counters for a CachingDevice";
  auto* handle = const_cast<kiln_buffer*>(reinterpret_cast<const kiln_buffer*>(record));
  EXPECT_EQ(take(api->deallocate(caching, handle, nullptr)).code, KILN_STATUS_OK);
  const Outcome twice = take(api->deallocate(caching, handle, nullptr));
  EXPECT_EQ(twice.code, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(twice.message, "kittest: deallocate on kittest:2: not a live block");
  EXPECT_EQ(take(api->deallocate(caching, nullptr, nullptr)).code, KILN_STATUS_INVALID_ARGUMENT);
  delete record;
}

TEST_F(PluginKit, PeerCopiesAndWaitsAcrossDevices) {
  ASSERT_NE(api->copy_peer, nullptr) << "the backend says its devices copy to each other";
  kiln_device* other = nullptr;
  ASSERT_EQ(take(api->device_open(api->context, 2, &other)).code, KILN_STATUS_OK);
  const std::vector<int> from = {1, 2, 3};
  std::vector<int> to(3, 0);
  ASSERT_EQ(take(api->copy_peer(device, nullptr, to.data(), other, from.data(), 12)).code,
            KILN_STATUS_OK);
  EXPECT_EQ(to, from);
  const Outcome unsupported =
      take(api->copy_peer(other, nullptr, to.data(), device, from.data(), 12));
  EXPECT_EQ(unsupported.code, KILN_STATUS_UNSUPPORTED) << "BackendDevice::copy_peer's default";
  EXPECT_EQ(take(api->copy_peer(device, nullptr, nullptr, other, from.data(), 12)).code,
            KILN_STATUS_INVALID_ARGUMENT);
  // A stream waits for another device's event (the ABI allows it), not a dead one.
  kiln_event* event = nullptr;
  ASSERT_EQ(take(api->event_create(other, &event)).code, KILN_STATUS_OK);
  ASSERT_EQ(take(api->event_record(other, event, nullptr)).code, KILN_STATUS_OK);
  EXPECT_EQ(take(api->stream_wait_event(device, nullptr, event)).code, KILN_STATUS_OK);
  EXPECT_EQ(take(api->event_synchronize(device, event)).code, KILN_STATUS_INVALID_ARGUMENT)
      << "only a wait may name another device's event";
  ASSERT_EQ(take(api->event_destroy(other, event)).code, KILN_STATUS_OK);
  const Outcome dead = take(api->stream_wait_event(device, nullptr, event));
  EXPECT_EQ(dead.code, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(dead.message.find("unknown event handle"), std::string::npos) << dead.message;
  EXPECT_EQ(take(api->stream_destroy(device, nullptr)).code, KILN_STATUS_INVALID_ARGUMENT)
      << "the default stream is not destroyed";
}

TEST_F(PluginKit, PropertiesHaveDefaultsAndRespectTheCallersSize) {
  kiln_device_properties p{};
  p.struct_size = sizeof p;
  ASSERT_EQ(take(api->device_get_properties(api->context, 1, &p)).code, KILN_STATUS_OK);
  auto& second = kiln::sdk::detail::state().backend->device(1);
  EXPECT_EQ(dynamic_cast<kittest::OtherDevice&>(second).opens, 0)
      << "describing a device does not open it";
  kiln_device* handle = nullptr;
  ASSERT_EQ(take(api->device_open(api->context, 1, &handle)).code, KILN_STATUS_OK);
  EXPECT_EQ(dynamic_cast<kittest::OtherDevice&>(second).opens, 1)
      << "BackendDevice::open at device_open";
  EXPECT_STREQ(p.name, "kittest device 1");
  EXPECT_EQ(p.kind, KILN_DEVICE_KIND_ACCELERATOR);
  // An older caller whose struct ends after `kind`: nothing beyond it is written.
  unsigned char bytes[sizeof(kiln_device_properties)];
  std::memset(bytes, 0xAB, sizeof bytes);
  auto* small = reinterpret_cast<kiln_device_properties*>(bytes);
  small->struct_size = offsetof(kiln_device_properties, kind) + sizeof(int32_t);
  ASSERT_EQ(take(api->device_get_properties(api->context, 0, small)).code, KILN_STATUS_OK);
  EXPECT_EQ(small->kind, KILN_DEVICE_KIND_ACCELERATOR);
  for (size_t i = small->struct_size; i < sizeof bytes; ++i) ASSERT_EQ(bytes[i], 0xAB) << i;
  EXPECT_EQ(take(api->device_get_properties(api->context, 3, &p)).code,
            KILN_STATUS_INVALID_ARGUMENT);
}

TEST_F(PluginKit, KernelExceptionsBecomeStatusesNamingTheOp) {
  kiln_kernel kernel{};
  kernel.struct_size = sizeof kernel;
  ASSERT_EQ(take(api->get_kernel(device, "kiln.test_throw", 1, &kernel)).code, KILN_STATUS_OK);
  ASSERT_NE(kernel.run, nullptr);
  int64_t shape[1] = {1}, strides[1] = {1};
  float value = 0;
  kiln_tensor_view out{sizeof(kiln_tensor_view), &value, 0, shape, strides, 1,
                       KILN_DTYPE_FLOAT32,       device};
  auto run = [&](const char* mode) {
    kiln_attr attr{};
    attr.name = "mode";
    attr.type = KILN_ATTR_STRING;
    attr.value.s = mode;
    kiln_op_args args{sizeof args, nullptr, 0, &out, 1, &attr, 1, nullptr};
    return take(kernel.run(kernel.context, &args));
  };
  const Outcome error = run("error");
  EXPECT_EQ(error.code, KILN_STATUS_UNSUPPORTED);
  EXPECT_EQ(error.message, "kiln.test_throw: not for these shapes");
  EXPECT_EQ(run("bad_alloc").code, KILN_STATUS_OUT_OF_MEMORY);
  const Outcome runtime = run("runtime");
  EXPECT_EQ(runtime.code, KILN_STATUS_INTERNAL);
  EXPECT_EQ(runtime.message, "kiln.test_throw: something broke");
  const Outcome unknown = run("int");
  EXPECT_EQ(unknown.code, KILN_STATUS_INTERNAL);
  EXPECT_NE(unknown.message.find("unknown exception"), std::string::npos) << unknown.message;
  const Outcome wrong_type = run("device");
  EXPECT_EQ(wrong_type.code, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(wrong_type.message.find("another BackendDevice type"), std::string::npos)
      << wrong_type.message;
}

TEST(PluginKitTable, TwoKernelsForOneOpAreRefused) {
  try {
    const kiln::sdk::KernelTable table({
        {"kiln.add", &kiln::sdk::run_kernel<kittest::test_throw>, nullptr, 0},
        {"kiln.neg", &kiln::sdk::run_kernel<kittest::test_throw>, nullptr, 0},
        {"kiln.add", &kiln::sdk::run_kernel<kittest::test_throw>, nullptr, 0},
    });
    FAIL() << "a table with kiln.add twice was accepted";
  } catch (const kiln::sdk::Error& e) {
    EXPECT_EQ(e.code(), KILN_STATUS_INTERNAL);
    EXPECT_STREQ(e.what(), "two kernels are registered for kiln.add");
  }
}

TEST_F(PluginKit, LogRespectsTheHostsLevel) {
  log_lines.clear();
  kiln::sdk::log(KILN_LOG_WARNING, "shown");
  kiln::sdk::log(KILN_LOG_DEBUG, "hidden: the host's level is info");
  ASSERT_EQ(log_lines.size(), 1u);
  EXPECT_EQ(log_lines[0], "1 kittest: shown");
}

}  // namespace
