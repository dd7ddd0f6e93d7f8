// The plugin's side of the ABI contract: init and version negotiation, the table,
// devices, copies, streams and events, and kernel lookup.
#include <unistd.h>
#include <chrono>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "kiln/sdk/catalogue.h"
#include "plugin_fixture.h"

namespace kiln::test {
namespace {

TEST(PluginInit, ReturnsACompleteTable) {
  const kiln_plugin_api* api = CpuPlugin::get().api;
  ASSERT_NE(api, nullptr);
  EXPECT_EQ(api->struct_size, sizeof(kiln_plugin_api));
  EXPECT_GE(api->struct_size, KILN_PLUGIN_API_SIZE_1_0);
  EXPECT_EQ(api->abi_major, static_cast<uint32_t>(KILN_ABI_MAJOR));
  EXPECT_EQ(api->abi_minor, static_cast<uint32_t>(KILN_ABI_MINOR));
  EXPECT_STREQ(api->name, "cpu");
  EXPECT_STREQ(api->version, "0.1.0");
  // Every entry, the optional ones included: the CPU plugin provides them all.
  EXPECT_NE(api->describe, nullptr);
  EXPECT_NE(api->device_count, nullptr);
  EXPECT_NE(api->device_get_properties, nullptr);
  EXPECT_NE(api->device_open, nullptr);
  EXPECT_NE(api->allocate, nullptr);
  EXPECT_NE(api->deallocate, nullptr);
  EXPECT_NE(api->memory_stats, nullptr);
  EXPECT_NE(api->empty_cache, nullptr);
  EXPECT_NE(api->copy, nullptr);
  EXPECT_NE(api->stream_create, nullptr);
  EXPECT_NE(api->stream_destroy, nullptr);
  EXPECT_NE(api->stream_synchronize, nullptr);
  EXPECT_NE(api->event_create, nullptr);
  EXPECT_NE(api->event_destroy, nullptr);
  EXPECT_NE(api->event_record, nullptr);
  EXPECT_NE(api->stream_wait_event, nullptr);
  EXPECT_NE(api->event_synchronize, nullptr);
  EXPECT_NE(api->get_kernel, nullptr);
  ASSERT_NE(api->get_extension, nullptr);
  EXPECT_NE(api->copy_peer, nullptr);
  auto* collectives = static_cast<const kiln_collectives_api*>(
      api->get_extension(api->context, KILN_EXTENSION_COLLECTIVES));
  ASSERT_NE(collectives, nullptr);
  EXPECT_EQ(collectives->struct_size, sizeof(kiln_collectives_api));
  EXPECT_NE(collectives->comm_init_group, nullptr);
  EXPECT_NE(collectives->comm_destroy, nullptr);
  EXPECT_NE(collectives->all_reduce, nullptr);
  EXPECT_NE(collectives->broadcast, nullptr);
  EXPECT_NE(collectives->all_gather, nullptr);
  EXPECT_NE(collectives->reduce_scatter, nullptr);
  EXPECT_NE(collectives->barrier, nullptr);
  // One process only: processes meet through MPI, not through this plugin.
  EXPECT_EQ(collectives->comm_id_create, nullptr);
  EXPECT_EQ(collectives->comm_init_rank, nullptr);
  EXPECT_EQ(api->get_extension(api->context, "kiln.no_such_extension"), nullptr);
}

TEST(PluginInit, SecondInitReturnsTheSameTable) {
  CpuPlugin& p = CpuPlugin::get();
  const kiln_host_api host = make_host_api(KILN_ABI_MAJOR, KILN_ABI_MINOR);
  const kiln_plugin_api* api = nullptr;
  KILN_ASSERT_OK(p.init(&host, &api));
  EXPECT_EQ(api, p.api);
}

TEST(PluginInit, AcceptsANewerMinorVersion) {
  CpuPlugin& p = CpuPlugin::get();
  const kiln_host_api host = make_host_api(KILN_ABI_MAJOR, KILN_ABI_MINOR + 7);
  const kiln_plugin_api* api = nullptr;
  KILN_ASSERT_OK(p.init(&host, &api));
  EXPECT_EQ(api, p.api);
}

TEST(PluginInit, RefusesADifferentMajorNamingBothVersions) {
  CpuPlugin& p = CpuPlugin::get();
  const kiln_host_api host = make_host_api(KILN_ABI_MAJOR + 1, 3);
  const kiln_plugin_api* api = nullptr;
  const Outcome o = take(p.init(&host, &api));
  EXPECT_EQ(o.code, KILN_STATUS_ABI_MISMATCH);
  const std::string host_version = std::to_string(KILN_ABI_MAJOR + 1) + ".3";
  const std::string plugin_version =
      std::to_string(KILN_ABI_MAJOR) + "." + std::to_string(KILN_ABI_MINOR);
  EXPECT_NE(o.message.find(host_version), std::string::npos) << o.message;
  EXPECT_NE(o.message.find(plugin_version), std::string::npos) << o.message;
  EXPECT_EQ(api, nullptr) << "a refused init must not hand out a table";
}

TEST(PluginInit, RefusesAHostStructTooSmallForTheVersion) {
  CpuPlugin& p = CpuPlugin::get();
  kiln_host_api host = make_host_api(KILN_ABI_MAJOR, KILN_ABI_MINOR);
  host.struct_size = sizeof(size_t);
  const kiln_plugin_api* api = nullptr;
  EXPECT_EQ(take(p.init(&host, &api)).code, KILN_STATUS_ABI_MISMATCH);
  EXPECT_EQ(api, nullptr);
}

TEST(PluginInit, RejectsNullPointers) {
  CpuPlugin& p = CpuPlugin::get();
  const kiln_host_api host = make_host_api(KILN_ABI_MAJOR, KILN_ABI_MINOR);
  const kiln_plugin_api* api = nullptr;
  EXPECT_EQ(take(p.init(nullptr, &api)).code, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(take(p.init(&host, nullptr)).code, KILN_STATUS_INVALID_ARGUMENT);
}

TEST(PluginAbi, StructSizesMatchTheReleasedLayout) {
  // Pinned in c_api.h; these catch a header edit that grows a released struct in the
  // middle. ABI 1.1 appended copy_peer to the table and flags to the properties; 1.2
  // appended event_elapsed, range_push and range_pop to the table.
  EXPECT_EQ(sizeof(kiln_plugin_api), KILN_PLUGIN_API_SIZE_1_2);
  EXPECT_EQ(KILN_PLUGIN_API_SIZE_1_1, KILN_PLUGIN_API_SIZE_1_0 + sizeof(void*));
  EXPECT_EQ(KILN_PLUGIN_API_SIZE_1_2, KILN_PLUGIN_API_SIZE_1_1 + 3 * sizeof(void*));
  EXPECT_EQ(sizeof(kiln_device_properties), KILN_DEVICE_PROPERTIES_SIZE_1_1);
  EXPECT_EQ(sizeof(kiln_collectives_api), KILN_COLLECTIVES_API_SIZE_1_1);
  EXPECT_EQ(sizeof(kiln_kernel), KILN_KERNEL_SIZE_1_0);
  EXPECT_EQ(sizeof(kiln_op_args), KILN_OP_ARGS_SIZE_1_0);
  EXPECT_EQ(sizeof(kiln_tensor_view), KILN_TENSOR_VIEW_SIZE_1_0);
  EXPECT_EQ(sizeof(kiln_host_api), KILN_HOST_API_SIZE_1_0);
}

TEST(PluginDevices, DefaultIsOneDeviceWithSensibleProperties) {
  CpuPlugin& p = CpuPlugin::get();
  int32_t count = -1;
  KILN_ASSERT_OK(p.api->device_count(p.api->context, &count));
  if (std::getenv("KILN_CPU_DEVICES") == nullptr) {
    EXPECT_EQ(count, 1);
  }
  ASSERT_GE(count, 1);

  kiln_device_properties props{};
  props.struct_size = sizeof(props);
  KILN_ASSERT_OK(p.api->device_get_properties(p.api->context, 0, &props));
  EXPECT_EQ(std::string(props.name).rfind("CPU (", 0), 0u) << props.name;
  EXPECT_EQ(props.kind, KILN_DEVICE_KIND_CPU);
  EXPECT_GE(props.multiprocessor_count, 1);
  EXPECT_GT(props.total_memory_bytes, 0u);
  EXPECT_GT(props.free_memory_bytes, 0u);
  EXPECT_LE(props.free_memory_bytes, props.total_memory_bytes);
  EXPECT_EQ(props.memory_alignment, 64u);
  EXPECT_EQ(props.flags, static_cast<uint64_t>(KILN_DEVICE_FLAG_HOST_ACCESSIBLE));
  EXPECT_EQ(props.struct_size, sizeof(props)) << "the plugin must not touch struct_size";

  EXPECT_EQ(take(p.api->device_get_properties(p.api->context, count, &props)).code,
            KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(take(p.api->device_get_properties(p.api->context, -1, &props)).code,
            KILN_STATUS_INVALID_ARGUMENT);
  kiln_device* device = nullptr;
  EXPECT_EQ(take(p.api->device_open(p.api->context, count, &device)).code,
            KILN_STATUS_INVALID_ARGUMENT);
}

TEST(PluginDevices, PropertiesWriteOnlyWhatAnOlderStructHolds) {
  CpuPlugin& p = CpuPlugin::get();
  // A caller built against a table that ended after `name`.
  std::array<unsigned char, sizeof(kiln_device_properties)> raw;
  raw.fill(0xAB);
  kiln_device_properties* props = reinterpret_cast<kiln_device_properties*>(raw.data());
  const size_t old_size = offsetof(kiln_device_properties, kind);
  props->struct_size = old_size;
  KILN_ASSERT_OK(p.api->device_get_properties(p.api->context, 0, props));
  EXPECT_EQ(std::string(props->name).rfind("CPU (", 0), 0u);
  for (size_t i = old_size; i < raw.size(); ++i) {
    ASSERT_EQ(raw[i], 0xAB) << "byte " << i << " lies beyond the caller's struct";
  }
}

TEST(PluginDevices, OpeningTwiceGivesTheSameHandle) {
  CpuPlugin& p = CpuPlugin::get();
  kiln_device* again = nullptr;
  KILN_ASSERT_OK(p.api->device_open(p.api->context, 0, &again));
  EXPECT_EQ(again, p.device);
}

TEST(PluginDevices, DescribeNamesBlasAndThreads) {
  CpuPlugin& p = CpuPlugin::get();
  const std::string text = p.api->describe(p.api->context);
  EXPECT_NE(text.find("OpenBLAS"), std::string::npos) << text;
  EXPECT_NE(text.find("thread"), std::string::npos) << text;
  EXPECT_NE(text.find("logical device"), std::string::npos) << text;
}

// KILN_CPU_DEVICES is read once, at init, so it is tested in a child process: this
// test re-runs the binary with the variable set and only the child test enabled.
int run_child(const std::string& env, std::string* output) {
  char self[4096];
  const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0) return -1;
  self[length] = '\0';
  const std::string command = env + " '" + self +
                              "' --gtest_also_run_disabled_tests "
                              "--gtest_filter='CpuDevicesChild.DISABLED_*' 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return -1;
  char buffer[512];
  while (fgets(buffer, sizeof buffer, pipe) != nullptr) *output += buffer;
  return pclose(pipe);
}

TEST(CpuDevicesEnv, ThreeDevicesEachWithItsOwnAllocator) {
  std::string output;
  const int status = run_child("KILN_CPU_DEVICES=3 KILN_TEST_EXPECT_DEVICES=3", &output);
  EXPECT_EQ(status, 0) << output;
  EXPECT_NE(output.find("[  PASSED  ] 1 test"), std::string::npos) << output;
}

TEST(CpuDevicesEnv, InvalidValueFallsBackToOneDeviceWithAWarning) {
  std::string output;
  const int status = run_child(
      "KILN_CPU_DEVICES=banana KILN_TEST_EXPECT_DEVICES=1 KILN_TEST_EXPECT_WARNING=1", &output);
  EXPECT_EQ(status, 0) << output;
  EXPECT_NE(output.find("[  PASSED  ] 1 test"), std::string::npos) << output;
}

// Runs only in the child started above.
TEST(CpuDevicesChild, DISABLED_MatchesTheEnvironment) {
  const char* expected_text = std::getenv("KILN_TEST_EXPECT_DEVICES");
  ASSERT_NE(expected_text, nullptr) << "run through CpuDevicesEnv";
  const int expected = std::atoi(expected_text);
  CpuPlugin& p = CpuPlugin::get();
  int32_t count = 0;
  KILN_ASSERT_OK(p.api->device_count(p.api->context, &count));
  ASSERT_EQ(count, expected);
  std::set<kiln_device*> handles;
  for (int32_t i = 0; i < count; ++i) {
    kiln_device* device = nullptr;
    KILN_ASSERT_OK(p.api->device_open(p.api->context, i, &device));
    handles.insert(device);
  }
  EXPECT_EQ(handles.size(), static_cast<size_t>(count)) << "each device has its own handle";
  if (count > 1) {
    kiln_device* second = nullptr;
    KILN_ASSERT_OK(p.api->device_open(p.api->context, 1, &second));
    kiln_buffer* buffer = nullptr;
    void* data = nullptr;
    KILN_ASSERT_OK(p.api->allocate(second, 4096, 64, nullptr, &buffer, &data));
    kiln_memory_stats first_stats{}, second_stats{};
    first_stats.struct_size = second_stats.struct_size = sizeof(kiln_memory_stats);
    KILN_ASSERT_OK(p.api->memory_stats(p.device, &first_stats));
    KILN_ASSERT_OK(p.api->memory_stats(second, &second_stats));
    EXPECT_EQ(first_stats.bytes_in_use, 0u);
    EXPECT_EQ(second_stats.bytes_in_use, 4096u);
    // A buffer must go back to the device that allocated it.
    EXPECT_EQ(take(p.api->deallocate(p.device, buffer, nullptr)).code,
              KILN_STATUS_INVALID_ARGUMENT);
    KILN_EXPECT_OK(p.api->deallocate(second, buffer, nullptr));
  }
  if (std::getenv("KILN_TEST_EXPECT_WARNING") != nullptr) {
    bool warned = false;
    for (const std::string& line : captured_log()) {
      warned |=
          line.find("KILN_CPU_DEVICES") != std::string::npos && line[0] == '0' + KILN_LOG_WARNING;
    }
    EXPECT_TRUE(warned) << "expected a warning naming KILN_CPU_DEVICES";
  }
}

TEST(PluginCopy, RoundTripThroughDeviceMemory) {
  CpuPlugin& p = CpuPlugin::get();
  std::vector<uint8_t> source(1000), back(1000, 0);
  for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<uint8_t>(i * 7 + 3);
  kiln_buffer *a = nullptr, *b = nullptr;
  void *a_data = nullptr, *b_data = nullptr;
  KILN_ASSERT_OK(p.api->allocate(p.device, source.size(), 64, nullptr, &a, &a_data));
  KILN_ASSERT_OK(p.api->allocate(p.device, source.size(), 64, nullptr, &b, &b_data));
  KILN_EXPECT_OK(p.api->copy(p.device, nullptr, KILN_COPY_HOST_TO_DEVICE, a_data, source.data(),
                             source.size()));
  KILN_EXPECT_OK(
      p.api->copy(p.device, nullptr, KILN_COPY_DEVICE_TO_DEVICE, b_data, a_data, source.size()));
  KILN_EXPECT_OK(
      p.api->copy(p.device, nullptr, KILN_COPY_DEVICE_TO_HOST, back.data(), b_data, back.size()));
  EXPECT_EQ(back, source);
  KILN_EXPECT_OK(p.api->copy(p.device, nullptr, KILN_COPY_DEVICE_TO_HOST, nullptr, nullptr, 0));
  EXPECT_EQ(take(p.api->copy(p.device, nullptr, 42, back.data(), b_data, 1)).code,
            KILN_STATUS_INVALID_ARGUMENT);
  KILN_EXPECT_OK(p.api->deallocate(p.device, a, nullptr));
  KILN_EXPECT_OK(p.api->deallocate(p.device, b, nullptr));
}

TEST(PluginStreams, EventElapsedMeasuresTheTimeBetweenTwoRecords) {
  // ABI 1.2: the CPU plugin runs everything synchronously, so the device time between
  // two events is the host time between their records.
  CpuPlugin& p = CpuPlugin::get();
  ASSERT_NE(p.api->event_elapsed, nullptr);
  // The kit's profiler ranges: the CPU plugin has no tool to tell, so they do nothing
  // and must not fail.
  ASSERT_NE(p.api->range_push, nullptr);
  p.api->range_push(p.api->context, "kiln.add");
  p.api->range_pop(p.api->context);
  kiln_event *a = nullptr, *b = nullptr;
  KILN_ASSERT_OK(p.api->event_create(p.device, &a));
  KILN_ASSERT_OK(p.api->event_create(p.device, &b));
  KILN_ASSERT_OK(p.api->event_record(p.device, a, nullptr));
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(20)) {
  }
  KILN_ASSERT_OK(p.api->event_record(p.device, b, nullptr));
  double ms = -1;
  KILN_ASSERT_OK(p.api->event_elapsed(p.device, a, b, &ms));
  EXPECT_GE(ms, 20.0);
  EXPECT_LT(ms, 2000.0);
  double back = 0;
  KILN_ASSERT_OK(p.api->event_elapsed(p.device, b, a, &back));
  EXPECT_DOUBLE_EQ(back, -ms);
  EXPECT_EQ(take(p.api->event_elapsed(p.device, a, b, nullptr)).code, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(take(p.api->event_elapsed(p.device, a, nullptr, &ms)).code,
            KILN_STATUS_INVALID_ARGUMENT);
  KILN_EXPECT_OK(p.api->event_destroy(p.device, a));
  KILN_EXPECT_OK(p.api->event_destroy(p.device, b));
}

TEST(PluginStreams, CreateSynchronizeAndDestroy) {
  CpuPlugin& p = CpuPlugin::get();
  kiln_stream *s1 = nullptr, *s2 = nullptr;
  KILN_ASSERT_OK(p.api->stream_create(p.device, &s1));
  KILN_ASSERT_OK(p.api->stream_create(p.device, &s2));
  EXPECT_NE(s1, nullptr);
  EXPECT_NE(s1, s2);
  KILN_EXPECT_OK(p.api->stream_synchronize(p.device, s1));
  KILN_EXPECT_OK(p.api->stream_synchronize(p.device, nullptr));  // the default stream

  kiln_event* e = nullptr;
  KILN_ASSERT_OK(p.api->event_create(p.device, &e));
  EXPECT_NE(e, nullptr);
  KILN_EXPECT_OK(p.api->event_record(p.device, e, s1));
  KILN_EXPECT_OK(p.api->stream_wait_event(p.device, s2, e));
  KILN_EXPECT_OK(p.api->event_synchronize(p.device, e));
  KILN_EXPECT_OK(p.api->event_record(p.device, e, nullptr));

  // Handles are checked: an event is not a stream, NULL is not an event, and the
  // default stream cannot be destroyed.
  EXPECT_EQ(take(p.api->stream_synchronize(p.device, reinterpret_cast<kiln_stream*>(e))).code,
            KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(take(p.api->event_synchronize(p.device, nullptr)).code, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(take(p.api->stream_destroy(p.device, nullptr)).code, KILN_STATUS_INVALID_ARGUMENT);

  KILN_EXPECT_OK(p.api->event_destroy(p.device, e));
  KILN_EXPECT_OK(p.api->stream_destroy(p.device, s1));
  KILN_EXPECT_OK(p.api->stream_destroy(p.device, s2));
}

// Every op of the catalogue (api/ops.json, through the generated kiln/op_catalogue.h).
#define KILN_TEST_CATALOGUE_NAME(op, ...) "kiln." #op,
const char* const kCatalogue[] = {KILN_OP_CATALOGUE(KILN_TEST_CATALOGUE_NAME)};
#undef KILN_TEST_CATALOGUE_NAME
static_assert(std::size(kCatalogue) == KILN_OP_CATALOGUE_SIZE);

TEST(PluginKernels, EveryCatalogueOpIsProvided) {
  for (const char* name : kCatalogue) {
    const kiln_kernel k = get_kernel(name);
    EXPECT_NE(k.run, nullptr) << name;
    EXPECT_EQ(k.struct_size, sizeof(kiln_kernel)) << name;
  }
}

// The reference plugin takes every layout the catalogue allows, and no other.
TEST(PluginKernels, FlagsFollowTheCatalogue) {
#define KILN_TEST_CATALOGUE_FLAGS(op, version, dtypes, of_output, operand, one, layout, ...) \
  EXPECT_EQ(get_kernel("kiln." #op).flags, static_cast<uint32_t>(layout)) << "kiln." #op;
  KILN_OP_CATALOGUE(KILN_TEST_CATALOGUE_FLAGS)
#undef KILN_TEST_CATALOGUE_FLAGS
  // Spot checks that the generated flags are the intended ones.
  const uint32_t in_out = KILN_KERNEL_STRIDED_INPUTS | KILN_KERNEL_STRIDED_OUTPUTS;
  EXPECT_EQ(get_kernel("kiln.add").flags, in_out);
  EXPECT_EQ(get_kernel("kiln.fill").flags, static_cast<uint32_t>(KILN_KERNEL_STRIDED_OUTPUTS));
  EXPECT_EQ(get_kernel("kiln.sum").flags, static_cast<uint32_t>(KILN_KERNEL_STRIDED_INPUTS));
  EXPECT_EQ(get_kernel("kiln.conv2d").flags, 0u);
}

// The reference plugin's supports() takes the catalogue's dtypes for the ops whose
// rule it shares (api/ops.json "dtypes"), and its kernel really runs every dtype that
// supports() admits (a type list narrower than the rule would fail here).
TEST(PluginKernels, SupportsFollowsTheCatalogueDtypesAndTheKernelsRunThem) {
  for (const char* name : {"kiln.add", "kiln.div", "kiln.sum", "kiln.mean", "kiln.amax"}) {
    const kiln::sdk::CatalogueOp* op = kiln::sdk::find_catalogue_op(name);
    ASSERT_NE(op, nullptr) << name;
    const kiln_kernel k = get_kernel(name);
    ASSERT_NE(k.supports, nullptr) << name;
    for (int32_t dtype = KILN_DTYPE_FLOAT32; dtype <= KILN_DTYPE_BOOL; ++dtype) {
      double in_storage[2] = {1, 1}, out_storage[2] = {};
      const View in_view(in_storage, static_cast<kiln_dtype>(dtype), {1});
      const View out_view(out_storage, static_cast<kiln_dtype>(dtype), {1});
      std::vector<kiln_tensor_view> in(static_cast<size_t>(op->num_inputs), in_view.view);
      std::vector<kiln_tensor_view> out(static_cast<size_t>(op->num_outputs), out_view.view);
      const kiln_op_args args{sizeof(kiln_op_args), in.data(), in.size(), out.data(),
                              out.size(),           nullptr,   0,         nullptr};
      const bool admitted = k.supports(k.context, &args) != 0;
      EXPECT_EQ(admitted, kiln::sdk::dtype_in(op->dtypes, dtype))
          << name << " dtype " << kiln::sdk::dtype_name(dtype);
      if (admitted) KILN_EXPECT_OK(k.run(k.context, &args));
    }
  }
}

TEST(PluginKernels, UnknownNameOrVersionLeavesRunNull) {
  CpuPlugin& p = CpuPlugin::get();
  for (auto [name, version] : {std::pair{"kiln.nope", 1}, std::pair{"kiln.add", 99},
                               std::pair{"kiln.add", 0}, std::pair{"acme.fused_gelu", 1}}) {
    kiln_kernel k{};
    k.struct_size = sizeof(k);
    KILN_EXPECT_OK(p.api->get_kernel(p.device, name, version, &k));
    EXPECT_EQ(k.run, nullptr) << name << " v" << version;
  }
}

TEST(PluginKernels, KernelErrorsNameTheOp) {
  std::vector<float> a(4), y(4);
  View va = view_of(a, KILN_DTYPE_FLOAT32, {4}), vy = view_of(y, KILN_DTYPE_FLOAT32, {4});
  const Outcome o = run_op("kiln.add", {&va}, {&vy});  // one input short
  EXPECT_EQ(o.code, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(o.message.rfind("kiln.add: ", 0), 0u) << o.message;
}

}  // namespace
}  // namespace kiln::test
