// CUDA benchmarks (issue 4): Kiln on cuda:0 against the raw libraries, measured in the
// same process on the same GPU.
//
//   GEMM 4096³: float32 (full precision and TF32) and bfloat16, kiln::matmul (output
//     allocation included, as a user calls it) vs cublasGemmEx on preallocated
//     buffers. Target >= 0.95.
//   conv2d forward + backward of the CNN's two layers at batch 256 (1→32 on 28×28,
//     32→64 on 14×14, 3×3, padding 1), through autograd, vs the same cuDNN calls made
//     directly with the algorithms cuDNN's heuristics rank first (what PyTorch does
//     by default): forward, bias, weight and bias gradients, and the input gradient
//     for the second layer (the first layer's input is data). With TF32 on (PyTorch's
//     default for convolutions) and off. Target >= 0.95.
//   add, mul, relu on 2^26 float32 vs a cudaMemcpy device-to-device that moves the
//     same number of bytes (3 or 2 streams of 256 MiB): the ratio is the fraction of
//     the copy bandwidth reached. Target >= 0.85.
//   The CNN training step at batch 256 (examples/train's CNN without batch norm and
//     dropout, Adam), in samples/s. PyTorch eager's figure must be measured beside it
//     on the same GPU (not in this process).
//   kiln::empty + release of a 1 MiB tensor vs cudaMalloc + cudaFree (host time per
//     pair; nothing is enqueued, so neither side waits for the device).
//   Reductions of 2^24 float32 (sum, mean, var, max, argmax and the 2-norm, the last
//     composed as (x*x).sum().sqrt(): Kiln has no norm op), the convolutions' bias
//     gradients (g.sum({0, 2, 3}) of the two layers' output gradients) and Kiln's
//     copy_ of 2^26 float32 (vs BM_CudaCopy/two_streams): the Kiln side of
//     bench/gpu_same_run.sh, which times the same workloads in PyTorch (issue 22).
//
// Timing: GPU work is asynchronous, so each measured iteration enqueues kBatch
// repetitions and then waits for the device (kiln::synchronize, or
// cudaStreamSynchronize for the baselines) before the clock stops; the time per
// repetition is reported as manual time. Warm-up runs first (plans, algorithm choices
// and allocator caches are made there). Without a usable GPU every benchmark here is
// skipped with the reason.

#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <kiln/kiln.h>
#include <kiln/nn.h>
#include <kiln/optim.h>

#include "models.h"
#include "ratio.h"

namespace {

namespace F = kiln::nn::functional;
using Clock = std::chrono::steady_clock;

constexpr int kBatch = 10;  // repetitions per measured iteration
constexpr int kWarmup = 3;

// ---- skipping without a GPU ------------------------------------------------------------

// Why the CUDA benchmarks cannot run here, or "" when they can.
std::string find_skip_reason() {
  int count = 0;
  if (const cudaError_t status = cudaGetDeviceCount(&count); status != cudaSuccess) {
    return std::string("no usable CUDA device (") + cudaGetErrorString(status) + ")";
  }
  if (count == 0) return "no CUDA device";
  for (const kiln::PluginInfo& plugin : kiln::loaded_plugins()) {
    if (plugin.name != "cuda") continue;
    if (plugin.devices.empty()) return "the cuda plugin reports no devices: " + plugin.description;
    return "";
  }
  std::string reason = "the Kiln cuda plugin is not loaded";
  for (const kiln::PluginLoadFailure& failure : kiln::plugin_load_failures()) {
    if (failure.path.find("libkiln_cuda") != std::string::npos) reason += ": " + failure.reason;
  }
  return reason;
}

const std::string& skip_reason() {
  static const std::string reason = [] {
    std::string r = find_skip_reason();
    if (!r.empty()) std::printf("CUDA benchmarks skipped: %s\n", r.c_str());
    return r;
  }();
  return reason;
}

// True (and the benchmark marked skipped, with the reason) when there is no GPU.
bool skip(benchmark::State& state) {
  if (skip_reason().empty()) return false;
  state.SkipWithError(("skipped: " + skip_reason()).c_str());
  return true;
}

const kiln::Device& gpu() {
  static const kiln::Device device("cuda:0");
  return device;
}

void fail_on(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
    std::abort();
  }
}
void fail_on(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s: %s\n", what, cublasGetStatusString(status));
    std::abort();
  }
}
void fail_on(cudnnStatus_t status, const char* what) {
  if (status != CUDNN_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s: %s\n", what, cudnnGetErrorString(status));
    std::abort();
  }
}
#define CHECK_CALL(expr) fail_on((expr), #expr)

// Runs `enqueue` kWarmup times, then per iteration kBatch times followed by `wait`,
// reporting the wall time per repetition. Google Benchmark divides a rate counter by
// the summed manual time, so counters count one repetition per iteration (counting
// kBatch made every rate kBatch times too high).
void time_batches(benchmark::State& state, const std::function<void()>& enqueue,
                  const std::function<void()>& wait) {
  for (int i = 0; i < kWarmup; ++i) enqueue();
  wait();
  for (auto _ : state) {
    const auto start = Clock::now();
    for (int i = 0; i < kBatch; ++i) enqueue();
    wait();
    const std::chrono::duration<double> elapsed = Clock::now() - start;
    state.SetIterationTime(elapsed.count() / kBatch);
  }
  state.SetItemsProcessed(state.iterations());
}

void wait_kiln() { kiln::synchronize(gpu()); }

// A device buffer of `count` float32 (or bfloat16) elements holding random values in
// [-1, 1), freed at scope exit.
struct DeviceBuffer {
  void* data = nullptr;
  DeviceBuffer(size_t count, bool bf16) {
    std::mt19937 rng(1);
    std::normal_distribution<float> dist(0.0f, 1.0f);  // as BM_KilnGemm's and PyTorch's
    const size_t bytes = count * (bf16 ? 2 : 4);
    std::vector<unsigned char> host(bytes);
    for (size_t i = 0; i < count; ++i) {
      float v = dist(rng);
      if (bf16) {
        uint32_t bits;
        std::memcpy(&bits, &v, 4);
        const uint16_t top = static_cast<uint16_t>(bits >> 16);
        std::memcpy(host.data() + 2 * i, &top, 2);
      } else {
        std::memcpy(host.data() + 4 * i, &v, 4);
      }
    }
    CHECK_CALL(cudaMalloc(&data, bytes));
    CHECK_CALL(cudaMemcpy(data, host.data(), bytes, cudaMemcpyHostToDevice));
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(data); }
};

struct Stream {
  cudaStream_t s = nullptr;
  Stream() { CHECK_CALL(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(s); }
  void wait() const { CHECK_CALL(cudaStreamSynchronize(s)); }
};

// ---- GEMM ------------------------------------------------------------------------------------

enum GemmKind { kF32 = 0, kTf32 = 1, kBf16 = 2 };
constexpr int64_t kGemmN = 4096;

void gemm_flops(benchmark::State& state) {
  const double n = static_cast<double>(kGemmN);
  state.counters["FLOP/s"] =
      benchmark::Counter(2.0 * n * n * n * double(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_KilnGemm(benchmark::State& state, GemmKind kind) {
  if (skip(state)) return;
  const kiln::DType dtype = kind == kBf16 ? kiln::bfloat16 : kiln::float32;
  const kiln::TensorOptions options = kiln::TensorOptions().dtype(dtype).device(gpu());
  // Normal inputs, as PyTorch's reference (bench/torch_reference.py) uses.
  auto a = kiln::randn({kGemmN, kGemmN}, options);
  auto b = kiln::randn({kGemmN, kGemmN}, options);
  const std::string previous = kiln::get_matmul_precision();
  kiln::set_matmul_precision(kind == kTf32 ? "high" : "highest");
  time_batches(
      state,
      [&] {
        auto c = kiln::matmul(a, b);
        benchmark::DoNotOptimize(c);
      },
      wait_kiln);
  kiln::set_matmul_precision(previous);
  gemm_flops(state);
}

void BM_CublasGemm(benchmark::State& state, GemmKind kind) {
  if (skip(state)) return;
  const bool bf16 = kind == kBf16;
  const size_t count = static_cast<size_t>(kGemmN * kGemmN);
  DeviceBuffer a(count, bf16), b(count, bf16), c(count, bf16);
  Stream stream;
  cublasHandle_t handle = nullptr;
  CHECK_CALL(cublasCreate(&handle));
  CHECK_CALL(cublasSetStream(handle, stream.s));
  const cudaDataType_t type = bf16 ? CUDA_R_16BF : CUDA_R_32F;
  const cublasComputeType_t compute =
      kind == kTf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const float alpha = 1.0f, beta = 0.0f;
  const int n = static_cast<int>(kGemmN);
  time_batches(
      state,
      [&] {
        // Row-major c = a·b is column-major cᵀ = bᵀ·aᵀ.
        CHECK_CALL(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, b.data, type, n,
                                a.data, type, n, &beta, c.data, type, n, compute,
                                CUBLAS_GEMM_DEFAULT));
      },
      [&] { stream.wait(); });
  cublasDestroy(handle);
  gemm_flops(state);
}

BENCHMARK_CAPTURE(BM_KilnGemm, f32, kF32)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CublasGemm, f32, kF32)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_KilnGemm, tf32, kTf32)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CublasGemm, tf32, kTf32)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_KilnGemm, bf16, kBf16)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CublasGemm, bf16, kBf16)->UseManualTime()->Unit(benchmark::kMillisecond);

using kiln::bench::RegisterRatio;
RegisterRatio gemm_f32("cuda matmul 4096^3 float32 vs cublasGemmEx", "BM_KilnGemm/f32/manual_time",
                       "BM_CublasGemm/f32/manual_time", 0.95);
RegisterRatio gemm_tf32("cuda matmul 4096^3 TF32 vs cublasGemmEx", "BM_KilnGemm/tf32/manual_time",
                        "BM_CublasGemm/tf32/manual_time", 0.95);
RegisterRatio gemm_bf16("cuda matmul 4096^3 bfloat16 vs cublasGemmEx",
                        "BM_KilnGemm/bf16/manual_time", "BM_CublasGemm/bf16/manual_time", 0.95);

// ---- convolution -----------------------------------------------------------------------------

struct ConvLayer {
  int64_t n, c, o, hw;
  bool input_grad;  // the second layer's input is an activation: its gradient is needed
  bool tf32;
};
constexpr ConvLayer kConv1{256, 1, 32, 28, false, false};
constexpr ConvLayer kConv2{256, 32, 64, 14, true, false};
constexpr ConvLayer kConv1Tf32{256, 1, 32, 28, false, true};
constexpr ConvLayer kConv2Tf32{256, 32, 64, 14, true, true};

void BM_KilnConv(benchmark::State& state, ConvLayer layer) {
  if (skip(state)) return;
  const kiln::TensorOptions options = kiln::TensorOptions().device(gpu());
  auto x = kiln::randn({layer.n, layer.c, layer.hw, layer.hw}, options);
  if (layer.input_grad) x.requires_grad_();
  auto w = (kiln::randn({layer.o, layer.c, 3, 3}, options) * 0.1).requires_grad_();
  auto bias = kiln::zeros({layer.o}, options).requires_grad_();
  auto grad = kiln::randn({layer.n, layer.o, layer.hw, layer.hw}, options);
  const std::string previous = kiln::get_matmul_precision();
  kiln::set_matmul_precision(layer.tf32 ? "high" : "highest");
  time_batches(
      state,
      [&] {
        // Gradients are cleared, not accumulated: as in a training step, where the
        // input gradient flows on and zero_grad(set_to_none) clears the rest.
        for (kiln::Tensor* t : {&x, &w, &bias}) t->set_grad({});
        auto y = F::conv2d(x, w, bias, 1, 1);
        y.backward(grad);
      },
      wait_kiln);
  kiln::set_matmul_precision(previous);
}

// The first heuristic result (they are ranked) that cuDNN can run at the precision
// asked for: FMA math without TF32; anything but a conversion to half with it.
template <class Perf>
const Perf& first_usable(const Perf* perf, int count, bool tf32) {
  for (int i = 0; i < count; ++i) {
    const bool math_ok = tf32 ? perf[i].mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION
                              : perf[i].mathType == CUDNN_FMA_MATH;
    if (perf[i].status == CUDNN_STATUS_SUCCESS && math_ok) return perf[i];
  }
  std::fprintf(stderr, "cuDNN heuristics offer no usable algorithm\n");
  std::abort();
}

// The same work through cuDNN directly: algorithms from the heuristics (see
// first_usable), workspace preallocated.
void BM_CudnnConv(benchmark::State& state, ConvLayer layer) {
  if (skip(state)) return;
  const int n = static_cast<int>(layer.n), c = static_cast<int>(layer.c),
            o = static_cast<int>(layer.o), hw = static_cast<int>(layer.hw);
  DeviceBuffer x(size_t(n) * c * hw * hw, false), w(size_t(o) * c * 9, false), b(size_t(o), false),
      y(size_t(n) * o * hw * hw, false), gy(size_t(n) * o * hw * hw, false),
      gx(size_t(n) * c * hw * hw, false), gw(size_t(o) * c * 9, false), gb(size_t(o), false);
  Stream stream;
  cudnnHandle_t handle = nullptr;
  CHECK_CALL(cudnnCreate(&handle));
  CHECK_CALL(cudnnSetStream(handle, stream.s));
  cudnnTensorDescriptor_t x_desc, y_desc, b_desc;
  cudnnFilterDescriptor_t w_desc;
  CHECK_CALL(cudnnCreateTensorDescriptor(&x_desc));
  CHECK_CALL(cudnnCreateTensorDescriptor(&y_desc));
  CHECK_CALL(cudnnCreateTensorDescriptor(&b_desc));
  CHECK_CALL(cudnnCreateFilterDescriptor(&w_desc));
  CHECK_CALL(cudnnSetTensor4dDescriptor(x_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, hw, hw));
  CHECK_CALL(cudnnSetTensor4dDescriptor(y_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, o, hw, hw));
  CHECK_CALL(cudnnSetTensor4dDescriptor(b_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, o, 1, 1));
  CHECK_CALL(cudnnSetFilter4dDescriptor(w_desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, o, c, 3, 3));
  auto make_conv = [](cudnnMathType_t math) {
    cudnnConvolutionDescriptor_t desc = nullptr;
    CHECK_CALL(cudnnCreateConvolutionDescriptor(&desc));
    CHECK_CALL(cudnnSetConvolution2dDescriptor(desc, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                               CUDNN_DATA_FLOAT));
    CHECK_CALL(cudnnSetConvolutionMathType(desc, math));
    return desc;
  };
  cudnnConvolutionDescriptor_t conv = make_conv(layer.tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH);

  int n_fwd = 0, n_data = 0, n_filter = 0;
  cudnnConvolutionFwdAlgoPerf_t fwd[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  CHECK_CALL(cudnnGetConvolutionForwardAlgorithm_v7(handle, x_desc, w_desc, conv, y_desc,
                                                    CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n_fwd, fwd));
  cudnnConvolutionBwdDataAlgoPerf_t bwd_data[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  CHECK_CALL(cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, w_desc, y_desc, conv, x_desc,
                                                         CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                                         &n_data, bwd_data));
  cudnnConvolutionBwdFilterAlgoPerf_t bwd_filter[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
  CHECK_CALL(cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, x_desc, y_desc, conv, w_desc,
                                                           CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
                                                           &n_filter, bwd_filter));
  const auto& fwd_perf = first_usable(fwd, n_fwd, layer.tf32);
  const auto& data_perf = first_usable(bwd_data, n_data, layer.tf32);
  const auto& filter_perf = first_usable(bwd_filter, n_filter, layer.tf32);
  const auto fwd_algo = fwd_perf.algo;
  const auto data_algo = data_perf.algo;
  const auto filter_algo = filter_perf.algo;
  // Each direction runs with its algorithm's math type, as PyTorch does.
  cudnnConvolutionDescriptor_t conv_fwd = make_conv(fwd_perf.mathType);
  cudnnConvolutionDescriptor_t conv_data = make_conv(data_perf.mathType);
  cudnnConvolutionDescriptor_t conv_filter = make_conv(filter_perf.mathType);
  size_t ws_fwd = 0, ws_data = 0, ws_filter = 0;
  CHECK_CALL(cudnnGetConvolutionForwardWorkspaceSize(handle, x_desc, w_desc, conv_fwd, y_desc,
                                                     fwd_algo, &ws_fwd));
  CHECK_CALL(cudnnGetConvolutionBackwardDataWorkspaceSize(handle, w_desc, y_desc, conv_data, x_desc,
                                                          data_algo, &ws_data));
  CHECK_CALL(cudnnGetConvolutionBackwardFilterWorkspaceSize(handle, x_desc, y_desc, conv_filter,
                                                            w_desc, filter_algo, &ws_filter));
  const size_t ws_bytes = std::max({ws_fwd, ws_data, ws_filter, size_t{1}});
  void* workspace = nullptr;
  CHECK_CALL(cudaMalloc(&workspace, ws_bytes));
  const float one = 1.0f, zero = 0.0f;
  time_batches(
      state,
      [&] {
        CHECK_CALL(cudnnConvolutionForward(handle, &one, x_desc, x.data, w_desc, w.data, conv_fwd,
                                           fwd_algo, workspace, ws_bytes, &zero, y_desc, y.data));
        CHECK_CALL(cudnnAddTensor(handle, &one, b_desc, b.data, &one, y_desc, y.data));
        CHECK_CALL(
            cudnnConvolutionBackwardBias(handle, &one, y_desc, gy.data, &zero, b_desc, gb.data));
        CHECK_CALL(cudnnConvolutionBackwardFilter(handle, &one, x_desc, x.data, y_desc, gy.data,
                                                  conv_filter, filter_algo, workspace, ws_bytes,
                                                  &zero, w_desc, gw.data));
        if (layer.input_grad) {
          CHECK_CALL(cudnnConvolutionBackwardData(handle, &one, w_desc, w.data, y_desc, gy.data,
                                                  conv_data, data_algo, workspace, ws_bytes, &zero,
                                                  x_desc, gx.data));
        }
      },
      [&] { stream.wait(); });
  cudaFree(workspace);
  for (cudnnConvolutionDescriptor_t d : {conv, conv_fwd, conv_data, conv_filter})
    cudnnDestroyConvolutionDescriptor(d);
  cudnnDestroyFilterDescriptor(w_desc);
  cudnnDestroyTensorDescriptor(b_desc);
  cudnnDestroyTensorDescriptor(y_desc);
  cudnnDestroyTensorDescriptor(x_desc);
  cudnnDestroy(handle);
}

BENCHMARK_CAPTURE(BM_KilnConv, conv1, kConv1)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_CudnnConv, conv1, kConv1)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_KilnConv, conv2, kConv2)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_CudnnConv, conv2, kConv2)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_KilnConv, conv1_tf32, kConv1Tf32)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_CudnnConv, conv1_tf32, kConv1Tf32)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_KilnConv, conv2_tf32, kConv2Tf32)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_CudnnConv, conv2_tf32, kConv2Tf32)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

RegisterRatio conv1_ratio("cuda conv 1->32 28x28 b256 fwd+bwd vs cuDNN",
                          "BM_KilnConv/conv1/manual_time", "BM_CudnnConv/conv1/manual_time", 0.95);
RegisterRatio conv2_ratio("cuda conv 32->64 14x14 b256 fwd+bwd vs cuDNN",
                          "BM_KilnConv/conv2/manual_time", "BM_CudnnConv/conv2/manual_time", 0.95);
RegisterRatio conv1_tf32_ratio("cuda conv 1->32 TF32 fwd+bwd vs cuDNN",
                               "BM_KilnConv/conv1_tf32/manual_time",
                               "BM_CudnnConv/conv1_tf32/manual_time", 0.95);
RegisterRatio conv2_tf32_ratio("cuda conv 32->64 TF32 fwd+bwd vs cuDNN",
                               "BM_KilnConv/conv2_tf32/manual_time",
                               "BM_CudnnConv/conv2_tf32/manual_time", 0.95);

// ---- elementwise vs copy bandwidth -----------------------------------------------------------

constexpr int64_t kElementwiseN = int64_t{1} << 26;

enum ElementwiseOp { kAdd = 0, kMul = 1, kRelu = 2 };

void BM_KilnElementwise(benchmark::State& state, ElementwiseOp op) {
  if (skip(state)) return;
  const kiln::TensorOptions options = kiln::TensorOptions().device(gpu());
  auto a = kiln::randn({kElementwiseN}, options);
  auto b = kiln::randn({kElementwiseN}, options);
  time_batches(
      state,
      [&] {
        kiln::Tensor y = op == kAdd ? a + b : op == kMul ? a * b : a.relu();
        benchmark::DoNotOptimize(y);
      },
      wait_kiln);
  const int64_t streams = op == kRelu ? 2 : 3;
  state.SetBytesProcessed(state.iterations() * streams * kElementwiseN * 4);
}

// cudaMemcpy device-to-device of `floats` float32: reads and writes 2·4·floats bytes.
void BM_CudaCopy(benchmark::State& state, int64_t floats) {
  if (skip(state)) return;
  void* src = nullptr;
  void* dst = nullptr;
  const size_t bytes = static_cast<size_t>(floats) * 4;
  CHECK_CALL(cudaMalloc(&src, bytes));
  CHECK_CALL(cudaMalloc(&dst, bytes));
  CHECK_CALL(cudaMemset(src, 0, bytes));
  Stream stream;
  time_batches(
      state,
      [&] { CHECK_CALL(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream.s)); },
      [&] { stream.wait(); });
  state.SetBytesProcessed(state.iterations() * 2 * static_cast<int64_t>(bytes));
  cudaFree(dst);
  cudaFree(src);
}

BENCHMARK_CAPTURE(BM_KilnElementwise, add, kAdd)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_KilnElementwise, mul, kMul)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_KilnElementwise, relu, kRelu)->UseManualTime()->Unit(benchmark::kMicrosecond);
// 3 streams of 2^26 floats = a copy of 1.5·2^26 floats; 2 streams = a copy of 2^26.
BENCHMARK_CAPTURE(BM_CudaCopy, three_streams, kElementwiseN * 3 / 2)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_CudaCopy, two_streams, kElementwiseN)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

RegisterRatio add_bw("cuda add 2^26 float32, fraction of copy bandwidth",
                     "BM_KilnElementwise/add/manual_time", "BM_CudaCopy/three_streams/manual_time",
                     0.85);
RegisterRatio mul_bw("cuda mul 2^26 float32, fraction of copy bandwidth",
                     "BM_KilnElementwise/mul/manual_time", "BM_CudaCopy/three_streams/manual_time",
                     0.85);
RegisterRatio relu_bw("cuda relu 2^26 float32, fraction of copy bandwidth",
                      "BM_KilnElementwise/relu/manual_time", "BM_CudaCopy/two_streams/manual_time",
                      0.85);

// ---- reductions, bias gradients and copy_ (the Kiln side of bench/gpu_same_run.sh) -----------

constexpr int64_t kReduceN = int64_t{1} << 24;

enum ReduceOp { kSum = 0, kMean = 1, kVar = 2, kMax = 3, kArgmax = 4, kNorm = 5 };

kiln::Tensor reduce(const kiln::Tensor& x, ReduceOp op) {
  switch (op) {
    case kSum:
      return x.sum();
    case kMean:
      return x.mean();
    case kVar:
      return x.var();
    case kMax:
      return x.max();
    case kArgmax:
      return x.argmax();
    case kNorm:
      break;
  }
  return (x * x).sum().sqrt();
}

// One reduction of 2^24 float32 to a 0-d tensor; bytes counted as the input read once
// (the least any implementation moves).
void BM_KilnReduce(benchmark::State& state, ReduceOp op) {
  if (skip(state)) return;
  auto x = kiln::randn({kReduceN}, kiln::TensorOptions().device(gpu()));
  time_batches(
      state,
      [&] {
        kiln::Tensor y = reduce(x, op);
        benchmark::DoNotOptimize(y);
      },
      wait_kiln);
  state.SetBytesProcessed(state.iterations() * kReduceN * 4);
}

// A convolution's bias gradient: its output gradient summed over N, H and W, as
// conv2d's backward computes it.
void BM_KilnBiasGrad(benchmark::State& state, ConvLayer layer) {
  if (skip(state)) return;
  auto grad =
      kiln::randn({layer.n, layer.o, layer.hw, layer.hw}, kiln::TensorOptions().device(gpu()));
  time_batches(
      state,
      [&] {
        auto gb = grad.sum({0, 2, 3});
        benchmark::DoNotOptimize(gb);
      },
      wait_kiln);
  state.SetBytesProcessed(state.iterations() * grad.numel() * 4);
}

enum ScanSortOp { kCumsum = 0, kSortFlat = 1, kSortRows = 2, kSortShortRows = 3 };

// cumsum and sort of 2^24 float32 (sort_rows: each row of [4096, 4096]; sort_short_rows:
// of [65536, 256]: CUDA sorts long and short lines differently); bytes counted as
// the input read and the outputs written once (sort: values and int64 indices).
void BM_KilnScanSort(benchmark::State& state, ScanSortOp op) {
  if (skip(state)) return;
  auto x = kiln::randn({kReduceN}, kiln::TensorOptions().device(gpu()));
  auto rows = x.view({4096, kReduceN / 4096});
  auto short_rows = x.view({kReduceN / 256, 256});
  time_batches(
      state,
      [&] {
        if (op == kCumsum) {
          benchmark::DoNotOptimize(x.cumsum(0));
        } else {
          auto sorted = op == kSortFlat ? x.sort(0) : (op == kSortRows ? rows : short_rows).sort(1);
          benchmark::DoNotOptimize(sorted);
        }
      },
      wait_kiln);
  state.SetBytesProcessed(state.iterations() * kReduceN * (op == kCumsum ? 8 : 16));
}

// dst.copy_(src) of 2^26 float32 on the device: Kiln's own copy beside BM_CudaCopy's.
void BM_KilnCopy(benchmark::State& state) {
  if (skip(state)) return;
  const kiln::TensorOptions options = kiln::TensorOptions().device(gpu());
  auto src = kiln::randn({kElementwiseN}, options);
  auto dst = kiln::empty({kElementwiseN}, options);
  time_batches(
      state, [&] { dst.copy_(src); }, wait_kiln);
  state.SetBytesProcessed(state.iterations() * 2 * kElementwiseN * 4);
}

BENCHMARK_CAPTURE(BM_KilnReduce, sum, kSum)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_KilnReduce, mean, kMean)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_KilnReduce, var, kVar)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_KilnReduce, max, kMax)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_KilnReduce, argmax, kArgmax)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_KilnReduce, norm, kNorm)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_KilnScanSort, cumsum, kCumsum)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_KilnScanSort, sort, kSortFlat)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_KilnScanSort, sort_rows, kSortRows)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_KilnScanSort, sort_short_rows, kSortShortRows)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_KilnBiasGrad, conv1, kConv1)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_KilnBiasGrad, conv2, kConv2)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_KilnCopy)->UseManualTime()->Unit(benchmark::kMicrosecond);

RegisterRatio copy_bw("cuda copy_ 2^26 float32, fraction of cudaMemcpy bandwidth",
                      "BM_KilnCopy/manual_time", "BM_CudaCopy/two_streams/manual_time", 0.85);

// ---- the CNN training step ---------------------------------------------------------------------

void BM_KilnCudaCnnStep(benchmark::State& state) {
  if (skip(state)) return;
  const int64_t n = state.range(0);
  kiln::manual_seed(0);
  kiln::train::ModelOptions o;
  o.batch_norm = false;  // the plain CNN of the CPU reference figures
  o.dropout = 0;
  auto model = kiln::train::make_cnn(o);
  model->to(gpu());
  kiln::optim::Adam optimizer(model->parameters(), kiln::optim::AdamOptions(1e-3));
  const kiln::TensorOptions options = kiln::TensorOptions().device(gpu());
  auto x = kiln::randn({n, 1, 28, 28}, options);
  auto y = (kiln::rand({n}, options) * 10).to(kiln::int64).clamp(0, 9);
  time_batches(
      state,
      [&] {
        optimizer.zero_grad();
        auto loss = F::cross_entropy(model->forward(x), y);
        loss.backward();
        optimizer.step();
        benchmark::DoNotOptimize(loss);
      },
      wait_kiln);
  state.counters["samples/s"] =
      benchmark::Counter(static_cast<double>(state.iterations() * n), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_KilnCudaCnnStep)->Arg(256)->UseManualTime()->Unit(benchmark::kMillisecond);

// ---- allocation ------------------------------------------------------------------------------

constexpr int64_t kAllocFloats = (int64_t{1} << 20) / 4;  // 1 MiB

void BM_KilnCudaEmpty(benchmark::State& state) {
  if (skip(state)) return;
  const kiln::TensorOptions options = kiln::TensorOptions().device(gpu());
  time_batches(
      state,
      [&] {
        auto t = kiln::empty({kAllocFloats}, options);
        benchmark::DoNotOptimize(t);
      },
      [] {});  // host-side work only: a device wait would dominate the figure
}

void BM_CudaMallocFree(benchmark::State& state) {
  if (skip(state)) return;
  time_batches(
      state,
      [&] {
        void* p = nullptr;
        CHECK_CALL(cudaMalloc(&p, static_cast<size_t>(kAllocFloats) * 4));
        benchmark::DoNotOptimize(p);
        CHECK_CALL(cudaFree(p));
      },
      [] {});
}

BENCHMARK(BM_KilnCudaEmpty)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CudaMallocFree)->UseManualTime()->Unit(benchmark::kMicrosecond);

RegisterRatio alloc_ratio("cuda empty+release 1 MiB vs cudaMalloc+cudaFree",
                          "BM_KilnCudaEmpty/manual_time", "BM_CudaMallocFree/manual_time", 1.0);

}  // namespace
