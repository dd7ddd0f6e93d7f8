// The CUDA plugin's "kiln.collectives.v1" table (NCCL) and its copy_peer. Only
// one-GPU machines are lent today, so the collectives run with one rank on cuda:0
// (plus a second rank that never comes, for the timeout); groups of several GPUs are
// unverified. The table's presence and its refusals of bad arguments run everywhere.
#include <kiln/distributed.h>
#include <kiln/nn.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

#include "cuda_test_util.h"
#include "support/kiln_test.h"

namespace kiln::test::cuda {
namespace {

using distributed::Communicator;
using distributed::ReduceOp;

// Device memory through the raw table (the frontend offers no device pointers).
struct DeviceBuffer {
  const kiln_plugin_api* api = raw_plugin().api;
  kiln_buffer* buffer = nullptr;
  void* data = nullptr;
  explicit DeviceBuffer(size_t bytes) {
    EXPECT_EQ(take(api->allocate(raw_plugin().device, bytes, 256, nullptr, &buffer, &data)), "");
  }
  ~DeviceBuffer() { EXPECT_EQ(take(api->deallocate(raw_plugin().device, buffer, nullptr)), ""); }
  void upload(const std::vector<float>& v) {
    EXPECT_EQ(take(api->copy(raw_plugin().device, nullptr, KILN_COPY_HOST_TO_DEVICE, data, v.data(),
                             v.size() * sizeof(float))),
              "");
  }
  std::vector<float> download(size_t n) {
    std::vector<float> v(n);
    EXPECT_EQ(take(api->copy(raw_plugin().device, nullptr, KILN_COPY_DEVICE_TO_HOST, v.data(), data,
                             n * sizeof(float))),
              "");
    return v;
  }
};

#if KILN_CUDA_NCCL

const kiln_collectives_api* collectives() {
  const RawPlugin& raw = raw_plugin();
  if (raw.api == nullptr || raw.api->get_extension == nullptr) return nullptr;
  return static_cast<const kiln_collectives_api*>(
      raw.api->get_extension(raw.api->context, KILN_EXTENSION_COLLECTIVES));
}

// A status's code (KILN_STATUS_OK for none) and message, consumed.
struct Outcome {
  int32_t code = KILN_STATUS_OK;
  std::string message;
};
Outcome outcome(kiln_status* status) {
  Outcome o;
  if (status != nullptr) o.code = status->code;
  o.message = take(status);
  return o;
}

bool mapped(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  return text.str().find("/" + name) != std::string::npos;
}

// Named CudaPlugin.*: these two run on every machine (the cuda.plugin CTest).
TEST(CudaPlugin, CollectivesTableIsOfferedAndNcclOpenedOnlyWhenUsed) {
  ASSERT_TRUE(cuda_plugin().found) << why_no_cuda();
  const kiln_collectives_api* t = collectives();
  ASSERT_NE(t, nullptr);
  EXPECT_GE(t->struct_size, KILN_COLLECTIVES_API_SIZE_1_1);
  EXPECT_NE(t->comm_init_group, nullptr);
  EXPECT_NE(t->comm_id_create, nullptr);
  EXPECT_NE(t->comm_init_rank, nullptr);
  EXPECT_NE(t->comm_destroy, nullptr);
  EXPECT_NE(t->all_reduce, nullptr);
  EXPECT_NE(t->broadcast, nullptr);
  EXPECT_NE(t->all_gather, nullptr);
  EXPECT_NE(t->reduce_scatter, nullptr);
  EXPECT_NE(t->barrier, nullptr);
  // The frontend took it (a table it found incomplete would have been logged and dropped).
  const CudaPluginInfo p = cuda_plugin();
  for (const DeviceInfo& d : p.info.devices) EXPECT_TRUE(d.collectives) << d.device.str();
  if (!why_no_cuda().empty()) {
    EXPECT_FALSE(mapped("libnccl")) << "loading the plugin opened NCCL";
  }
}

TEST(CudaPlugin, CollectivesRefuseBadArgumentsBeforeNcclIsNeeded) {
  ASSERT_TRUE(cuda_plugin().found) << why_no_cuda();
  const kiln_collectives_api* t = collectives();
  ASSERT_NE(t, nullptr);
  void* context = raw_plugin().api->context;
  kiln_comm* comm = nullptr;
  Outcome o = outcome(t->comm_init_group(context, nullptr, 0, 10, &comm));
  EXPECT_EQ(o.code, KILN_STATUS_INVALID_ARGUMENT) << o.message;
  o = outcome(
      t->all_reduce(nullptr, nullptr, nullptr, nullptr, 0, KILN_DTYPE_FLOAT32, KILN_REDUCE_SUM));
  EXPECT_EQ(o.code, KILN_STATUS_INVALID_ARGUMENT) << o.message;
  EXPECT_NE(o.message.find("null communicator"), std::string::npos) << o.message;
  kiln_comm_id id{};
  o = outcome(t->comm_init_rank(nullptr, &id, 2, 5, 10, &comm));
  EXPECT_EQ(o.code, KILN_STATUS_INVALID_ARGUMENT) << o.message;
  EXPECT_EQ(outcome(t->comm_destroy(nullptr)).code, KILN_STATUS_INVALID_ARGUMENT);
}

// -- one rank on cuda:0 ---------------------------------------------------------------------

// Rank 0's values (small multiples of 0.5, or integers: exact in every dtype).
Tensor values(int64_t n, DType dtype) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] =
        static_cast<double>((i * 7 % 32) - 16) * (is_floating(dtype) ? 0.5 : 1);
  return from_vector<double>(v, {n}).to(dtype).to(kCuda0);
}

TEST(CudaCollectives, OneRankGivesWhatTheHostComputes) {
  KILN_REQUIRE_CUDA();
  Communicator comm({kCuda0});
  ASSERT_TRUE(comm.native()) << "the CUDA plugin's collectives were not used";
  for (DType dtype : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int32,
                      DType::Int64}) {
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{1001}}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + ", " + std::to_string(n) + " elements");
      const std::vector<double> expected = values(n, dtype).to_vector<double>();
      // With one rank every reduction of x is x (AVG divides by 1).
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Min, ReduceOp::Max}) {
        Tensor in = values(n, dtype), out = empty({n}, TensorOptions().dtype(dtype).device(kCuda0));
        comm.all_reduce({in}, {out}, op);
        EXPECT_EQ(out.to_vector<double>(), expected) << distributed::reduce_op_name(op);
        comm.all_reduce({in}, op);  // in place
        EXPECT_EQ(in.to_vector<double>(), expected) << distributed::reduce_op_name(op);
        Tensor scattered = empty({n}, TensorOptions().dtype(dtype).device(kCuda0));
        comm.reduce_scatter({values(n, dtype)}, {scattered}, op);
        EXPECT_EQ(scattered.to_vector<double>(), expected) << distributed::reduce_op_name(op);
      }
      Tensor broadcast_out = zeros({n}, TensorOptions().dtype(dtype).device(kCuda0));
      comm.broadcast({values(n, dtype)}, {broadcast_out}, 0);
      EXPECT_EQ(broadcast_out.to_vector<double>(), expected);
      Tensor gathered = zeros({n}, TensorOptions().dtype(dtype).device(kCuda0));
      comm.all_gather({values(n, dtype)}, {gathered});
      EXPECT_EQ(gathered.to_vector<double>(), expected);
    }
  }
  // A large one, for NCCL's chunking.
  const int64_t big = (int64_t{1} << 20) + 3;
  Tensor x = values(big, DType::Float32);
  const std::vector<double> expected = x.to_vector<double>();
  comm.all_reduce({x}, ReduceOp::Sum);
  EXPECT_EQ(x.to_vector<double>(), expected);
  comm.barrier();
}

TEST(CudaCollectives, AreEnqueuedWithoutWaitingForTheGpu) {
  KILN_REQUIRE_CUDA();
  Communicator comm({kCuda0});
  Tensor x = ones({4096}, TensorOptions().device(kCuda0));
  comm.all_reduce({x});  // the first one may set NCCL's connections up
  const uint64_t before = counters().host_synchronizations;
  for (int i = 0; i < 20; ++i) {
    comm.all_reduce({x}, ReduceOp::Sum);
    comm.broadcast({x}, 0);
  }
  EXPECT_EQ(counters().host_synchronizations, before);
  EXPECT_DOUBLE_EQ(x.sum().item<double>(), 4096.0);
}

TEST(CudaCollectives, DtypesNcclCannotReduceAreRefusedAndTheGroupGoesOn) {
  KILN_REQUIRE_CUDA();
  const kiln_collectives_api* t = collectives();
  ASSERT_NE(t, nullptr);
  kiln_device* device = raw_plugin().device;
  kiln_comm* comm = nullptr;
  ASSERT_EQ(take(t->comm_init_group(raw_plugin().api->context, &device, 1, 60, &comm)), "");
  DeviceBuffer buffer(64 * sizeof(float));
  Outcome o = outcome(
      t->all_reduce(comm, nullptr, buffer.data, buffer.data, 64, KILN_DTYPE_BOOL, KILN_REDUCE_MAX));
  EXPECT_EQ(o.code, KILN_STATUS_UNSUPPORTED) << o.message;
  EXPECT_NE(o.message.find("cannot be reduced"), std::string::npos) << o.message;
  o = outcome(t->reduce_scatter(comm, nullptr, buffer.data, buffer.data, 64, 99, KILN_REDUCE_SUM));
  EXPECT_EQ(o.code, KILN_STATUS_INVALID_ARGUMENT) << o.message;
  o = outcome(t->all_reduce(comm, nullptr, buffer.data, buffer.data, 64, KILN_DTYPE_FLOAT32, 17));
  EXPECT_EQ(o.code, KILN_STATUS_INVALID_ARGUMENT) << o.message;
  o = outcome(t->broadcast(comm, nullptr, buffer.data, buffer.data, 64, KILN_DTYPE_FLOAT32, 1));
  EXPECT_EQ(o.code, KILN_STATUS_INVALID_ARGUMENT) << o.message;
  // Broadcast moves any dtype; the communicator still works after the refusals.
  EXPECT_EQ(take(t->broadcast(comm, nullptr, buffer.data, buffer.data, 256, KILN_DTYPE_BOOL, 0)),
            "");
  std::vector<float> v(64);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) - 20.5f;
  buffer.upload(v);
  EXPECT_EQ(take(t->all_reduce(comm, nullptr, buffer.data, buffer.data, 64, KILN_DTYPE_FLOAT32,
                               KILN_REDUCE_MAX)),
            "");
  EXPECT_EQ(take(t->barrier(comm, nullptr)), "");
  EXPECT_EQ(buffer.download(64), v);
  EXPECT_EQ(take(t->comm_destroy(comm)), "");
}

TEST(CudaCollectives, OneProcessGroupThroughAnId) {
  KILN_REQUIRE_CUDA();
  const kiln_collectives_api* t = collectives();
  ASSERT_NE(t, nullptr);
  kiln_comm_id id{};
  ASSERT_EQ(take(t->comm_id_create(raw_plugin().api->context, &id)), "");
  kiln_comm* comm = nullptr;
  ASSERT_EQ(take(t->comm_init_rank(raw_plugin().device, &id, 1, 0, 60, &comm)), "");
  DeviceBuffer buffer(8 * sizeof(float));
  const std::vector<float> v = {1, 2, 3, 4, 5, 6, 7, 8};
  buffer.upload(v);
  EXPECT_EQ(take(t->all_reduce(comm, nullptr, buffer.data, buffer.data, 8, KILN_DTYPE_FLOAT32,
                               KILN_REDUCE_SUM)),
            "");
  EXPECT_EQ(take(t->barrier(comm, nullptr)), "");
  EXPECT_EQ(buffer.download(8), v);
  EXPECT_EQ(take(t->comm_destroy(comm)), "");
}

// Rank 1 of 2 never joins: rank 0's comm_init_rank ends in an error within its
// timeout (NCCL alone would wait for ever), and the process goes on.
TEST(CudaCollectives, ARankThatNeverComesIsAnErrorNotAHang) {
  KILN_REQUIRE_CUDA();
  const kiln_collectives_api* t = collectives();
  ASSERT_NE(t, nullptr);
  kiln_comm_id id{};
  ASSERT_EQ(take(t->comm_id_create(raw_plugin().api->context, &id)), "");
  kiln_comm* comm = nullptr;
  const auto start = std::chrono::steady_clock::now();
  const Outcome o = outcome(t->comm_init_rank(raw_plugin().device, &id, 2, 0, 3, &comm));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(o.code, KILN_STATUS_DEVICE_ERROR) << o.message;
  EXPECT_NE(o.message.find("did not complete within 3 s"), std::string::npos) << o.message;
  EXPECT_LT(seconds, 30) << "the timeout was 3 s";
  Communicator ok({kCuda0});  // NCCL still serves new groups
  Tensor x = ones({16}, TensorOptions().device(kCuda0));
  ok.all_reduce({x});
  EXPECT_DOUBLE_EQ(x.sum().item<double>(), 16.0);
}

#endif  // KILN_CUDA_NCCL

// copy_peer is cudaMemcpyPeerAsync; with one GPU, source and destination are both
// cuda:0, which still exercises its ordering against the source's default stream.
TEST(CudaPeerCopies, CopyPeerOnOneGpu) {
  KILN_REQUIRE_CUDA();
  const RawPlugin& raw = raw_plugin();
  ASSERT_NE(raw.api->copy_peer, nullptr) << "the plugin does not offer copy_peer";
  const size_t n = (size_t{1} << 20) + 7;
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i % 1000) * 0.25f;
  DeviceBuffer src(n * sizeof(float)), dst(n * sizeof(float));
  src.upload(v);
  EXPECT_EQ(take(raw.api->copy_peer(raw.device, nullptr, dst.data, raw.device, src.data,
                                    n * sizeof(float))),
            "");
  EXPECT_EQ(dst.download(n), v);
}

// DataParallel over one GPU, and over a GPU and the CPU: a training step gives the
// gradients of the plain module (up to float rounding of the per-device sums).
TEST(CudaDataParallel, OneStepMatchesThePlainModule) {
  KILN_REQUIRE_CUDA();
  for (const std::vector<Device>& devices :
       {std::vector<Device>{kCuda0}, std::vector<Device>{kCuda0, Device("cpu", 0)}}) {
    manual_seed(7);
    auto plain = std::make_shared<nn::Linear>(12, 5);
    plain->to(kCuda0);
    manual_seed(7);
    auto wrapped = std::make_shared<nn::Linear>(12, 5);
    wrapped->to(kCuda0);
    auto dp = std::make_shared<nn::DataParallel>(wrapped, devices);
    const Tensor x = randn({8, 12}).to(kCuda0);
    const Tensor y_plain = plain->forward(x), y_dp = dp->forward(x);
    (y_plain * y_plain).sum().backward();
    (y_dp * y_dp).sum().backward();
    const std::vector<Tensor> a = plain->parameters(), b = wrapped->parameters();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      const std::vector<double> ga = a[i].grad().to_vector<double>();
      const std::vector<double> gb = b[i].grad().to_vector<double>();
      ASSERT_EQ(ga.size(), gb.size());
      for (size_t j = 0; j < ga.size(); ++j)
        EXPECT_NEAR(gb[j], ga[j], 1e-4 * (1 + std::abs(ga[j])))
            << devices.size() << " device(s), parameter " << i << " element " << j;
    }
  }
}

}  // namespace
}  // namespace kiln::test::cuda
