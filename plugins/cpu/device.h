// device.h — the CPU plugin's logical devices and the state shared by all of them.
//
// KILN_CPU_DEVICES=N exposes cpu:0..N-1. They all compute on the same cores and the
// same host memory; what each one has of its own is an allocator (and so its own
// statistics and cache), which lets multi-device frontend code (DataParallel, peer
// copies) run and be tested on a machine with no accelerator.
#ifndef KILN_CPU_DEVICE_H
#define KILN_CPU_DEVICE_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "host_allocator.h"
#include "kiln/c_api.h"

namespace kiln::cpu {

class Device {
 public:
  Device(int32_t index, uint64_t memory_limit) : index_(index), allocator_(memory_limit) {}
  int32_t index() const noexcept { return index_; }
  HostAllocator& allocator() noexcept { return allocator_; }
  /// "cpu:3", for messages.
  std::string label() const { return "cpu:" + std::to_string(index_); }

 private:
  int32_t index_;
  HostAllocator allocator_;
};

inline kiln_device* to_handle(Device* device) { return reinterpret_cast<kiln_device*>(device); }

/// The Device behind a handle; throws INVALID_ARGUMENT for NULL.
Device& from_handle(kiln_device* device);

/// Everything init works out once, for the life of the process.
struct PluginState {
  std::vector<std::unique_ptr<Device>> devices;
  std::string device_name;  // "CPU (AMD EPYC 7B13)"
  std::string description;  // describe()'s text
  uint64_t total_memory = 0;
  int32_t threads = 1;
};

/// Builds the state on the first call (reading KILN_CPU_DEVICES and KILN_NUM_THREADS,
/// starting the thread pool, configuring OpenBLAS); later calls return it unchanged.
/// Configuration problems are logged as warnings, never fatal.
const PluginState& init_plugin_state();

/// The state; init_plugin_state must have run.
const PluginState& plugin_state();

/// Fills the fields of `properties` that fit in its struct_size.
void fill_properties(const PluginState& state, kiln_device_properties* properties);

/// The "kiln.threads.v1" extension table: the pool's (and OpenBLAS's) thread count
/// at run time.
const kiln_threads_api* threads_api();

}  // namespace kiln::cpu

#endif  // KILN_CPU_DEVICE_H
