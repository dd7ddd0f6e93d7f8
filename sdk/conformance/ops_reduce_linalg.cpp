// Reductions, matmul and indexing (with the scatter ops their gradients use).
#include <kiln/nn/functional.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "op_suite.h"

namespace kiln::conformance {

namespace {

const std::vector<DType> kFloat = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};
const std::vector<DType> kSumTypes = {DType::Float32,  DType::Float64, DType::Float16,
                                      DType::BFloat16, DType::Int32,   DType::Int64};
const std::vector<DType> kOrderTypes = {DType::Float32,  DType::Float64, DType::Float16,
                                        DType::BFloat16, DType::Int32,   DType::Int64,
                                        DType::UInt8};

using Reduce = std::function<Tensor(const Tensor&, const std::vector<int64_t>&, bool keepdim)>;

std::string dims_text(const std::vector<int64_t>& dims, bool keepdim) {
  std::string out = dims.empty() ? "all dims" : "dims " + shape_text(dims);
  return keepdim ? out + " keepdim" : out;
}

// Over all dims, single dims, several dims, keepdim; strided inputs; 0-d; and (when
// the op defines it) an empty reduction.
std::vector<Case> reduction_cases(const Reduce& f, const std::vector<DType>& dtypes, double lo,
                                  double hi, bool grad, bool empty_allowed) {
  std::vector<Case> cases;
  struct Plan {
    Shape shape;
    Layout layout;
    std::vector<int64_t> dims;
    bool keepdim;
  };
  const std::vector<Plan> plans = {
      {{2, 3, 4}, Layout::Contiguous, {}, false},     {{2, 3, 4}, Layout::Contiguous, {1}, false},
      {{2, 3, 4}, Layout::Transposed, {0, 2}, false}, {{2, 3, 4}, Layout::Strided, {-1}, true},
      {{5, 7}, Layout::Offset, {0}, false},           {{}, Layout::Contiguous, {}, false},
      {{33}, Layout::Contiguous, {}, false},
  };
  for (DType d : dtypes) {
    const bool g = grad && (d == DType::Float32 || d == DType::Float64);
    for (const Plan& p : plans) {
      Case c;
      Operand x = operand(p.shape, d, p.layout, d == DType::UInt8 ? 0 : lo, hi, 31);
      x.requires_grad = g && !p.shape.empty();
      c.inputs = {x};
      c.label = describe(x) + " " + dims_text(p.dims, p.keepdim);
      c.fn = [f, p](const Operands& in, const Device&) {
        return Outputs{f(in[0], p.dims, p.keepdim)};
      };
      c.grad = x.requires_grad;
      c.tolerance_scale = 2;
      cases.push_back(c);
    }
    if (empty_allowed) {
      Case c;
      c.inputs = {operand({3, 0}, d, Layout::Contiguous, lo, hi)};
      c.label = describe(c.inputs[0]) + " dims [1] (empty)";
      c.fn = [f](const Operands& in, const Device&) { return Outputs{f(in[0], {1}, false)}; };
      cases.push_back(c);
    }
  }
  if (grad) {
    Case c;
    Operand x = operand({2, 3}, DType::Float64, Layout::Contiguous, lo, hi, 32);
    x.requires_grad = true;
    c.inputs = {x};
    c.label = "float64 [2,3] dims [1] gradcheck";
    c.fn = [f](const Operands& in, const Device&) { return Outputs{f(in[0], {1}, false)}; };
    c.gradcheck = true;
    cases.push_back(c);
  }
  return cases;
}

std::vector<Case> arg_cases(bool max) {
  std::vector<Case> cases;
  auto f = [max](const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
    return max ? x.argmax(dim, keepdim) : x.argmin(dim, keepdim);
  };
  for (DType d : kOrderTypes) {
    // Values from a small set: ties, where the first index must win.
    for (const auto& [dim, keepdim] : std::vector<std::pair<std::optional<int64_t>, bool>>{
             {std::nullopt, false}, {0, false}, {1, true}, {-1, false}}) {
      Case c;
      Operand x = operand({4, 5}, d, dim == 1 ? Layout::Transposed : Layout::Contiguous, 0, 3, 33);
      if (is_floating(d))
        for (double& v : x.values) v = std::round(v);
      c.inputs = {x};
      c.label = describe(x) + (dim ? " dim " + std::to_string(*dim) : " flattened");
      c.fn = [f, dim = dim, keepdim = keepdim](const Operands& in, const Device&) {
        return Outputs{f(in[0], dim, keepdim)};
      };
      cases.push_back(c);
    }
  }
  Case nan;
  const double n = std::numeric_limits<double>::quiet_NaN();
  nan.inputs = {operand_of({2, 4}, DType::Float32, {1, n, 3, 2, 5, 4, 9, n})};
  nan.label = "float32 [2,4] with NaN dim 1";
  nan.fn = [f](const Operands& in, const Device&) { return Outputs{f(in[0], 1, false)}; };
  cases.push_back(nan);
  return cases;
}

std::vector<Case> var_cases() {
  std::vector<Case> cases;
  for (int64_t correction : {0, 1}) {
    for (Case c : reduction_cases(
             [correction](const Tensor&x, const std::vector<int64_t>&dims, bool keepdim) {
               return x.var(IntArrayRef(dims), correction, keepdim);
             },
             kFloat, -2, 2, true, false)) {
      c.label += " correction " + std::to_string(correction);
      cases.push_back(c);
    }
  }
  Case few;  // n <= correction: NaN
  few.inputs = {operand({3, 1}, DType::Float32)};
  few.label = "float32 [3,1] dims [1] correction 1 (n = 1)";
  few.fn = [](const Operands& in, const Device&) { return Outputs{in[0].var({1}, 1, false)}; };
  cases.push_back(few);
  return cases;
}

std::vector<Case> matmul_cases() {
  std::vector<Case> cases;
  struct Plan {
    Shape a, b;
    Layout la, lb;
  };
  const std::vector<Plan> plans = {
      {{3, 4}, {4, 5}, Layout::Contiguous, Layout::Contiguous},
      {{1, 7}, {7, 1}, Layout::Contiguous, Layout::Contiguous},
      {{2, 3, 4}, {2, 4, 5}, Layout::Contiguous, Layout::Contiguous},
      {{2, 3, 4}, {4, 5}, Layout::Transposed, Layout::Contiguous},
      {{2, 1, 3, 4}, {3, 4, 2}, Layout::Contiguous, Layout::Strided},
      {{4, 6}, {6, 3}, Layout::Offset, Layout::Transposed},
      {{3, 0}, {0, 4}, Layout::Contiguous, Layout::Contiguous},
      {{5}, {5}, Layout::Contiguous, Layout::Contiguous},
      {{17, 33}, {33, 9}, Layout::Contiguous, Layout::Contiguous},
  };
  for (DType d : kFloat) {
    const bool g = d == DType::Float32 || d == DType::Float64;
    for (const Plan& p : plans) {
      Case c;
      Operand a = operand(p.a, d, p.la, -1, 1, 41), b = operand(p.b, d, p.lb, -1, 1, 42);
      a.requires_grad = b.requires_grad = g && p.a.size() >= 2 && p.a.back() != 0;
      c.inputs = {a, b};
      c.label = describe(a) + " @ " + describe(b).substr(describe(b).find(' ') + 1);
      c.fn = [](const Operands& in, const Device&) { return Outputs{matmul(in[0], in[1])}; };
      c.grad = a.requires_grad;
      c.tolerance_scale = 8;  // sums of up to 33 products
      cases.push_back(c);
    }
  }
  Case gc;
  Operand a = operand({2, 3}, DType::Float64),
          b = operand({3, 2}, DType::Float64, Layout::Contiguous, -2, 2, 2);
  a.requires_grad = b.requires_grad = true;
  gc.inputs = {a, b};
  gc.label = "float64 [2,3] @ [3,2] gradcheck";
  gc.fn = [](const Operands& in, const Device&) { return Outputs{matmul(in[0], in[1])}; };
  gc.gradcheck = true;
  cases.push_back(gc);
  return cases;
}

// index_select forward; with gradients, its backward is kiln.index_add.
std::vector<Case> index_select_cases(bool gradients_only) {
  std::vector<Case> cases;
  for (DType d : {DType::Float32, DType::Float64, DType::Float16, DType::Int32, DType::Int64}) {
    const bool g = d == DType::Float32 || d == DType::Float64;
    if (gradients_only && !g) continue;
    for (int64_t dim : {0, 1}) {
      Case c;
      Operand x = operand({5, 4}, d, dim == 1 ? Layout::Strided : Layout::Contiguous, -3, 3, 51);
      x.requires_grad = g;
      // Repeated indices: their gradients must add up (deterministically).
      Operand index =
          operand_of({4}, DType::Int64,
                     dim == 0 ? std::vector<double>{4, 0, 4, 2} : std::vector<double>{3, 1, 3, 3});
      c.inputs = {x, index};
      c.label = describe(x) + " dim " + std::to_string(dim);
      c.fn = [dim](const Operands& in, const Device&) {
        return Outputs{index_select(in[0], dim, in[1])};
      };
      c.grad = g;
      cases.push_back(c);
    }
  }
  // Embedding rows: forward index_select, backward index_add.
  Case e;
  Operand weight = operand({6, 3}, DType::Float32);
  weight.requires_grad = true;
  e.inputs = {operand_of({2, 3}, DType::Int64, {5, 0, 5, 1, 1, 2}), weight};
  e.label = "float32 embedding [2,3] of [6,3]";
  e.fn = [](const Operands& in, const Device&) {
    return Outputs{nn::functional::embedding(in[0], in[1])};
  };
  e.grad = true;
  cases.push_back(e);
  return cases;
}

// gather forward; with gradients, its backward is kiln.scatter_add.
std::vector<Case> gather_cases(bool gradients_only) {
  std::vector<Case> cases;
  for (DType d : {DType::Float32, DType::Float64, DType::Float16, DType::Int32, DType::Int64}) {
    const bool g = d == DType::Float32 || d == DType::Float64;
    if (gradients_only && !g) continue;
    for (int64_t dim : {0, 1}) {
      Case c;
      Operand x = operand({3, 4}, d, dim == 0 ? Layout::Transposed : Layout::Contiguous, -3, 3, 52);
      x.requires_grad = g;
      Operand index = dim == 0 ? operand_of({2, 4}, DType::Int64, {0, 2, 2, 1, 2, 2, 0, 1})
                               : operand_of({3, 2}, DType::Int64, {3, 3, 0, 1, 2, 0});
      c.inputs = {x, index};
      c.label = describe(x) + " dim " + std::to_string(dim);
      c.fn = [dim](const Operands& in, const Device&) {
        return Outputs{gather(in[0], dim, in[1])};
      };
      c.grad = g;
      cases.push_back(c);
    }
  }
  return cases;
}

Reduce reduce_fn(Tensor (Tensor::*method)(IntArrayRef, bool) const) {
  return [method](const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
    return (x.*method)(IntArrayRef(dims), keepdim);
  };
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// OPS.md's exact rules for reductions, with known answers.
std::vector<Case> with_known(std::vector<Case> cases, std::vector<Case> known_cases) {
  for (Case& c : known_cases) cases.push_back(std::move(c));
  return cases;
}

const Operand kNanRows = operand_of({2, 3}, DType::Float32, {3, -1, 7, 2, kNaN, 0});
const Operand kEmpty = operand_of({0, 3}, DType::Float32, {});

std::vector<Case> sum_known() {
  const double two62 = 4611686018427387904.0;  // 2^62: 2^62 + 2^62 wraps to INT64_MIN
  return {known("int64 wraps", {operand_of({2}, DType::Int64, {two62, two62})},
                [](const Operands& x) { return Outputs{x[0].sum()}; }, {{-2 * two62}}),
          // (The frontend sums int32 in int64, as PyTorch does: this checks the result,
          // the plugins' int32 kernels have a test of their own.)
          known("int32 sum past INT32_MAX in between",
                {operand_of({4}, DType::Int32, {2e9, 2e9, -2e9, -1999999999})},
                [](const Operands& x) { return Outputs{x[0].sum()}; }, {{1}}),
          known("empty [0,3] over dim 0 is 0", {kEmpty},
                [](const Operands& x) { return Outputs{x[0].sum({0})}; }, {{0, 0, 0}})};
}

std::vector<Case> prod_known() {
  return {known("float64", {operand_of({2, 2}, DType::Float64, {1.5, -2, 4, 0.25})},
                [](const Operands& x) { return Outputs{x[0].prod()}; }, {{-3}}),
          known("empty [0,3] over dim 0 is 1", {kEmpty},
                [](const Operands& x) { return Outputs{x[0].prod({0})}; }, {{1, 1, 1}})};
}

// A NaN or an infinity anywhere in a reduction makes the variance NaN (as in PyTorch),
// in short rows and in long ones that a device splits into many partial results (600000
// elements: the CUDA plugin merges 37 slices of them with a whole block).
std::vector<Case> var_known() {
  std::vector<double> long_nan(600000, 0.5), long_inf(600000, -1.5);
  for (size_t i = 0; i < long_nan.size(); ++i) long_nan[i] += static_cast<double>(i % 7);
  long_nan[456789] = kNaN;
  long_inf[12345] = std::numeric_limits<double>::infinity();
  auto rows = [](const Operands& x) { return Outputs{x[0].var({1}, 1, false)}; };
  auto all = [](const Operands& x) { return Outputs{x[0].var({0}, 1, false)}; };
  return {
      known("NaN and inf rows",
            {operand_of({2, 5}, DType::Float32,
                        {1, kNaN, 3, 2, 5, std::numeric_limits<double>::infinity(), 1, 2, 3, 4})},
            rows, {{kNaN, kNaN}}),
      known("600000 with one NaN", {operand_of({600000}, DType::Float32, long_nan)}, all, {{kNaN}}),
      known("600000 with one inf", {operand_of({600000}, DType::Float32, long_inf)}, all, {{kNaN}}),
  };
}

std::vector<Case> extremum_known(bool max) {
  return {known("NaN propagates", {kNanRows},
                [max](const Operands& x) { return Outputs{max ? x[0].amax({1}) : x[0].amin({1})}; },
                {max ? std::vector<double>{7, kNaN} : std::vector<double>{-1, kNaN}}),
          known("uint8", {operand_of({3}, DType::UInt8, {5, 250, 17})},
                [max](const Operands& x) { return Outputs{max ? x[0].amax() : x[0].amin()}; },
                {{max ? 250.0 : 5.0}})};
}

// The first extreme index wins ties, and a NaN beats every number (both ways).
std::vector<Case> arg_known(bool max) {
  const Operand x =
      operand_of({3, 4}, DType::Float32, {1, 5, 5, 2, 0, -3, -3, 9, 4, kNaN, 8, kNaN});
  std::vector<double> long_values = random_values(100000, 5, -2, 2);
  long_values[70000] = long_values[90000] = max ? 1000 : -1000;
  auto arg = [max](const Tensor& t, int64_t dim) { return max ? t.argmax(dim) : t.argmin(dim); };
  return {
      known("rows: ties and NaN", {x}, [arg](const Operands& in) { return Outputs{arg(in[0], 1)}; },
            {max ? std::vector<double>{1, 3, 1} : std::vector<double>{0, 1, 1}}),
      known("columns: NaN wins", {x}, [arg](const Operands& in) { return Outputs{arg(in[0], 0)}; },
            {max ? std::vector<double>{2, 2, 2, 2} : std::vector<double>{1, 2, 1, 2}}),
      known("[100000] first of two ties", {operand_of({100000}, DType::Float32, long_values)},
            [arg](const Operands& in) { return Outputs{arg(in[0], 0)}; }, {{70000}})};
}

// cumsum along each dim, strided inputs, 0-d and empty; integers exact past 2^53.
std::vector<Case> cumsum_cases() {
  std::vector<Case> cases;
  const std::vector<DType> types = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16,
                                    DType::Int32,   DType::Int64,   DType::UInt8,   DType::Bool};
  for (DType d : types) {
    const bool g = d == DType::Float32 || d == DType::Float64;
    for (int64_t dim : {0, 1, -1}) {
      Case c;
      Operand x = operand({3, 4, 5}, d, dim == 1 ? Layout::Transposed : Layout::Contiguous,
                          d == DType::UInt8 || d == DType::Bool ? 0 : -2, 2, 41);
      x.requires_grad = g;
      c.inputs = {x};
      c.label = describe(x) + " dim " + std::to_string(dim);
      c.fn = [dim](const Operands& in, const Device&) { return Outputs{in[0].cumsum(dim)}; };
      c.grad = g;
      c.tolerance_scale = 4;
      cases.push_back(c);
    }
  }
  Case empty;
  empty.inputs = {operand({2, 0}, DType::Float32)};
  empty.label = "float32 [2,0] dim 1 (empty)";
  empty.fn = [](const Operands& in, const Device&) { return Outputs{in[0].cumsum(1)}; };
  cases.push_back(empty);
  Case check;
  Operand x = operand({3, 5}, DType::Float64, Layout::Contiguous, -1, 1, 42);
  x.requires_grad = true;
  check.inputs = {x};
  check.label = "float64 [3,5] dim 1 gradcheck";
  check.fn = [](const Operands& in, const Device&) { return Outputs{in[0].cumsum(1)}; };
  check.gradcheck = true;
  cases.push_back(check);
  const double two53 = 9007199254740992.0;  // 2^53: a float64 sum would stop there
  cases.push_back(known("int64 exact past 2^53", {operand_of({3}, DType::Int64, {two53, 1, 1})},
                        [](const Operands& in) { return Outputs{in[0].cumsum(0)}; },
                        {{two53, two53 /* 2^53 + 1, as a double */, two53 + 2}}));
  cases.push_back(known(
      "NaN and inf run on",
      {operand_of({5}, DType::Float32, {1, std::numeric_limits<double>::infinity(), 2, kNaN, 3})},
      [](const Operands& in) { return Outputs{in[0].cumsum(0)}; },
      {{1, std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity(), kNaN,
        kNaN}}));
  cases.push_back(known("bool counts", {operand_of({4}, DType::Bool, {1, 0, 1, 1})},
                        [](const Operands& in) { return Outputs{in[0].cumsum(0)}; },
                        {{1, 1, 2, 3}}));
  // Long lines: a parallel scan splits each into many tiles (and lines across an inner
  // dim are gathered first), where a short line fits one.
  const auto long_lines = [](Shape shape, DType d, int64_t dim) {
    Case c;
    c.inputs = {operand(shape, d, Layout::Contiguous, -2, 2, 44)};
    c.label = describe(c.inputs[0]) + " dim " + std::to_string(dim) + " (long lines)";
    c.fn = [dim](const Operands& in, const Device&) { return Outputs{in[0].cumsum(dim)}; };
    c.tolerance_scale = 4;
    return c;
  };
  cases.push_back(long_lines({2, 300000}, DType::Float32, 1));
  cases.push_back(long_lines({3, 40000, 3}, DType::Int64, 1));
  cases.push_back(long_lines({100000, 3}, DType::Float64, 0));
  cases.push_back(long_lines({5, 20000}, DType::BFloat16, 1));
  return cases;
}

// cumprod along each dim (values near 1, so that long lines stay in range), zeros in the
// gradient, integer wrap-around and NaN/inf/0 with known answers.
std::vector<Case> cumprod_cases() {
  std::vector<Case> cases;
  const auto along = [](const Operand& x, int64_t dim, bool grad) {
    Case c;
    c.inputs = {x};
    c.inputs[0].requires_grad = grad;
    c.label = describe(x) + " dim " + std::to_string(dim);
    c.fn = [dim](const Operands& in, const Device&) { return Outputs{in[0].cumprod(dim)}; };
    c.grad = grad;
    c.tolerance_scale = 4;
    return c;
  };
  for (DType d : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int32,
                  DType::Int64, DType::UInt8, DType::Bool}) {
    const bool g = d == DType::Float32 || d == DType::Float64;
    const bool small = d == DType::UInt8 || d == DType::Bool;
    for (int64_t dim : {0, 1, -1}) {
      cases.push_back(
          along(operand({3, 4, 5}, d, dim == 1 ? Layout::Transposed : Layout::Contiguous,
                        small ? 0 : (is_floating(d) ? 0.5 : -3), small ? 2 : 1.5, 49),
                dim, g));
    }
  }
  cases.push_back(along(
      operand({2, 300000}, DType::Float32, Layout::Contiguous, 0.99999, 1.00001, 50), 1, false));
  cases.push_back(along(
      operand({3, 20000, 3}, DType::Float64, Layout::Contiguous, 0.999, 1.001, 51), 1, false));
  // Zeros: the gradient has its own rule at a line's first zero, and is 0 past it.
  Case check;
  Operand z = operand_of({3, 5}, DType::Float64,
                         {0.5, 2, 0, 1.5, -3, 0, 1.25, 2, 0, 4, -1.5, 2, 0.75, -0.5, 3});
  z.requires_grad = true;
  check.inputs = {z};
  check.label = "float64 [3,5] dim 1 with zeros, gradcheck";
  check.fn = [](const Operands& in, const Device&) { return Outputs{in[0].cumprod(1)}; };
  check.grad = true;
  check.gradcheck = true;
  cases.push_back(check);
  const double two32 = 4294967296.0;
  cases.push_back(
      known("int64 wraps in 64 bits", {operand_of({3}, DType::Int64, {two32, two32, 3})},
            [](const Operands& in) { return Outputs{in[0].cumprod(0)}; }, {{two32, 0, 0}}));
  const double inf = std::numeric_limits<double>::infinity();
  cases.push_back(known(
      "zeros, NaN and inf run on", {operand_of({5}, DType::Float32, {2, inf, 3, 0, kNaN})},
      [](const Operands& in) { return Outputs{in[0].cumprod(0)}; }, {{2, inf, inf, kNaN, kNaN}}));
  return cases;
}

// sort both ways along each dim; ties and NaNs with known answers.
std::vector<Case> sort_cases() {
  std::vector<Case> cases;
  for (DType d :
       {DType::Float32, DType::Float64, DType::Float16, DType::Int32, DType::Int64, DType::UInt8}) {
    const bool g = d == DType::Float32 || d == DType::Float64;
    for (int64_t dim : {0, -1}) {
      for (bool descending : {false, true}) {
        Case c;
        Operand x = operand({4, 9}, d, dim == 0 ? Layout::Strided : Layout::Contiguous,
                            d == DType::UInt8 ? 0 : -50, 50, 43);
        x.requires_grad = g;
        c.inputs = {x};
        c.label = describe(x) + " dim " + std::to_string(dim) +
                  (descending ? " descending" : " ascending");
        c.fn = [dim, descending](const Operands& in, const Device&) {
          auto [values, indices] = in[0].sort(dim, descending);
          return Outputs{values, indices};
        };
        c.grad = g;
        cases.push_back(c);
      }
    }
  }
  const Operand ties = operand_of({8}, DType::Float32, {2, kNaN, 1, 2, -0.0, kNaN, 0, 1});
  auto sorted = [](bool descending) {
    return [descending](const Operands& in) {
      auto [values, indices] = in[0].sort(0, descending);
      return Outputs{values, indices};
    };
  };
  cases.push_back(known("ties stable, NaN last", {ties}, sorted(false),
                        {{-0.0, 0, 1, 1, 2, 2, kNaN, kNaN}, {4, 6, 2, 7, 0, 3, 1, 5}}));
  cases.push_back(known("descending: NaN first, ties stable", {ties}, sorted(true),
                        {{kNaN, kNaN, 2, 2, 1, 1, -0.0, 0}, {1, 5, 0, 3, 2, 7, 4, 6}}));
  std::vector<double> long_values(5000);
  for (size_t i = 0; i < long_values.size(); ++i) long_values[i] = static_cast<double>(i % 7);
  std::vector<double> long_sorted(long_values), long_index(long_values.size());
  std::sort(long_sorted.begin(), long_sorted.end());
  for (size_t i = 0, k = 0; k < 7; ++k)  // stable: value k's positions in order
    for (size_t j = k; j < long_values.size(); j += 7) long_index[i++] = static_cast<double>(j);
  cases.push_back(known("[5000] of 7 values, stable",
                        {operand_of({5000}, DType::Int32, long_values)}, sorted(false),
                        {long_sorted, long_index}));
  // Long lines (a GPU sorts short and long lines differently) with NaN, -0.0 and ties,
  // along the last dim and across an inner one; compared with the CPU reference.
  std::vector<double> specials = random_values(3 * 40000, 45, -3, 3);
  for (size_t i = 0; i < specials.size(); i += 97) specials[i] = kNaN;
  for (size_t i = 5; i < specials.size(); i += 89) specials[i] = -0.0;
  for (size_t i = 7; i < specials.size(); i += 83) specials[i] = 0.0;
  for (size_t i = 11; i < specials.size(); i += 13) specials[i] = 1.5;
  const auto long_sort = [](Operand x, int64_t dim, bool descending) {
    Case c;
    c.label = describe(x) + " dim " + std::to_string(dim) +
              (descending ? " descending" : " ascending") + " (long lines)";
    c.inputs = {std::move(x)};
    c.fn = [dim, descending](const Operands& in, const Device&) {
      auto [values, indices] = in[0].sort(dim, descending);
      return Outputs{values, indices};
    };
    return c;
  };
  for (bool descending : {false, true}) {
    cases.push_back(long_sort(operand_of({3, 40000}, DType::Float32, specials), 1, descending));
    cases.push_back(long_sort(operand_of({40000, 3}, DType::Float64, specials), 0, descending));
  }
  cases.push_back(
      long_sort(operand({1, 300000}, DType::Int32, Layout::Contiguous, -20, 20, 46), 1, false));
  cases.push_back(
      long_sort(operand({20000, 4}, DType::BFloat16, Layout::Contiguous, -8, 8, 47), 0, true));
  return cases;
}

}  // namespace

void add_reduction_suites(std::vector<OpSuite>& suites) {
  suites.push_back({"kiln.sum", [] {
                      return with_known(
                          reduction_cases(reduce_fn(&Tensor::sum), kSumTypes, -2, 2, true, true),
                          sum_known());
                    }});
  suites.push_back({"kiln.prod", [] {
                      return with_known(reduction_cases(reduce_fn(&Tensor::prod), kSumTypes, 0.6,
                                                        1.4, true, true),
                                        prod_known());
                    }});
  suites.push_back({"kiln.mean", [] {
                      return reduction_cases(reduce_fn(&Tensor::mean), kFloat, -2, 2, true, true);
                    }});
  suites.push_back({"kiln.amax", [] {
                      return with_known(reduction_cases(reduce_fn(&Tensor::amax), kOrderTypes, -3,
                                                        3, true, false),
                                        extremum_known(true));
                    }});
  suites.push_back({"kiln.amin", [] {
                      return with_known(reduction_cases(reduce_fn(&Tensor::amin), kOrderTypes, -3,
                                                        3, true, false),
                                        extremum_known(false));
                    }});
  suites.push_back({"kiln.argmax", [] { return with_known(arg_cases(true), arg_known(true)); }});
  suites.push_back({"kiln.argmin", [] { return with_known(arg_cases(false), arg_known(false)); }});
  suites.push_back({"kiln.var", [] { return with_known(var_cases(), var_known()); }});
  suites.push_back({"kiln.cumsum", cumsum_cases});
  suites.push_back({"kiln.cumprod", cumprod_cases});
  suites.push_back({"kiln.matmul", matmul_cases});
  suites.push_back({"kiln.index_select", [] { return index_select_cases(false); }});
  suites.push_back({"kiln.gather", [] { return gather_cases(false); }});
  suites.push_back({"kiln.sort", sort_cases});
  suites.push_back({"kiln.index_add", [] { return index_select_cases(true); }});
  suites.push_back({"kiln.scatter_add", [] { return gather_cases(true); }});
}

}  // namespace kiln::conformance
