// Streams, events and copies through the C ABI, on the device the frontend opened.
#include <vector>

#include "cuda_test_util.h"

namespace kiln::test::cuda {
namespace {

struct View {
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  kiln_tensor_view view{};
  View(void* data, kiln_dtype dtype, std::vector<int64_t> s) : shape(std::move(s)) {
    int64_t stride = 1;
    strides.resize(shape.size());
    for (size_t d = shape.size(); d-- > 0;) {
      strides[d] = stride;
      stride *= shape[d];
    }
    view.struct_size = sizeof view;
    view.data = data;
    view.shape = shape.data();
    view.strides = strides.data();
    view.ndim = static_cast<int32_t>(shape.size());
    view.dtype = dtype;
  }
};

// Runs kiln.fill(value) into `view` on `stream`.
std::string fill(const RawPlugin& raw, kiln_stream* stream, const View& out, double value) {
  kiln_kernel kernel{};
  kernel.struct_size = sizeof kernel;
  std::string error = take(raw.api->get_kernel(raw.device, "kiln.fill", 1, &kernel));
  if (!error.empty()) return error;
  if (kernel.run == nullptr) return "no kiln.fill kernel";
  kiln_attr attr{};
  attr.name = "value";
  attr.type = KILN_ATTR_FLOAT;
  attr.value.f = value;
  kiln_op_args args{};
  args.struct_size = sizeof args;
  args.num_outputs = 1;
  args.attrs = &attr;
  args.num_attrs = 1;
  args.stream = stream;
  kiln_tensor_view view = out.view;
  view.device = raw.device;  // the kernel finds its device from the operands
  args.outputs = &view;
  return take(kernel.run(kernel.context, &args));
}

class CudaStreams : public ::testing::Test {
 protected:
  void SetUp() override {
    KILN_REQUIRE_CUDA();
    synchronize(kCuda0);  // opens cuda:0 through the frontend
    ASSERT_NE(raw_plugin().device, nullptr);
  }
  const RawPlugin& raw() const { return raw_plugin(); }
};

TEST_F(CudaStreams, WorkOnACreatedStreamIsOrderedByAnEvent) {
  const kiln_plugin_api* api = raw().api;
  kiln_device* device = raw().device;
  kiln_stream* stream = nullptr;
  kiln_event* event = nullptr;
  ASSERT_EQ(take(api->stream_create(device, &stream)), "");
  ASSERT_EQ(take(api->event_create(device, &event)), "");
  const int64_t n = int64_t{1} << 24;  // 64 MiB: long enough to still run when the copy is enqueued
  kiln_buffer* buffer = nullptr;
  void* data = nullptr;
  ASSERT_EQ(take(api->allocate(device, n * 4, 64, stream, &buffer, &data)), "");
  ASSERT_EQ(fill(raw(), stream, View(data, KILN_DTYPE_FLOAT32, {n}), 3.0), "");
  ASSERT_EQ(take(api->event_record(device, event, stream)), "");
  // The default stream waits for the fill, then copies to the host.
  ASSERT_EQ(take(api->stream_wait_event(device, nullptr, event)), "");
  std::vector<float> host(static_cast<size_t>(n), 0.0f);
  ASSERT_EQ(take(api->copy(device, nullptr, KILN_COPY_DEVICE_TO_HOST, host.data(), data, n * 4)),
            "");
  EXPECT_EQ(host.front(), 3.0f);
  EXPECT_EQ(host[static_cast<size_t>(n / 2)], 3.0f);
  EXPECT_EQ(host.back(), 3.0f);
  EXPECT_EQ(take(api->deallocate(device, buffer, stream)), "");
  EXPECT_EQ(take(api->event_destroy(device, event)), "");
  EXPECT_EQ(take(api->stream_destroy(device, stream)), "");
}

TEST_F(CudaStreams, SynchronizingAStreamOrAnEventWaitsForItsWork) {
  const kiln_plugin_api* api = raw().api;
  kiln_device* device = raw().device;
  kiln_stream* stream = nullptr;
  kiln_event* event = nullptr;
  ASSERT_EQ(take(api->stream_create(device, &stream)), "");
  ASSERT_EQ(take(api->event_create(device, &event)), "");
  const int64_t n = 1 << 20;
  kiln_buffer* buffer = nullptr;
  void* data = nullptr;
  ASSERT_EQ(take(api->allocate(device, n * 8, 64, stream, &buffer, &data)), "");
  ASSERT_EQ(fill(raw(), stream, View(data, KILN_DTYPE_FLOAT64, {n}), -1.5), "");
  ASSERT_EQ(take(api->event_record(device, event, stream)), "");
  const kiln_cuda_debug_counters before = counters();
  EXPECT_EQ(take(api->event_synchronize(device, event)), "");
  EXPECT_EQ(take(api->stream_synchronize(device, stream)), "");
  EXPECT_EQ(counters().host_synchronizations, before.host_synchronizations + 2);
  std::vector<double> host(static_cast<size_t>(n));
  ASSERT_EQ(take(api->copy(device, stream, KILN_COPY_DEVICE_TO_HOST, host.data(), data, n * 8)),
            "");
  EXPECT_EQ(host.front(), -1.5);
  EXPECT_EQ(host.back(), -1.5);
  EXPECT_EQ(take(api->deallocate(device, buffer, stream)), "");
  EXPECT_EQ(take(api->event_destroy(device, event)), "");
  EXPECT_EQ(take(api->stream_destroy(device, stream)), "");
}

TEST_F(CudaStreams, UploadsDoNotWaitAndDownloadsWaitOnce) {
  const kiln_plugin_api* api = raw().api;
  kiln_device* device = raw().device;
  const size_t n = 1000;
  kiln_buffer* buffer = nullptr;
  void* data = nullptr;
  ASSERT_EQ(take(api->allocate(device, n * 4, 64, nullptr, &buffer, &data)), "");
  std::vector<int32_t> source(n);
  const kiln_cuda_debug_counters before = counters();
  for (int round = 0; round < 20; ++round) {
    for (size_t i = 0; i < n; ++i) source[i] = static_cast<int32_t>(i) * round;
    // The ABI lets the caller reuse `source` at once: the plugin staged it.
    ASSERT_EQ(
        take(api->copy(device, nullptr, KILN_COPY_HOST_TO_DEVICE, data, source.data(), n * 4)), "");
  }
  EXPECT_EQ(counters().host_synchronizations, before.host_synchronizations);
  std::vector<int32_t> back(n, -1);
  ASSERT_EQ(take(api->copy(device, nullptr, KILN_COPY_DEVICE_TO_HOST, back.data(), data, n * 4)),
            "");
  EXPECT_EQ(counters().host_synchronizations, before.host_synchronizations + 1);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(back[i], static_cast<int32_t>(i) * 19) << i;
  EXPECT_EQ(take(api->deallocate(device, buffer, nullptr)), "");
}

TEST_F(CudaStreams, MemoryReleasedOnADestroyedStreamIsReused) {
  if (allocator_name() != "caching") GTEST_SKIP() << "checks the caching allocator's cache";
  const kiln_plugin_api* api = raw().api;
  kiln_device* device = raw().device;
  kiln_stream* stream = nullptr;
  ASSERT_EQ(take(api->stream_create(device, &stream)), "");
  const size_t bytes = size_t{6} << 20;
  kiln_buffer* buffer = nullptr;
  void* data = nullptr;
  ASSERT_EQ(take(api->allocate(device, bytes, 64, stream, &buffer, &data)), "");
  ASSERT_EQ(take(api->deallocate(device, buffer, stream)), "");
  ASSERT_EQ(take(api->stream_destroy(device, stream)), "");
  kiln_memory_stats before{};
  before.struct_size = sizeof before;
  ASSERT_EQ(take(api->memory_stats(device, &before)), "");
  ASSERT_EQ(take(api->allocate(device, bytes, 64, nullptr, &buffer, &data)), "");
  kiln_memory_stats after{};
  after.struct_size = sizeof after;
  ASSERT_EQ(take(api->memory_stats(device, &after)), "");
  EXPECT_EQ(after.num_system_allocations, before.num_system_allocations);
  EXPECT_EQ(take(api->deallocate(device, buffer, nullptr)), "");
}

TEST_F(CudaStreams, HandlesAreChecked) {
  const kiln_plugin_api* api = raw().api;
  kiln_device* device = raw().device;
  kiln_event* event = nullptr;
  ASSERT_EQ(take(api->event_create(device, &event)), "");
  // An event passed as a stream, and the default stream passed to stream_destroy.
  EXPECT_NE(take(api->stream_synchronize(device, reinterpret_cast<kiln_stream*>(event)))
                .find("unknown stream handle"),
            std::string::npos);
  EXPECT_NE(take(api->stream_destroy(device, nullptr)).find("default"), std::string::npos);
  EXPECT_EQ(take(api->event_destroy(device, event)), "");
}

}  // namespace
}  // namespace kiln::test::cuda
