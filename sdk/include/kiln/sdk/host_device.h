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

#endif  // KILN_SDK_HOST_DEVICE_H
