// A plugin whose kernels misbehave on purpose, for the last-word tests
// (last_word_test.cpp, and kiln-train's in tests/train): "misbehave.segv" dies of
// SIGSEGV, "misbehave.exit" calls exit(7), "misbehave.sleep" sleeps `ms` milliseconds.
// With MISBEHAVE_CONV2D=segv, exit or hang in the environment it also provides
// kiln.conv2d, which does that instead of a convolution. One host-memory device;
// every other catalogue op falls back to the CPU plugin.
#include <kiln/sdk/plugin.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

void segv(const kiln::sdk::OpArgs&) { ::raise(SIGSEGV); }
void exit_7(const kiln::sdk::OpArgs&) { std::exit(7); }
void sleep_ms(const kiln::sdk::OpArgs& args) {
  std::this_thread::sleep_for(std::chrono::milliseconds(args.attr_int("ms")));
}
void hang(const kiln::sdk::OpArgs&) {
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

kiln::sdk::KernelList kernel_list() {
  kiln::sdk::KernelList list = {
      {"misbehave.segv", &kiln::sdk::run_kernel<segv>, nullptr, 0},
      {"misbehave.exit", &kiln::sdk::run_kernel<exit_7>, nullptr, 0},
      {"misbehave.sleep", &kiln::sdk::run_kernel<sleep_ms>, nullptr, 0},
  };
  const char* conv2d = std::getenv("MISBEHAVE_CONV2D");
  const std::string mode = conv2d ? conv2d : "";
  if (mode == "segv") list.push_back({"kiln.conv2d", &kiln::sdk::run_kernel<segv>, nullptr, 0});
  if (mode == "exit") list.push_back({"kiln.conv2d", &kiln::sdk::run_kernel<exit_7>, nullptr, 0});
  if (mode == "hang") list.push_back({"kiln.conv2d", &kiln::sdk::run_kernel<hang>, nullptr, 0});
  return list;
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
    p.flags |= KILN_DEVICE_FLAG_HOST_ACCESSIBLE;
  }
  const kiln::sdk::KernelTable* kernels() override {
    static const kiln::sdk::KernelTable table(kernel_list());
    return &table;
  }
};

}  // namespace

KILN_SDK_PLUGIN(kiln::sdk::SingleDeviceBackend<HostDevice>, "misbehave", "1.0.0")
