// libkiln_broken.so — a plugin with one deliberate defect, chosen at run time by
// BROKEN_PLUGIN_MODE, for kiln-conformance's own tests: each defect must be reported,
// and none may take the runner down.
//
//   (unset)  correct: host memory, kiln.add and kiln.mul for float32/float64 (it must
//            pass, which shows that the failures below come from the defects)
//   crash    kiln.add dereferences a null pointer
//   hang     kiln.add never returns
//   exit     kiln.add calls exit(3)
//   leak     kiln.mul keeps a 256-byte scratch allocation per call, which the device's
//            own statistics (memory_stats) show
//   strides  kiln.add claims strided inputs but reads full-size ones as contiguous
//   props    device properties change between calls, and memory_alignment claims 4096
//            while allocations are only 64-byte aligned
//   throw    kiln.add's run entry is a raw function (not run_kernel<>) that throws: the
//            exception crosses the C ABI, which must be reported as an ABI violation
//   throw_supports  supports() throws: the kit's firewall catches it, logs it and
//            declines, so that kiln.add and kiln.mul run on the CPU plugin; the
//            certifier must still fail both ops for it (an ABI violation)
//   status   kiln.add and kiln.mul return an error status (a kiln::sdk::Error, turned
//            into a status by run_kernel<>): a failed check that names the op and
//            quotes the message, in the op checks and in the training check alike, and
//            never an ABI violation
// Built with the plugin kit, so it also shows that the kit turns a plugin into a
// conformant one except where the author's own code is wrong.
#include <kiln/sdk/plugin.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace broken {

using kiln::sdk::OpArgs;
using kiln::sdk::TensorView;

std::string mode() {
  const char* m = std::getenv("BROKEN_PLUGIN_MODE");
  return m ? m : "";
}

class BrokenDevice : public kiln::sdk::BackendDevice {
 public:
  void* allocate(size_t bytes, size_t alignment, kiln::sdk::Stream*) override {
    if (bytes > (size_t{1} << 40)) return nullptr;  // a 1 TiB device
    const bool misalign = mode() == "props" && alignment <= 64;
    const size_t align = std::max<size_t>(misalign ? 4096 : alignment, 64);
    const size_t total = ((bytes + 64 + align - 1) / align) * align;
    char* base = static_cast<char*>(std::aligned_alloc(align, total));
    if (base == nullptr) return nullptr;
    char* data = misalign ? base + 64 : base;  // 64-aligned, never 4096-aligned
    std::lock_guard lock(mutex_);
    blocks_[data] = {base, bytes};
    live_bytes_ += bytes;
    return data;
  }
  void deallocate(void* data, kiln::sdk::Stream*) override {
    std::lock_guard lock(mutex_);
    auto it = blocks_.find(data);
    if (it == blocks_.end()) return;
    live_bytes_ -= it->second.bytes;
    std::free(it->second.base);
    blocks_.erase(it);
  }
  void copy(kiln::sdk::CopyKind, void* dst, const void* src, size_t bytes,
            kiln::sdk::Stream*) override {
    std::memmove(dst, src, bytes);
  }
  void properties(kiln_device_properties& p) override {
    if (mode() == "props") {
      std::snprintf(p.name, sizeof p.name, "Broken device, call %d", ++calls_);
      p.memory_alignment = 4096;
    } else {
      std::snprintf(p.name, sizeof p.name, "Broken device (correct mode)");
      p.memory_alignment = 64;
    }
  }
  // The device's own accounting: what a real allocator would report, leaks included.
  void memory_stats(kiln_memory_stats& s) override {
    std::lock_guard lock(mutex_);
    s.bytes_in_use = live_bytes_;
    s.bytes_reserved = live_bytes_;
    s.peak_bytes_in_use = std::max(s.peak_bytes_in_use, live_bytes_);
  }
  const kiln::sdk::KernelTable* kernels() override;

 private:
  struct Block {
    char* base;
    size_t bytes;
  };
  std::mutex mutex_;
  std::unordered_map<void*, Block> blocks_;
  uint64_t live_bytes_ = 0;
  std::atomic<int> calls_{0};
};

// y[i] = a[i] op b[i] over a strided index; `contiguous_inputs` is the strides defect.
template <class T, class Op>
void binary_loop(const TensorView& a, const TensorView& b, const TensorView& y,
                 bool contiguous_inputs) {
  std::vector<int64_t> index(static_cast<size_t>(y.ndim), 0);
  const int64_t n = y.numel();
  for (int64_t i = 0; i < n; ++i) {
    int64_t oa = 0, ob = 0, oy = 0;
    for (int32_t d = 0; d < y.ndim; ++d) {
      oa += index[static_cast<size_t>(d)] * a.strides[d];
      ob += index[static_cast<size_t>(d)] * b.strides[d];
      oy += index[static_cast<size_t>(d)] * y.strides[d];
    }
    // The defect: full-size inputs are read as if contiguous (broadcast inputs, whose
    // stride-0 dims would make that read out of bounds, keep their strides).
    if (contiguous_inputs && a.numel() == n) oa = i;
    if (contiguous_inputs && b.numel() == n) ob = i;
    y.ptr<T>()[oy] = Op{}(a.ptr<T>()[oa], b.ptr<T>()[ob]);
    for (int32_t d = y.ndim - 1; d >= 0; --d) {
      if (++index[static_cast<size_t>(d)] < y.shape[d]) break;
      index[static_cast<size_t>(d)] = 0;
    }
  }
}

template <class Op>
void binary(const OpArgs& args, bool contiguous_inputs) {
  args.expect_counts(2, 1);
  const TensorView a = args.input(0), b = args.input(1), y = args.output(0);
  if (y.dtype == KILN_DTYPE_FLOAT32) return binary_loop<float, Op>(a, b, y, contiguous_inputs);
  if (y.dtype == KILN_DTYPE_FLOAT64) return binary_loop<double, Op>(a, b, y, contiguous_inputs);
  kiln::sdk::unsupported_dtype(y.dtype);
}

// The "status" defect: the kernel reports a device error, as a status.
void fail_if_status_mode() {
  if (mode() == "status")
    throw kiln::sdk::Error(KILN_STATUS_DEVICE_ERROR, "device lost (BROKEN_PLUGIN_MODE=status)");
}

void add(const OpArgs& args) {
  const std::string m = mode();
  fail_if_status_mode();
  if (m == "crash") {
    volatile int* null = nullptr;
    *null = 1;
  }
  if (m == "hang") {
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  if (m == "exit") std::exit(3);
  binary<std::plus<>>(args, m == "strides");
}

void mul(const OpArgs& args) {
  fail_if_status_mode();
  if (mode() == "leak") {
    auto& device = kiln::sdk::device_from_handle<BrokenDevice>(args.raw().outputs[0].device);
    device.allocate(256, 64, nullptr);  // scratch space, never released
  }
  binary<std::multiplies<>>(args, false);
}

// A kernel entry written without run_kernel<>: in "throw" mode its exception escapes.
kiln_status* raw_add(void* context, const kiln_op_args* args) {
  if (mode() == "throw") throw std::runtime_error("raw_add: thrown through the C ABI");
  return kiln::sdk::run_kernel<add>(context, args);
}

int32_t float_only(void*, const kiln_op_args* args) {
  if (mode() == "throw_supports") throw std::runtime_error("float_only: thrown from supports");
  const kiln_dtype d = kiln::sdk::output_dtype(args, 0);
  return d == KILN_DTYPE_FLOAT32 || d == KILN_DTYPE_FLOAT64;
}

const kiln::sdk::KernelTable* BrokenDevice::kernels() {
  static const kiln::sdk::KernelTable table({
      {"kiln.add", &raw_add, &float_only, kiln::sdk::kStridedInOut},
      {"kiln.mul", &kiln::sdk::run_kernel<mul>, &float_only, kiln::sdk::kStridedInOut},
  });
  return &table;
}

}  // namespace broken

KILN_SDK_PLUGIN(kiln::sdk::SingleDeviceBackend<broken::BrokenDevice>, "broken", "0.0.1-test")
