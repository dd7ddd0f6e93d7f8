// kiln.fft_c2c, kiln.fft_r2c and kiln.fft_c2r on cuFFT (opened on first use, like cuBLAS:
// toolkit_libraries.h).
//
// The kernels take contiguous inputs (the dispatcher copies others on the GPU first), so
// every transform is cuFFT's basic batched layout: the leading dims are the batch, the
// last signal_ndim (1 to 3, cuFFT's limit; more runs on the CPU) are the signal. Plans are
// cached per (device, type, signal sizes, batch) as PyTorch's cufft_plan_cache does, at
// most kCachedPlans of them, the least recently used dropped first; the cache is never
// destroyed (as conv.cu's and matmul.cu's are not): at exit the CUDA runtime may be gone. A plan
// never allocates: its work area comes from the caching allocator on the op's stream
// (Launch::scratch), set on the plan with the stream for each call under the plan's lock. cuFFT
// does not scale: `norm` is one more pass. C2R overwrites its input, so c2r transforms a copy of
// its half spectrum.
#include <cufft.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "kernels/common.cuh"
#include "kernels/registry.h"
#include "toolkit_libraries.h"

namespace kiln::cuda {

namespace {

void check_cufft(cufftResult status, const char* what) {
  if (status == CUFFT_SUCCESS) return;
  throw sdk::Error(
      status == CUFFT_ALLOC_FAILED ? KILN_STATUS_OUT_OF_MEMORY : KILN_STATUS_DEVICE_ERROR,
      sdk::str_cat(what, " failed: cufftResult ", static_cast<int>(status)));
}

// One cuFFT plan and the work-area size it asked for.
struct Plan {
  cufftHandle handle = 0;
  size_t work_bytes = 0;
  std::mutex use;  // setting the stream and work area, then executing, is one step
  ~Plan() {
    if (handle != 0) cufftDestroy(handle);
  }
};

struct PlanKey {
  int device;
  cufftType type;
  std::vector<long long> sizes;  // the signal sizes (the real side's for R2C/C2R)
  long long batch;
  bool operator<(const PlanKey& o) const {
    return std::tie(device, type, sizes, batch) < std::tie(o.device, o.type, o.sizes, o.batch);
  }
  bool operator==(const PlanKey& o) const {
    return std::tie(device, type, sizes, batch) == std::tie(o.device, o.type, o.sizes, o.batch);
  }
};

constexpr size_t kCachedPlans = 64;

struct PlanCache {
  std::mutex mutex;
  std::map<PlanKey, std::shared_ptr<Plan>> plans;
  std::vector<PlanKey> order;  // least recently used first
};

std::shared_ptr<Plan> plan_for(const PlanKey& key) {
  static PlanCache* const cache = new PlanCache;  // leaked on purpose: see the file comment
  auto& [mutex, plans, order] = *cache;
  std::lock_guard lock(mutex);
  if (auto it = plans.find(key); it != plans.end()) {
    const auto used = std::find(order.begin(), order.end(), key);
    std::rotate(used, used + 1, order.end());
    return it->second;
  }
  require_library(ToolkitLibrary::Cufft);
  auto plan = std::make_shared<Plan>();
  check_cufft(cufftCreate(&plan->handle), "cufftCreate");
  check_cufft(cufftSetAutoAllocation(plan->handle, 0), "cufftSetAutoAllocation");
  std::vector<long long> sizes = key.sizes;
  check_cufft(
      cufftMakePlanMany64(plan->handle, static_cast<int>(sizes.size()), sizes.data(), nullptr, 1, 0,
                          nullptr, 1, 0, key.type, key.batch, &plan->work_bytes),
      "cufftMakePlanMany64");
  plans.emplace(key, plan);
  order.push_back(key);
  if (order.size() > kCachedPlans) {  // a plan in use lives on through its shared_ptr
    plans.erase(order.front());
    order.erase(order.begin());
  }
  return plan;
}

// Runs `exec` on `plan` with the op's stream and a work area from the caching allocator.
template <class Exec>
void run_plan(const PlanKey& key, const Launch& l, const Exec& exec) {
  const std::shared_ptr<Plan> plan = plan_for(key);
  void* work = plan->work_bytes > 0 ? l.scratch(plan->work_bytes) : nullptr;
  std::lock_guard lock(plan->use);
  check_cufft(cufftSetStream(plan->handle, l.stream()), "cufftSetStream");
  check_cufft(cufftSetWorkArea(plan->handle, work), "cufftSetWorkArea");
  check_cufft(exec(plan->handle), "cufftExec");
}

template <class T>
__global__ void scale_kernel(T* data, int64_t count, T factor) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    data[i] *= factor;
}

// data[0, count) *= the factor `norm` gives for `points` (0: none, 1: 1/sqrt, 2: 1/n).
template <class T>
void scale(T* data, int64_t count, int64_t norm, int64_t points, const Launch& l) {
  KILN_SDK_CHECK_ARG(norm >= 0 && norm <= 2, "norm must be 0, 1 or 2, got ", norm);
  if (norm == 0 || count == 0) return;
  const double n = static_cast<double>(points);
  const T factor = static_cast<T>(norm == 1 ? 1.0 / std::sqrt(n) : 1.0 / n);
  const int threads = 256;
  const int64_t blocks = std::min<int64_t>((count + threads - 1) / threads, 4096);
  scale_kernel<T><<<static_cast<unsigned>(blocks), threads, 0, l.stream()>>>(data, count, factor);
  KILN_CUDA_CHECK(cudaGetLastError());
}

// Throws unless y has x's shape with `last` in the last dim (x of rank >= 1).
void expect_shape_except_last(const TensorView& y, const TensorView& x, int64_t last) {
  bool same = x.ndim >= 1 && y.ndim == x.ndim && y.shape[y.ndim - 1] == last;
  for (int32_t d = 0; same && d + 1 < x.ndim; ++d) same = y.shape[d] == x.shape[d];
  KILN_SDK_CHECK_ARG(same, "y has shape ", sdk::shape_string(y), ", expected x's shape ",
                     sdk::shape_string(x), " with ", last, " in the last dim");
}

// The batch and signal sizes of a tensor whose last `signal_ndim` dims are the signal.
struct Geometry {
  long long batch = 1;
  std::vector<long long> sizes;
  int64_t points = 1;
};

Geometry geometry_of(const TensorView& t, int64_t signal_ndim, const char* op) {
  KILN_SDK_CHECK_ARG(signal_ndim >= 1 && signal_ndim <= t.ndim, op, ": signal_ndim must be in [1, ",
                     t.ndim, "], got ", signal_ndim);
  Geometry g;
  const int32_t first = t.ndim - static_cast<int32_t>(signal_ndim);
  for (int32_t d = 0; d < t.ndim; ++d) {
    if (d < first) {
      g.batch *= t.shape[d];
    } else {
      g.sizes.push_back(t.shape[d]);
      g.points *= t.shape[d];
    }
  }
  return g;
}

void fft_c2c_impl(const OpArgs& args, const Launch& l) {
  args.expect_counts(1, 1);
  const TensorView x = args.input(0), y = args.output(0);
  const auto a = sdk::attrs::fft_c2c::read(args);
  expect_same_shape(y, x, "y");
  expect_dtype(y, x.dtype, "y");
  expect_contiguous(x, "x");
  expect_contiguous(y, "y");
  const Geometry g = geometry_of(x, a.signal_ndim, "kiln.fft_c2c");
  if (x.numel() == 0) return;
  const int direction = a.forward ? CUFFT_FORWARD : CUFFT_INVERSE;
  const int dev = l.ordinal();
  if (x.dtype == KILN_DTYPE_COMPLEX64) {
    run_plan({dev, CUFFT_C2C, g.sizes, g.batch}, l, [&](cufftHandle h) {
      return cufftExecC2C(h, x.ptr<cufftComplex>(), y.ptr<cufftComplex>(), direction);
    });
    scale(y.ptr<float>(), 2 * y.numel(), a.norm, g.points, l);
  } else if (x.dtype == KILN_DTYPE_COMPLEX128) {
    run_plan({dev, CUFFT_Z2Z, g.sizes, g.batch}, l, [&](cufftHandle h) {
      return cufftExecZ2Z(h, x.ptr<cufftDoubleComplex>(), y.ptr<cufftDoubleComplex>(), direction);
    });
    scale(y.ptr<double>(), 2 * y.numel(), a.norm, g.points, l);
  } else {
    unsupported_dtype(x.dtype);
  }
}

void fft_r2c_impl(const OpArgs& args, const Launch& l) {
  args.expect_counts(1, 1);
  const TensorView x = args.input(0), y = args.output(0);
  const auto a = sdk::attrs::fft_r2c::read(args);
  expect_contiguous(x, "x");
  expect_contiguous(y, "y");
  const Geometry g = geometry_of(x, a.signal_ndim, "kiln.fft_r2c");
  const int64_t n = x.shape[x.ndim - 1], half = n / 2 + 1;
  expect_shape_except_last(y, x, half);
  if (x.numel() == 0) return;
  // cuFFT's R2C reads the real input as complex pairs: it must start at a multiple of
  // twice the element size (PyTorch copies such inputs too); a view may not.
  const void* input = x.data;
  if (reinterpret_cast<uintptr_t>(x.data) % (2 * x.itemsize) != 0) {
    const size_t bytes = static_cast<size_t>(x.numel()) * x.itemsize;
    void* copy = l.scratch(bytes);
    KILN_CUDA_CHECK(cudaMemcpyAsync(copy, x.data, bytes, cudaMemcpyDeviceToDevice, l.stream()));
    input = copy;
  }
  const int dev = l.ordinal();
  if (x.dtype == KILN_DTYPE_FLOAT32) {
    expect_dtype(y, KILN_DTYPE_COMPLEX64, "y");
    run_plan({dev, CUFFT_R2C, g.sizes, g.batch}, l, [&](cufftHandle h) {
      return cufftExecR2C(h, static_cast<cufftReal*>(const_cast<void*>(input)),
                          y.ptr<cufftComplex>());
    });
    scale(y.ptr<float>(), 2 * y.numel(), a.norm, g.points, l);
  } else if (x.dtype == KILN_DTYPE_FLOAT64) {
    expect_dtype(y, KILN_DTYPE_COMPLEX128, "y");
    run_plan({dev, CUFFT_D2Z, g.sizes, g.batch}, l, [&](cufftHandle h) {
      return cufftExecD2Z(h, static_cast<cufftDoubleReal*>(const_cast<void*>(input)),
                          y.ptr<cufftDoubleComplex>());
    });
    scale(y.ptr<double>(), 2 * y.numel(), a.norm, g.points, l);
  } else {
    unsupported_dtype(x.dtype);
  }
}

// The first n/2 + 1 entries of each last-dim row of x, copied (cuFFT's C2R overwrites them).
void* half_spectrum_copy(const TensorView& x, int64_t half, const Launch& l) {
  const size_t item = x.itemsize;
  const int64_t width = x.shape[x.ndim - 1], rows = x.numel() / width;
  void* copy = l.scratch(static_cast<size_t>(rows * half) * item);
  KILN_CUDA_CHECK(cudaMemcpy2DAsync(copy, static_cast<size_t>(half) * item, x.data,
                                    static_cast<size_t>(width) * item,
                                    static_cast<size_t>(half) * item, static_cast<size_t>(rows),
                                    cudaMemcpyDeviceToDevice, l.stream()));
  return copy;
}

void fft_c2r_impl(const OpArgs& args, const Launch& l) {
  args.expect_counts(1, 1);
  const TensorView x = args.input(0), y = args.output(0);
  const auto a = sdk::attrs::fft_c2r::read(args);
  expect_contiguous(x, "x");
  expect_contiguous(y, "y");
  const int64_t n = a.last_dim_size, half = n / 2 + 1;
  KILN_SDK_CHECK_ARG(x.ndim >= 1 && n >= 1 && half <= x.shape[x.ndim - 1],
                     "kiln.fft_c2r: last_dim_size ", n, " needs n/2+1 = ", half,
                     " input entries along the last dim, got x of shape ", sdk::shape_string(x));
  expect_shape_except_last(y, x, n);
  const Geometry g = geometry_of(y, a.signal_ndim, "kiln.fft_c2r");  // the real side's sizes
  if (y.numel() == 0) return;
  void* spectrum = half_spectrum_copy(x, half, l);
  const int dev = l.ordinal();
  if (x.dtype == KILN_DTYPE_COMPLEX64) {
    expect_dtype(y, KILN_DTYPE_FLOAT32, "y");
    run_plan({dev, CUFFT_C2R, g.sizes, g.batch}, l, [&](cufftHandle h) {
      return cufftExecC2R(h, static_cast<cufftComplex*>(spectrum), y.ptr<cufftReal>());
    });
    scale(y.ptr<float>(), y.numel(), a.norm, g.points, l);
  } else if (x.dtype == KILN_DTYPE_COMPLEX128) {
    expect_dtype(y, KILN_DTYPE_FLOAT64, "y");
    run_plan({dev, CUFFT_Z2D, g.sizes, g.batch}, l, [&](cufftHandle h) {
      return cufftExecZ2D(h, static_cast<cufftDoubleComplex*>(spectrum), y.ptr<cufftDoubleReal>());
    });
    scale(y.ptr<double>(), y.numel(), a.norm, g.points, l);
  } else {
    unsupported_dtype(x.dtype);
  }
}

// cuFFT transforms at most 3 dims; more (rare) run on the CPU plugin.
bool signal_fits(const kiln_op_args* args) {
  const kiln_attr* s = kiln_find_attr(args, "signal_ndim");
  return s != nullptr && s->type == KILN_ATTR_INT && s->value.i >= 1 && s->value.i <= 3;
}

int32_t supports_c2c(void*, const kiln_op_args* args) {
  return signal_fits(args) && output_dtype(args, 0) == input_dtype(args, 0);
}
int32_t supports_r2c(void*, const kiln_op_args* args) {
  return signal_fits(args) && output_dtype(args, 0) == (input_dtype(args, 0) == KILN_DTYPE_FLOAT64
                                                            ? KILN_DTYPE_COMPLEX128
                                                            : KILN_DTYPE_COMPLEX64);
}
int32_t supports_c2r(void*, const kiln_op_args* args) {
  return signal_fits(args) &&
         output_dtype(args, 0) == (input_dtype(args, 0) == KILN_DTYPE_COMPLEX128
                                       ? KILN_DTYPE_FLOAT64
                                       : KILN_DTYPE_FLOAT32);
}

}  // namespace

void add_fft_kernels(KernelList& list) {
  list.push_back(catalogue_entry<op::fft_c2c>(&fft_c2c_impl, &supports_c2c, 0));
  list.push_back(catalogue_entry<op::fft_r2c>(&fft_r2c_impl, &supports_r2c, 0));
  list.push_back(catalogue_entry<op::fft_c2r>(&fft_c2r_impl, &supports_c2r, 0));
}

}  // namespace kiln::cuda
