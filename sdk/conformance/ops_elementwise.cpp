// Elementwise ops: unary, binary (broadcasting, in place), comparisons, logical ops,
// where, and the elementwise backward ops (checked through gradients).
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>

#include "kiln/testing/pointwise_ops.h"
#include "op_suite.h"

namespace kiln::conformance {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

const std::vector<DType> kFloat = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};
const std::vector<DType> kFloatInt = {DType::Float32,  DType::Float64, DType::Float16,
                                      DType::BFloat16, DType::Int32,   DType::Int64};
const std::vector<DType> kArith = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16,
                                   DType::Int32,   DType::Int64,   DType::UInt8};
const std::vector<DType> kAll = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16,
                                 DType::Int32,   DType::Int64,   DType::UInt8,   DType::Bool};

using Unary = std::function<Tensor(const Tensor&)>;
using Binary = std::function<Tensor(const Tensor&, const Tensor&)>;

bool differentiable(DType d) { return d == DType::Float32 || d == DType::Float64; }

// Where a case samples an input: the catalogue entry's test domain for a generated op
// (kiln/testing/pointwise_ops.h). Gradchecks also keep kGradcheckMargin away from the
// points where the op is not differentiable.
using Domain = testing::InputDomain;

Domain range(double lo, double hi) { return {lo, hi, {}, 0}; }

// The integers of a domain, for the integer dtypes.
Domain integer_range(const Domain& d) { return range(std::floor(d.lo), std::ceil(d.hi)); }

// A float64 operand for kiln::gradcheck: `domain` without its nondifferentiable points.
Operand gradcheck_operand(const Shape& shape, const Domain& domain, uint32_t seed) {
  Operand x = operand(shape, DType::Float64, Layout::Contiguous, domain.lo, domain.hi, seed);
  for (double& v : x.values) v = domain.differentiable_sample(v);
  x.requires_grad = true;
  return x;
}

// Shapes (0-d, 1-D, empty, 2-D, 3-D) and layouts, per dtype; gradients for the
// float32/float64 2-D and 3-D cases; a float64 gradcheck.
std::vector<Case> unary_cases(const Unary& f, const std::vector<DType>& dtypes, Domain domain,
                              bool grad, bool with_special_values) {
  std::vector<Case> cases;
  auto add = [&](Operand x, bool with_grad) {
    Case c;
    x.requires_grad = with_grad;
    c.inputs = {x};
    c.label = describe(x);
    c.fn = [f](const Operands& in, const Device&) { return Outputs{f(in[0])}; };
    c.grad = with_grad;
    cases.push_back(c);
  };
  for (DType d : dtypes) {
    const Domain dom = is_floating(d) ? domain : integer_range(domain);
    const bool g = grad && differentiable(d);
    for (const Shape& s : {Shape{}, Shape{7}, Shape{0, 3}})
      add(operand(s, d, Layout::Contiguous, dom.lo, dom.hi, 3), false);
    for (Layout layout : kAllLayouts) add(operand({3, 5}, d, layout, dom.lo, dom.hi, 4), g);
    add(operand({2, 3, 4}, d, Layout::Transposed, dom.lo, dom.hi, 5), g);
    if (with_special_values && is_floating(d))
      add(operand_of({7}, d, {kNaN, -kInf, kInf, 0.0, -0.0, 1.5, -2.0}), false);
  }
  if (grad) {
    Case c;
    c.inputs = {gradcheck_operand({2, 3}, domain, 6)};
    c.label = "float64 [2,3] gradcheck";
    c.fn = [f](const Operands& in, const Device&) { return Outputs{f(in[0])}; };
    c.gradcheck = true;
    cases.push_back(c);
  }
  return cases;
}

// Only the gradient cases of a unary op: the suite of its backward op.
std::vector<Case> unary_backward_cases(const Unary& f, Domain domain) {
  std::vector<Case> cases;
  for (const Case& c : unary_cases(f, kFloat, domain, true, false))
    if (c.grad || c.gradcheck) cases.push_back(c);
  return cases;
}

struct ShapePair {
  Shape a, b;
};

std::vector<Case> binary_cases(const Binary& f, const std::vector<DType>& dtypes, Domain da,
                               Domain db, bool grad) {
  std::vector<Case> cases;
  auto fn = [f](const Operands& in, const Device&) { return Outputs{f(in[0], in[1])}; };
  for (DType d : dtypes) {
    const bool g = grad && differentiable(d);
    auto add = [&](Operand a, Operand b, bool with_grad) {
      Case c;
      a.requires_grad = b.requires_grad = with_grad;
      c.inputs = {a, b};
      c.label = describe(a) + " with " + describe(b).substr(describe(b).find(' ') + 1);
      c.fn = fn;
      c.grad = with_grad;
      cases.push_back(c);
    };
    const Domain a_dom = is_floating(d) ? da : integer_range(da);
    const Domain b_dom = is_floating(d) ? db : integer_range(db);
    for (const ShapePair& p :
         {ShapePair{{3, 4}, {3, 4}}, ShapePair{{3, 4}, {4}}, ShapePair{{2, 1, 4}, {3, 1}},
          ShapePair{{}, {5}}, ShapePair{{5}, {}}, ShapePair{{0, 4}, {4}}}) {
      const bool with_grad = g && !p.a.empty() && p.a[0] != 0;
      add(operand(p.a, d, Layout::Contiguous, a_dom.lo, a_dom.hi, 7),
          operand(p.b, d, Layout::Contiguous, b_dom.lo, b_dom.hi, 8), with_grad);
    }
    add(operand({3, 4}, d, Layout::Strided, a_dom.lo, a_dom.hi, 9),
        operand({3, 4}, d, Layout::Transposed, b_dom.lo, b_dom.hi, 10), g);
    add(operand({2, 3, 4}, d, Layout::Offset, a_dom.lo, a_dom.hi, 11),
        operand({3, 4}, d, Layout::Strided, b_dom.lo, b_dom.hi, 12), false);
  }
  if (grad) {
    Case c;
    c.inputs = {gradcheck_operand({2, 3}, da, 15), gradcheck_operand({3}, db, 16)};
    c.label = "float64 [2,3] with [3] gradcheck";
    c.fn = fn;
    c.gradcheck = true;
    cases.push_back(c);
  }
  return cases;
}

// The in-place spelling of a generated op (x.exp_(), a.add_(b): the entry's "inplace"),
// in float32, float64 and int32 where the op takes them: the kernel gets the same
// strided view as input and output.
std::vector<Case> in_place_cases(const testing::PointwiseOp& p) {
  std::vector<Case> cases;
  for (DType d : {DType::Float32, DType::Float64, DType::Int32}) {
    if (!((p.dtypes >> static_cast<int>(d)) & 1u)) continue;
    const Domain da = is_floating(d) ? p.domain[0] : integer_range(p.domain[0]);
    const Domain db = is_floating(d) ? p.domain[1] : integer_range(p.domain[1]);
    Case c;
    c.inputs = {operand({3, 4}, d, Layout::Strided, da.lo, da.hi, 17)};
    const std::string name = std::string(p.op).substr(5) + "_";  // "kiln.add" -> "add_"
    if (p.unary_inplace != nullptr) {
      c.fn = [f = p.unary_inplace](const Operands& in, const Device&) {
        Tensor x = in[0];
        f(x);
        return Outputs{x};
      };
    } else {
      c.inputs.push_back(operand({4}, d, Layout::Contiguous, db.lo, db.hi, 18));
      c.fn = [f = p.binary_inplace](const Operands& in, const Device&) {
        Tensor a = in[0];
        f(a, in[1]);
        return Outputs{a};
      };
    }
    c.label = describe(c.inputs[0]) + " " + name + " in place";
    cases.push_back(c);
  }
  return cases;
}

// Comparisons and logical ops: values from a small set, so there are ties and zeros.
std::vector<Case> predicate_cases(const Binary& f) {
  std::vector<Case> cases;
  for (DType d : kAll) {
    for (const ShapePair& p :
         {ShapePair{{3, 4}, {3, 4}}, ShapePair{{2, 3, 4}, {4}}, ShapePair{{5}, {}}}) {
      Case c;
      Operand a = operand(p.a, d, Layout::Contiguous, -2, 2, 19);
      Operand b =
          operand(p.b, d, p.b.size() == 2 ? Layout::Transposed : Layout::Contiguous, -2, 2, 20);
      if (is_floating(d)) {
        for (double& v : a.values) v = std::round(v * 2) / 2;
        for (double& v : b.values) v = std::round(v * 2) / 2;
      }
      if (d == DType::UInt8) {
        for (double& v : a.values) v = std::abs(v);
        for (double& v : b.values) v = std::abs(v);
      }
      c.inputs = {a, b};
      c.label = describe(a) + " with " + shape_text(p.b);
      c.fn = [f](const Operands& in, const Device&) { return Outputs{f(in[0], in[1])}; };
      cases.push_back(c);
    }
  }
  Case nan;
  nan.inputs = {operand_of({4}, DType::Float32, {kNaN, 1, kNaN, -kInf}),
                operand_of({4}, DType::Float32, {kNaN, kNaN, 1, -kInf})};
  nan.label = "float32 [4] with NaN and infinities";
  nan.fn = [f](const Operands& in, const Device&) { return Outputs{f(in[0], in[1])}; };
  cases.push_back(nan);
  return cases;
}

std::vector<Case> where_cases() {
  std::vector<Case> cases;
  for (DType d : kAll) {
    const bool g = differentiable(d);
    Case c;
    Operand cond = operand({3, 4}, DType::Bool, Layout::Transposed, -1, 1, 21);
    Operand a = operand({3, 4}, d, Layout::Strided, 0, 3, 22);
    Operand b = operand({3, 4}, d, Layout::Contiguous, 0, 3, 23);
    a.requires_grad = b.requires_grad = g;
    c.inputs = {cond, a, b};
    c.label = describe(a) + " with bool condition";
    c.fn = [](const Operands& in, const Device&) { return Outputs{where(in[0], in[1], in[2])}; };
    c.grad = g;
    cases.push_back(c);
    Case broadcast = c;
    broadcast.inputs = {operand({3, 1}, DType::Bool, Layout::Contiguous, -1, 1, 24),
                        operand({4}, d, Layout::Contiguous, 0, 3, 25),
                        operand({}, d, Layout::Contiguous, 0, 3, 26)};
    broadcast.inputs[1].requires_grad = broadcast.inputs[2].requires_grad = g;
    broadcast.label = std::string(dtype_name(d)) + " [3,1] ? [4] : []";
    cases.push_back(broadcast);
  }
  return cases;
}

Unary clamp_fn(std::optional<Scalar> lo, std::optional<Scalar> hi) {
  return [lo, hi](const Tensor& x) { return x.clamp(lo, hi); };
}

constexpr double kInt32Max = 2147483647.0, kInt32Min = -2147483648.0;

// Integer arithmetic wraps around (two's complement), in every integer dtype.
std::vector<Case> wrap_cases(const std::string& op) {
  const Operand a32 = operand_of({3}, DType::Int32, {kInt32Max, kInt32Min, 7});
  const Operand b32 = operand_of({3}, DType::Int32, {1, -1, -9});
  const Operand a8 = operand_of({2}, DType::UInt8, {250, 3});
  const Operand b8 = operand_of({2}, DType::UInt8, {10, 200});
  const Operand a64 = operand_of({2}, DType::Int64, {9007199254740991.0, -5});
  const Operand b64 = operand_of({2}, DType::Int64, {2048, 3});
  if (op == "add") {
    return {
        known("int32 overflow", {a32, b32}, [](const Operands& x) { return Outputs{x[0] + x[1]}; },
              {{kInt32Min, kInt32Max, -2}}),
        known("uint8 overflow", {a8, b8}, [](const Operands& x) { return Outputs{x[0] + x[1]}; },
              {{4, 203}})};
  }
  if (op == "sub") {
    return {
        known("int32 overflow", {a32, b32}, [](const Operands& x) { return Outputs{x[0] - x[1]}; },
              {{2147483646.0, -2147483647.0, 16}}),
        known("uint8 underflow", {a8, b8}, [](const Operands& x) { return Outputs{x[0] - x[1]}; },
              {{240, 59}})};
  }
  // mul: 2500 mod 256, 600 mod 256; (2^53 - 1) * 2048 wraps to -2048 in int64.
  return {known("uint8 overflow", {a8, b8}, [](const Operands& x) { return Outputs{x[0] * x[1]}; },
                {{196, 88}}),
          known("int64 overflow", {a64, b64},
                [](const Operands& x) { return Outputs{x[0] * x[1]}; }, {{-2048, -15}})};
}

void unary(std::vector<OpSuite>& suites, const std::string& op, Unary f,
           const std::vector<DType>& dtypes, Domain domain, bool grad, bool special = false,
           std::function<std::vector<Case>()> extra = nullptr) {
  suites.push_back({op, [=] {
                      std::vector<Case> cases = unary_cases(f, dtypes, domain, grad, special);
                      if (extra) {
                        for (Case& c : extra()) cases.push_back(std::move(c));
                      }
                      return cases;
                    }});
}

// The dtypes of a KILN_DTYPES_* mask, in kAll's order.
std::vector<DType> dtypes_in(uint32_t mask) {
  std::vector<DType> out;
  for (DType d : kAll)
    if ((mask >> static_cast<int>(d)) & 1u) out.push_back(d);
  return out;
}

// Known answers for the generated pointwise ops that need more than the float64
// reference (C library values, edge cases that random inputs never reach).
std::vector<Case> pointwise_known_answers(const std::string& op) {
  const double pi = M_PI;
  if (op == "kiln.erf") {
    const Operand x = operand_of({7}, DType::Float64, {0, -0.0, 0.5, 1, -2, kInf, -kInf});
    return {known("float64 [7]", {x}, [](const Operands& in) { return Outputs{erf(in[0])}; },
                  {{0, -0.0, 0.5204998778130465, 0.8427007929497149, -0.9953222650189527, 1, -1}})};
  }
  if (op == "kiln.log1p") {
    // Tiny x, where log(1 + x) loses the digits 1 + x rounds away: right to 2 ulps, in
    // both float dtypes (tolerance_for's 1e-12 absolute accepts float64 log(1 + 1e-10),
    // 8e-18 off but 8e-8 relative).
    const std::vector<double> xs = {0, -0.0, 1e-10, -1e-10, 0x1p-60, 1, -0.5, -1, kInf};
    const std::vector<double> answers = {
        0, -0.0, 9.9999999995e-11, -1.00000000005e-10, 0x1p-60, M_LN2, -M_LN2, -kInf, kInf};
    std::vector<Case> cases;
    for (DType d : {DType::Float64, DType::Float32}) {
      cases.push_back(known(std::string(dtype_name(d)) + " [9] small x", {operand_of({9}, d, xs)},
                            [](const Operands& in) { return Outputs{log1p(in[0])}; }, {answers}));
      cases.back().known_ulps = 2;
    }
    return cases;
  }
  if (op == "kiln.atan2") {
    // The four quadrants, the axes and the signed zeros: atan2(±0, −1) = ±π.
    const Operand a = operand_of({7}, DType::Float64, {1, 1, -1, 0, -0.0, 0, -1});
    const Operand b = operand_of({7}, DType::Float64, {1, -1, -1, -1, -1, 0, 0});
    return {known("float64 [7]", {a, b},
                  [](const Operands& in) { return Outputs{atan2(in[0], in[1])}; },
                  {{pi / 4, 3 * pi / 4, -3 * pi / 4, pi, -pi, 0, -pi / 2}})};
  }
  return {};
}

}  // namespace

void add_elementwise_suites(std::vector<OpSuite>& suites) {
  const Domain wide = range(-3, 3);
  unary(
      suites, "kiln.neg", [](const Tensor& x) { return -x; }, kFloatInt, wide, true, true,
      [] {
        return std::vector<Case>{known(
            "int32 -INT_MIN wraps", {operand_of({3}, DType::Int32, {kInt32Max, kInt32Min, 7})},
            [](const Operands& x) { return Outputs{-x[0]}; }, {{-kInt32Max, kInt32Min, -7}})};
      });
  suites.push_back(
      {"kiln.gelu", [=] {
         auto cases =
             unary_cases([](const Tensor& x) { return x.gelu("none"); }, kFloat, wide, true, false);
         for (Case& c : unary_cases([](const Tensor& x) { return x.gelu("tanh"); }, kFloat, wide,
                                    true, false)) {
           c.label += " approximate=tanh";
           cases.push_back(c);
         }
         // Both formulas, evaluated here in float64.
         const std::vector<double> xs = {-6, -2.5, -1, -0.25, 0, 0.3, 1, 2, 5.5};
         std::vector<double> exact, tanh_form;
         for (double v : xs) {
           exact.push_back(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
           const double inner = std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v);
           tanh_form.push_back(0.5 * v * (1 + std::tanh(inner)));
         }
         const Operand x = operand_of({9}, DType::Float64, xs);
         cases.push_back(known("float64 [9] approximate=none", {x},
                               [](const Operands& in) { return Outputs{in[0].gelu("none")}; },
                               {exact}));
         cases.push_back(known("float64 [9] approximate=tanh", {x},
                               [](const Operands& in) { return Outputs{in[0].gelu("tanh")}; },
                               {tanh_form}));
         return cases;
       }});
  unary(
      suites, "kiln.logical_not", [](const Tensor& x) { return x.logical_not(); }, kAll,
      range(-1, 1), false, true,
      [] {
        return std::vector<Case>{known(
            "float32 [5] with NaN", {operand_of({5}, DType::Float32, {1, 2, 3, kNaN, 0})},
            [](const Operands& x) { return Outputs{x[0].logical_not()}; }, {{0, 0, 0, 0, 1}})};
      });
  suites.push_back(
      {"kiln.clamp", [=] {
         // Integer bounds for the integer dtypes: a floating bound makes the frontend
         // clamp an integer tensor in float32 (PyTorch's promotion).
         auto cases = unary_cases(clamp_fn(-1.0, 1.5), kFloat, wide, true, true);
         for (Case& c : unary_cases(clamp_fn(0, 2), kFloatInt, wide, false, true)) {
           c.label += " integer bounds";
           cases.push_back(c);
         }
         for (Case& c : unary_cases(clamp_fn(1, std::nullopt), kFloatInt, wide, false, false)) {
           c.label += " min only";
           cases.push_back(c);
         }
         for (Case& c : unary_cases(clamp_fn(std::nullopt, -0.5), kFloat, wide, false, false)) {
           c.label += " max only";
           cases.push_back(c);
         }
         // NaN passes through; infinite bounds; integer tensors keep their dtype.
         const Operand x = operand_of({6}, DType::Float32, {-5, -1, 0.5, 3, 9, kNaN});
         cases.push_back(known("float32 [-1, 3]", {x},
                               [](const Operands& in) { return Outputs{in[0].clamp(-1.0, 3.0)}; },
                               {{-1, -1, 0.5, 3, 3, kNaN}}));
         cases.push_back(known("float32 [-inf, 0]", {x},
                               [](const Operands& in) { return Outputs{in[0].clamp(-kInf, 0.0)}; },
                               {{-5, -1, 0, 0, 0, kNaN}}));
         cases.push_back(known("int64 [-2, 50]", {operand_of({4}, DType::Int64, {-100, 0, 7, 100})},
                               [](const Operands& in) { return Outputs{in[0].clamp(-2, 50)}; },
                               {{-2, 0, 7, 50}}));
         return cases;
       }});

  suites.push_back({"kiln.add", [=] {
                      auto cases =
                          binary_cases([](const Tensor& a, const Tensor& b) { return a + b; },
                                       kArith, wide, wide, true);
                      for (Case& c : wrap_cases("add")) cases.push_back(std::move(c));
                      return cases;
                    }});
  suites.push_back({"kiln.sub", [=] {
                      auto cases =
                          binary_cases([](const Tensor& a, const Tensor& b) { return a - b; },
                                       kArith, wide, wide, true);
                      for (Case& c : wrap_cases("sub")) cases.push_back(std::move(c));
                      return cases;
                    }});
  suites.push_back({"kiln.mul", [=] {
                      auto cases =
                          binary_cases([](const Tensor& a, const Tensor& b) { return a * b; },
                                       kArith, wide, wide, true);
                      for (Case& c : wrap_cases("mul")) cases.push_back(std::move(c));
                      return cases;
                    }});
  suites.push_back({"kiln.div", [=] {
                      return binary_cases([](const Tensor& a, const Tensor& b) { return a / b; },
                                          kFloat, wide, range(0.5, 2), true);
                    }});
  for (const char* op : {"maximum", "minimum"}) {
    const bool max = std::string(op) == "maximum";
    suites.push_back({std::string("kiln.") + op, [=] {
                        Binary f = [max](const Tensor& a, const Tensor& b) {
                          return max ? maximum(a, b) : minimum(a, b);
                        };
                        auto cases = binary_cases(f, kArith, wide, wide, true);
                        Case nan;
                        nan.inputs = {operand_of({4}, DType::Float32, {kNaN, 1, 2, -kInf}),
                                      operand_of({4}, DType::Float32, {0, kNaN, 3, 5})};
                        nan.label = "float32 [4] with NaN (known answers)";
                        nan.fn = [f](const Operands& in, const Device&) {
                          return Outputs{f(in[0], in[1])};
                        };
                        // NaN on either side wins; otherwise the larger (smaller).
                        nan.expected = {max ? std::vector<double>{kNaN, kNaN, 3, 5}
                                            : std::vector<double>{kNaN, kNaN, 2, -kInf}};
                        cases.push_back(nan);
                        return cases;
                      }});
  }
  const std::pair<const char*, Binary> predicates[] = {
      {"kiln.eq", [](const Tensor& a, const Tensor& b) { return eq(a, b); }},
      {"kiln.ne", [](const Tensor& a, const Tensor& b) { return ne(a, b); }},
      {"kiln.lt", [](const Tensor& a, const Tensor& b) { return lt(a, b); }},
      {"kiln.le", [](const Tensor& a, const Tensor& b) { return le(a, b); }},
      {"kiln.gt", [](const Tensor& a, const Tensor& b) { return gt(a, b); }},
      {"kiln.ge", [](const Tensor& a, const Tensor& b) { return ge(a, b); }},
      {"kiln.logical_and", [](const Tensor& a, const Tensor& b) { return logical_and(a, b); }},
      {"kiln.logical_or", [](const Tensor& a, const Tensor& b) { return logical_or(a, b); }},
  };
  // Known answers: a, b = {1, 2, 3, NaN, 0}, {2, 2, 2, 1, 0}; comparisons with NaN are
  // false except !=, and a NaN is true for the logical ops (it is not zero).
  const std::map<std::string, std::vector<double>> predicate_answers = {
      {"kiln.eq", {0, 1, 0, 0, 1}},          {"kiln.ne", {1, 0, 1, 1, 0}},
      {"kiln.lt", {1, 0, 0, 0, 0}},          {"kiln.le", {1, 1, 0, 0, 1}},
      {"kiln.gt", {0, 0, 1, 0, 0}},          {"kiln.ge", {0, 1, 1, 0, 1}},
      {"kiln.logical_and", {1, 1, 1, 1, 0}}, {"kiln.logical_or", {1, 1, 1, 1, 0}},
  };
  for (const auto& [op, fn] : predicates) {
    const std::vector<double> answer = predicate_answers.at(op);
    // A copy, not the structured binding: clang 14 cannot capture a binding.
    const auto f = fn;
    suites.push_back({op, [f, answer] {
                        auto cases = predicate_cases(f);
                        cases.push_back(known(
                            "float32 [5] with NaN",
                            {operand_of({5}, DType::Float32, {1, 2, 3, kNaN, 0}),
                             operand_of({5}, DType::Float32, {2, 2, 2, 1, 0})},
                            [f](const Operands& x) { return Outputs{f(x[0], x[1])}; }, {answer}));
                        return cases;
                      }});
  }
  suites.push_back({"kiln.where", where_cases});

  // Backward ops of elementwise functions, reached through gradients.
  suites.push_back({"kiln.relu_backward", [=] {
                      return unary_backward_cases([](const Tensor& x) { return x.relu(); }, wide);
                    }});
  suites.push_back(
      {"kiln.gelu_backward", [=] {
         auto cases = unary_backward_cases([](const Tensor& x) { return x.gelu("none"); }, wide);
         for (Case& c :
              unary_backward_cases([](const Tensor& x) { return x.gelu("tanh"); }, wide)) {
           c.label += " approximate=tanh";
           cases.push_back(c);
         }
         return cases;
       }});
  // Every pointwise op generated from the catalogue that has no suite above gets the
  // generic one from its entry (kiln/testing/pointwise_ops.h): each of its dtypes over
  // its test domain, gradients where it has them, ±0/±inf/NaN where the entry asks,
  // and its known answers. Every op with an in-place spelling, in a suite above or
  // not, gets its in-place cases.
  for (const testing::PointwiseOp& p : testing::kPointwiseOps) {
    const auto suite =
        std::find_if(suites.begin(), suites.end(), [&](const OpSuite& s) { return s.op == p.op; });
    const bool in_place = p.unary_inplace != nullptr || p.binary_inplace != nullptr;
    if (suite != suites.end()) {
      if (in_place) {
        suite->cases = [hand_written = suite->cases, entry = &p] {
          std::vector<Case> cases = hand_written();
          for (Case& c : in_place_cases(*entry)) cases.push_back(std::move(c));
          return cases;
        };
      }
      continue;
    }
    const std::vector<DType> dtypes = dtypes_in(p.dtypes);
    const Domain da = p.domain[0], db = p.domain[1];
    const std::string op = p.op;
    auto extra = [op, entry = &p, in_place] {
      std::vector<Case> cases = pointwise_known_answers(op);
      if (in_place) {
        for (Case& c : in_place_cases(*entry)) cases.push_back(std::move(c));
      }
      return cases;
    };
    if (p.unary != nullptr) {
      unary(suites, op, p.unary, dtypes, da, p.differentiable, p.special_values, extra);
    } else {
      const Binary f = p.binary;
      const bool grad = p.differentiable;
      suites.push_back({op, [=] {
                          std::vector<Case> cases = binary_cases(f, dtypes, da, db, grad);
                          for (Case& c : extra()) cases.push_back(std::move(c));
                          return cases;
                        }});
    }
  }
}

}  // namespace kiln::conformance
