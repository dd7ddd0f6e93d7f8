// kiln-bench-fft: Kiln's FFTs against the library a user would call directly, in the same
// process. Built, never installed: on the CPU the baseline is FFTW 3 (GPL-2+, which Kiln
// may not ship; libfftw3-dev), on a GPU cuFFT itself.
//
//   kiln-bench-fft [--device cpu:0|cuda:0] [--repeat N]
//
// Workloads (issue 27): a 1-D complex64 FFT of 2^20 points, and rfft2 of a float32 batch
// [64, 256, 256]. Each is timed N times (default 7) after two warm-up runs; the median is
// printed, one line per (workload, implementation), tab-separated:
//   fft_bench  <workload>  <implementation>  <median seconds>
// bench/fft_same_run.sh adds NumPy (CPU) or torch.fft (GPU) from the same run and prints
// the ratios. FFTW uses every core (fftwf_plan_with_nthreads) with FFTW_MEASURE plans, as
// Kiln's CPU plugin uses its whole pool.
#include <fftw3.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <kiln/kiln.h>

#if KILN_FFT_BENCH_CUDA
#include <cuda_runtime.h>
#include <cufft.h>
#endif

namespace {

constexpr int64_t kPoints = int64_t{1} << 20;
constexpr int64_t kBatch = 64, kSide = 256;

double median_seconds(int repeat, const std::function<void()>& run) {
  run();
  run();
  std::vector<double> times;
  for (int i = 0; i < repeat; ++i) {
    auto start = std::chrono::steady_clock::now();
    run();
    times.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void report(const char* workload, const char* implementation, double seconds) {
  std::printf("fft_bench\t%s\t%s\t%.6e\n", workload, implementation, seconds);
  std::fflush(stdout);
}

void kiln_runs(const kiln::Device& device, int repeat) {
  auto opts = kiln::TensorOptions(kiln::float32).device(device);
  kiln::manual_seed(1);
  kiln::Tensor signal = kiln::view_as_complex(kiln::randn({kPoints, 2}, opts));
  kiln::Tensor images = kiln::randn({kBatch, kSide, kSide}, opts);
  report("fft_1d_2^20_complex64", ("kiln " + device.str()).c_str(), median_seconds(repeat, [&] {
           kiln::fft::fft(signal);
           kiln::synchronize(device);
         }));
  report("rfft2_64x256x256_float32", ("kiln " + device.str()).c_str(), median_seconds(repeat, [&] {
           kiln::fft::rfft2(images);
           kiln::synchronize(device);
         }));
}

void fftw_runs(int repeat) {
  fftwf_init_threads();
  fftwf_plan_with_nthreads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  {
    auto* in = fftwf_alloc_complex(kPoints);
    auto* out = fftwf_alloc_complex(kPoints);
    fftwf_plan plan =
        fftwf_plan_dft_1d(static_cast<int>(kPoints), in, out, FFTW_FORWARD, FFTW_MEASURE);
    for (int64_t i = 0; i < kPoints; ++i) {
      in[i][0] = static_cast<float>(i % 7) - 3.0f;
      in[i][1] = static_cast<float>(i % 5) - 2.0f;
    }
    report("fft_1d_2^20_complex64", "fftw", median_seconds(repeat, [&] { fftwf_execute(plan); }));
    fftwf_destroy_plan(plan);
    fftwf_free(in);
    fftwf_free(out);
  }
  {
    const int64_t half = kSide / 2 + 1;
    auto* in = fftwf_alloc_real(kBatch * kSide * kSide);
    auto* out = fftwf_alloc_complex(kBatch * kSide * half);
    int n[2] = {static_cast<int>(kSide), static_cast<int>(kSide)};
    fftwf_plan plan = fftwf_plan_many_dft_r2c(2, n, static_cast<int>(kBatch), in, nullptr, 1,
                                              static_cast<int>(kSide * kSide), out, nullptr, 1,
                                              static_cast<int>(kSide * half), FFTW_MEASURE);
    for (int64_t i = 0; i < kBatch * kSide * kSide; ++i) in[i] = static_cast<float>(i % 11) - 5.0f;
    report("rfft2_64x256x256_float32", "fftw",
           median_seconds(repeat, [&] { fftwf_execute(plan); }));
    fftwf_destroy_plan(plan);
    fftwf_free(in);
    fftwf_free(out);
  }
  fftwf_cleanup_threads();
}

#if KILN_FFT_BENCH_CUDA
void cufft_runs(int repeat) {
  cufftComplex* signal = nullptr;
  cufftComplex* spectrum = nullptr;
  cudaMalloc(&signal, sizeof(cufftComplex) * kPoints);
  cudaMalloc(&spectrum, sizeof(cufftComplex) * kPoints);
  cudaMemset(signal, 0, sizeof(cufftComplex) * kPoints);
  cufftHandle plan;
  cufftPlan1d(&plan, static_cast<int>(kPoints), CUFFT_C2C, 1);
  report("fft_1d_2^20_complex64", "cufft", median_seconds(repeat, [&] {
           cufftExecC2C(plan, signal, spectrum, CUFFT_FORWARD);
           cudaDeviceSynchronize();
         }));
  cufftDestroy(plan);
  cudaFree(signal);
  cudaFree(spectrum);
  const int64_t half = kSide / 2 + 1;
  float* images = nullptr;
  cufftComplex* out = nullptr;
  cudaMalloc(&images, sizeof(float) * kBatch * kSide * kSide);
  cudaMalloc(&out, sizeof(cufftComplex) * kBatch * kSide * half);
  cudaMemset(images, 0, sizeof(float) * kBatch * kSide * kSide);
  int n[2] = {static_cast<int>(kSide), static_cast<int>(kSide)};
  cufftPlanMany(&plan, 2, n, nullptr, 1, 0, nullptr, 1, 0, CUFFT_R2C, static_cast<int>(kBatch));
  report("rfft2_64x256x256_float32", "cufft", median_seconds(repeat, [&] {
           cufftExecR2C(plan, images, out);
           cudaDeviceSynchronize();
         }));
  cufftDestroy(plan);
  cudaFree(images);
  cudaFree(out);
}
#endif

}  // namespace

int main(int argc, char** argv) {
  std::string device = "cpu:0";
  int repeat = 7;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      device = argv[++i];
    } else if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: kiln-bench-fft [--device cpu:0|cuda:0] [--repeat N]\n");
      return 2;
    }
  }
  try {
    const kiln::Device d(device);
    kiln_runs(d, repeat);
    if (d.backend() == "cpu") {
      fftw_runs(repeat);
    } else {
#if KILN_FFT_BENCH_CUDA
      cufft_runs(repeat);
#else
      std::fprintf(stderr, "kiln-bench-fft: built without cuFFT; no GPU baseline\n");
#endif
    }
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "kiln-bench-fft: %s\n", e.what());
    return 1;
  }
  return 0;
}
