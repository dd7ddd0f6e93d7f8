// Recording: the session every hook writes into, op and scope events, device timing
// with events, and Profiler's start and stop. Exporting (Chrome trace, key_averages)
// is in profiler_export.cpp.
#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <sstream>

#include "core/tensor_impl.h"
#include "kiln/error.h"
#include "profiler/session.h"
#include "runtime/log.h"
#include "runtime/profiler_hooks.h"
#include "runtime/registry.h"

namespace kiln::detail {

std::atomic<bool> g_profiler_active{false};

namespace {

using profiler::Event;
using profiler::Phase;

// What each thread keeps between hooks. `index` and `scope_depth` belong to the
// session of `generation`; a new session renumbers the threads.
struct ThreadState {
  uint64_t generation = 0;
  int index = 0;
  int scope_depth = 0;
  int dispatch_depth = 0;
  Phase phase = Phase::Forward;
  int64_t bytes = 0;
  bool fell_back = false;
};

thread_local ThreadState this_thread;

int thread_index(ProfileSession& s) {
  if (this_thread.generation != s.generation) {
    this_thread.generation = s.generation;
    this_thread.index = s.next_thread++;
    this_thread.scope_depth = 0;
  }
  return this_thread.index;
}

std::string input_shapes(std::span<const TensorImpl* const> inputs) {
  std::ostringstream out;
  for (size_t i = 0; i < inputs.size(); ++i)
    out << (i ? ", " : "") << dtype_name(inputs[i]->dtype)
        << IntArrayRef(inputs[i]->shape.data(), inputs[i]->shape.size());
  return out.str();
}

// The plugins whose range hooks record_function scopes are shown to (all that have one).
template <class Fn>
void for_each_range_plugin(Fn fn) {
  for (const auto& plugin : Registry::get().plugins())
    if (plugin->range_push && plugin->range_pop) fn(*plugin);
}

// The device's timeline in this session, started on first use: a base event recorded
// on the idle device, whose host time anchors the device times read later.
DeviceTimeline* timeline_for(ProfileSession& s, DeviceContext& dev) {
  auto it = s.timelines.find(&dev);
  if (it != s.timelines.end()) return it->second.usable ? &it->second : nullptr;
  DeviceTimeline& t = s.timelines[&dev];
  t.device = &dev;
  try {
    dev.check(dev.api()->stream_synchronize(dev.handle(), nullptr), "synchronize");
    t.base = dev.create_event();
    dev.record_event(t.base);
    t.base_ns = s.now_ns();
  } catch (const Error& e) {
    t.usable = false;
    log(KILN_LOG_WARNING, "profiler", concat("no device times for ", dev.name(), ": ", e.what()));
    return nullptr;
  }
  return &t;
}

kiln_event* take_event(DeviceTimeline& t) {
  if (t.free_events.empty()) return t.device->create_event();
  kiln_event* e = t.free_events.back();
  t.free_events.pop_back();
  return e;
}

}  // namespace

// -- the session ------------------------------------------------------------------------

ProfileSession& profile_session() {
  static ProfileSession* session = new ProfileSession();  // outlives every thread
  return *session;
}

int64_t ProfileSession::now_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                              start)
      .count();
}

// Reads the device times of `t`'s pending ops; the device has finished their work.
void ProfileSession::resolve(DeviceTimeline& t) {
  for (const PendingTiming& p : t.pending) {
    try {
      const double from_base = t.device->elapsed_ms(t.base, p.start);
      const double duration = t.device->elapsed_ms(p.start, p.end);
      Event& e = events[p.event];
      e.device_start_ns = t.base_ns + static_cast<int64_t>(from_base * 1e6);
      e.device_end_ns = e.device_start_ns + static_cast<int64_t>(duration * 1e6);
    } catch (const Error& err) {
      if (t.usable)
        log(KILN_LOG_WARNING, "profiler",
            concat("no device times for ", t.device->name(), ": ", err.what()));
      t.usable = false;
    }
    t.free_events.push_back(p.start);
    t.free_events.push_back(p.end);
  }
  t.pending.clear();
}

void ProfileSession::release_events() {
  for (auto& [device, t] : timelines) {
    for (kiln_event* e : t.free_events) device->destroy_event(e);
    for (const PendingTiming& p : t.pending) {
      device->destroy_event(p.start);
      device->destroy_event(p.end);
    }
    if (t.base) device->destroy_event(t.base);
  }
  timelines.clear();
}

// -- hooks ------------------------------------------------------------------------------

void profiler_allocated(size_t bytes) noexcept { this_thread.bytes += static_cast<int64_t>(bytes); }

void profiler_fell_back() noexcept { this_thread.fell_back = true; }

void profiler_synchronized(DeviceContext& device) {
  ProfileSession& s = profile_session();
  std::lock_guard lock(s.mutex);
  if (!s.running) return;
  auto it = s.timelines.find(&device);
  if (it != s.timelines.end() && !it->second.pending.empty()) s.resolve(it->second);
}

void profiled_dispatch(const char* name, std::span<const TensorImpl* const> inputs,
                       std::span<const TensorImpl* const> outputs, void (*run)(void* context),
                       void* context) {
  if (this_thread.dispatch_depth > 0) return run(context);
  struct Depth {
    Depth() { ++this_thread.dispatch_depth; }
    ~Depth() { --this_thread.dispatch_depth; }
  } depth;
  ProfileSession& s = profile_session();
  DeviceContext& dev = *(outputs.empty() ? inputs[0] : outputs[0])->device();
  Event e;
  e.kind = Event::Kind::Op;
  e.name = name;
  e.device = dev.name();
  DeviceTimeline* timeline = nullptr;
  kiln_event *start = nullptr, *end = nullptr;
  uint64_t generation = 0;
  {
    std::lock_guard lock(s.mutex);
    if (!s.running) return run(context);
    generation = s.generation;
    e.thread = thread_index(s);
    e.id = s.next_id++;
    if (s.options.record_shapes_) e.shapes = input_shapes(inputs);
    if (s.options.device_time_ && dev.can_time()) timeline = timeline_for(s, dev);
    if (timeline) {
      try {
        start = take_event(*timeline);
        end = take_event(*timeline);
      } catch (const Error&) {
        if (start) timeline->free_events.push_back(start);
        timeline = nullptr;
      }
    }
  }
  e.depth = this_thread.scope_depth;
  e.phase = this_thread.phase;
  // bytes: what this thread allocated since its last op ended, mostly this op's
  // outputs (allocated just before the dispatch), plus what the op allocates itself.
  this_thread.fell_back = false;
  const Plugin& plugin = *dev.plugin();
  if (plugin.range_push && plugin.range_pop) plugin.range_push(plugin.api->context, e.name.c_str());
  struct RangePop {
    const Plugin& p;
    ~RangePop() {
      if (p.range_push && p.range_pop) p.range_pop(p.api->context);
    }
  } range_pop{plugin};

  auto give_back = [&] {
    if (!timeline) return;
    std::lock_guard lock(s.mutex);
    if (!s.running || s.generation != generation) {  // the session ended meanwhile
      dev.destroy_event(start);
      dev.destroy_event(end);
    } else {
      timeline->free_events.push_back(start);
      timeline->free_events.push_back(end);
    }
  };
  try {
    if (timeline) dev.record_event(start);
    e.start_ns = s.now_ns();
    run(context);
    e.end_ns = s.now_ns();
    if (timeline) dev.record_event(end);
  } catch (...) {
    give_back();
    throw;
  }
  e.bytes_allocated = this_thread.bytes;
  this_thread.bytes = 0;
  e.fallback = this_thread.fell_back;
  profiler::MemorySample sample;
  const bool sample_memory = s.options.profile_memory_;
  if (sample_memory) {
    sample.device = e.device;
    sample.time_ns = e.end_ns;
    sample.bytes_in_use = dev.memory_stats().bytes_in_use;
  }
  std::lock_guard lock(s.mutex);
  if (!s.running || s.generation != generation) {
    if (timeline) {
      dev.destroy_event(start);
      dev.destroy_event(end);
    }
    return;
  }
  if (timeline) timeline->pending.push_back({s.events.size(), start, end});
  s.events.push_back(std::move(e));
  if (sample_memory) s.memory.push_back(std::move(sample));
}

PhaseScope::PhaseScope(Phase phase) noexcept : previous_(this_thread.phase) {
  this_thread.phase = phase;
}

PhaseScope::~PhaseScope() { this_thread.phase = previous_; }

}  // namespace kiln::detail

namespace kiln::profiler {

using detail::profile_session;
using detail::ProfileSession;

const char* phase_name(Phase phase) {
  switch (phase) {
    case Phase::Forward:
      return "forward";
    case Phase::Backward:
      return "backward";
    case Phase::Optimizer:
      return "optimizer";
  }
  return "?";
}

// -- record_function ----------------------------------------------------------------------

RecordFunction::RecordFunction(std::string name) {
  if (!detail::profiler_active()) return;
  ProfileSession& s = profile_session();
  Event e;
  {
    std::lock_guard lock(s.mutex);
    if (!s.running) return;
    e.kind = Event::Kind::Scope;
    e.name = std::move(name);
    e.thread = detail::thread_index(s);
    e.depth = detail::this_thread.scope_depth;
    e.phase = detail::this_thread.phase;
    e.id = s.next_id++;
    e.start_ns = s.now_ns();
    e.end_ns = -1;  // open
    slot_ = static_cast<int64_t>(s.events.size());
    generation_ = s.generation;
    s.events.push_back(e);
  }
  ++detail::this_thread.scope_depth;
  detail::for_each_range_plugin(
      [&](const detail::Plugin& p) { p.range_push(p.api->context, e.name.c_str()); });
}

RecordFunction::~RecordFunction() {
  if (slot_ < 0) return;
  ProfileSession& s = profile_session();
  detail::for_each_range_plugin([](const detail::Plugin& p) { p.range_pop(p.api->context); });
  std::lock_guard lock(s.mutex);
  if (detail::this_thread.generation == generation_) --detail::this_thread.scope_depth;
  if (s.running && s.generation == generation_)
    s.events[static_cast<size_t>(slot_)].end_ns = s.now_ns();
}

// -- Profiler -------------------------------------------------------------------------------

Profiler::Profiler(ProfilerOptions options) : options_(options) {
  ProfileSession& s = profile_session();
  std::lock_guard lock(s.mutex);
  KILN_CHECK(!s.running,
             "kiln::profiler::Profiler: another profiler is already running in "
             "this process (one at a time)");
  s.options = options;
  s.events.clear();
  s.memory.clear();
  s.next_id = 1;
  s.next_thread = 0;
  ++s.generation;
  s.start = std::chrono::steady_clock::now();
  s.running = true;
  running_ = true;
  detail::g_profiler_active.store(true, std::memory_order_release);
}

Profiler::~Profiler() {
  try {
    stop();
  } catch (const Error& e) {
    detail::log(KILN_LOG_ERROR, "profiler", e.what());
  }
}

void Profiler::stop() {
  if (!running_) return;
  running_ = false;
  ProfileSession& s = profile_session();
  detail::g_profiler_active.store(false, std::memory_order_release);
  std::vector<detail::DeviceContext*> busy;
  int64_t stop_ns = 0;
  {
    std::lock_guard lock(s.mutex);
    s.running = false;
    stop_ns = s.now_ns();
    for (auto& [device, t] : s.timelines)
      if (!t.pending.empty()) busy.push_back(device);
  }
  // Outside the lock (the hook is off now): wait for the work the pending events cover.
  std::string failure;
  for (detail::DeviceContext* device : busy) {
    try {
      device->synchronize();
    } catch (const Error& e) {
      failure = e.what();
    }
  }
  std::lock_guard lock(s.mutex);
  for (auto& [device, t] : s.timelines)
    if (!t.pending.empty() && failure.empty()) s.resolve(t);
  s.release_events();
  for (Event& e : s.events)
    if (e.end_ns < e.start_ns) e.end_ns = stop_ns;  // a scope still open at stop()
  events_ = std::move(s.events);
  memory_ = std::move(s.memory);
  s.events.clear();
  s.memory.clear();
  std::stable_sort(events_.begin(), events_.end(), [](const Event& a, const Event& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
  KILN_CHECK(failure.empty(), "profiler: synchronizing a device at stop() failed: ", failure);
}

void Profiler::require_stopped(const char* what) const {
  KILN_CHECK(!running_, "kiln::profiler::Profiler::", what, ": stop() the profiler first");
}

const std::vector<Event>& Profiler::events() const {
  require_stopped("events");
  return events_;
}

const std::vector<MemorySample>& Profiler::memory_samples() const {
  require_stopped("memory_samples");
  return memory_;
}

}  // namespace kiln::profiler
