// kiln/sdk/host_device.h — one macro that lets SDK helpers run on both sides.
//
// Functions marked KILN_HOST_DEVICE compile as ordinary inline C++ in a host
// compiler and as `__host__ __device__` under nvcc, so a CUDA plugin calls the very
// same Philox and half-precision code as the CPU plugin and gets the same bits.
#ifndef KILN_SDK_HOST_DEVICE_H
#define KILN_SDK_HOST_DEVICE_H

#if defined(__CUDACC__)
#define KILN_HOST_DEVICE __host__ __device__
#else
#define KILN_HOST_DEVICE
#endif

namespace kiln::sdk {

/// a * b + c with two roundings on every compiler, never fused into an FMA: the `_rn`
/// intrinsics (which nvcc never contracts) in CUDA device code, plain operators on the
/// host, where the translation unit must be compiled with `-ffp-contract=off` (GCC/Clang
/// contract across statements otherwise). What Philox's value mappings and
/// arange/linspace need to give every backend the same bits.
KILN_HOST_DEVICE inline float mul_add_unfused(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(__fmul_rn(a, b), c);
#else
  return a * b + c;
#endif
}

KILN_HOST_DEVICE inline double mul_add_unfused(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(__dmul_rn(a, b), c);
#else
  return a * b + c;
#endif
}

/// a * b, rounded on its own (so that it cannot join a neighbouring add in an FMA).
KILN_HOST_DEVICE inline double mul_unfused(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

}  // namespace kiln::sdk

#endif  // KILN_SDK_HOST_DEVICE_H
