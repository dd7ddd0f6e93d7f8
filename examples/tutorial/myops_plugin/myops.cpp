// The plugin of tutorial 8 (custom_op.cpp): two ops of its own, "myops.softplus" and
// its gradient "myops.softplus_backward", on one host-memory device, myops:0, written
// on the plugin kit (kiln/sdk/plugin.h). It declares both ops' schemas
// (kiln/sdk/op_schemas.h), so kiln-info lists them, kiln::call_op checks every call
// against them and kiln::VendorOp allocates their outputs (share/doc/kiln/vendor-ops.md).
// Kiln's own ops on myops:0 run on the CPU plugin (the fallback); a real backend would
// add this entry to the kernels it already has.
#include <kiln/sdk/op_schemas.h>
#include <kiln/sdk/plugin.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

namespace {

// y = log(1 + exp(beta * x)) / beta, elementwise (contiguous, as the entry's flags
// say: the frontend makes strided operands contiguous first). Above beta * x = 30 it
// returns x, which is within exp(-30)/beta (about 1e-13/beta) of the exact value.
template <class T>
void softplus_loop(const kiln::sdk::TensorView& x, const kiln::sdk::TensorView& y, double beta) {
  const T* in = x.ptr<T>();
  T* out = y.ptr<T>();
  for (int64_t i = 0, n = x.numel(); i < n; ++i) {
    const double z = beta * static_cast<double>(in[i]);
    out[i] = static_cast<T>(z > 30 ? in[i] : std::log1p(std::exp(z)) / beta);
  }
}

void softplus(const kiln::sdk::OpArgs& args) {
  args.expect_counts(1, 1);
  const kiln::sdk::TensorView x = args.input(0), y = args.output(0);
  kiln::sdk::expect_same_shape(x, y, "output");
  kiln::sdk::expect_dtype(y, static_cast<kiln_dtype>(x.dtype), "output");
  const double beta = args.attr_float("beta");
  KILN_SDK_CHECK_ARG(beta > 0, "beta must be positive, got ", beta);
  if (x.dtype == KILN_DTYPE_FLOAT32) return softplus_loop<float>(x, y, beta);
  softplus_loop<double>(x, y, beta);
}

// dx = dy * sigmoid(beta * x), the gradient of softplus with respect to x.
template <class T>
void softplus_backward_loop(const kiln::sdk::TensorView& x, const kiln::sdk::TensorView& dy,
                            const kiln::sdk::TensorView& dx, double beta) {
  const T* in = x.ptr<T>();
  const T* grad = dy.ptr<T>();
  T* out = dx.ptr<T>();
  for (int64_t i = 0, n = x.numel(); i < n; ++i) {
    const double z = beta * static_cast<double>(in[i]);
    out[i] = static_cast<T>(static_cast<double>(grad[i]) / (1 + std::exp(-z)));
  }
}

void softplus_backward(const kiln::sdk::OpArgs& args) {
  args.expect_counts(2, 1);
  const kiln::sdk::TensorView x = args.input(0), dy = args.input(1), dx = args.output(0);
  kiln::sdk::expect_same_shape(x, dy, "input 1");
  kiln::sdk::expect_same_shape(x, dx, "output");
  const double beta = args.attr_float("beta");
  KILN_SDK_CHECK_ARG(beta > 0, "beta must be positive, got ", beta);
  if (x.dtype == KILN_DTYPE_FLOAT32) return softplus_backward_loop<float>(x, dy, dx, beta);
  softplus_backward_loop<double>(x, dy, dx, beta);
}

// The ops' schemas, in the catalogue's form (share/doc/kiln/ops.json) plus the rule
// each output's shape follows. The frontend validates them when the plugin loads.
const char* const kSoftplusSchema = R"({
  "inputs": [{"name": "x"}],
  "outputs": [{"name": "y", "shape": "input 0", "desc": "same shape and dtype as x"}],
  "attributes": [{"name": "beta", "type": "FLOAT", "desc": "positive"}],
  "dtypes": {"class": "float32_64", "one_dtype": true},
  "differentiable": true,
  "gradient": "myops.softplus_backward",
  "semantics": "y = log(1 + exp(beta * x)) / beta, elementwise"
})";
const char* const kSoftplusBackwardSchema = R"({
  "inputs": [{"name": "x"}, {"name": "grad_y"}],
  "outputs": [{"name": "grad_x", "shape": "input 0"}],
  "attributes": [{"name": "beta", "type": "FLOAT", "desc": "positive"}],
  "dtypes": {"class": "float32_64", "one_dtype": true},
  "semantics": "grad_x = grad_y * sigmoid(beta * x): the gradient of myops.softplus"
})";

// Which operands the kernel takes: float32 and float64 (the frontend says so clearly
// for the others). Never throws.
int32_t float32_or_float64(void*, const kiln_op_args* args) {
  const kiln_dtype dtype = kiln::sdk::input_dtype(args, 0);
  return dtype == KILN_DTYPE_FLOAT32 || dtype == KILN_DTYPE_FLOAT64;
}

class HostDevice : public kiln::sdk::BackendDevice {
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
        {"myops.softplus_backward", &kiln::sdk::run_kernel<softplus_backward>, &float32_or_float64,
         0},
    });
    return &table;
  }
};

// The backend: one HostDevice, and the declared ops as its one extension.
class MyopsBackend : public kiln::sdk::SingleDeviceBackend<HostDevice> {
 public:
  const void* extension(const char* name) override {
    static const kiln::sdk::OpSchemaList schemas({
        {"myops.softplus", 1, kSoftplusSchema},
        {"myops.softplus_backward", 1, kSoftplusBackwardSchema},
    });
    return schemas.extension(name);
  }
};

}  // namespace

KILN_SDK_PLUGIN(MyopsBackend, "myops", "1.1.0")
