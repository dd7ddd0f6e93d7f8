#pragma once
// Graph capture, the recorded path (kiln/graph.h). While a kiln::GraphCapture is open on
// a thread, the dispatcher hands each kernel call made on that thread to record_kernel
// instead of running it, the device's allocations come from the graph's pool, copies
// to the device are recorded, and what a replay cannot reproduce (a read back to the
// host, a CPU fallback, work on another device) is refused with a kiln::Error.
//
// A replay calls the recorded kernels with the recorded views and attributes: no
// shape checks, no autograd, no allocation. Attributes that must change between
// replays (the generator's offset, an optimizer's step and learning rate) are
// rewritten before each replay by a Patch that the op's frontend code registered.
//
// A hook: declared here, in the runtime layer, for the layers that record (runtime,
// dispatch, ops, optim); implemented by graph/ (frontend/src/LAYERS).

#include <atomic>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "kiln/c_api.h"
#include "runtime/storage.h"

namespace kiln::detail {
class DeviceContext;
struct TensorImpl;
}  // namespace kiln::detail

namespace kiln::detail::graph {

class Capture;

/// How many captures are open, on any thread: the dispatcher's hooks cost one relaxed
/// load while it is zero.
extern std::atomic<int> open_captures;
Capture* this_thread_capture();

/// The capture open on this thread, or null.
inline Capture* active() {
  if (open_captures.load(std::memory_order_relaxed) == 0) [[likely]]
    return nullptr;
  return this_thread_capture();
}

/// Throws kiln::Error "<what> inside a graph capture on <device>: <why>" and marks the
/// capture failed: the graph it was filling cannot be replayed.
[[noreturn]] void refuse(Capture& capture, std::string_view what, std::string_view why);
/// refuse() when a capture is open on this thread; `what` names the call ("item()").
void refuse_if_capturing(std::string_view what, std::string_view why);

/// Records one kernel call (the dispatcher validated it and the kernel supports it).
void record_kernel(Capture& capture, const kiln_kernel& kernel, DeviceContext* device,
                   const char* name, const kiln_op_args& args,
                   std::span<const TensorImpl* const> inputs,
                   std::span<const TensorImpl* const> outputs);

/// An allocation on `device` during the capture: from the graph's pool.
std::shared_ptr<Storage> allocate(Capture& capture, DeviceContext* device, size_t bytes);

/// A copy on `device` during the capture: host-to-device (the bytes are kept and
/// uploaded again on each replay) and device-to-device are recorded; device-to-host
/// is refused.
void record_copy(Capture& capture, DeviceContext* device, kiln_copy_kind kind, void* dst,
                 const void* src, size_t bytes);

/// Rewrites a recorded call's attributes before each replay.
using Patch = std::function<void(std::span<kiln_attr>)>;

/// The next call of the op `op` ("kiln.adam_step") recorded in `capture` gets `patch`.
/// With an `owner_name`, a replay after `owner` expired is refused, naming the owner
/// ("the Adam optimizer").
void patch_next(Capture& capture, const char* op, Patch patch, std::weak_ptr<void> owner = {},
                std::string owner_name = {});

/// The next recorded call with a "seed" attribute draws `numel` elements of the global
/// Philox stream at each replay, as the eager call would have (ops/random.cpp).
void patch_next_random(Capture& capture, int64_t numel);

/// Sets the FLOAT (INT) attribute `name` of a recorded call; throws if it has none.
void set_attr(std::span<kiln_attr> attrs, const char* name, double value);
void set_attr(std::span<kiln_attr> attrs, const char* name, int64_t value);

}  // namespace kiln::detail::graph
