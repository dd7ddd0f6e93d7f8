// kiln::distributed::Communicator over the CPU plugin's logical devices (the CTest
// registration sets KILN_CPU_DEVICES=4), through the plugin's collectives and through
// the host-staged path every backend without collectives gets: every collective x
// dtype x size (0, 1, odd, 2^20+3) x in/out of place, against a reference computed
// here in double precision; plus the failures a user can cause.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <string>
#include <vector>

namespace kiln::test {
namespace {

using distributed::Communicator;
using distributed::CommunicatorOptions;
using distributed::ReduceOp;

std::vector<Device> cpu_devices(int n) {
  std::vector<Device> out;
  for (int i = 0; i < n; ++i) out.emplace_back("cpu", i);
  return out;
}

// Rank r's value at element i: a multiple of 0.5 in [-8, 8) (ints: an integer in
// [-16, 16)), so sums and means of four ranks are exact in every dtype, bfloat16
// included, and the reference needs no tolerance.
double value(int rank, int64_t i, DType dtype) {
  const int64_t k = ((i * 7 + rank * 13 + (i / 5) * 3) % 32) - 16;
  return is_floating(dtype) ? static_cast<double>(k) * 0.5 : static_cast<double>(k);
}

Tensor rank_tensor(int rank, int64_t n, DType dtype, const Device& device, int64_t offset = 0) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = value(rank, i + offset, dtype);
  return from_vector<double>(v, {n}).to(dtype).to(device);
}

double reduce_ref(ReduceOp op, int ranks, int64_t i, DType dtype, int64_t offset = 0) {
  double acc = value(0, i + offset, dtype);
  for (int r = 1; r < ranks; ++r) {
    const double v = value(r, i + offset, dtype);
    if (op == ReduceOp::Sum || op == ReduceOp::Avg) acc += v;
    if (op == ReduceOp::Min) acc = std::min(acc, v);
    if (op == ReduceOp::Max) acc = std::max(acc, v);
  }
  if (op == ReduceOp::Avg) acc = is_floating(dtype) ? acc / ranks : std::trunc(acc / ranks);
  return acc;
}

// Compares a result with expected(i) element by element; reports the first mismatch.
template <class F>
void expect_values(const Tensor& t, int64_t n, F&& expected, const std::string& what) {
  ASSERT_EQ(t.numel(), n) << what;
  const std::vector<double> got = t.to_vector<double>();
  for (int64_t i = 0; i < n; ++i) {
    const double e = expected(i);
    if (got[static_cast<size_t>(i)] != e) {
      FAIL() << what << ": element " << i << " is " << got[static_cast<size_t>(i)] << ", expected " << e;
    }
  }
}

const DType kDtypes[] = {DType::Float32, DType::Float64, DType::Float16,
                         DType::BFloat16, DType::Int32,  DType::Int64};
const int64_t kSizes[] = {0, 1, 1001, (int64_t{1} << 20) + 3};
const ReduceOp kOps[] = {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Min, ReduceOp::Max};

// The large size only for a float, a half and an integer dtype: it is about chunking
// and bandwidth, which do not depend on the dtype beyond its width.
bool swept(DType dtype, int64_t n) {
  return n < 4096 || dtype == DType::Float32 || dtype == DType::BFloat16 || dtype == DType::Int64;
}

// The ops swept at a size: all four at the odd size, sum elsewhere (the large size
// is about chunking and bandwidth, not about the op).
std::vector<ReduceOp> ops_at(int64_t n) {
  if (n == 1001) return {std::begin(kOps), std::end(kOps)};
  return {ReduceOp::Sum};
}

// Parameter: true = the plugin's collectives, false = the host-staged path.
class CollectiveSweep : public ::testing::TestWithParam<bool> {
 protected:
  static constexpr int kRanks = 4;
  Communicator make() {
    return Communicator(cpu_devices(kRanks), CommunicatorOptions().host_staged(!GetParam()));
  }
};

TEST_P(CollectiveSweep, UsesThePathAskedFor) {
  Communicator comm = make();
  EXPECT_EQ(comm.native(), GetParam());
  EXPECT_EQ(comm.size(), kRanks);
  EXPECT_EQ(comm.str(), "[cpu:0, cpu:1, cpu:2, cpu:3]");
}

TEST_P(CollectiveSweep, AllReduce) {
  Communicator comm = make();
  for (DType dtype : kDtypes)
    for (int64_t n : kSizes)
      for (ReduceOp op : ops_at(n))
        for (bool in_place : {true, false}) {
          if (!swept(dtype, n)) continue;
          const std::string what = std::string("all_reduce ") + distributed::reduce_op_name(op) +
                                   " " + std::string(dtype_name(dtype)) + " n=" + std::to_string(n) +
                                   (in_place ? " in place" : " out of place");
          std::vector<Tensor> in, out;
          for (int r = 0; r < kRanks; ++r) {
            in.push_back(rank_tensor(r, n, dtype, Device("cpu", r)));
            out.push_back(in_place ? in.back() : empty({n}, TensorOptions().dtype(dtype).device(Device("cpu", r))));
          }
          comm.all_reduce(in, out, op);
          for (int r = 0; r < kRanks; ++r)
            expect_values(out[static_cast<size_t>(r)], n,
                          [&](int64_t i) { return reduce_ref(op, kRanks, i, dtype); },
                          what + " rank " + std::to_string(r));
          if (!in_place)
            expect_values(in[1], n, [&](int64_t i) { return value(1, i, dtype); },
                          what + ": the input must be left as it was");
        }
}

TEST_P(CollectiveSweep, Broadcast) {
  Communicator comm = make();
  for (DType dtype : kDtypes)
    for (int64_t n : kSizes)
      for (bool in_place : {true, false}) {
        if (!swept(dtype, n)) continue;
        const int root = 2;
        std::vector<Tensor> in, out;
        for (int r = 0; r < kRanks; ++r) {
          in.push_back(rank_tensor(r, n, dtype, Device("cpu", r)));
          out.push_back(in_place ? in.back() : zeros({n}, TensorOptions().dtype(dtype).device(Device("cpu", r))));
        }
        comm.broadcast(in, out, root);
        for (int r = 0; r < kRanks; ++r)
          expect_values(out[static_cast<size_t>(r)], n, [&](int64_t i) { return value(root, i, dtype); },
                        "broadcast " + std::string(dtype_name(dtype)) + " n=" + std::to_string(n) +
                            " rank " + std::to_string(r));
      }
}

TEST_P(CollectiveSweep, AllGather) {
  Communicator comm = make();
  for (DType dtype : kDtypes)
    for (int64_t n : kSizes)
      for (bool in_place : {true, false}) {
        if (!swept(dtype, n)) continue;
        std::vector<Tensor> in, out;
        for (int r = 0; r < kRanks; ++r) {
          const Device d("cpu", r);
          Tensor all = zeros({kRanks * n}, TensorOptions().dtype(dtype).device(d));
          if (in_place) {
            all.narrow(0, r * n, n).copy_(rank_tensor(r, n, dtype, d));
            in.push_back(all.narrow(0, r * n, n));
          } else {
            in.push_back(rank_tensor(r, n, dtype, d));
          }
          out.push_back(all);
        }
        comm.all_gather(in, out);
        for (int r = 0; r < kRanks; ++r)
          expect_values(out[static_cast<size_t>(r)], kRanks * n,
                        [&](int64_t i) { return value(static_cast<int>(i / n), i % n, dtype); },
                        "all_gather " + std::string(dtype_name(dtype)) + " n=" + std::to_string(n) +
                            (in_place ? " in place" : "") + " rank " + std::to_string(r));
      }
}

TEST_P(CollectiveSweep, ReduceScatter) {
  Communicator comm = make();
  for (DType dtype : kDtypes)
    for (int64_t n : kSizes)
      for (ReduceOp op : ops_at(n))
        for (bool in_place : {true, false}) {
          if (!swept(dtype, n)) continue;
          std::vector<Tensor> in, out;
          for (int r = 0; r < kRanks; ++r) {
            in.push_back(rank_tensor(r, kRanks * n, dtype, Device("cpu", r)));
            out.push_back(in_place ? in.back().narrow(0, r * n, n)
                                   : empty({n}, TensorOptions().dtype(dtype).device(Device("cpu", r))));
          }
          comm.reduce_scatter(in, out, op);
          for (int r = 0; r < kRanks; ++r)
            expect_values(out[static_cast<size_t>(r)], n,
                          [&](int64_t i) { return reduce_ref(op, kRanks, i, dtype, r * n); },
                          std::string("reduce_scatter ") + distributed::reduce_op_name(op) + " " +
                              std::string(dtype_name(dtype)) + " n=" + std::to_string(n) +
                              (in_place ? " in place" : "") + " rank " + std::to_string(r));
        }
}

TEST_P(CollectiveSweep, BarrierAndGroupsOfOneAndTwo) {
  for (int ranks : {1, 2}) {
    Communicator comm(cpu_devices(ranks), CommunicatorOptions().host_staged(!GetParam()));
    comm.barrier();
    std::vector<Tensor> t;
    for (int r = 0; r < ranks; ++r) t.push_back(full({3}, r + 1.0, TensorOptions().device(Device("cpu", r))));
    comm.all_reduce(t, ReduceOp::Sum);
    for (const Tensor& x : t) EXPECT_EQ(x.to_vector<float>(), std::vector<float>(3, ranks == 1 ? 1.0f : 3.0f));
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, CollectiveSweep, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "Plugin" : "HostStaged"; });

TEST(Collectives, BothPathsGiveTheSameBits) {
  // Random float32 values, where the order of additions shows in the last bits.
  manual_seed(7);
  std::vector<Tensor> a, b;
  for (int r = 0; r < 4; ++r) {
    Tensor x = randn({4099}, TensorOptions().device(Device("cpu", r))) * std::pow(10.0, r);
    a.push_back(x.clone());
    b.push_back(x.clone());
  }
  Communicator(cpu_devices(4)).all_reduce(a, ReduceOp::Sum);
  Communicator(cpu_devices(4), CommunicatorOptions().host_staged(true)).all_reduce(b, ReduceOp::Sum);
  EXPECT_EQ(a[0].to_vector<float>(), b[0].to_vector<float>());
  EXPECT_EQ(a[3].to_vector<float>(), b[2].to_vector<float>());
}

TEST(Collectives, HostStagedPathIsAFallbackLikeAnyOther) {
  reset_fallback_report();
  Communicator comm(cpu_devices(2), CommunicatorOptions().host_staged(true));
  std::vector<Tensor> t = {ones({10}, TensorOptions().device("cpu:0")),
                           ones({10}, TensorOptions().device("cpu:1"))};
  comm.all_reduce(t);
  comm.all_reduce(t);
  bool found = false;
  for (const auto& e : fallback_report().entries)
    if (e.op == "kiln.all_reduce" && e.device == "[cpu:0, cpu:1]") {
      found = true;
      EXPECT_EQ(e.calls, 2u);
      EXPECT_GT(e.bytes_moved, 0u);
    }
  EXPECT_TRUE(found) << fallback_report().str();

  set_fallback_mode(FallbackMode::Error);
  try {
    comm.all_reduce(t);
    ADD_FAILURE() << "KILN_FALLBACK=error must refuse the host-staged path";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("KILN_FALLBACK=error"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("kiln.all_reduce"), std::string::npos) << e.what();
  }
  set_fallback_mode(FallbackMode::Allow);
  EXPECT_EQ(t[0].to_vector<float>(), std::vector<float>(10, 4.0f));

  // The plugin path is no fallback.
  reset_fallback_report();
  Communicator(cpu_devices(2)).all_reduce(t);
  EXPECT_TRUE(fallback_report().entries.empty()) << fallback_report().str();
}

void expect_error(const std::function<void()>& f, std::initializer_list<const char*> parts) {
  try {
    f();
    ADD_FAILURE() << "expected kiln::Error";
  } catch (const Error& e) {
    for (const char* p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << "'" << p << "' not in: " << e.what();
  }
}

TEST(Collectives, MismatchedTensorsAreRefusedNotMisreduced) {
  Communicator comm(cpu_devices(2));
  auto on = [](const char* d) { return TensorOptions().device(d); };
  std::vector<Tensor> shapes = {ones({4}, on("cpu:0")), ones({5}, on("cpu:1"))};
  expect_error([&] { comm.all_reduce(shapes); }, {"all_reduce", "[cpu:0, cpu:1]", "4", "5"});
  std::vector<Tensor> dtypes = {ones({4}, on("cpu:0")), ones({4}, on("cpu:1").dtype(DType::Float64))};
  expect_error([&] { comm.all_reduce(dtypes); }, {"dtype", "float64"});
  std::vector<Tensor> devices = {ones({4}, on("cpu:1")), ones({4}, on("cpu:1"))};
  expect_error([&] { comm.all_reduce(devices); }, {"rank 0", "cpu:0"});
  std::vector<Tensor> one = {ones({4}, on("cpu:0"))};
  expect_error([&] { comm.all_reduce(one); }, {"one input and one output per rank"});
  std::vector<Tensor> flags = {ones({4}, on("cpu:0").dtype(DType::Bool)),
                               ones({4}, on("cpu:1").dtype(DType::Bool))};
  expect_error([&] { comm.all_reduce(flags); }, {"cannot reduce", "bool"});
  std::vector<Tensor> t = {ones({4}, on("cpu:0")), ones({4}, on("cpu:1"))};
  expect_error([&] { comm.broadcast(t, 2); }, {"root 2"});
  // Nothing was changed, and the communicator still works.
  comm.all_reduce(t);
  EXPECT_EQ(t[1].to_vector<float>(), std::vector<float>(4, 2.0f));
}

TEST(Collectives, GroupsAreChecked) {
  expect_error([] { Communicator c({}); }, {"at least one device"});
  expect_error([] { Communicator c({Device("cpu", 0), Device("cpu", 0)}); }, {"cpu:0", "twice"});
  expect_error([] { Communicator c({Device("cpu", 0)}, CommunicatorOptions().timeout(0)); },
               {"timeout"});
  expect_error([] { Communicator c({Device("cpu", 0), Device("cpu", 9)}); }, {"cpu:9"});
}

TEST(Collectives, TimeoutComesFromTheEnvironment) {
  // Registered with KILN_COLLECTIVE_TIMEOUT=45.
  EXPECT_EQ(distributed::default_collective_timeout(), 45.0);
  EXPECT_EQ(Communicator(cpu_devices(2)).timeout_seconds(), 45.0);
  EXPECT_EQ(Communicator(cpu_devices(2), CommunicatorOptions().timeout(2.5)).timeout_seconds(), 2.5);
}

TEST(PeerCopies, MoveDataBetweenDevicesOfOnePlugin) {
  // cpu:0 -> cpu:3 goes through the plugin's copy_peer; the values arrive intact, and
  // autograd sends gradients back.
  Tensor x = arange(0, 12, 1, TensorOptions().device("cpu:0")).to(DType::Float32).reshape({3, 4});
  x.requires_grad_();
  Tensor y = x.to(Device("cpu", 3));
  EXPECT_EQ(y.device(), Device("cpu", 3));
  EXPECT_EQ(y.to_vector<float>(), x.to_vector<float>());
  (y * 2).sum().backward();
  EXPECT_EQ(x.grad().device(), Device("cpu", 0));
  EXPECT_EQ(x.grad().to_vector<float>(), std::vector<float>(12, 2.0f));
}

}  // namespace
}  // namespace kiln::test
