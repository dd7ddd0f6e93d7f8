#pragma once
/// @file profiler.h
/// Where the time goes: a profiler of every dispatched op, like torch.profiler.
///
/// @code
///   namespace prof = kiln::profiler;
///   {
///     prof::Profiler p;                          // starts recording
///     {
///       auto scope = prof::record_function("forward");
///       loss = model.forward(x);
///     }
///     loss.backward();
///     p.stop();
///     p.export_chrome_trace("trace.json");        // Perfetto UI, chrome://tracing
///     std::cout << p.key_averages().table(prof::SortBy::HostSelf, 10);
///   }
/// @endcode
///
/// While a Profiler runs, every op dispatched on any thread records its name, device,
/// input shapes and dtypes, host start and end, the bytes it allocated, whether it
/// fell back to the CPU plugin and the phase it ran in (forward, backward,
/// optimizer). On devices whose plugin can time events (ABI 1.2 event_elapsed) each
/// op's device time is measured too, with events recorded around it and read at the
/// next synchronization of that device (or at stop()), never by synchronizing per
/// op. Plugins with range hooks (the CUDA plugin: NVTX) see a range per op and per
/// record_function scope, so Nsight shows Kiln's op names. With no Profiler running
/// the cost is one relaxed atomic load per op.
///
/// One Profiler runs at a time in a process.

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace kiln::profiler {

/// What the autograd engine and the optimizers were doing when an op ran.
enum class Phase : uint8_t { Forward, Backward, Optimizer };
const char* phase_name(Phase phase);

struct ProfilerOptions {
  /// Record each op's input shapes and dtypes ("float32[64,784], float32[256,784]").
  ProfilerOptions& record_shapes(bool on) {
    record_shapes_ = on;
    return *this;
  }
  /// Sample each device's bytes in use after every op (a counter track in the trace).
  ProfilerOptions& profile_memory(bool on) {
    profile_memory_ = on;
    return *this;
  }
  /// Time ops on devices that can (events); off: host times only.
  ProfilerOptions& device_time(bool on) {
    device_time_ = on;
    return *this;
  }
  bool record_shapes_ = true;
  bool profile_memory_ = true;
  bool device_time_ = true;
};

/// One recorded op or record_function scope. Times are nanoseconds since the
/// profiler started, on the host's steady clock.
struct Event {
  enum class Kind : uint8_t { Op, Scope };
  Kind kind = Kind::Op;
  std::string name;    ///< "kiln.matmul", or the record_function name
  std::string device;  ///< "cpu:0" (ops only)
  std::string shapes;  ///< input dtypes and shapes, "" unless record_shapes
  int thread = 0;      ///< 0, 1, ... in the order threads first recorded something
  int depth = 0;       ///< open record_function scopes on that thread around it
  int64_t start_ns = 0, end_ns = 0;
  /// Device time on the device's default stream, or -1 where it was not measured.
  int64_t device_start_ns = -1, device_end_ns = -1;
  /// Allocated on this thread since its previous op ended: this op's outputs (made
  /// just before it is dispatched) and whatever the op allocates itself.
  int64_t bytes_allocated = 0;
  bool fallback = false;  ///< ran on the CPU plugin for want of a kernel
  Phase phase = Phase::Forward;
  uint64_t id = 0;  ///< unique within the profile; links host and device events
};

/// A device's bytes in use after an op (profile_memory).
struct MemorySample {
  std::string device;
  int64_t time_ns = 0;
  uint64_t bytes_in_use = 0;
};

enum class SortBy { HostTotal, HostSelf, DeviceTotal, Calls, Name };

/// One row of key_averages(): the events of one name (and input shapes, if grouped so).
struct KeyAverage {
  std::string name, shapes;
  int64_t calls = 0;
  double host_total_us = 0;  ///< sum of the events' host durations
  double host_self_us = 0;   ///< minus the time of events nested inside them
  double device_total_us = 0;
  int64_t device_calls = 0;  ///< calls with a device time
  int64_t bytes_allocated = 0;
  int64_t fallbacks = 0;
  double host_avg_us() const { return calls ? host_total_us / double(calls) : 0; }
};

struct KeyAverages {
  std::vector<KeyAverage> rows;
  /// Sorted (descending, except by name), at most `limit` rows (0: all), as a text
  /// table with percentages of the total self time: what kiln-train --profile prints.
  std::string table(SortBy sort_by = SortBy::HostSelf, size_t limit = 0) const;
};

class Profiler {
 public:
  /// Starts recording; throws kiln::Error if another Profiler is running.
  explicit Profiler(ProfilerOptions options = {});
  /// Stops if still running.
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  /// Stops recording: synchronizes the devices that still have untimed ops, reads
  /// their device times, and keeps the events. Idempotent.
  void stop();
  bool running() const { return running_; }

  /// The recorded events, by start time (after stop(); throws while running).
  const std::vector<Event>& events() const;
  const std::vector<MemorySample>& memory_samples() const;

  /// Chrome trace JSON: one track per host thread and one per device stream, flow
  /// arrows from each op's launch to its device execution, memory counters.
  std::string chrome_trace() const;
  /// Writes chrome_trace() atomically; throws kiln::Error naming the path.
  void export_chrome_trace(const std::filesystem::path& path) const;
  /// Per-name statistics (or per name and input shapes).
  KeyAverages key_averages(bool group_by_shapes = false) const;

 private:
  void require_stopped(const char* what) const;

  ProfilerOptions options_;
  bool running_ = false;
  std::vector<Event> events_;
  std::vector<MemorySample> memory_;
};

/// A named scope in the profile (torch.profiler.record_function): ops dispatched on
/// this thread while it lives are nested inside it. Free when no profiler runs.
class [[nodiscard]] RecordFunction {
 public:
  explicit RecordFunction(std::string name);
  ~RecordFunction();
  RecordFunction(const RecordFunction&) = delete;
  RecordFunction& operator=(const RecordFunction&) = delete;

 private:
  int64_t slot_ = -1;  ///< index of its event while recording, -1 when inactive
  uint64_t generation_ = 0;
};

/// `auto scope = kiln::profiler::record_function("name");`
[[nodiscard]] inline RecordFunction record_function(std::string name) {
  return RecordFunction(std::move(name));
}

}  // namespace kiln::profiler
