#pragma once
/// @file conformance.h
/// The op conformance suite is written once and instantiated for every device that
/// loads: device 0 of every plugin, plus cpu:1 when it exists. Each test file defines
/// a fixture derived from DeviceTest and ends with KILN_INSTANTIATE_FOR_EVERY_DEVICE.
///
///   class UnaryOps : public kiln::test::DeviceTest {};
///   TEST_P(UnaryOps, Exp) { auto x = make({1, 2}, {2}); ... device() ... }
///   KILN_INSTANTIATE_FOR_EVERY_DEVICE(UnaryOps);
///
/// Registered with KILN_PLUGIN_PATH=<good fixture folder> and KILN_CPU_DEVICES=2 it
/// runs on cpu:0, cpu:1 and minimal:0 (where everything but kiln.fill falls back).

#include <cmath>
#include <string>
#include <vector>

#include "kiln/testing/pointwise_ops.h"
#include "support/kiln_test.h"

namespace kiln::test {

/// The devices the suite runs on, computed from loaded_plugins() at run time.
std::vector<Device> conformance_devices();
/// "cpu_0" for cpu:0 (test names allow only [A-Za-z0-9_]).
std::string device_test_name(const ::testing::TestParamInfo<Device>& info);

/// `n` values from an input's test domain (the catalogue's test.domain, [lo, hi)):
/// random floats for a floating dtype, random integers spanning it for an integer one.
inline std::vector<double> domain_values(const kiln::testing::InputDomain& d, DType dtype, size_t n,
                                         uint32_t seed) {
  return is_floating(dtype) ? random_floats(n, seed, d.lo, d.hi)
                            : random_ints(n, seed, static_cast<int>(std::floor(d.lo)),
                                          static_cast<int>(std::ceil(d.hi)));
}

class DeviceTest : public ::testing::TestWithParam<Device> {
 protected:
  const Device& device() const { return GetParam(); }
  /// Another device of the suite, if there is one (for cross-device tests).
  std::vector<Device> other_devices() const {
    std::vector<Device> others;
    for (const Device& d : conformance_devices())
      if (!(d == device())) others.push_back(d);
    return others;
  }
  TensorOptions opts(DType dtype = float32) const { return options(dtype, device()); }
  Tensor make(const std::vector<double>& values, const Shape& shape, DType dtype = float32) const {
    return make_tensor(values, shape, dtype, device());
  }
  Tensor make(const std::vector<double>& values, const Shape& shape, DType dtype,
              Layout layout) const {
    return make_layout(values, shape, dtype, device(), layout);
  }
  /// Random float32-representable values in [lo, hi) for `shape`.
  Tensor random(const Shape& shape, uint32_t seed, DType dtype = float32,
                Layout layout = Layout::Contiguous, double lo = -2, double hi = 2) const {
    return make(random_floats(static_cast<size_t>(numel_of(shape)), seed, lo, hi), shape, dtype,
                layout);
  }
};

}  // namespace kiln::test

#define KILN_INSTANTIATE_FOR_EVERY_DEVICE(suite)                                     \
  INSTANTIATE_TEST_SUITE_P(Devices, suite,                                           \
                           ::testing::ValuesIn(::kiln::test::conformance_devices()), \
                           ::kiln::test::device_test_name)
