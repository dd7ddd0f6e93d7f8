// One op's cases: device against CPU reference, outputs and gradients, gradcheck.
#include "op_runner.h"

#include <kiln/error.h>

#include <cmath>
#include <set>
#include <sstream>

namespace kiln::conformance {

namespace {

const Device kCpu("cpu", 0);

bool fell_back(const std::string& op, const Device& device) {
  for (const FallbackEntry& e : fallback_report().entries)
    if (e.op == op && e.device == device.str()) return true;
  return false;
}

std::string number(double v, int digits = 9) {
  std::ostringstream out;
  out.precision(digits);
  out << v;
  return out.str();
}

// Compares one output; returns "" when it matches, else what differs. Updates
// `max_error` with the largest finite |actual - expected|.
std::string compare(const Tensor& actual, const Tensor& expected, const Case& c,
                    double& max_error) {
  const Shape a_shape = actual.shape().vec(), e_shape = expected.shape().vec();
  if (a_shape != e_shape)
    return "shape " + shape_text(a_shape) + ", expected " + shape_text(e_shape);
  const bool same_kind = c.reference == Reference::SameDtype
                             ? actual.dtype() == expected.dtype()
                             : (is_floating(expected.dtype()) ? is_floating(actual.dtype())
                                                              : actual.dtype() == expected.dtype());
  if (!same_kind)
    return "dtype " + std::string(dtype_name(actual.dtype())) + ", expected " +
           std::string(dtype_name(expected.dtype()));
  const std::vector<double> a = actual.to(kCpu).to_vector<double>();
  const std::vector<double> e = expected.to_vector<double>();
  const Tolerance tol = tolerance_for(actual.dtype()).scaled(c.tolerance_scale);
  int bad = 0;
  std::ostringstream detail;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isfinite(a[i]) && std::isfinite(e[i]))
      max_error = std::max(max_error, std::abs(a[i] - e[i]));
    if (value_close(a[i], e[i], tol)) continue;
    if (bad < 3)
      detail << (bad ? "; " : "") << "element " << i << ": got " << number(a[i]) << ", expected "
             << number(e[i]);
    ++bad;
  }
  if (bad == 0) return "";
  return std::to_string(bad) + " of " + std::to_string(a.size()) + " values differ (rtol " +
         number(tol.rtol) + ", atol " + number(tol.atol) + "): " + detail.str();
}

// Checks one output against its known answer; "" when it matches.
std::string compare_known(const Tensor& actual, const std::vector<double>& expected, const Case& c,
                          double& max_error) {
  const std::vector<double> a = actual.to(kCpu).to_vector<double>();
  if (a.size() != expected.size())
    return std::to_string(a.size()) + " values, expected " + std::to_string(expected.size());
  const Tolerance tol = c.known_ulps > 0 ? ulp_tolerance(actual.dtype(), c.known_ulps)
                                         : tolerance_for(actual.dtype()).scaled(c.tolerance_scale);
  const int digits = c.known_ulps > 0 ? 17 : 9;  // enough to show the last bits
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isfinite(a[i]) && std::isfinite(expected[i]))
      max_error = std::max(max_error, std::abs(a[i] - expected[i]));
    if (!value_close(a[i], expected[i], tol))
      return "element " + std::to_string(i) + ": got " + number(a[i], digits) +
             ", the known answer is " + number(expected[i], digits) + " (rtol " + number(tol.rtol) +
             ", atol " + number(tol.atol) + ")";
  }
  return "";
}

// Backward from every output that requires grad, seeded with fixed values in [0.5, 1.5).
void backward_from(const Outputs& outs, const Device& device) {
  std::vector<Tensor> roots, seeds;
  uint32_t seed = 100;
  for (const Tensor& out : outs) {
    if (!out.defined() || !out.requires_grad()) continue;
    roots.push_back(out);
    seeds.push_back(make_tensor(random_values(static_cast<size_t>(out.numel()), seed++, 0.5, 1.5),
                                out.shape().vec(), out.dtype(), device));
  }
  if (!roots.empty()) kiln::backward(roots, seeds);
}

struct CaseResult {
  bool native = true;   ///< the op ran on the device (did not fall back)
  std::string failure;  ///< "" when everything matched
  std::string note;     ///< e.g. why a gradcheck was skipped
};

CaseResult run_case(const std::string& op, const Case& c, const Device& device, double& max_error,
                    bool compare_fallback) {
  CaseResult result;
  Operands on_device, on_cpu;
  for (const Operand& x : c.inputs) {
    const std::vector<double> values = representable(x.values, x.dtype);
    Tensor d = make_layout(values, x.shape, x.dtype, device, x.layout);
    const DType ref_dtype =
        c.reference == Reference::Float64 && is_floating(x.dtype) ? DType::Float64 : x.dtype;
    Tensor r = make_tensor(values, x.shape, ref_dtype, kCpu);
    if (x.requires_grad && (c.grad || c.gradcheck)) {
      d.requires_grad_();
      r.requires_grad_();
    }
    on_device.push_back(d);
    on_cpu.push_back(r);
  }

  reset_fallback_report();
  const Outputs device_out = c.fn(on_device, device);
  if (c.grad) backward_from(device_out, device);
  kiln::synchronize(device);
  result.native = !fell_back(op, device);
  // The CPU plugin ran it: nothing to certify here, unless the fallback is under test.
  if (!result.native && !compare_fallback) return result;

  const Outputs cpu_out = c.fn(on_cpu, kCpu);
  if (c.grad) backward_from(cpu_out, kCpu);
  if (device_out.size() != cpu_out.size()) {
    result.failure = "the case returned a different number of outputs (runner bug)";
    return result;
  }
  for (size_t i = 0; i < device_out.size(); ++i) {
    const std::string diff = compare(device_out[i], cpu_out[i], c, max_error);
    if (!diff.empty()) {
      result.failure = "output " + std::to_string(i) + ": " + diff;
      return result;
    }
  }
  for (size_t i = 0; i < c.expected.size() && i < device_out.size(); ++i) {
    if (c.expected[i].empty()) continue;
    const std::string diff = compare_known(device_out[i], c.expected[i], c, max_error);
    if (!diff.empty()) {
      result.failure = "output " + std::to_string(i) + ": " + diff;
      return result;
    }
  }
  if (c.grad) {
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      if (!c.inputs[i].requires_grad) continue;
      const Tensor g = on_device[i].grad(), ref = on_cpu[i].grad();
      if (!ref.defined()) continue;
      if (!g.defined()) {
        result.failure = "gradient of input " + std::to_string(i) + ": none was computed";
        return result;
      }
      Case scaled = c;
      scaled.tolerance_scale *= 4;  // a backward pass accumulates more rounding
      const std::string diff = compare(g, ref, scaled, max_error);
      if (!diff.empty()) {
        result.failure = "gradient of input " + std::to_string(i) + ": " + diff;
        return result;
      }
    }
  }
  if (c.gradcheck) {
    reset_fallback_report();
    const auto fn = [&](const std::vector<Tensor>& xs) { return c.fn(xs, device).at(0); };
    const GradcheckResult check = kiln::gradcheck(fn, on_device);
    if (fell_back(op, device) && !compare_fallback) {
      result.note = "gradcheck skipped (float64 falls back)";
    } else if (!check.ok) {
      result.failure = "gradcheck (float64 finite differences): " + check.message;
    }
  }
  return result;
}

}  // namespace

std::string plugin_error_text(const std::string& message, const Device& device) {
  if (message.rfind("ABI violation", 0) == 0) return message;
  // DeviceContext::check puts "<op> on <device>" first, or finds it in the plugin's own
  // message near the start.
  const size_t at = message.find(" on " + device.str());
  if (at != std::string::npos && at < 80) {
    const size_t space = at == 0 ? std::string::npos : message.find_last_of(" :", at - 1);
    const size_t start = space == std::string::npos ? 0 : space + 1;
    const std::string op = message.substr(start, at - start);
    if (op.find('.') != std::string::npos)  // an op ("kiln.conv2d"), not "allocate"
      return "the plugin's kernel for " + op + " returned an error: " + message;
  }
  return "error: " + message;
}

void run_op_suite(const OpSuite& suite, const Device& device, Reporter& reporter,
                  const RunOptions& options) {
  CheckResult result;
  result.section = "ops";
  result.name = suite.op;
  reporter.begin(suite.op + ": building the cases");
  const std::vector<Case> cases = suite.cases();
  const uint64_t baseline = memory_stats(device).bytes_in_use;
  std::set<std::string> fallback;
  std::vector<std::string> failures, notes;
  double max_error = -1;  // stays negative until some value is compared
  int native = 0;
  for (const Case& c : cases) {
    reporter.begin(suite.op + ": " + c.label);
    CaseResult r;
    try {
      r = run_case(suite.op, c, device, max_error, options.compare_fallback);
    } catch (const kiln::Error& e) {
      r.failure = plugin_error_text(e.what(), device);
    } catch (const std::exception& e) {
      r.failure = std::string("threw: ") + e.what();
    }
    if (!r.native) {
      fallback.insert(c.label.substr(0, c.label.find(' ')));
      if (!options.compare_fallback) continue;
    }
    ++native;
    if (!r.failure.empty()) failures.push_back(c.label + ": " + r.failure);
    if (!r.note.empty() && notes.empty()) notes.push_back(r.note);
  }
  reporter.begin(suite.op + ": memory check");
  kiln::synchronize(device);
  const uint64_t after = memory_stats(device).bytes_in_use;
  if (after != baseline)
    failures.push_back("memory leak: bytes_in_use was " + std::to_string(baseline) +
                       " before the " + "cases and " + std::to_string(after) +
                       " after every tensor was freed");

  result.cases = native;
  result.fallback.assign(fallback.begin(), fallback.end());
  if (max_error >= 0) result.max_error = max_error;  // not when every case threw
  if (!failures.empty()) {
    result.status = Status::Failed;
    const size_t shown = std::min<size_t>(failures.size(), 4);
    for (size_t i = 0; i < shown; ++i) result.message += (i ? "\n" : "") + failures[i];
    if (failures.size() > shown)
      result.message += "\n(" + std::to_string(failures.size() - shown) + " more failing cases)";
  } else if (native == 0) {
    result.status = Status::Fallback;
    result.message = "provided, but declined every case (supports() returned 0)";
    result.fallback.clear();
  } else {
    result.status = Status::Passed;
    for (const std::string& n : notes) result.message += n;
  }
  reporter.result(result);
}

}  // namespace kiln::conformance
