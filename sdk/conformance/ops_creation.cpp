// Memory and creation ops: copy (conversions, strided in and out), fill, arange,
// linspace, and the Philox random ops, which must be bit-identical to the CPU.
#include <limits>

#include "op_suite.h"

namespace kiln::conformance {

namespace {

constexpr DType kAll[] = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16,
                          DType::Int32,   DType::Int64,   DType::UInt8,   DType::Bool};
constexpr DType kFloat[] = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};

std::string name(DType d) { return std::string(dtype_name(d)); }

// Values every dtype holds the same way after conversion (no negative numbers for
// uint8, no out-of-range values: those are undefined by the catalogue), with
// fractions that exercise truncation toward zero and round-to-nearest-even.
std::vector<double> convertible(DType from, DType to) {
  std::vector<double> v = {0, 1, 2.5, 3.75, 100.25, 7, 0.1, 255, 12, 1.5, 0.5, 33.3};
  if (from == DType::Bool || to == DType::Bool) v = {0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 1};
  if (from != DType::UInt8 && to != DType::UInt8 && from != DType::Bool && to != DType::Bool) {
    v[1] = -1;
    v[6] = -0.1;
    v[9] = -2.5;
  }
  return v;
}

std::vector<Case> copy_cases() {
  std::vector<Case> cases;
  // Every conversion (through Tensor::to, which runs kiln.copy).
  for (DType from : kAll) {
    for (DType to : kAll) {
      if (from == to) continue;
      Case c;
      c.label = name(to) + " from " + name(from);
      c.inputs = {operand_of({3, 4}, from, convertible(from, to))};
      c.fn = [to](const Operands& x, const Device&) { return Outputs{x[0].to(to)}; };
      c.reference = Reference::SameDtype;
      cases.push_back(c);
    }
  }
  // Making strided views contiguous, same dtype.
  for (DType d : kAll) {
    for (Layout layout : {Layout::Strided, Layout::Transposed, Layout::Offset}) {
      Case c;
      c.inputs = {operand({2, 3, 5}, d, layout, -3, 3)};
      c.label = describe(c.inputs[0]) + " made contiguous";
      c.fn = [](const Operands& x, const Device&) { return Outputs{x[0].contiguous()}; };
      c.reference = Reference::SameDtype;
      cases.push_back(c);
    }
    // Strided out: copy_ into every other column of a larger tensor. The whole
    // destination is compared, so writes outside the view are caught too.
    Case c;
    c.inputs = {operand({4, 8}, d, Layout::Contiguous, -3, 3, 2),
                operand({4, 4}, d, Layout::Transposed)};
    c.label = name(d) + " copy_ into a strided view";
    c.fn = [](const Operands& x, const Device&) {
      Tensor base = x[0];
      base.slice(1, 0, 8, 2).copy_(x[1]);
      return Outputs{base};
    };
    c.reference = Reference::SameDtype;
    cases.push_back(c);
  }
  return cases;
}

std::vector<Case> fill_cases() {
  std::vector<Case> cases;
  for (DType d : kAll) {
    const double value = d == DType::Bool ? 1 : (d == DType::UInt8 ? 7.75 : -2.5);
    for (const Shape& shape : {Shape{}, Shape{7}, Shape{3, 5}, Shape{0, 4}}) {
      Case c;
      c.label = name(d) + " " + shape_text(shape);
      c.fn = [d, value, shape](const Operands&, const Device& device) {
        return Outputs{full(IntArrayRef(shape), value, TensorOptions(d).device(device))};
      };
      c.reference = Reference::SameDtype;
      cases.push_back(c);
    }
    // Strided out, with the untouched elements of the base compared as well.
    Case c;
    c.inputs = {operand({3, 8}, d, Layout::Contiguous, 0, 3)};
    c.label = name(d) + " fill_ of a strided view";
    c.fn = [value](const Operands& x, const Device&) {
      Tensor base = x[0];
      base.slice(1, 1, 8, 3).fill_(value);
      return Outputs{base};
    };
    c.reference = Reference::SameDtype;
    cases.push_back(c);
  }
  for (DType d : kFloat) {
    for (double special : {std::numeric_limits<double>::quiet_NaN(),
                           -std::numeric_limits<double>::infinity(), 1e-3}) {
      Case c;
      c.label = name(d) + " [4] value " + std::to_string(special);
      c.fn = [d, special](const Operands&, const Device& device) {
        return Outputs{full({4}, special, TensorOptions(d).device(device))};
      };
      c.reference = Reference::SameDtype;
      cases.push_back(c);
    }
  }
  return cases;
}

std::vector<Case> arange_cases() {
  std::vector<Case> cases;
  for (DType d : kAll) {
    if (d == DType::Bool) continue;
    struct Range {
      double start, end, step;
    };
    std::vector<Range> ranges = {{0, 10, 1}, {3, 40, 7}, {5, 5, 1}};
    if (is_floating(d)) ranges.push_back({-2.5, 3, 0.5});
    if (d != DType::UInt8) ranges.push_back({10, -3, -3});
    for (const Range& r : ranges) {
      Case c;
      c.label = name(d) + " arange(" + std::to_string(r.start) + ", " + std::to_string(r.end) +
                ", " + std::to_string(r.step) + ")";
      c.fn = [d, r](const Operands&, const Device& device) {
        return Outputs{arange(r.start, r.end, r.step, TensorOptions(d).device(device))};
      };
      c.reference = Reference::SameDtype;
      cases.push_back(c);
    }
  }
  return cases;
}

std::vector<Case> linspace_cases() {
  std::vector<Case> cases;
  for (DType d : kFloat) {
    struct Span {
      double start, end;
      int64_t steps;
    };
    for (const Span& s : {Span{0, 1, 5}, Span{-3, 7, 11}, Span{2, -2, 8}, Span{1.5, 9, 1},
                          Span{0, 1, 0}, Span{-1, 1, 2}}) {
      Case c;
      c.label = name(d) + " linspace(" + std::to_string(s.start) + ", " + std::to_string(s.end) +
                ", " + std::to_string(s.steps) + ")";
      c.fn = [d, s](const Operands&, const Device& device) {
        return Outputs{linspace(s.start, s.end, s.steps, TensorOptions(d).device(device))};
      };
      c.reference = Reference::SameDtype;
      cases.push_back(c);
    }
  }
  return cases;
}

// Two draws in a row: the second starts at an offset that is not a multiple of the
// Philox block, so offset handling is checked too.
std::vector<Case> random_cases(bool normal) {
  std::vector<Case> cases;
  for (DType d : kFloat) {
    for (uint64_t seed : {uint64_t{0}, uint64_t{0x123456789abcdefull}}) {
      Case c;
      c.label = name(d) + " seed " + std::to_string(seed) + " [7] then [3,333]";
      c.fn = [d, seed, normal](const Operands&, const Device& device) {
        manual_seed(seed);
        const TensorOptions o = TensorOptions(d).device(device);
        Tensor a = normal ? kiln::normal({7}, 0.5, 2.0, o) : kiln::uniform({7}, -1.0, 3.0, o);
        Tensor b = normal ? kiln::randn({3, 333}, o) : kiln::rand({3, 333}, o);
        return Outputs{a, b};
      };
      c.reference = Reference::SameDtype;
      // Bit-identical but for the last bit of a float64 transcendental (api/OPS.md).
      c.tolerance_scale = normal ? 1 : 0;
      cases.push_back(c);
    }
  }
  return cases;
}

}  // namespace

void add_creation_suites(std::vector<OpSuite>& suites) {
  suites.push_back({"kiln.copy", copy_cases});
  suites.push_back({"kiln.fill", fill_cases});
  suites.push_back({"kiln.arange", arange_cases});
  suites.push_back({"kiln.linspace", linspace_cases});
  suites.push_back({"kiln.random_uniform", [] { return random_cases(false); }});
  suites.push_back({"kiln.random_normal", [] { return random_cases(true); }});
}

}  // namespace kiln::conformance
