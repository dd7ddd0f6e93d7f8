// kiln::distributed::Communicator over the CPU plugin's logical devices (the CTest
// registration sets KILN_CPU_DEVICES=4): the conformance suite's collectives on the
// host-staged path, the two paths against each other, the fallback accounting, and
// the failures a user can cause.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include "collectives_check.h"
#include "distributed_test_util.h"

#include <cmath>
#include <cstdlib>
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

// Collects what the conformance check reports.
struct CollectReporter : conformance::Reporter {
  void begin(const std::string&) override {}
  void result(const conformance::CheckResult& r) override { results.push_back(r); }
  void fact(const std::string&, const nlohmann::json&) override {}
  std::vector<conformance::CheckResult> results;
};

// The collectives suite of kiln-conformance (sdk/conformance/collectives_check.cpp:
// every collective x op x dtype x size x in/out of place against a host reference).
// kiln-conformance runs it on the CPU plugin's own collectives (CTest
// conformance.cpu, four devices); here it checks the host-staged path that every
// plugin without collectives gets, over the same four devices.
TEST(CollectiveSuite, HostStagedPathOnFourDevices) {
  CollectReporter reporter;
  conformance::collectives_check("cpu", reporter, CommunicatorOptions().host_staged(true));
  ASSERT_GE(reporter.results.size(), 9u);
  for (const auto& r : reporter.results) {
    EXPECT_EQ(r.status, conformance::Status::Fallback) << r.name << ": " << r.message;
    EXPECT_NE(r.name.find("(4 ranks)"), std::string::npos) << r.name;
  }
}

TEST(CollectiveSuite, PluginPathUsesThePlugin) {
  Communicator comm(cpu_devices(4));
  EXPECT_TRUE(comm.native());
  EXPECT_EQ(comm.size(), 4);
  EXPECT_EQ(comm.str(), "[cpu:0, cpu:1, cpu:2, cpu:3]");
  EXPECT_FALSE(Communicator(cpu_devices(2), CommunicatorOptions().host_staged(true)).native());
}

TEST(CollectiveSuite, GroupsOfOneAndTwo) {
  for (bool staged : {false, true})
    for (int ranks : {1, 2}) {
      Communicator comm(cpu_devices(ranks), CommunicatorOptions().host_staged(staged));
      comm.barrier();
      std::vector<Tensor> t;
      for (int r = 0; r < ranks; ++r)
        t.push_back(full({3}, r + 1.0, TensorOptions().device(Device("cpu", r))));
      comm.all_reduce(t, ReduceOp::Sum);
      for (const Tensor& x : t)
        EXPECT_EQ(x.to_vector<float>(), std::vector<float>(3, ranks == 1 ? 1.0f : 3.0f));
    }
}

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
  Communicator(cpu_devices(4), CommunicatorOptions().host_staged(true))
      .all_reduce(b, ReduceOp::Sum);
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

TEST(Collectives, MismatchedTensorsAreRefusedNotMisreduced) {
  Communicator comm(cpu_devices(2));
  auto on = [](const char* d) { return TensorOptions().device(d); };
  std::vector<Tensor> shapes = {ones({4}, on("cpu:0")), ones({5}, on("cpu:1"))};
  expect_error([&] { comm.all_reduce(shapes); }, {"all_reduce", "[cpu:0, cpu:1]", "4", "5"});
  std::vector<Tensor> dtypes = {ones({4}, on("cpu:0")),
                                ones({4}, on("cpu:1").dtype(DType::Float64))};
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
  EXPECT_EQ(Communicator(cpu_devices(2), CommunicatorOptions().timeout(2.5)).timeout_seconds(),
            2.5);
}

TEST(Collectives, AnUnusableTimeoutInTheEnvironmentIsAnError) {
  // Registered with KILN_COLLECTIVE_TIMEOUT=45, which the test puts back.
  ASSERT_EQ(distributed::default_collective_timeout(), 45.0);
  struct Restore {
    ~Restore() { setenv("KILN_COLLECTIVE_TIMEOUT", "45", 1); }
  } restore;
  // Below a millisecond (1e-300 was taken silently), NaN, inf, 0, negative, garbage,
  // trailing text, beyond 1e9 s: an error naming the variable and the value.
  for (const char* value :
       {"1e-300", "0.0009", "nan", "inf", "-inf", "0", "-1", "abc", "5s", "1e10"}) {
    SCOPED_TRACE(value);
    ASSERT_EQ(setenv("KILN_COLLECTIVE_TIMEOUT", value, 1), 0);
    const std::string quoted = std::string("'") + value + "'";
    expect_error([] { (void)distributed::default_collective_timeout(); },
                 {"KILN_COLLECTIVE_TIMEOUT", quoted.c_str(), "0.001"});
    expect_error([] { Communicator c(cpu_devices(2)); }, {"KILN_COLLECTIVE_TIMEOUT"});
  }
  // A long value is quoted cut.
  const std::string garbage(100000, 'x');
  ASSERT_EQ(setenv("KILN_COLLECTIVE_TIMEOUT", garbage.c_str(), 1), 0);
  expect_error([] { (void)distributed::default_collective_timeout(); },
               {"KILN_COLLECTIVE_TIMEOUT", "(99800 more characters)"});
  // The bounds themselves are accepted; so is an explicit timeout, which the
  // environment does not override.
  ASSERT_EQ(setenv("KILN_COLLECTIVE_TIMEOUT", "0.001", 1), 0);
  EXPECT_EQ(distributed::default_collective_timeout(), 0.001);
  ASSERT_EQ(setenv("KILN_COLLECTIVE_TIMEOUT", "1e9", 1), 0);
  EXPECT_EQ(distributed::default_collective_timeout(), 1e9);
  ASSERT_EQ(setenv("KILN_COLLECTIVE_TIMEOUT", "nan", 1), 0);
  EXPECT_EQ(Communicator(cpu_devices(2), CommunicatorOptions().timeout(2.5)).timeout_seconds(),
            2.5);
  // The same range holds for an explicit timeout.
  expect_error([] { Communicator c(cpu_devices(2), CommunicatorOptions().timeout(1e-300)); },
               {"timeout", "0.001", "1e-300"});
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
