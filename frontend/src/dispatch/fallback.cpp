// The CPU fallback: an op its device has no kernel for runs on the CPU plugin, its
// operands mirrored to the host and its outputs copied back; every such run (and every
// host fallback of the collectives) is counted in the fallback report.

#include "dispatch/fallback.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>
#include <vector>

#include "kiln/error.h"
#include "kiln/runtime.h"
#include "runtime/graph_capture.h"
#include "runtime/log.h"
#include "runtime/profiler_hooks.h"
#include "runtime/registry.h"

namespace kiln::detail {

namespace {

struct FallbackCounters {
  std::mutex mutex;
  std::map<std::pair<std::string, std::string>, FallbackEntry> entries;
  std::atomic<FallbackMode> mode{[] {
    const char* env = std::getenv("KILN_FALLBACK");
    if (env && std::string_view(env) == "error") return FallbackMode::Error;
    if (env && *env && std::string_view(env) != "allow")
      log(KILN_LOG_WARNING, "dispatch",
          concat("KILN_FALLBACK='", shorten_for_message(env),
                 "' is not 'allow' or 'error'; using allow"));
    return FallbackMode::Allow;
  }()};
};

FallbackCounters& counters() {
  static FallbackCounters* c = new FallbackCounters();  // leaked: used during exit
  return *c;
}

}  // namespace

void record_fallback(const std::string& op, const std::string& device, double seconds,
                     uint64_t bytes) {
  auto& c = counters();
  std::lock_guard lock(c.mutex);
  auto [it, inserted] = c.entries.try_emplace({op, device});
  FallbackEntry& e = it->second;
  if (inserted) {
    e.op = op;
    e.device = device;
    log(KILN_LOG_INFO, "dispatch",
        concat(e.op, " has no kernel on ", e.device, ": running it on the CPU plugin"));
    // At KILN_LOG_LEVEL=info the whole report is printed when the program ends.
    static std::once_flag at_exit;
    if (log_level() >= KILN_LOG_INFO)
      std::call_once(at_exit, [] {
        std::atexit([] { log(KILN_LOG_INFO, "dispatch", fallback_report().str()); });
      });
  }
  e.calls += 1;
  e.seconds += seconds;
  e.bytes_moved += bytes;
}

void check_fallback_allowed(const std::string& what) {
  if (counters().mode.load() == FallbackMode::Error)
    throw Error(concat("KILN_FALLBACK=error: ", what));
}

namespace {

// A host copy of a device operand: same shape and strides, over a host buffer
// that mirrors the byte range of the device storage the view can touch.
struct HostMirror {
  std::shared_ptr<TensorImpl> impl;
  int64_t device_byte_begin = 0;
  int64_t bytes = 0;
};

HostMirror mirror_on_host(const TensorImpl& t, DeviceContext* cpu, uint64_t& moved) {
  auto [lo, hi] = t.byte_extent();
  HostMirror m;
  m.device_byte_begin = lo;
  m.bytes = hi - lo;
  m.impl = std::make_shared<TensorImpl>();
  m.impl->storage = cpu->allocate(static_cast<size_t>(m.bytes));
  m.impl->shape = t.shape;
  m.impl->strides = t.strides;
  m.impl->numel = t.numel;
  m.impl->dtype = t.dtype;
  m.impl->offset =
      (t.offset * static_cast<int64_t>(t.itemsize()) - lo) / static_cast<int64_t>(t.itemsize());
  if (m.bytes > 0) {
    t.device()->copy(KILN_COPY_DEVICE_TO_HOST, m.impl->storage->data,
                     static_cast<char*>(t.storage->data) + lo, static_cast<size_t>(m.bytes));
    moved += static_cast<uint64_t>(m.bytes);
  }
  return m;
}

}  // namespace

void run_on_cpu(OpId op, DeviceContext* dev, std::span<const TensorImpl* const> inputs,
                std::span<const TensorImpl* const> outputs, std::span<const kiln_attr> attrs) {
  Registry& registry = Registry::get();
  if (dev->is_cpu_plugin())
    throw Error(concat(op_name(op), ": no kernel on ", dev->name(), " for ",
                       describe_operands(inputs, outputs)));
  if (graph::Capture* capture = graph::active())
    graph::refuse(*capture, op_name(op),
                  concat(dev->name(), " has no kernel for ", describe_operands(inputs, outputs),
                         ", and a CPU fallback reads the operands back to the host"));
  check_fallback_allowed(concat(op_name(op), " has no kernel on ", dev->name(), " for ",
                                describe_operands(inputs, outputs),
                                "; it would have run on the CPU plugin"));
  DeviceContext* cpu = registry.cpu();
  auto start = std::chrono::steady_clock::now();
  uint64_t moved = 0;

  std::vector<HostMirror> in, out;
  std::vector<const TensorImpl*> in_ptrs, out_ptrs;
  for (const TensorImpl* t : inputs) {
    in.push_back(mirror_on_host(*t, cpu, moved));
    in_ptrs.push_back(in.back().impl.get());
  }
  for (const TensorImpl* t : outputs) {
    // Outputs are fetched too: some ops update them in place (optimizer steps,
    // index_add), and a strided output covers only part of the byte range that is
    // written back.
    out.push_back(mirror_on_host(*t, cpu, moved));
    out_ptrs.push_back(out.back().impl.get());
  }
  try {
    dispatch(op, in_ptrs, out_ptrs, attrs);
  } catch (const Error& e) {
    throw Error(concat(e.what(), " (while running ", op_name(op), " for ", dev->name(),
                       ", which lacks it, on the CPU plugin)"));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (out[i].bytes == 0) continue;
    dev->copy(KILN_COPY_HOST_TO_DEVICE,
              static_cast<char*>(outputs[i]->storage->data) + out[i].device_byte_begin,
              out[i].impl->storage->data, static_cast<size_t>(out[i].bytes));
    moved += static_cast<uint64_t>(out[i].bytes);
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  record_fallback(op_name(op), dev->name(), seconds, moved);
  if (profiler_active()) profiler_fell_back();
}

}  // namespace kiln::detail

namespace kiln {

FallbackReport fallback_report() {
  auto& c = detail::counters();
  std::lock_guard lock(c.mutex);
  FallbackReport report;
  for (const auto& [key, entry] : c.entries) report.entries.push_back(entry);
  return report;
}

void reset_fallback_report() {
  auto& c = detail::counters();
  std::lock_guard lock(c.mutex);
  c.entries.clear();
}

void set_fallback_mode(FallbackMode mode) { detail::counters().mode.store(mode); }
FallbackMode fallback_mode() { return detail::counters().mode.load(); }

std::string FallbackReport::str() const {
  if (entries.empty()) return "no CPU fallbacks\n";
  std::ostringstream out;
  out << "CPU fallbacks (ops that ran on the CPU plugin because their device lacks them):\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %-26s %-12s %10s %12s %14s\n", "op", "device", "calls",
                "seconds", "bytes moved");
  out << line;
  for (const auto& e : entries) {
    std::snprintf(line, sizeof line, "  %-26s %-12s %10llu %12.6f %14llu\n", e.op.c_str(),
                  e.device.c_str(), static_cast<unsigned long long>(e.calls), e.seconds,
                  static_cast<unsigned long long>(e.bytes_moved));
    out << line;
  }
  return out.str();
}

}  // namespace kiln
