#include "device.h"

#include <cstdio>

#include "allocator.h"
#include "error_flags.h"
#include "kernels/registry.h"
#include "kiln/sdk/status.h"
#include "staging.h"
#include "toolkit_libraries.h"

namespace kiln::cuda {

// -- EventPool ---------------------------------------------------------------------------

cudaEvent_t EventPool::get() {
  {
    std::lock_guard lock(mutex_);
    if (!free_.empty()) {
      cudaEvent_t event = free_.back();
      free_.pop_back();
      return event;
    }
  }
  device_.make_current();
  cudaEvent_t event = nullptr;
  if (const cudaError_t status = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
      status != cudaSuccess) {
    device_.fail(status, "cudaEventCreateWithFlags");
  }
  return event;
}

void EventPool::put(cudaEvent_t event) noexcept {
  if (event == nullptr) return;
  try {
    std::lock_guard lock(mutex_);
    free_.push_back(event);
  } catch (...) {
    cudaEventDestroy(event);  // no room to keep it: give it back instead
  }
}

// -- CudaDevice --------------------------------------------------------------------------

CudaDevice::CudaDevice(int32_t index, int ordinal, const cudaDeviceProp& properties,
                       const Config& config)
    : index_(index),
      ordinal_(ordinal),
      properties_(properties),
      config_(config),
      label_("cuda:" + std::to_string(index)),
      events_(*this) {}

CudaDevice::~CudaDevice() = default;

void CudaDevice::make_current() const {
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess || current != ordinal_) {
    if (const cudaError_t status = cudaSetDevice(ordinal_); status != cudaSuccess) {
      fail(status, "cudaSetDevice");
    }
  }
}

void CudaDevice::open() {
  if (is_open()) return;
  std::lock_guard lock(open_mutex_);
  if (is_open()) return;
  open_locked();
  open_.store(true, std::memory_order_release);
}

void CudaDevice::open_locked() {
  make_current();
  // cudaFree(nullptr) is the classic way to create the primary context now, so its
  // cost (and a driver problem) shows up here, at device_open, not in the first op.
  if (const cudaError_t status = cudaFree(nullptr); status != cudaSuccess) {
    fail(status, "creating the CUDA context");
  }
  if (default_stream_ == nullptr) {
    if (const cudaError_t status =
            cudaStreamCreateWithFlags(&default_stream_, cudaStreamNonBlocking);
        status != cudaSuccess) {
      default_stream_ = nullptr;
      fail(status, "creating the default stream");
    }
  }
  if (check_stream_ == nullptr) {
    if (const cudaError_t status = cudaStreamCreateWithFlags(&check_stream_, cudaStreamNonBlocking);
        status != cudaSuccess) {
      check_stream_ = nullptr;
      fail(status, "creating the error-check stream");
    }
  }
  if (!error_flags_) {
    auto flags = std::make_unique<ErrorFlags>(*this);
    flags->init();
    error_flags_ = std::move(flags);
  }
  empty_allocation_ = error_flags_->spare_device_bytes();
  if (!allocator_) allocator_ = make_allocator(config_.allocator, *this);
  if (!staging_) staging_ = std::make_unique<Staging>(*this);
}

// -- the kit's BackendDevice: memory, description, kernels -----------------------------
// (streams and events: streams.cpp; copies: copies.cpp)

sdk::CachingDevice::Block CudaDevice::allocate_block(size_t bytes, size_t alignment,
                                                     sdk::Stream* stream) {
  Allocation* a = allocator_->allocate(bytes, alignment, cuda_stream(stream));
  return {reinterpret_cast<kiln_buffer*>(a), a->data};
}

void CudaDevice::deallocate_block(kiln_buffer* handle, sdk::Stream* stream) {
  allocator_->deallocate(checked_allocation(handle, *allocator_), cuda_stream(stream));
}

void CudaDevice::properties(kiln_device_properties& out) {
  std::snprintf(out.name, sizeof out.name, "%.127s", properties_.name);  // 256 bytes in CUDA
  out.kind = KILN_DEVICE_KIND_GPU;
  out.compute_capability_major = properties_.major;
  out.compute_capability_minor = properties_.minor;
  out.multiprocessor_count = properties_.multiProcessorCount;
  out.total_memory_bytes = properties_.totalGlobalMem;
  // Free memory needs a context; creating one (hundreds of MB, ~0.1 s) just to list
  // the devices would make every kiln-info pay for it. Unknown (0) until opened.
  if (is_open()) {
    size_t free_bytes = 0;
    size_t total_bytes = 0;
    make_current();
    if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
      out.free_memory_bytes = free_bytes;
    } else {
      cudaGetLastError();
    }
  }
  out.memory_alignment = kAlignment;
}

void CudaDevice::memory_stats(kiln_memory_stats& stats) {
  const size_t struct_size = stats.struct_size;
  stats = allocator_->stats();
  stats.struct_size = struct_size;
}

void CudaDevice::empty_cache() { allocator_->empty_cache(); }

const sdk::KernelTable* CudaDevice::kernels() { return &kernel_table(); }

namespace {

// Errors a kernel leaves behind, which every later CUDA call then reports.
bool is_sticky(cudaError_t status) {
  switch (status) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchTimeout:
      return true;
    default:
      return false;
  }
}

}  // namespace

[[noreturn]] void CudaDevice::fail(cudaError_t status, const char* what) const {
  // Errors that are not sticky stay in the runtime's "last error" until read: clear
  // them so the next op does not report them as its own. (A sticky error, such as an
  // illegal address, cannot be cleared and will be reported by every later call.)
  cudaGetLastError();
  const char* last = last_op_.load(std::memory_order_relaxed);
  std::string message = sdk::str_cat(what, " on ", label_, ": ", cudaGetErrorString(status), " (",
                                     cudaGetErrorName(status), ")");
  if (last != nullptr) message += sdk::str_cat("; last op enqueued: ", last);
  if (is_sticky(status)) {
    message += config_.sync_after_ops
                   ? "; the device is unusable until the process restarts"
                   : "; this error comes from earlier GPU work, not necessarily that op: rerun "
                     "with KILN_CUDA_SYNC=1 to stop at the op that caused it";
  }
  throw sdk::Error(KILN_STATUS_DEVICE_ERROR, message);
}

void CudaDevice::wait_stream(cudaStream_t stream, const char* what) {
  count_host_wait();
  if (const cudaError_t status = cudaStreamSynchronize(stream); status != cudaSuccess) {
    fail(status, what);
  }
}

void CudaDevice::wait_for_event(cudaEvent_t event, const char* what) {
  count_host_wait();
  if (const cudaError_t status = cudaEventSynchronize(event); status != cudaSuccess) {
    fail(status, what);
  }
}

void CudaDevice::wait_device(const char* what) {
  make_current();
  count_host_wait();
  if (const cudaError_t status = cudaDeviceSynchronize(); status != cudaSuccess) {
    fail(status, what);
  }
}

bool CudaDevice::event_done(cudaEvent_t event) {
  const cudaError_t status = cudaEventQuery(event);
  if (status == cudaSuccess) return true;
  if (status != cudaErrorNotReady) fail(status, "cudaEventQuery");
  // "Not ready" is an answer, not an error; make sure it is not left behind as the
  // runtime's last error for the next op's launch check to find.
  if (cudaPeekAtLastError() == cudaErrorNotReady) cudaGetLastError();
  return false;
}

void CudaDevice::record_cuda_event(cudaEvent_t event, cudaStream_t stream, const char* what) {
  if (const cudaError_t status = cudaEventRecord(event, stream); status != cudaSuccess) {
    fail(status, what);
  }
}

void CudaDevice::post_deferred_error(kiln_status_code code, const std::string& message) noexcept {
  try {
    std::lock_guard lock(deferred_mutex_);
    if (deferred_pending_.load(std::memory_order_relaxed)) return;
    deferred_code_ = code;
    deferred_message_ = message;
    deferred_pending_.store(true, std::memory_order_release);
  } catch (...) {
    // Out of memory copying the message: the collective's own later calls still fail.
  }
}

void CudaDevice::raise_deferred_error(const char* where) {
  if (!deferred_pending_.load(std::memory_order_acquire)) [[likely]]
    return;
  std::lock_guard lock(deferred_mutex_);
  if (!deferred_pending_.load(std::memory_order_relaxed)) return;
  deferred_pending_.store(false, std::memory_order_relaxed);
  throw sdk::Error(deferred_code_,
                   sdk::str_cat(deferred_message_, " (found on ", label_, " ", where, ")"));
}

CudaDevice::Counters CudaDevice::counters() const noexcept {
  return {host_syncs_.load(std::memory_order_relaxed), op_calls_.load(std::memory_order_relaxed),
          flag_reads_.load(std::memory_order_relaxed)};
}

// -- library handles -----------------------------------------------------------------------
//
// The libraries themselves are opened by the first handle made (toolkit_libraries.h).
// One handle per (thread, device), created on first use and kept for the thread's
// life: a handle carries a stream, so two threads sharing one would race on it.
// They are not destroyed at thread exit: that may run after the CUDA runtime has
// shut down (the main thread's thread_local destructors run during exit), where
// destroying them could crash the process on its way out.

namespace {

template <class Handle>
Handle& slot_for(std::vector<Handle>& slots, int32_t index) {
  if (slots.size() <= static_cast<size_t>(index)) slots.resize(static_cast<size_t>(index) + 1);
  return slots[static_cast<size_t>(index)];
}

thread_local std::vector<cublasHandle_t> cublas_handles;
thread_local std::vector<cublasLtHandle_t> cublaslt_handles;
thread_local std::vector<cudnnHandle_t> cudnn_handles;

}  // namespace

cublasHandle_t CudaDevice::cublas_handle() {
  cublasHandle_t& handle = slot_for(cublas_handles, index_);
  if (handle == nullptr) {
    require_library(ToolkitLibrary::Cublas);
    make_current();
    check(cublasCreate(&handle), "cublasCreate");
  }
  return handle;
}

cublasLtHandle_t CudaDevice::cublaslt_handle() {
  cublasLtHandle_t& handle = slot_for(cublaslt_handles, index_);
  if (handle == nullptr) {
    require_library(ToolkitLibrary::CublasLt);
    make_current();
    check(cublasLtCreate(&handle), "cublasLtCreate");
  }
  return handle;
}

cudnnHandle_t CudaDevice::cudnn_handle() {
  cudnnHandle_t& handle = slot_for(cudnn_handles, index_);
  if (handle == nullptr) {
    require_library(ToolkitLibrary::Cudnn);
    make_current();
    check(cudnnCreate(&handle), "cudnnCreate");
  }
  return handle;
}

// -- handles and helpers ---------------------------------------------------------------------

std::string human_bytes(uint64_t bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 6) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
  return text;
}

}  // namespace kiln::cuda
