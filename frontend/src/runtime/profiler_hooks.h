#pragma once
// The profiler's hooks into the dispatcher, the registry and the autograd engine.
// Every hook is behind profiler_active(), one relaxed atomic load: with no profiler
// running nothing else happens. Internal to libkiln. A hook: declared here, in the
// runtime layer, for the layers that report to the profiler; implemented by profiler/
// (frontend/src/LAYERS).

#include <atomic>
#include <cstddef>
#include <span>

#include "kiln/c_api.h"
#include "kiln/profiler.h"

namespace kiln::detail {

struct TensorImpl;
class DeviceContext;

extern std::atomic<bool> g_profiler_active;
inline bool profiler_active() noexcept { return g_profiler_active.load(std::memory_order_relaxed); }

/// Runs `run(context)`, the dispatch of op `name` (a catalogue op or a plugin-defined
/// one), and records it as one op event (an op dispatched from inside another, e.g.
/// the CPU plugin's run of a fallback, is part of the outer one).
void profiled_dispatch(const char* name, std::span<const TensorImpl* const> inputs,
                       std::span<const TensorImpl* const> outputs, void (*run)(void* context),
                       void* context);
/// `bytes` were allocated on behalf of the op running on this thread.
void profiler_allocated(size_t bytes) noexcept;
/// The op running on this thread fell back to the CPU plugin.
void profiler_fell_back() noexcept;
/// `device` finished all its work: read the device times of its recorded ops.
void profiler_synchronized(DeviceContext& device);

/// Ops recorded on this thread while it lives run in `phase` (the autograd engine
/// marks backward passes, the optimizers their steps).
class PhaseScope {
 public:
  explicit PhaseScope(profiler::Phase phase) noexcept;
  ~PhaseScope();
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  profiler::Phase previous_;
};

}  // namespace kiln::detail
