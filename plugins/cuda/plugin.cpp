// The CUDA backend on the plugin kit (kiln/sdk/plugin.h): cuda::Backend lists the GPUs
// of plugin_state.h, each a cuda::CudaDevice (device.h), and adds NVTX ranges and the
// kiln.cuda.debug extension. The kit makes the kiln_plugin_api table, checks handles
// and arguments, and turns exceptions into statuses.
//
// Loading never needs a GPU: kiln_plugin_init reads the environment and asks the
// runtime how many GPUs there are (without creating a context). No driver or no GPU
// is zero devices, with the runtime's reason in describe() (kiln-info prints it); the
// process goes on with the other plugins. Contexts, streams and memory are created
// per device at device_open (CudaDevice::open).
//
// Environment: see plugin_state.h (KILN_CUDA_ALLOCATOR, KILN_CUDA_SYNC); the CUDA
// runtime's CUDA_VISIBLE_DEVICES applies as usual.
//
// Peer copies (copy_peer) are cudaMemcpyPeerAsync (copies.cpp); collectives are the
// "kiln.collectives.v1" extension on NCCL (collectives.h), when the plugin was built
// with nccl.h (KILN_CUDA_NCCL), opened on first use like cuBLAS.
#include <nvtx3/nvToolsExt.h>

#include <cstring>

#include "allocator.h"
#if KILN_CUDA_NCCL
#include "collectives.h"
#endif
#include "debug_extension.h"
#include "device.h"
#include "graphs.h"
#include "kernels/registry.h"
#include "plugin_state.h"
#include "staged.h"

namespace kiln::cuda {

namespace {

// -- the kiln.cuda.debug extension ---------------------------------------------------------

kiln_status* debug_get_counters(kiln_device* device, kiln_cuda_debug_counters* counters) {
  return sdk::guard("kiln.cuda.debug get_counters", [&] {
    KILN_SDK_CHECK(counters != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null output pointer");
    const CudaDevice::Counters c = sdk::device_from_handle<CudaDevice>(device).counters();
    kiln_cuda_debug_counters full{};
    full.struct_size = sizeof full;
    full.host_synchronizations = c.host_synchronizations;
    full.op_calls = c.op_calls;
    full.error_flag_readbacks = c.error_flag_readbacks;
    sdk::write_sized(counters, full);
  });
}

const char* debug_allocator_name() { return allocator_name(plugin_state().config.allocator); }

int32_t debug_sync_after_ops() { return plugin_state().config.sync_after_ops ? 1 : 0; }

const kiln_cuda_debug_v1 kDebugExtension = {
    sizeof(kiln_cuda_debug_v1), KILN_CUDA_DEBUG_VERSION, 0,
    &debug_get_counters,        &debug_allocator_name,   &debug_sync_after_ops,
};

}  // namespace

class Backend final : public sdk::Backend {
 public:
  // The kernel table is built now so that a broken one (two kernels for one op) fails
  // the load with a message instead of surfacing as a wrong kernel later.
  Backend() : state_(init_plugin_state()) {
    check_staged_switch();  // a KILN_CUDA_STAGED naming nothing staged fails the load
    kernel_table();
    sdk::log(KILN_LOG_DEBUG, "initialized: " + state_.description);
  }

  int32_t device_count() override { return static_cast<int32_t>(state_.devices.size()); }
  sdk::BackendDevice& device(int32_t index) override {
    return *state_.devices[static_cast<size_t>(index)];
  }
  std::string describe() override { return state_.description; }

  /// NVTX ranges named after Kiln's ops and record_function scopes, for Nsight (NVTX
  /// is header-only and does nothing unless a tool is attached).
  void range_push(const char* name) override { nvtxRangePushA(name); }
  void range_pop() override { nvtxRangePop(); }

  /// Every pair of GPUs can copy directly (cudaMemcpyPeerAsync stages through the host
  /// itself where the hardware has no peer access).
  bool peer_copies() override { return true; }

  const void* extension(const char* name) override {
    if (std::strcmp(name, KILN_CUDA_DEBUG_EXTENSION) == 0) return &kDebugExtension;
    if (std::strcmp(name, KILN_EXTENSION_STAGED) == 0) return staged_api();
    if (std::strcmp(name, KILN_EXTENSION_GRAPHS) == 0) return graphs_api();  // staged
#if KILN_CUDA_NCCL
    // Offered even with no GPU or no NCCL: comm_init_* then say which is missing.
    if (std::strcmp(name, KILN_EXTENSION_COLLECTIVES) == 0) return collectives_api();
#endif
    return nullptr;
  }

 private:
  const PluginState& state_;
};

}  // namespace kiln::cuda

KILN_SDK_PLUGIN(kiln::cuda::Backend, "cuda", "0.1.0")
