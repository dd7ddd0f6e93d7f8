// The random reference suite (issue 38): every case of the golden files that
// tests/reference/make_golden.py wrote from PyTorch 1.13, run on every loaded device.
// A case agrees when Kiln throws kiln::Error exactly where PyTorch raised, and otherwise
// gives the same output dtypes, shapes and values (within the case's tolerance, NaN
// matching NaN) and the same gradients of sum(out * w). Disagreements listed in
// differences.json (each a documented, deliberate difference) are skipped and counted;
// any other disagreement fails the test, with a one-line reproduction per case and a
// summary by op and kind.
//
//   KILN_REFERENCE_DIR=/tmp/ref7  golden files made by hand (make_golden.py --seed 7 --out)
//   KILN_REFERENCE_CASE=pow/1/17  only the cases whose id starts with this
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "ops/conformance.h"
#include "reference/reference_ops.h"

namespace kiln::test::reference {
namespace {

using json = nlohmann::json;

std::filesystem::path golden_dir() {
  const std::string dir = env_or("KILN_REFERENCE_DIR");
  return std::filesystem::path(dir.empty() ? std::string(KILN_REFERENCE_GOLDEN_DIR) : dir);
}

std::vector<json> read_jsonl(const std::filesystem::path& path) {
  std::vector<json> cases;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) cases.push_back(json::parse(line));
  return cases;
}

std::vector<std::filesystem::path> golden_files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == ".jsonl") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

bool is_float(DType d) { return d == float32 || d == float64 || d == float16 || d == bfloat16; }

// -- building the inputs ---------------------------------------------------------------

/// The base tensor of an input, contiguous, on `device`.
Tensor build_base(const json& spec, const Device& device) {
  const DType dtype = dtype_from_name(spec.at("dt").get<std::string>());
  const Shape shape = spec.at("shape").get<Shape>();
  const json& values = spec.at("v");
  const TensorOptions host = TensorOptions().device(Device("cpu"));
  Tensor flat;
  if (is_float(dtype)) {
    std::vector<double> v;
    for (const json& x : values) v.push_back(number_of(x));
    flat = from_vector<double>(v, {static_cast<int64_t>(v.size())}, host);
  } else {
    std::vector<int64_t> v;
    for (const json& x : values) v.push_back(x.is_boolean() ? x.get<bool>() : x.get<int64_t>());
    flat = from_vector<int64_t>(v, {static_cast<int64_t>(v.size())}, host);
  }
  return flat.to(dtype).reshape(shape).to(device);
}

Tensor apply_view(Tensor t, const json& spec) {
  if (!spec.contains("view")) return t;
  for (const json& op : spec["view"]) {
    const std::string kind = op.at(0).get<std::string>();
    if (kind == "transpose") {
      t = t.transpose(op.at(1).get<int64_t>(), op.at(2).get<int64_t>());
    } else if (kind == "slice") {
      t = t.slice(op.at(1).get<int64_t>(), op.at(2).get<int64_t>(), op.at(3).get<int64_t>(),
                  op.at(4).get<int64_t>());
    } else {
      t = t.expand(op.at(1).get<std::vector<int64_t>>());
    }
  }
  return t;
}

std::string view_str(const json& spec) {
  if (!spec.contains("view")) return "";
  std::ostringstream out;
  for (const json& op : spec["view"]) {
    out << "." << op.at(0).get<std::string>() << "(";
    for (size_t i = 1; i < op.size(); ++i) out << (i > 1 ? "," : "") << op[i].dump();
    out << ")";
  }
  return out.str();
}

/// "pow/1/17 op=pow in=[float32[2,3].transpose(0,1), int64[3]] attrs={...}"
std::string repro(const json& c) {
  std::ostringstream out;
  const std::string id = c["id"].get<std::string>();
  out << id;
  // Ids of random cases are op/seed/index: make_golden.py --seed <seed> --ops <op> remakes it.
  if (const auto a = id.find('/'), b = id.rfind('/'); a != b && id.rfind("promotion/", 0) != 0)
    out << " seed=" << id.substr(a + 1, b - a - 1);
  out << " op=" << c["op"].get<std::string>() << " in=[";
  for (size_t i = 0; i < c["in"].size(); ++i) {
    const json& s = c["in"][i];
    out << (i ? ", " : "") << s["dt"].get<std::string>() << s["shape"].dump() << view_str(s);
  }
  out << "] attrs=" << c["attrs"].dump();
  return out.str();
}

// -- comparing -----------------------------------------------------------------------------

/// PyTorch 1.13 has no CPU kernel for the case ("not implemented for 'Int'"): there
/// is no reference, and whatever Kiln does is counted, not judged.
constexpr const char* kNoReference = "no PyTorch kernel";

struct Verdict {
  std::string kind;    // empty: agrees
  std::string detail;  // the first differing value, the message, ...
};

std::string fmt(double v) {
  std::ostringstream out;
  out.precision(17);
  out << v;
  return out.str();
}

/// Empty when `actual` holds `expected` ({dt, shape, v}); `what` names the tensor.
Verdict compare(const Tensor& actual, const json& expected, const json& tol, bool zero_sign,
                const std::string& what) {
  const DType want = dtype_from_name(expected.at("dt").get<std::string>());
  if (actual.dtype() != want)
    return {what + " dtype", std::string(dtype_name(actual.dtype())) + " vs PyTorch " +
                                 std::string(dtype_name(want))};
  const Shape shape = actual.shape().vec();
  const Shape want_shape = expected.at("shape").get<Shape>();
  if (shape != want_shape)
    return {what + " shape", shape_str(shape) + " vs PyTorch " + shape_str(want_shape)};
  const json& values = expected.at("v");
  if (!is_float(want)) {
    const std::vector<int64_t> got = actual.to(int64).to_vector<int64_t>();
    for (size_t i = 0; i < got.size(); ++i) {
      const int64_t e = values[i].is_boolean() ? values[i].get<bool>() : values[i].get<int64_t>();
      if (got[i] != e)
        return {what + " values", "[" + std::to_string(i) + "] " + std::to_string(got[i]) +
                                      " vs PyTorch " + std::to_string(e)};
    }
    return {};
  }
  const double atol = tol.at(0).get<double>(), rtol = tol.at(1).get<double>();
  const std::vector<double> got = actual.to_vector<double>();
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = number_of(values[i]), a = got[i];
    bool ok;
    if (std::isnan(e) || std::isnan(a))
      ok = std::isnan(e) && std::isnan(a);
    else if (std::isinf(e) || std::isinf(a))
      ok = a == e;
    else
      ok = std::abs(a - e) <= atol + rtol * std::abs(e);
    if (ok && zero_sign && e == 0 && a == 0) ok = std::signbit(a) == std::signbit(e);
    if (!ok)
      return {what + " values", "[" + std::to_string(i) + "] " + fmt(a) + " vs PyTorch " + fmt(e)};
  }
  return {};
}

/// Runs one case on `device` and says how it disagrees with PyTorch (if it does).
Verdict run_case(const json& c, const Device& device) {
  const ReferenceOp* op = find_reference_op(c["op"].get<std::string>());
  if (!op) return {"unknown op", c["op"].get<std::string>()};
  const bool want_grad = c.contains("grad");
  std::vector<Tensor> bases, views;
  for (size_t i = 0; i < c["in"].size(); ++i) {
    Tensor base = build_base(c["in"][i], device);
    if (want_grad && !c["grad"][i].is_null()) base.requires_grad_();
    bases.push_back(base);
    views.push_back(apply_view(base, c["in"][i]));
  }
  std::vector<Tensor> outs;
  try {
    outs = op->run(views, c["attrs"]);
  } catch (const Error& e) {
    if (c.contains("error")) return {};
    return {"kiln threw", e.what()};
  } catch (const std::exception& e) {
    return {"non-kiln exception", e.what()};
  }
  if (c.value("unsupported", false)) return {kNoReference, c["error"].get<std::string>()};
  if (c.contains("error")) return {"pytorch raised", c["error"].get<std::string>()};
  if (outs.size() != c["out"].size()) return {"output count", std::to_string(outs.size())};
  for (size_t k = 0; k < outs.size(); ++k) {
    Verdict v =
        compare(outs[k], c["out"][k], c["tol"], op->zero_sign_matters, "out" + std::to_string(k));
    if (!v.kind.empty()) return v;
  }
  if (!want_grad) return {};
  try {
    Tensor loss;
    for (size_t k = 0; k < outs.size(); ++k) {
      const json& w = c["w"][k];
      if (w.is_null()) continue;
      json w_spec = {{"dt", c["out"][k]["dt"]}, {"shape", c["out"][k]["shape"]}, {"v", w["v"]}};
      Tensor term = (outs[k] * build_base(w_spec, device)).sum();
      loss = loss.defined() ? loss + term : term;
    }
    if (!loss.defined()) return {};
    // An output that does not require grad (an empty one, say) means zero gradients.
    if (loss.requires_grad()) loss.backward();
  } catch (const Error& e) {
    if (c.contains("grad_error")) return {};
    return {"backward threw", e.what()};
  }
  if (c.contains("grad_error"))
    return {"pytorch raised in backward", c["grad_error"].get<std::string>()};
  for (size_t i = 0; i < bases.size(); ++i) {
    const json& g = c["grad"][i];
    if (g.is_null()) continue;
    Tensor grad = bases[i].grad();
    if (!grad.defined()) grad = zeros_like(bases[i]);
    json g_spec = {{"dt", c["in"][i]["dt"]}, {"shape", c["in"][i]["shape"]}, {"v", g["v"]}};
    // Slack for a gradient summed from cancelling terms (make_golden.py's grad_slack).
    json tol = c["tol"];
    if (c.contains("grad_slack") && c["grad_slack"][i].is_number())
      tol[0] = tol[0].get<double>() + c["grad_slack"][i].get<double>();
    Verdict v = compare(grad, g_spec, tol, false, "grad" + std::to_string(i));
    if (!v.kind.empty()) return v;
  }
  return {};
}

// -- deliberate differences ------------------------------------------------------------------

struct Difference {
  std::string op, kind, doc;
  std::string detail_contains;  // empty: any case of that op and kind
  std::string case_flag;        // empty: any case; else only cases with that flag true
};

std::vector<Difference> read_differences() {
  std::vector<Difference> list;
  std::ifstream in(std::filesystem::path(KILN_REFERENCE_SOURCE_DIR) / "differences.json");
  const json all = json::parse(in);
  for (const json& d : all.at("differences"))
    list.push_back({d.at("op"), d.at("kind"),
                    "docs/pytorch-coverage.md#deliberate-differences-issue-38 " +
                        d.at("id").get<std::string>(),
                    d.value("detail_contains", ""), d.value("case_flag", "")});
  return list;
}

// Defects found and not yet fixed (docs/pytorch-coverage.md, "Open defects"), by case
// id. Such a case is reported on every run but does not fail it; once it agrees with
// PyTorch the run fails until the id is removed, so the list only shrinks.
std::map<std::string, std::string> read_open_defects() {
  std::map<std::string, std::string> open;
  std::ifstream in(std::filesystem::path(KILN_REFERENCE_SOURCE_DIR) / "differences.json");
  const json all = json::parse(in);
  for (const json& d : all.value("open_defects", json::array()))
    open.emplace(d.at("case").get<std::string>(), d.at("id").get<std::string>());
  return open;
}

const Difference* documented(const std::vector<Difference>& list, const json& c, const Verdict& v) {
  for (const Difference& d : list)
    if (d.op == c["op"] && d.kind == v.kind &&
        (d.case_flag.empty() || c.value(d.case_flag, false)) &&
        (d.detail_contains.empty() || v.detail.find(d.detail_contains) != std::string::npos))
      return &d;
  return nullptr;
}

// -- the test ----------------------------------------------------------------------------------

class ReferenceSuite : public DeviceTest {};

TEST_P(ReferenceSuite, AgreesWithPyTorch) {
  const auto dir = golden_dir();
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir << " is not a folder of golden files";
  const auto differences = read_differences();
  const auto open_defects = read_open_defects();
  size_t open_seen = 0, open_fixed = 0;
  const std::string only = env_or("KILN_REFERENCE_CASE");
  const auto start = std::chrono::steady_clock::now();
  size_t ran = 0, skipped = 0, failed = 0, no_reference = 0;
  std::map<std::string, size_t> failures_by_kind, skipped_by_doc;
  std::map<std::string, std::string> first_by_kind;
  for (const auto& file : golden_files(dir)) {
    for (const json& c : read_jsonl(file)) {
      const std::string id = c["id"].get<std::string>();
      if (!only.empty() && id.rfind(only, 0) != 0) continue;
      ++ran;
      Verdict v;
      try {
        v = run_case(c, device());
      } catch (const std::exception& e) {
        v = {"harness exception", e.what()};
      }
      const auto open = open_defects.find(id);
      if (open != open_defects.end()) {
        if (v.kind.empty()) {
          ++open_fixed;
          std::cout << "FIXED " << id << " (open defect " << open->second
                    << "): it now agrees with PyTorch; remove it from open_defects\n";
        } else {
          ++open_seen;
          std::cout << "OPEN DEFECT " << open->second << " " << repro(c) << " -> " << v.kind
                    << "\n";
        }
        continue;
      }
      if (v.kind.empty()) continue;
      const std::string op = c["op"].get<std::string>();
      if (v.kind == kNoReference) {
        ++no_reference;
        continue;
      }
      // PyTorch 1.13 lacks this half-precision kernel on the CPU: make_golden.py
      // computed the reference in float32 and rounded it, as a GPU kernel would.
      if (c.value("ref", "") == "float32") v.kind += " (float32 reference)";
      std::replace(v.detail.begin(), v.detail.end(), '\n', ' ');
      if (v.detail.size() > 200) v.detail = v.detail.substr(0, 200) + "...";
      if (const Difference* d = documented(differences, c, v)) {
        ++skipped;
        ++skipped_by_doc[op + ": " + v.kind + " (" + d->doc + ")"];
        continue;
      }
      ++failed;
      // The type promotion table's cases count apart from the random ones.
      const std::string group = c.value("group", "");
      const std::string key = (group.empty() ? op : group + " " + op) + ": " + v.kind;
      ++failures_by_kind[key];
      const std::string line =
          "REPRO " + file.filename().string() + " " + repro(c) + " -> " + v.kind + ": " + v.detail;
      first_by_kind.emplace(key, line);
      if (failed <= 2000) std::cout << line << "\n";
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "reference suite on " << device().str() << ": " << ran << " cases from " << dir
            << ", " << failed << " disagree, " << skipped << " skipped as documented differences, "
            << no_reference << " without a PyTorch kernel (not compared), " << open_seen
            << " open defects still open, " << seconds << " s\n";
  for (const auto& [what, n] : skipped_by_doc)
    std::cout << "  skipped " << n << "  " << what << "\n";
  if (failed) {
    std::cout << "Disagreements by op and kind (rerun one with KILN_REFERENCE_CASE=<id>):\n";
    for (const auto& [key, n] : failures_by_kind)
      std::cout << "  " << n << "  " << key << "\n      e.g. " << first_by_kind[key] << "\n";
  }
  EXPECT_GT(ran, 0u) << "no cases ran";
  EXPECT_EQ(failed, 0u) << failed << " of " << ran << " cases disagree with PyTorch (listed above)";
  EXPECT_EQ(open_fixed, 0u) << open_fixed << " open defects now agree: remove them from "
                            << "differences.json's open_defects (listed above)";
}

KILN_INSTANTIATE_FOR_EVERY_DEVICE(ReferenceSuite);

}  // namespace
}  // namespace kiln::test::reference
