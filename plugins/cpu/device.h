// device.h — the CPU backend on the plugin kit (kiln/sdk/plugin.h): its logical
// devices and the backend that owns them.
//
// KILN_CPU_DEVICES=N exposes cpu:0..N-1. They all compute on the same cores and the
// same host memory; what each one has of its own is an allocator (and so its own
// statistics and cache), which lets multi-device frontend code (DataParallel, peer
// copies) run and be tested on a machine with no accelerator.
//
// Every kernel runs synchronously on the calling thread (on the pool's threads), so
// the kit's default streams and events are exactly right: by the time an op returns
// its work is done.
#ifndef KILN_CPU_DEVICE_H
#define KILN_CPU_DEVICE_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "host_allocator.h"
#include "kiln/sdk/plugin.h"

namespace kiln::cpu {

class Backend;

/// One logical device: host memory through its own caching allocator, whose blocks
/// are the kiln_buffer handles (sdk::CachingDevice: no second registry on the hot path).
class CpuDevice final : public sdk::CachingDevice {
 public:
  CpuDevice(const Backend& backend, int32_t index, uint64_t memory_limit)
      : backend_(backend), index_(index), allocator_(memory_limit) {}

  int32_t index() const noexcept { return index_; }
  /// "cpu:3", for messages.
  std::string label() const { return "cpu:" + std::to_string(index_); }
  HostAllocator& allocator() noexcept { return allocator_; }

  Block allocate_block(size_t bytes, size_t alignment, sdk::Stream* stream) override;
  void deallocate_block(kiln_buffer* handle, sdk::Stream* stream) override;
  /// All three kinds are host memory here: a memmove, finished on return.
  void copy(sdk::CopyKind kind, void* dst, const void* src, size_t bytes,
            sdk::Stream* stream) override;
  /// The logical devices share the host's memory, so a peer copy is a memmove too.
  void copy_peer(void* dst, sdk::BackendDevice& src_device, const void* src, size_t bytes,
                 sdk::Stream* stream) override;
  void properties(kiln_device_properties& properties) override;
  void memory_stats(kiln_memory_stats& stats) override;
  void empty_cache() override { allocator_.empty_cache(); }
  const sdk::KernelTable* kernels() override;

 private:
  const Backend& backend_;
  int32_t index_;
  HostAllocator allocator_;
};

/// The plugin: reads its environment once, at the first kiln_plugin_init.
///   KILN_CPU_DEVICES  logical devices cpu:0..N-1 (1..64, default 1). An invalid value
///                     logs a warning and falls back to 1: a typo must not take away
///                     the backend every other one falls back to.
///   KILN_NUM_THREADS  threads for kernels and OpenBLAS (1..1024, default: all
///                     hardware threads); invalid values warn and use the default.
///                     The "kiln.threads.v1" extension changes it at run time.
class Backend final : public sdk::Backend {
 public:
  Backend();

  int32_t device_count() override { return static_cast<int32_t>(devices_.size()); }
  sdk::BackendDevice& device(int32_t index) override {
    return *devices_[static_cast<size_t>(index)];
  }
  std::string describe() override { return description_; }
  bool peer_copies() override { return true; }
  /// "kiln.collectives.v1" (collectives.h) and "kiln.threads.v1".
  const void* extension(const char* name) override;

  const std::string& device_name() const noexcept { return device_name_; }  // "CPU (...)"
  uint64_t total_memory() const noexcept { return total_memory_; }

 private:
  std::vector<std::unique_ptr<CpuDevice>> devices_;
  std::string device_name_;
  std::string description_;
  uint64_t total_memory_ = 0;
};

}  // namespace kiln::cpu

#endif  // KILN_CPU_DEVICE_H
