#pragma once
// The state a running profiler records into, shared by the hooks, record_function and
// Profiler (profiler.cpp) and the exporters. Internal to libkiln.

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "kiln/c_api.h"
#include "kiln/profiler.h"

namespace kiln::detail {

class DeviceContext;

/// One op whose device time is still to be read: its event index and its two events.
struct PendingTiming {
  size_t event;
  kiln_event* start;
  kiln_event* end;
};

/// A device's events in one session. `base` was recorded on the idle device at host
/// time base_ns; an op's device start is base_ns + elapsed(base, start).
struct DeviceTimeline {
  DeviceContext* device = nullptr;
  bool usable = true;  ///< false once timing failed (then host times only)
  kiln_event* base = nullptr;
  int64_t base_ns = 0;
  std::vector<PendingTiming> pending;
  std::vector<kiln_event*> free_events;
};

struct ProfileSession {
  std::mutex mutex;  // guards everything below
  bool running = false;
  uint64_t generation = 0;  ///< one per Profiler; stale records of an older one are dropped
  profiler::ProfilerOptions options;
  std::chrono::steady_clock::time_point start;
  std::vector<profiler::Event> events;  ///< ops in order of completion, scopes of start
  std::vector<profiler::MemorySample> memory;
  std::map<DeviceContext*, DeviceTimeline> timelines;
  uint64_t next_id = 1;
  int next_thread = 0;

  int64_t now_ns() const;
  /// Reads the device times of t's pending ops (their work is done) and recycles
  /// their events.
  void resolve(DeviceTimeline& t);
  /// Destroys every event of every timeline and forgets the timelines.
  void release_events();
};

/// The process's one session (never destroyed: threads may still record into it
/// during static destruction).
ProfileSession& profile_session();

}  // namespace kiln::detail
