// kiln/sdk/creation.h — kiln.arange and kiln.linspace: their operand checks and the
// value of element i, computed in float64 as OPS.md specifies, written once for every
// plugin (KILN_HOST_DEVICE: CUDA device code runs the same arithmetic as the CPU).
// Multiplies and adds are never fused into an FMA, on either side, so every backend
// produces the same bits (mul_add_unfused, kiln/sdk/host_device.h).
#ifndef KILN_SDK_CREATION_H
#define KILN_SDK_CREATION_H

#include <cstdint>

#include "kiln/sdk/host_device.h"
#include "kiln/sdk/op_args.h"
#include "kiln/sdk/op_attrs.h"

namespace kiln::sdk {

/// y[i] = start + i·step.
struct Arange {
  double start, step;
  KILN_HOST_DEVICE double operator()(int64_t i) const {
    return mul_add_unfused(static_cast<double>(i), step, start);
  }
};

/// n values from start to end; two halves, each counted from its own endpoint, so
/// both endpoints are exact.
struct Linspace {
  double start, end, step;
  int64_t n;
  KILN_HOST_DEVICE double operator()(int64_t i) const {
    if (n == 1) return start;
    if (i < n / 2) return mul_add_unfused(static_cast<double>(i), step, start);
    // end - k·step, as end + (-k)·step: negation is exact, so the bits are the same.
    return mul_add_unfused(-static_cast<double>(n - 1 - i), step, end);
  }
};

/// The checked output of both ops: 1-D, any stride.
inline TensorView creation_output(const OpArgs& args) {
  args.expect_counts(0, 1);
  const TensorView y = args.output(0);
  KILN_SDK_CHECK_ARG(y.ndim == 1, "y must be 1-D, got ", y.ndim, "-D");
  return y;
}

inline Arange arange(const OpArgs& args) {
  const auto a = attrs::arange::read(args);
  return {a.start, a.step};
}

inline Linspace linspace(const OpArgs& args, int64_t n) {
  const auto a = attrs::linspace::read(args);
  return {a.start, a.end, n >= 2 ? (a.end - a.start) / static_cast<double>(n - 1) : 0.0, n};
}

}  // namespace kiln::sdk

#endif  // KILN_SDK_CREATION_H
