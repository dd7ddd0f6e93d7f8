#include "error_flags.h"

#include <algorithm>

#include "device.h"
#include "kiln/sdk/status.h"
#include "launch.h"

namespace kiln::cuda {

namespace {
constexpr size_t kSlotBytes = sizeof(ErrorSlot) * ErrorFlags::kSlots;
}  // namespace

void ErrorFlags::init() {
  device_.make_current();
  void* memory = nullptr;
  if (const cudaError_t status = cudaMalloc(&memory, kSlotBytes + kSpareBytes);
      status != cudaSuccess) {
    device_.fail(status, "allocating the device-error slots");
  }
  slots_ = static_cast<ErrorSlot*>(memory);
  spare_ = static_cast<char*>(memory) + kSlotBytes;
  if (const cudaError_t status =
          cudaMemsetAsync(memory, 0, kSlotBytes + kSpareBytes, device_.default_stream());
      status != cudaSuccess) {
    device_.fail(status, "clearing the device-error slots");
  }
  // Kernels on any stream may use a slot as soon as the device is open: wait once,
  // here, for the zeroes to land.
  device_.wait_stream(device_.default_stream(), "clearing the device-error slots");
  free_.reserve(kSlots);
  for (int slot = kSlots - 1; slot >= 0; --slot) free_.push_back(slot);
}

ErrorSlot* ErrorFlags::acquire(const char* op, cudaStream_t stream) {
  std::lock_guard lock(mutex_);
  if (free_.empty()) reclaim_all_locked();
  const int slot = free_.back();
  records_.push_back(Record{next_seq_, slot, stream, op});
  free_.pop_back();
  ++next_seq_;
  return slots_ + slot;
}

uint64_t ErrorFlags::watermark() const {
  std::lock_guard lock(mutex_);
  return next_seq_;
}

bool ErrorFlags::pending(cudaStream_t stream, uint64_t before) const {
  std::lock_guard lock(mutex_);
  return std::any_of(records_.begin(), records_.end(),
                     [&](const Record& r) { return r.stream == stream && r.seq < before; });
}

ErrorSlot* ErrorFlags::take_mirror() {
  {
    std::lock_guard lock(mutex_);
    if (!mirrors_.empty()) {
      ErrorSlot* mirror = mirrors_.back();
      mirrors_.pop_back();
      return mirror;
    }
  }
  void* memory = nullptr;
  if (const cudaError_t status = cudaHostAlloc(&memory, kSlotBytes, cudaHostAllocPortable);
      status != cudaSuccess) {
    device_.fail(status, "allocating pinned memory for device-error checks");
  }
  return static_cast<ErrorSlot*>(memory);
}

void ErrorFlags::abandon(Readback& readback) noexcept {
  if (readback.mirror == nullptr) return;
  try {
    std::lock_guard lock(mutex_);
    mirrors_.push_back(readback.mirror);
  } catch (...) {
    cudaFreeHost(readback.mirror);
  }
  readback.mirror = nullptr;
}

ErrorFlags::Readback ErrorFlags::enqueue_readback(cudaStream_t stream) {
  Readback readback;
  readback.mirror = take_mirror();
  readback.limit = watermark();
  if (const cudaError_t status =
          cudaMemcpyAsync(readback.mirror, slots_, kSlotBytes, cudaMemcpyDeviceToHost, stream);
      status != cudaSuccess) {
    abandon(readback);
    device_.fail(status, "reading device-error slots");
  }
  device_.count_error_readback();
  return readback;
}

void ErrorFlags::check(Readback& readback, cudaStream_t stream, uint64_t before,
                       const char* where) {
  const uint64_t limit = std::min(before, readback.limit);
  std::string first_error;
  std::vector<int> to_clear;
  {
    std::lock_guard lock(mutex_);
    for (auto it = records_.begin(); it != records_.end();) {
      if (it->stream != stream || it->seq >= limit) {
        ++it;
        continue;
      }
      const ErrorSlot& seen = readback.mirror[it->slot];
      if (seen.code != 0) {
        if (first_error.empty()) first_error = describe(*it, seen, where);
        to_clear.push_back(it->slot);
      } else {
        free_.push_back(it->slot);
      }
      it = records_.erase(it);
    }
  }
  abandon(readback);
  if (!to_clear.empty()) {
    // The error path: zero the claimed slots and wait, so no later launch (on any
    // stream) is handed a slot that still reads as set.
    for (int slot : to_clear) {
      if (const cudaError_t status = cudaMemsetAsync(slots_ + slot, 0, sizeof(ErrorSlot), stream);
          status != cudaSuccess) {
        device_.fail(status, "clearing a device-error slot");
      }
    }
    device_.wait_stream(stream, "clearing device-error slots");
    std::lock_guard lock(mutex_);
    free_.insert(free_.end(), to_clear.begin(), to_clear.end());
  }
  if (!first_error.empty()) throw sdk::Error(KILN_STATUS_INVALID_ARGUMENT, first_error);
}

// Every slot is taken: wait for the device, read every slot, and check them all. A
// set slot found here is reported by the launch that needed a slot.
void ErrorFlags::reclaim_all_locked() {
  device_.wait_device("reclaiming device-error slots");
  const cudaStream_t stream = device_.check_stream();
  std::vector<ErrorSlot> seen(kSlots);
  if (const cudaError_t status =
          cudaMemcpyAsync(seen.data(), slots_, kSlotBytes, cudaMemcpyDeviceToHost, stream);
      status != cudaSuccess) {
    device_.fail(status, "reading device-error slots");
  }
  if (const cudaError_t status = cudaMemsetAsync(slots_, 0, kSlotBytes, stream);
      status != cudaSuccess) {
    device_.fail(status, "clearing device-error slots");
  }
  device_.wait_stream(stream, "reclaiming device-error slots");
  device_.count_error_readback();
  std::string first_error;
  for (const Record& record : records_) {
    if (seen[static_cast<size_t>(record.slot)].code != 0 && first_error.empty()) {
      first_error =
          describe(record, seen[static_cast<size_t>(record.slot)], "while reclaiming error slots");
    }
    free_.push_back(record.slot);
  }
  records_.clear();
  if (!first_error.empty()) throw sdk::Error(KILN_STATUS_INVALID_ARGUMENT, first_error);
}

void ErrorFlags::retag_stream(cudaStream_t from, cudaStream_t to) {
  std::lock_guard lock(mutex_);
  for (Record& record : records_) {
    if (record.stream == from) record.stream = to;
  }
}

std::string ErrorFlags::describe(const Record& record, const ErrorSlot& slot,
                                 const char* where) const {
  std::string what;
  switch (slot.code) {
    case kDeviceErrorIndexOutOfRange:
      what = sdk::str_cat("index ", slot.detail[0], " is out of range for dimension ",
                          slot.detail[2], " of size ", slot.detail[1]);
      break;
    case kDeviceErrorTargetOutOfRange:
      what = sdk::str_cat("target ", slot.detail[0], " at position ", slot.detail[2],
                          " is out of range for ", slot.detail[1], " classes");
      break;
    default:
      what = sdk::str_cat("device-side error code ", slot.code, " (details ", slot.detail[0], ", ",
                          slot.detail[1], ", ", slot.detail[2], ")");
      break;
  }
  return sdk::str_cat(record.op, ": ", what, " (found on ", device_.label(),
                      " after the op was enqueued; reported ", where, ")");
}

}  // namespace kiln::cuda
