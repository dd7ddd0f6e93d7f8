// Every catalogue op on every device: the conformance suites (sdk/conformance/ops_*.cpp,
// the cases kiln-conformance certifies plugins with) run through the frontend on each
// device of the op tests and compared with the CPU plugin in float64, gradients
// included. On a device without the op (the fallback fixture) the cases still run and
// are compared: that checks the fallback path (host mirrors, strided outputs written
// back). One test per (device, op); the op list is the catalogue's (api/ops.json).
#include <algorithm>

#include "conformance.h"
#include "op_runner.h"
#include "op_suite.h"

namespace kiln {
namespace {

namespace kc = kiln::conformance;

// Keeps what run_op_suite reports.
class Collect : public kc::Reporter {
 public:
  void begin(const std::string& what) override { last = what; }
  void result(const kc::CheckResult& r) override { results.push_back(r); }
  void fact(const std::string&, const nlohmann::json&) override {}
  std::string last;
  std::vector<kc::CheckResult> results;
};

using Param = std::tuple<Device, std::string>;

class CatalogueOps : public ::testing::TestWithParam<Param> {};

TEST_P(CatalogueOps, MatchTheCpuReference) {
  // Not a structured binding: clang 14 cannot capture one in the lambda below.
  const Device device = std::get<0>(GetParam());
  const std::string op = std::get<1>(GetParam());
  const auto& suites = kc::op_suites();
  const auto suite =
      std::find_if(suites.begin(), suites.end(), [&](const kc::OpSuite& s) { return s.op == op; });
  ASSERT_NE(suite, suites.end()) << op;
  Collect reporter;
  kc::RunOptions options;
  options.compare_fallback = true;
  kc::run_op_suite(*suite, device, reporter, options);
  ASSERT_EQ(reporter.results.size(), 1u) << "stopped at: " << reporter.last;
  const kc::CheckResult& r = reporter.results[0];
  EXPECT_EQ(r.status, kc::Status::Passed)
      << op << " on " << device << ": " << kc::status_name(r.status) << "\n"
      << r.message;
  EXPECT_GT(r.cases, 0) << op << " on " << device << ": no case was compared";
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  std::string op = std::get<1>(info.param).substr(5);  // without "kiln."
  const ::testing::TestParamInfo<Device> device(std::get<0>(info.param), info.index);
  return test::device_test_name(device) + "_" + op;
}

INSTANTIATE_TEST_SUITE_P(Devices, CatalogueOps,
                         ::testing::Combine(::testing::ValuesIn(test::conformance_devices()),
                                            ::testing::ValuesIn(kc::catalogue_op_names())),
                         param_name);

}  // namespace
}  // namespace kiln
