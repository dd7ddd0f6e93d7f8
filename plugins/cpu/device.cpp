#include "device.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "collectives.h"
#include "kernels/blas.h"
#include "kernels/registry.h"
#include "kiln/sdk/status.h"
#include "kiln/sdk/versioned.h"
#include "system_info.h"
#include "thread_pool.h"

namespace kiln::cpu {

namespace {

constexpr int kMaxDevices = 64;
constexpr int kMaxThreads = 1024;

kiln_status* set_num_threads(void*, int32_t num_threads) {
  return sdk::guard("set_num_threads", [&] {
    KILN_SDK_CHECK(num_threads >= 1 && num_threads <= kMaxThreads, KILN_STATUS_INVALID_ARGUMENT,
                   "the thread count must be between 1 and ", kMaxThreads, ", got ", num_threads);
    pool().resize(num_threads);
    set_blas_threads(num_threads);
  });
}

int32_t get_num_threads(void*) { return pool().size(); }

constexpr kiln_threads_api kThreadsApi = {sizeof(kiln_threads_api), &set_num_threads,
                                          &get_num_threads};

}  // namespace

// -- CpuDevice ------------------------------------------------------------------------------

sdk::CachingDevice::Block CpuDevice::allocate_block(size_t bytes, size_t alignment, sdk::Stream*) {
  HostBlock* block = allocator_.allocate(bytes, alignment);
  return {reinterpret_cast<kiln_buffer*>(block), block->data};
}

void CpuDevice::deallocate_block(kiln_buffer* handle, sdk::Stream*) {
  allocator_.deallocate(reinterpret_cast<HostBlock*>(handle));
}

void CpuDevice::copy(sdk::CopyKind, void* dst, const void* src, size_t bytes, sdk::Stream*) {
  if (dst != src) std::memmove(dst, src, bytes);
}

void CpuDevice::copy_peer(void* dst, sdk::BackendDevice&, const void* src, size_t bytes,
                          sdk::Stream*) {
  if (dst != src) std::memmove(dst, src, bytes);
}

void CpuDevice::properties(kiln_device_properties& properties) {
  std::snprintf(properties.name, sizeof properties.name, "%s", backend_.device_name().c_str());
  properties.kind = KILN_DEVICE_KIND_CPU;
  properties.multiprocessor_count = pool().size();
  properties.total_memory_bytes = backend_.total_memory();
  properties.free_memory_bytes = available_memory_bytes();
  properties.memory_alignment = HostAllocator::kAlignment;
  properties.flags = KILN_DEVICE_FLAG_HOST_ACCESSIBLE;
}

void CpuDevice::memory_stats(kiln_memory_stats& stats) {
  const size_t struct_size = stats.struct_size;
  stats = allocator_.stats();
  stats.struct_size = struct_size;
}

const sdk::KernelTable* CpuDevice::kernels() { return &kernel_table(); }

// -- Backend --------------------------------------------------------------------------------

Backend::Backend() {
  std::string error;
  // KILN_CPU_DEVICES: an invalid value must not take the process (or the other
  // backends) down, so it degrades to one device with a warning.
  int num_devices = 1;
  if (auto n = int_from_env("KILN_CPU_DEVICES", 1, kMaxDevices, &error)) {
    num_devices = *n;
  } else if (!error.empty()) {
    sdk::log(KILN_LOG_WARNING, error + "; using 1 CPU device");
    error.clear();
  }

  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  int threads = static_cast<int>(std::min<unsigned>(hardware, kMaxThreads));
  if (auto n = int_from_env("KILN_NUM_THREADS", 1, kMaxThreads, &error)) {
    threads = *n;
  } else if (!error.empty()) {
    sdk::log(KILN_LOG_WARNING, error + "; using " + std::to_string(threads) + " threads");
  }
  init_pool(threads);
  // Kiln's own GEMMs run OpenBLAS serially on the pool's threads (kernels/blas.h);
  // this count is what other BLAS callers in the process get outside Kiln's ops.
  openblas_set_num_threads(threads);

  total_memory_ = total_memory_bytes();
  device_name_ = std::string("CPU (") + cpu_model_name() + ")";
  description_ = blas_description() + ", " + std::to_string(threads) +
                 (threads == 1 ? " thread; " : " threads; ") + std::to_string(num_devices) +
                 (num_devices == 1 ? " logical device" : " logical devices");
  // No single host allocation can exceed physical memory; an unknown size means no cap.
  const uint64_t limit = total_memory_ != 0 ? total_memory_ : UINT64_MAX;
  for (int i = 0; i < num_devices; ++i)
    devices_.push_back(std::make_unique<CpuDevice>(*this, i, limit));
  kernel_table();  // now, so that a broken table (two kernels for one op) fails the load
  sdk::log(KILN_LOG_DEBUG, "initialized: " + description_);
}

const void* Backend::extension(const char* name) {
  if (std::strcmp(name, KILN_EXTENSION_COLLECTIVES) == 0) return collectives_api();
  if (std::strcmp(name, KILN_EXTENSION_THREADS) == 0) return &kThreadsApi;
  return nullptr;
}

}  // namespace kiln::cpu
