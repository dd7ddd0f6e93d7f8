// kiln.conv2d and its two backward kernels through cuDNN's convolution API.
//
// Layouts (contiguous NCHW): x [N, C, H, W], w [O, C/groups, kH, kW], y [N, O, Ho, Wo].
//
// Plans. Descriptors and the algorithm choice are made once per (device, direction,
// dtype, precision, shapes, stride, padding, dilation, groups) and cached for the
// process, under a mutex. The choice comes from cuDNN's heuristics (the *_v7 queries:
// no timing runs, no synchronization), keeping only algorithms that are
// deterministic — the same inputs give the same bits on every run, which rules out
// the backward algorithms that accumulate with atomics — and whose math type fits
// the precision: float32 uses FMA math unless TF32 is allowed (then cuDNN's default
// math, which may use TF32 tensor cores); half types use tensor-op math; nothing ever
// converts float32 operands to half. A few ranked candidates are kept, each with its
// own descriptor and workspace size, and a known deterministic algorithm is always
// last, so a candidate that cannot get its workspace (out of memory) or that cuDNN
// refuses at run time gives way to the next. Workspace comes from Launch::scratch.
//
// The bias of kiln.conv2d is added by a small kernel after the convolution (it is an
// input even when it is zero: OPS.md). The weight gradient of a network's first layer
// (one or three input channels) is conv_wgrad_small.cu's, not cuDNN's.
#include <array>
#include <atomic>
#include <climits>
#include <map>
#include <memory>
#include <mutex>
#include <new>

#include "dnn_util.cuh"
#include "kernels/conv_wgrad_small.h"
#include "kernels/registry.h"
#include "kiln/sdk/conv.h"

namespace kiln::cuda {

namespace {

using namespace dnn;

using sdk::ConvGeometry;

// The shared checks (kiln/sdk/conv.h) and cuDNN's int element counts.
ConvGeometry geometry(const OpArgs& args, const TensorView& x, const TensorView& w,
                      const TensorView& y) {
  const ConvGeometry g = sdk::conv_geometry(args, x, w, y);
  for (const TensorView* t : {&x, &w, &y}) {
    KILN_SDK_CHECK(t->numel() <= INT_MAX, KILN_STATUS_UNSUPPORTED, "operand ",
                   sdk::shape_string(*t), " has more than INT_MAX elements (cuDNN's limit)");
  }
  return g;
}

// ---- descriptors and plans ------------------------------------------------------------------

enum class Direction { kForward = 0, kBackwardInput = 1, kBackwardWeight = 2 };

cudnnDataType_t cudnn_type(kiln_dtype dtype) {
  switch (dtype) {
    case KILN_DTYPE_FLOAT32:
      return CUDNN_DATA_FLOAT;
    case KILN_DTYPE_FLOAT64:
      return CUDNN_DATA_DOUBLE;
    case KILN_DTYPE_FLOAT16:
      return CUDNN_DATA_HALF;
    case KILN_DTYPE_BFLOAT16:
      return CUDNN_DATA_BFLOAT16;
    default:
      sdk::unsupported_dtype(dtype);
  }
}

constexpr int kMaxCandidates = 5;
// Algorithms asking for more workspace than this are passed over.
constexpr size_t kWorkspaceLimit = size_t{1} << 30;

struct Candidate {
  int algo = 0;  // cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t
  size_t workspace = 0;
  cudnnConvolutionDescriptor_t conv = nullptr;  // carries this candidate's math type
};

struct ConvPlan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  Candidate candidates[kMaxCandidates];
  int count = 0;
  // Set when cuDNN refused a candidate at run time, so later calls skip it.
  mutable std::atomic<bool> refused[kMaxCandidates] = {};

  ConvPlan() = default;
  ConvPlan(const ConvPlan&) = delete;
  ConvPlan& operator=(const ConvPlan&) = delete;
  ~ConvPlan() {
    for (int i = 0; i < count; ++i) cudnnDestroyConvolutionDescriptor(candidates[i].conv);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (x) cudnnDestroyTensorDescriptor(x);
  }
};

int to_int(int64_t v) { return static_cast<int>(v); }  // callers checked the range

cudnnConvolutionDescriptor_t make_conv_desc(const ConvGeometry& g, kiln_dtype dtype,
                                            cudnnMathType_t math) {
  cudnnConvolutionDescriptor_t desc = nullptr;
  check(cudnnCreateConvolutionDescriptor(&desc), "cudnnCreateConvolutionDescriptor");
  struct Guard {
    cudnnConvolutionDescriptor_t* d;
    ~Guard() {
      if (*d) cudnnDestroyConvolutionDescriptor(*d);
    }
  } guard{&desc};
  const cudnnDataType_t compute =
      dtype == KILN_DTYPE_FLOAT64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  check(cudnnSetConvolution2dDescriptor(desc, to_int(g.pad_h), to_int(g.pad_w), to_int(g.stride_h),
                                        to_int(g.stride_w), to_int(g.dil_h), to_int(g.dil_w),
                                        CUDNN_CROSS_CORRELATION, compute),
        "cudnnSetConvolution2dDescriptor");
  check(cudnnSetConvolutionGroupCount(desc, to_int(g.groups)), "cudnnSetConvolutionGroupCount");
  check(cudnnSetConvolutionMathType(desc, math), "cudnnSetConvolutionMathType");
  cudnnConvolutionDescriptor_t out = desc;
  desc = nullptr;  // ownership passes to the caller
  return out;
}

// The math type the descriptor asks for by default, and whether a heuristic result's
// math type may be used at this dtype and precision.
cudnnMathType_t base_math(kiln_dtype dtype, bool tf32) {
  switch (dtype) {
    case KILN_DTYPE_FLOAT32:
      return tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
    case KILN_DTYPE_FLOAT64:
      return CUDNN_DEFAULT_MATH;
    default:
      return CUDNN_TENSOR_OP_MATH;
  }
}

bool math_allowed(cudnnMathType_t math, kiln_dtype dtype, bool tf32) {
  if (math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) return false;  // float32 → half
  if (dtype == KILN_DTYPE_FLOAT32 && !tf32) return math == CUDNN_FMA_MATH;
  if (dtype == KILN_DTYPE_FLOAT64) return math == CUDNN_DEFAULT_MATH || math == CUDNN_FMA_MATH;
  return true;
}

// Heuristic results of one direction, as (algo, status, memory, determinism, math).
struct Ranked {
  int algo;
  cudnnStatus_t status;
  size_t memory;
  cudnnDeterminism_t determinism;
  cudnnMathType_t math;
};

template <class Perf>
Ranked ranked(const Perf& p) {
  return {static_cast<int>(p.algo), p.status, p.memory, p.determinism, p.mathType};
}

std::vector<Ranked> heuristics(Direction dir, cudnnHandle_t handle, const ConvPlan& plan,
                               cudnnConvolutionDescriptor_t conv) {
  std::vector<Ranked> out;
  int returned = 0;
  switch (dir) {
    case Direction::kForward: {
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      check(
          cudnnGetConvolutionForwardAlgorithm_v7(handle, plan.x, plan.w, conv, plan.y,
                                                 CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf),
          "cudnnGetConvolutionForwardAlgorithm_v7");
      for (int i = 0; i < returned; ++i) out.push_back(ranked(perf[i]));
      break;
    }
    case Direction::kBackwardInput: {
      cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      check(cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, plan.w, plan.y, conv, plan.x,
                                                        CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                                        &returned, perf),
            "cudnnGetConvolutionBackwardDataAlgorithm_v7");
      for (int i = 0; i < returned; ++i) out.push_back(ranked(perf[i]));
      break;
    }
    case Direction::kBackwardWeight: {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
      check(cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, plan.x, plan.y, conv, plan.w,
                                                          CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
                                                          &returned, perf),
            "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
      for (int i = 0; i < returned; ++i) out.push_back(ranked(perf[i]));
      break;
    }
  }
  return out;
}

// The workspace `algo` needs with `conv`, or false if cuDNN does not support it here.
bool workspace_size(Direction dir, cudnnHandle_t handle, const ConvPlan& plan,
                    cudnnConvolutionDescriptor_t conv, int algo, size_t& bytes) {
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  switch (dir) {
    case Direction::kForward:
      status = cudnnGetConvolutionForwardWorkspaceSize(handle, plan.x, plan.w, conv, plan.y,
                                                       static_cast<cudnnConvolutionFwdAlgo_t>(algo),
                                                       &bytes);
      break;
    case Direction::kBackwardInput:
      status = cudnnGetConvolutionBackwardDataWorkspaceSize(
          handle, plan.w, plan.y, conv, plan.x, static_cast<cudnnConvolutionBwdDataAlgo_t>(algo),
          &bytes);
      break;
    case Direction::kBackwardWeight:
      status = cudnnGetConvolutionBackwardFilterWorkspaceSize(
          handle, plan.x, plan.y, conv, plan.w, static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo),
          &bytes);
      break;
  }
  return status == CUDNN_STATUS_SUCCESS;
}

// Deterministic algorithms with modest workspace that cuDNN supports for every
// NCHW float type: the last resort of each direction.
int fallback_algo(Direction dir) {
  switch (dir) {
    case Direction::kForward:
      return CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    case Direction::kBackwardInput:
      return CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
    case Direction::kBackwardWeight:
      return CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
  }
  return 0;
}

void add_candidate(ConvPlan& plan, Direction dir, cudnnHandle_t handle, const ConvGeometry& g,
                   kiln_dtype dtype, int algo, cudnnMathType_t math) {
  if (plan.count >= kMaxCandidates) return;
  for (int i = 0; i < plan.count; ++i) {
    cudnnMathType_t existing = CUDNN_DEFAULT_MATH;
    cudnnGetConvolutionMathType(plan.candidates[i].conv, &existing);
    if (plan.candidates[i].algo == algo && existing == math) return;
  }
  cudnnConvolutionDescriptor_t conv = make_conv_desc(g, dtype, math);
  size_t bytes = 0;
  if (!workspace_size(dir, handle, plan, conv, algo, bytes) || bytes > kWorkspaceLimit) {
    cudnnDestroyConvolutionDescriptor(conv);
    return;
  }
  plan.candidates[plan.count++] = {algo, bytes, conv};
}

std::shared_ptr<const ConvPlan> make_plan(Direction dir, const ConvGeometry& g, kiln_dtype dtype,
                                          bool tf32, const Launch& l) {
  auto plan = std::make_shared<ConvPlan>();
  const cudnnDataType_t type = cudnn_type(dtype);
  check(cudnnCreateTensorDescriptor(&plan->x), "cudnnCreateTensorDescriptor");
  check(cudnnSetTensor4dDescriptor(plan->x, CUDNN_TENSOR_NCHW, type, to_int(g.n), to_int(g.c),
                                   to_int(g.h), to_int(g.w)),
        "cudnnSetTensor4dDescriptor(x)");
  check(cudnnCreateTensorDescriptor(&plan->y), "cudnnCreateTensorDescriptor");
  check(cudnnSetTensor4dDescriptor(plan->y, CUDNN_TENSOR_NCHW, type, to_int(g.n), to_int(g.o),
                                   to_int(g.ho), to_int(g.wo)),
        "cudnnSetTensor4dDescriptor(y)");
  check(cudnnCreateFilterDescriptor(&plan->w), "cudnnCreateFilterDescriptor");
  check(cudnnSetFilter4dDescriptor(plan->w, type, CUDNN_TENSOR_NCHW, to_int(g.o),
                                   to_int(g.c / g.groups), to_int(g.kh), to_int(g.kw)),
        "cudnnSetFilter4dDescriptor");
  const cudnnHandle_t handle = l.cudnn();
  const cudnnMathType_t base = base_math(dtype, tf32);
  cudnnConvolutionDescriptor_t probe = make_conv_desc(g, dtype, base);
  std::vector<Ranked> ranked_algos;
  try {
    ranked_algos = heuristics(dir, handle, *plan, probe);
  } catch (...) {
    cudnnDestroyConvolutionDescriptor(probe);
    throw;
  }
  cudnnDestroyConvolutionDescriptor(probe);
  for (const Ranked& r : ranked_algos) {
    if (plan->count >= kMaxCandidates - 1) break;  // keep a slot for the fallback
    if (r.status != CUDNN_STATUS_SUCCESS || r.determinism != CUDNN_DETERMINISTIC ||
        r.memory > kWorkspaceLimit) {
      continue;
    }
    const cudnnMathType_t math = math_allowed(r.math, dtype, tf32) ? r.math : base;
    add_candidate(*plan, dir, handle, g, dtype, r.algo, math);
  }
  add_candidate(*plan, dir, handle, g, dtype, fallback_algo(dir), base);
  KILN_SDK_CHECK(plan->count > 0, KILN_STATUS_UNSUPPORTED,
                 "cuDNN offers no deterministic algorithm for this convolution");
  return plan;
}

using PlanKey = std::array<int64_t, 18>;

struct PlanCache {
  std::mutex mutex;
  std::map<PlanKey, std::shared_ptr<const ConvPlan>> plans;
};
// Lives for the process and is never destroyed, so no cuDNN call runs at exit.
PlanCache& plan_cache() {
  static PlanCache* cache = new PlanCache;
  return *cache;
}
constexpr size_t kMaxCachedPlans = 2048;

std::shared_ptr<const ConvPlan> plan_for(Direction dir, const ConvGeometry& g, kiln_dtype dtype,
                                         bool tf32, const Launch& l) {
  // Ho and Wo follow from the rest.
  const PlanKey key = {l.ordinal(), static_cast<int64_t>(dir),
                       dtype,       tf32,
                       g.n,         g.c,
                       g.h,         g.w,
                       g.o,         g.kh,
                       g.kw,        g.stride_h,
                       g.stride_w,  g.pad_h,
                       g.pad_w,     g.dil_h,
                       g.dil_w,     g.groups};
  PlanCache& cache = plan_cache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  auto it = cache.plans.find(key);
  if (it != cache.plans.end()) return it->second;
  if (cache.plans.size() >= kMaxCachedPlans) cache.plans.clear();  // in-flight plans stay alive
  auto plan = make_plan(dir, g, dtype, tf32, l);
  cache.plans.emplace(key, plan);
  return plan;
}

// ---- running a plan -------------------------------------------------------------------------

// Workspace for a candidate, or nullptr with `ok` false when memory is short (the next
// candidate may need less).
void* workspace_for(const Candidate& c, const Launch& l, bool& ok) {
  ok = true;
  if (c.workspace == 0) return nullptr;
  try {
    return l.scratch(c.workspace);
  } catch (const sdk::Error& e) {
    if (e.code() != KILN_STATUS_OUT_OF_MEMORY) throw;
  } catch (const std::bad_alloc&) {
  }
  ok = false;
  return nullptr;
}

// alpha = 1, beta = 0 in the type cuDNN wants: double for double data, else float.
struct Scalars {
  float f1 = 1.0f, f0 = 0.0f;
  double d1 = 1.0, d0 = 0.0;
  const void* one(kiln_dtype t) const { return t == KILN_DTYPE_FLOAT64 ? (const void*)&d1 : &f1; }
  const void* zero(kiln_dtype t) const { return t == KILN_DTYPE_FLOAT64 ? (const void*)&d0 : &f0; }
};

// Runs the plan's first usable candidate; `call(candidate, workspace)` returns cuDNN's
// status. NOT_SUPPORTED (and the related refusals) move on to the next candidate.
template <class Call>
void run_plan(const ConvPlan& plan, const Launch& l, const char* what, Call&& call) {
  cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
  bool short_of_memory = false;
  for (int i = 0; i < plan.count; ++i) {
    if (plan.refused[i].load(std::memory_order_relaxed)) continue;
    bool ok = false;
    void* workspace = workspace_for(plan.candidates[i], l, ok);
    if (!ok) {
      short_of_memory = true;
      continue;
    }
    last = call(plan.candidates[i], workspace);
    if (last == CUDNN_STATUS_SUCCESS) return;
    if (last != CUDNN_STATUS_NOT_SUPPORTED && last != CUDNN_STATUS_BAD_PARAM &&
        last != CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH) {
      check(last, what);
    }
    plan.refused[i].store(true, std::memory_order_relaxed);
  }
  KILN_SDK_CHECK(!short_of_memory, KILN_STATUS_OUT_OF_MEMORY, what,
                 ": no memory for the workspace of any usable algorithm");
  check(last, what);
}

// ---- the ops ----------------------------------------------------------------------------------

bool supported_conv_dtype(kiln_dtype d) { return is_float_dtype(d); }

// y[n, o, :, :] += bias[o] (or = bias[o] when `overwrite`), over y as a flat array of
// 16-byte packs when each (n, o) plane is a whole number of them (a pack then lies in
// one plane), else element by element. The first version gave every plane its own
// blocks of one element per thread: 50 µs for the 1->32 layer's 25.7 MB at batch 256
// on an H200, four times the memory time (PyTorch's bias add took 18 µs).
template <class T>
struct alignas(16) BiasPack {
  static constexpr int kWidth = 16 / sizeof(T);
  T v[kWidth];
};

template <class T, bool kPacked>
__global__ void __launch_bounds__(kThreads)
    bias_kernel(T* __restrict__ y, const T* __restrict__ bias, int64_t units, int64_t plane_units,
                int64_t channels, bool overwrite) {
  for (int64_t u = first_index(); u < units; u += grid_stride()) {
    const compute_t<T> b = load(bias[(u / plane_units) % channels]);
    if constexpr (kPacked) {
      auto* pack = reinterpret_cast<BiasPack<T>*>(y) + u;
      BiasPack<T> p = *pack;
#pragma unroll
      for (int j = 0; j < BiasPack<T>::kWidth; ++j) {
        p.v[j] = store<T>(overwrite ? b : load(p.v[j]) + b);
      }
      *pack = p;
    } else {
      y[u] = store<T>(overwrite ? b : load(y[u]) + b);
    }
  }
}

void add_bias(const TensorView& y, const TensorView& bias, bool overwrite, const Launch& l) {
  const int64_t planes = y.shape[0] * y.shape[1], plane_size = y.shape[2] * y.shape[3];
  if (planes * plane_size == 0) return;
  visit_float(y.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr int W = BiasPack<T>::kWidth;
    const bool packed = plane_size % W == 0 && reinterpret_cast<uintptr_t>(y.ptr<T>()) % 16 == 0;
    const int64_t plane_units = packed ? plane_size / W : plane_size;
    const int64_t units = planes * plane_units;
    const unsigned blocks = grid_for(units, l);
    if (packed) {
      bias_kernel<T, true><<<blocks, kThreads, 0, l.stream()>>>(
          y.ptr<T>(), bias.ptr<const T>(), units, plane_units, y.shape[1], overwrite);
    } else {
      bias_kernel<T, false><<<blocks, kThreads, 0, l.stream()>>>(
          y.ptr<T>(), bias.ptr<const T>(), units, plane_units, y.shape[1], overwrite);
    }
  });
  check_launch("conv2d: bias kernel");
}

void conv2d_impl(const OpArgs& args, const Launch& l) {
  args.expect_counts(3, 1);
  const TensorView x = args.input(0), w = args.input(1), bias = args.input(2), y = args.output(0);
  const ConvGeometry g = geometry(args, x, w, y);
  sdk::expect_shape(bias, {g.o}, "bias");
  sdk::expect_contiguous(bias, "bias");
  for (const TensorView* t : {&w, &bias, &y}) sdk::expect_dtype(*t, x.dtype, "operand");
  KILN_SDK_CHECK(supported_conv_dtype(x.dtype), KILN_STATUS_UNSUPPORTED, sdk::dtype_name(x.dtype),
                 " is not supported by this kernel");
  if (y.numel() == 0) return;
  if (x.numel() == 0 || w.numel() == 0) {
    // An empty sum (no input channels, or an empty plane that padding made an output
    // of): y = bias, and cuDNN is not asked about zero-sized tensors.
    add_bias(y, bias, true, l);
    return;
  }
  const bool tf32 = x.dtype == KILN_DTYPE_FLOAT32 && l.allow_tf32(args);
  const std::shared_ptr<const ConvPlan> plan = plan_for(Direction::kForward, g, x.dtype, tf32, l);
  const Scalars s;
  const kiln_dtype t = x.dtype;
  run_plan(*plan, l, "cudnnConvolutionForward", [&](const Candidate& c, void* ws) {
    return cudnnConvolutionForward(l.cudnn(), s.one(t), plan->x, x.data, plan->w, w.data, c.conv,
                                   static_cast<cudnnConvolutionFwdAlgo_t>(c.algo), ws, c.workspace,
                                   s.zero(t), plan->y, y.data);
  });
  add_bias(y, bias, false, l);
}

void conv2d_backward_input_impl(const OpArgs& args, const Launch& l) {
  args.expect_counts(2, 1);
  const TensorView grad_y = args.input(0), w = args.input(1), grad_x = args.output(0);
  const ConvGeometry g = geometry(args, grad_x, w, grad_y);
  for (const TensorView* t : {&w, &grad_x}) sdk::expect_dtype(*t, grad_y.dtype, "operand");
  KILN_SDK_CHECK(supported_conv_dtype(grad_y.dtype), KILN_STATUS_UNSUPPORTED,
                 sdk::dtype_name(grad_y.dtype), " is not supported by this kernel");
  if (grad_x.numel() == 0) return;
  if (grad_y.numel() == 0 || w.numel() == 0) {  // nothing flows back
    check(cudaMemsetAsync(grad_x.data, 0, static_cast<size_t>(grad_x.numel()) * grad_x.itemsize,
                          l.stream()),
          "conv2d_backward_input: cudaMemsetAsync");
    return;
  }
  const bool tf32 = grad_y.dtype == KILN_DTYPE_FLOAT32 && l.allow_tf32(args);
  const std::shared_ptr<const ConvPlan> plan =
      plan_for(Direction::kBackwardInput, g, grad_y.dtype, tf32, l);
  const Scalars s;
  const kiln_dtype t = grad_y.dtype;
  run_plan(*plan, l, "cudnnConvolutionBackwardData", [&](const Candidate& c, void* ws) {
    return cudnnConvolutionBackwardData(l.cudnn(), s.one(t), plan->w, w.data, plan->y, grad_y.data,
                                        c.conv, static_cast<cudnnConvolutionBwdDataAlgo_t>(c.algo),
                                        ws, c.workspace, s.zero(t), plan->x, grad_x.data);
  });
}

void conv2d_backward_weight_impl(const OpArgs& args, const Launch& l) {
  args.expect_counts(2, 1);
  const TensorView grad_y = args.input(0), x = args.input(1), grad_w = args.output(0);
  const ConvGeometry g = geometry(args, x, grad_w, grad_y);
  for (const TensorView* t : {&x, &grad_w}) sdk::expect_dtype(*t, grad_y.dtype, "operand");
  KILN_SDK_CHECK(supported_conv_dtype(grad_y.dtype), KILN_STATUS_UNSUPPORTED,
                 sdk::dtype_name(grad_y.dtype), " is not supported by this kernel");
  if (grad_w.numel() == 0) return;
  if (grad_y.numel() == 0 || x.numel() == 0) {  // an empty batch (or plane): zeros
    check(cudaMemsetAsync(grad_w.data, 0, static_cast<size_t>(grad_w.numel()) * grad_w.itemsize,
                          l.stream()),
          "conv2d_backward_weight: cudaMemsetAsync");
    return;
  }
  if (small_filter_weight_grad(g, grad_y, x, grad_w, l)) return;  // a first layer
  const bool tf32 = grad_y.dtype == KILN_DTYPE_FLOAT32 && l.allow_tf32(args);
  const std::shared_ptr<const ConvPlan> plan =
      plan_for(Direction::kBackwardWeight, g, grad_y.dtype, tf32, l);
  const Scalars s;
  const kiln_dtype t = grad_y.dtype;
  run_plan(*plan, l, "cudnnConvolutionBackwardFilter", [&](const Candidate& c, void* ws) {
    return cudnnConvolutionBackwardFilter(l.cudnn(), s.one(t), plan->x, x.data, plan->y,
                                          grad_y.data, c.conv,
                                          static_cast<cudnnConvolutionBwdFilterAlgo_t>(c.algo), ws,
                                          c.workspace, s.zero(t), plan->w, grad_w.data);
  });
}

// Every float dtype, all operands of one dtype, and sizes cuDNN's int descriptors hold
// (larger convolutions fall back rather than fail).
int32_t supports_conv(void*, const kiln_op_args* args) {
  const kiln_dtype d = sdk::input_dtype(args, 0);
  if (!supported_conv_dtype(d) || sdk::output_dtype(args, 0) != d) return 0;
  for (size_t i = 0; i < args->num_inputs; ++i) {
    if (sdk::input_dtype(args, i) != d || view_numel(args->inputs, args->num_inputs, i) > INT_MAX)
      return 0;
  }
  return view_numel(args->outputs, args->num_outputs, 0) <= INT_MAX ? 1 : 0;
}

}  // namespace

void add_conv_kernels(KernelList& list) {
  list.push_back(catalogue_entry<op::conv2d>(&conv2d_impl, &supports_conv, 0));
  list.push_back(
      catalogue_entry<op::conv2d_backward_input>(&conv2d_backward_input_impl, &supports_conv, 0));
  list.push_back(
      catalogue_entry<op::conv2d_backward_weight>(&conv2d_backward_weight_impl, &supports_conv, 0));
}

}  // namespace kiln::cuda
