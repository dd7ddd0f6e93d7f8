// The plugin of tutorial 8 (custom_op.cpp): one op of its own, "myops.softplus", on
// one host-memory device, myops:0, written on the plugin kit (kiln/sdk/plugin.h).
// Kiln's own ops on myops:0 run on the CPU plugin (the fallback); a real backend would
// add this entry to the kernels it already has.
#include <kiln/sdk/plugin.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

namespace {

// y = log(1 + exp(beta * x)) / beta, elementwise (contiguous, as the entry's flags
// say: the frontend makes strided operands contiguous first). Above beta * x = 30 it
// returns x, which is within exp(-30)/beta (about 1e-13/beta) of the exact value.
template <class T>
void softplus_loop(const kiln::sdk::Tensor& x, const kiln::sdk::Tensor& y, double beta) {
  const T* in = x.ptr<T>();
  T* out = y.ptr<T>();
  for (int64_t i = 0, n = x.numel(); i < n; ++i) {
    const double z = beta * static_cast<double>(in[i]);
    out[i] = static_cast<T>(z > 30 ? in[i] : std::log1p(std::exp(z)) / beta);
  }
}

void softplus(const kiln::sdk::OpArgs& args) {
  args.expect_counts(1, 1);
  const kiln::sdk::Tensor x = args.input(0), y = args.output(0);
  kiln::sdk::expect_same_shape(x, y, "output");
  kiln::sdk::expect_dtype(y, static_cast<kiln_dtype>(x.dtype), "output");
  const double beta = args.attr_float("beta");
  KILN_SDK_CHECK_ARG(beta > 0, "beta must be positive, got ", beta);
  if (x.dtype == KILN_DTYPE_FLOAT32) return softplus_loop<float>(x, y, beta);
  softplus_loop<double>(x, y, beta);
}

// Which operands the kernel takes: float32 and float64 (the frontend says so clearly
// for the others). Never throws.
int32_t float32_or_float64(void*, const kiln_op_args* args) {
  const kiln_dtype dtype = kiln::sdk::input_dtype(args, 0);
  return dtype == KILN_DTYPE_FLOAT32 || dtype == KILN_DTYPE_FLOAT64;
}

class HostDevice : public kiln::sdk::Device {
 public:
  void* allocate(size_t bytes, size_t alignment, kiln::sdk::Stream*) override {
    alignment = alignment < 64 ? 64 : alignment;
    return std::aligned_alloc(alignment, (bytes / alignment + 1) * alignment);
  }
  void deallocate(void* data, kiln::sdk::Stream*) override { std::free(data); }
  void copy(kiln::sdk::CopyKind, void* dst, const void* src, size_t bytes,
            kiln::sdk::Stream*) override {
    std::memmove(dst, src, bytes);
  }
  void properties(kiln_device_properties& p) override {
    p.flags |= KILN_DEVICE_FLAG_HOST_ACCESSIBLE;  // its memory is host memory
  }
  const kiln::sdk::KernelTable* kernels() override {
    static const kiln::sdk::KernelTable table({
        {"myops.softplus", &kiln::sdk::run_kernel<softplus>, &float32_or_float64, 0},
    });
    return &table;
  }
};

}  // namespace

KILN_SDK_PLUGIN(kiln::sdk::SingleDeviceBackend<HostDevice>, "myops", "1.0.0")
