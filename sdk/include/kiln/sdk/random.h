// kiln/sdk/random.h — the operands and attributes of the catalogue's random ops
// (kiln.random_uniform, kiln.random_normal, kiln.dropout), checked once for every
// plugin. The values come from kiln/sdk/philox.h, element i from counter
// offset + i / (elements per block), so any split of the work gives the same bits.
#ifndef KILN_SDK_RANDOM_H
#define KILN_SDK_RANDOM_H

#include <cstdint>

#include "kiln/sdk/op_args.h"
#include "kiln/sdk/op_attrs.h"

namespace kiln::sdk {

/// random_uniform (a = low, b = high) or random_normal (a = mean, b = std): a
/// contiguous output (element i is the i-th in row-major order) and its stream.
struct RandomFill {
  TensorView y;
  uint64_t seed, offset;
  double a, b;
};

inline RandomFill random_fill(const OpArgs& args, int64_t seed, int64_t offset, double a,
                              double b) {
  args.expect_counts(0, 1);
  RandomFill r{args.output(0), static_cast<uint64_t>(seed), static_cast<uint64_t>(offset), a, b};
  expect_contiguous(r.y, "y");
  return r;
}
/// kiln.random_uniform: a = low, b = high.
inline RandomFill random_fill(const OpArgs& args, const attrs::random_uniform& at) {
  return random_fill(args, at.seed, at.offset, at.low, at.high);
}
/// kiln.random_normal: a = mean, b = std.
inline RandomFill random_fill(const OpArgs& args, const attrs::random_normal& at) {
  return random_fill(args, at.seed, at.offset, at.mean, at.std);
}
/// The attributes named `a` and `b` (kept for plugins written against SDK 1.0).
inline RandomFill random_fill(const OpArgs& args, const char* a, const char* b) {
  return random_fill(args, args.attr_int("seed"), args.attr_int("offset"), args.attr_float(a),
                     args.attr_float(b));
}

/// kiln.dropout: x in; y (x's dtype) and the uint8 keep mask out, all contiguous.
struct Dropout {
  TensorView x, y, mask;
  double p;
  uint64_t seed, offset;
};

inline Dropout dropout_operands(const OpArgs& args) {
  args.expect_counts(1, 2);
  const auto a = attrs::dropout::read(args);
  Dropout d{args.input(0),
            args.output(0),
            args.output(1),
            a.p,
            static_cast<uint64_t>(a.seed),
            static_cast<uint64_t>(a.offset)};
  KILN_SDK_CHECK_ARG(d.p >= 0 && d.p <= 1, "p must be in [0, 1], got ", d.p);
  expect_same_shape(d.y, d.x, "y");
  expect_same_shape(d.mask, d.x, "mask");
  expect_dtype(d.y, d.x.dtype, "y");
  expect_dtype(d.mask, KILN_DTYPE_UINT8, "mask");
  expect_contiguous(d.x, "x");
  expect_contiguous(d.y, "y");
  expect_contiguous(d.mask, "mask");
  return d;
}

}  // namespace kiln::sdk

#endif  // KILN_SDK_RANDOM_H
