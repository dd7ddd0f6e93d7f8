// DeviceContext: one opened device, every call from libkiln into its plugin (each
// behind the ABI-violation firewall), and the status and exception helpers those calls
// share with the loader.
#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <typeinfo>

#include "kiln/autograd.h"
#include "kiln/error.h"
#include "runtime/graph_capture.h"
#include "runtime/log.h"
#include "runtime/profiler_hooks.h"
#include "runtime/registry.h"

namespace kiln::detail {

std::string consume_status(kiln_status* status) {
  if (!status) return "";
  std::string message = status->message ? status->message : "(the plugin gave no message)";
  if (status->destroy) status->destroy(status);
  return message;
}

std::string escaped_exception_text() {
  try {
    throw;
  } catch (const std::exception& e) {
    std::string what = e.what();
    if (what.size() > 200) what = what.substr(0, 200) + "...";
    return concat("a C++ exception (", autograd::detail::demangle(typeid(e)), ": \"", what, "\")");
  } catch (...) {
    const std::type_info* type = abi::__cxa_current_exception_type();
    return concat("a C++ exception of type ", type ? autograd::detail::demangle(*type) : "unknown");
  }
}

void throw_abi_violation(const char* plugin, std::string_view entry) {
  throw Error(concat("ABI violation: ", escaped_exception_text(), " escaped from plugin '",
                     plugin ? plugin : "?", "' in ", entry,
                     "; a plugin must catch its exceptions and return a kiln_status (the "
                     "plugin kit's entries do)"));
}

// -- DeviceContext --------------------------------------------------------------------

Storage::~Storage() {
  if (!external) {
    device->deallocate(buffer);
  } else if (release) {
    try {
      release(data);
    } catch (...) {
      log(KILN_LOG_ERROR, "from_blob", "a deleter threw; the exception is dropped");
    }
  }
}

DeviceContext::DeviceContext(Plugin* plugin, int index, kiln_device* handle)
    : plugin_(plugin),
      api_(plugin->api),
      index_(index),
      handle_(handle),
      device_(plugin->api->name, index),
      name_(device_.str()) {
  kiln_device_properties properties{};
  properties.struct_size = sizeof properties;
  kiln_status* status = nullptr;
  try {
    status = api_->device_get_properties(api_->context, index, &properties);
  } catch (...) {
    log(KILN_LOG_ERROR, api_->name,
        concat("ABI violation: ", escaped_exception_text(), " escaped from device_get_properties"));
    return;
  }
  if (status) {
    log(KILN_LOG_WARNING, api_->name,
        concat("device_get_properties(", index, ") failed: ", consume_status(status),
               "; treating its memory as device memory"));
    return;
  }
  // A 1.0 plugin knows no flags; the field stays 0 (device memory).
  if (properties.struct_size >= offsetof(kiln_device_properties, flags) + sizeof properties.flags)
    host_accessible_ = (properties.flags & KILN_DEVICE_FLAG_HOST_ACCESSIBLE) != 0;
}

bool DeviceContext::is_cpu_plugin() const { return std::string_view(api_->name) == "cpu"; }

void DeviceContext::check(kiln_status* status, const char* what) const {
  if (!status) return;
  int32_t code = status->code;
  std::string message = consume_status(status);
  if (code == KILN_STATUS_OK) return;  // a plugin returned an OK object: tolerate it
  // Plugins name the operation themselves ("allocate on cpu:0: out of memory ..."), as
  // the ABI asks; prefix only messages that do not, so nothing is said twice.
  const std::string prefix = concat(what, " on ", name_);
  if (message.find(prefix) < 80) throw Error(message);
  throw Error(concat(prefix, ": ", message));
}

void DeviceContext::resolve(OpId op, KernelSlot& slot) {
  std::lock_guard lock(resolve_mutex_);
  if (slot.state.load(std::memory_order_relaxed) != KernelSlot::State::Unresolved) return;
  look_up(op_name(op), op_version(op), slot);
}

const KernelSlot& DeviceContext::named_kernel(const std::string& name, int32_t version) {
  std::lock_guard lock(resolve_mutex_);
  KernelSlot& slot = named_kernels_[{name, version}];  // std::map: slots never move
  if (slot.state.load(std::memory_order_relaxed) == KernelSlot::State::Unresolved)
    look_up(name.c_str(), version, slot);
  return slot;
}

void DeviceContext::look_up(const char* name, int32_t version, KernelSlot& slot) {
  kiln_kernel kernel{};
  kernel.struct_size = sizeof(kiln_kernel);
  const std::string entry = concat("get_kernel(", name, ")");
  kiln_status* status = call_plugin(
      api_->name, entry, [&] { return api_->get_kernel(handle_, name, version, &kernel); });
  arm_exit_guard();  // after what the lookup built (the kit's kernel table)
  if (status) {
    // A lookup error is logged and treated as "not provided": a catalogue op can
    // still run through the CPU fallback, and the report shows it.
    log(KILN_LOG_WARNING, api_->name, concat(entry, " failed: ", consume_status(status)));
    kernel.run = nullptr;
  }
  if (kernel.run && kernel.struct_size < KILN_KERNEL_SIZE_1_0) {
    log(KILN_LOG_WARNING, api_->name,
        concat(entry, " returned struct_size ", kernel.struct_size, " < ", KILN_KERNEL_SIZE_1_0,
               "; ignoring the kernel"));
    kernel.run = nullptr;
  }
  slot.kernel = kernel;
  slot.state.store(kernel.run ? KernelSlot::State::Native : KernelSlot::State::Missing,
                   std::memory_order_release);
}

std::shared_ptr<Storage> DeviceContext::allocate(size_t bytes) {
  if (graph::Capture* capture = graph::active()) [[unlikely]]
    return graph::allocate(*capture, this, bytes);
  return allocate_block(bytes);
}

std::shared_ptr<Storage> DeviceContext::allocate_block(size_t bytes) {
  kiln_buffer* buffer = nullptr;
  void* data = nullptr;
  call("allocate", [&] { return api_->allocate(handle_, bytes, 64, nullptr, &buffer, &data); });
  if (profiler_active()) [[unlikely]]
    profiler_allocated(bytes);
  try {
    return std::make_shared<Storage>(this, buffer, data, bytes);
  } catch (...) {
    deallocate(buffer);
    throw;
  }
}

void DeviceContext::deallocate(kiln_buffer* buffer) noexcept {
  PluginCallScope in_plugin(/*may_park=*/false);  // an exit's destructors free on other threads
  try {
    if (kiln_status* s = api_->deallocate(handle_, buffer, nullptr))
      log(KILN_LOG_ERROR, api_->name, concat("deallocate on ", name_, ": ", consume_status(s)));
  } catch (...) {
    log(KILN_LOG_ERROR, api_->name,
        concat("ABI violation: ", escaped_exception_text(), " escaped from deallocate on ", name_));
  }
}

void DeviceContext::copy(kiln_copy_kind kind, void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  if (graph::Capture* capture = graph::active()) [[unlikely]]
    return graph::record_copy(*capture, this, kind, dst, src, bytes);
  call("copy", [&] { return api_->copy(handle_, nullptr, kind, dst, src, bytes); });
}

bool DeviceContext::has_copy_peer() const { return plugin_->copy_peer != nullptr; }

void DeviceContext::copy_peer(void* dst, DeviceContext& from, const void* src, size_t bytes) {
  if (bytes == 0) return;
  graph::refuse_if_capturing(concat("a copy from ", from.name(), " to ", name_),
                             "a graph records the work of one device");
  KILN_CHECK(from.plugin_ == plugin_ && plugin_->copy_peer, "copy_peer: ", from.name(), " -> ",
             name_, " is not a peer copy within one plugin that provides it");
  const std::string what = concat("copy_peer from ", from.name());
  check(call_plugin(
            api_->name, what,
            [&] { return plugin_->copy_peer(handle_, nullptr, dst, from.handle_, src, bytes); }),
        what.c_str());
}

void DeviceContext::synchronize() {
  graph::refuse_if_capturing(concat("synchronize(", name_, ")"),
                             "the host cannot wait for work that the capture does not run");
  call("synchronize", [&] { return api_->stream_synchronize(handle_, nullptr); });
  if (profiler_active()) [[unlikely]]
    profiler_synchronized(*this);
}

bool DeviceContext::can_time() const { return plugin_->event_elapsed != nullptr; }

kiln_event* DeviceContext::create_event() {
  kiln_event* event = nullptr;
  call("event_create", [&] { return api_->event_create(handle_, &event); });
  return event;
}

void DeviceContext::destroy_event(kiln_event* event) noexcept {
  try {
    if (kiln_status* s = api_->event_destroy(handle_, event))
      log(KILN_LOG_ERROR, api_->name, concat("event_destroy on ", name_, ": ", consume_status(s)));
  } catch (...) {
    log(KILN_LOG_ERROR, api_->name,
        concat("ABI violation: ", escaped_exception_text(), " escaped from event_destroy"));
  }
}

void DeviceContext::record_event(kiln_event* event) {
  call("event_record", [&] { return api_->event_record(handle_, event, nullptr); });
}

double DeviceContext::elapsed_ms(kiln_event* start, kiln_event* end) {
  double ms = 0;
  call("event_elapsed", [&] { return plugin_->event_elapsed(handle_, start, end, &ms); });
  return ms;
}

MemoryStats DeviceContext::memory_stats() {
  kiln_memory_stats s{};
  s.struct_size = sizeof(s);
  call("memory_stats", [&] { return api_->memory_stats(handle_, &s); });
  return {s.bytes_in_use, s.bytes_reserved, s.peak_bytes_in_use, s.num_allocations,
          s.num_system_allocations};
}

void DeviceContext::empty_cache() {
  if (api_->empty_cache) call("empty_cache", [&] { return api_->empty_cache(handle_); });
}

}  // namespace kiln::detail
