// Plugin discovery, loading and validation, and the device registry.
//
// Loading never throws past a single candidate: every failure becomes a recorded
// PluginLoadFailure so one broken plugin cannot stop the others, and kiln-info can
// say why a plugin is missing.

#include "runtime/registry.h"

#define BOOST_DLL_USE_STD_FS
#include <cxxabi.h>
#include <dlfcn.h>

#include <algorithm>
#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>
#include <kiln/sdk/elf_symbols.h>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <typeinfo>
#include <sstream>

#include "kiln/error.h"
#include "runtime/log.h"
#include "runtime/plugin_table.h"
#include "profiler/profiler_hooks.h"

namespace fs = std::filesystem;

namespace kiln::detail {

std::string consume_status(kiln_status* status) {
  if (!status) return "";
  std::string message =
      status->message ? status->message : "(the plugin gave no message)";
  if (status->destroy) status->destroy(status);
  return message;
}

std::string escaped_exception_text() {
  const auto type_name = [](const char* mangled) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(mangled, nullptr, nullptr, &status),
                                                 std::free);
    return std::string(status == 0 && name ? name.get() : mangled);
  };
  try {
    throw;
  } catch (const std::exception& e) {
    std::string what = e.what();
    if (what.size() > 200) what = what.substr(0, 200) + "...";
    return concat("a C++ exception (", type_name(typeid(e).name()), ": \"", what, "\")");
  } catch (...) {
    const std::type_info* type = abi::__cxa_current_exception_type();
    return concat("a C++ exception of type ", type ? type_name(type->name()) : "unknown");
  }
}

void throw_abi_violation(const char* plugin, std::string_view entry) {
  throw Error(concat("ABI violation: ", escaped_exception_text(), " escaped from plugin '",
                     plugin ? plugin : "?", "' in ", entry,
                     "; a plugin must catch its exceptions and return a kiln_status (the "
                     "plugin kit's entries do)"));
}

namespace {

void host_log(int32_t level, const char* plugin, const char* message) {
  log(level, plugin ? plugin : "plugin", message ? message : "");
}

const kiln_host_api& host_api() {
  static const kiln_host_api api = [] {
    kiln_host_api h{};
    h.struct_size = sizeof(kiln_host_api);
    h.abi_major = KILN_ABI_MAJOR;
    h.abi_minor = KILN_ABI_MINOR;
    h.kiln_version = KILN_VERSION_STRING;
    h.log = &host_log;
    h.log_level = log_level();
    return h;
  }();
  return api;
}

std::vector<std::string> split_path_list(const char* list) {
  std::vector<std::string> out;
  if (!list) return out;
  std::string s(list);
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(':', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// The folder kiln/plugins beside libkiln.so: build/lib/kiln/plugins in the build
// tree and <prefix>/lib/kiln/plugins when installed.
std::string default_plugin_folder() {
  std::error_code ec;
  fs::path self = boost::dll::this_line_location(ec);
  if (ec) return {};
  self = fs::weakly_canonical(self, ec);
  return (self.parent_path() / "kiln" / "plugins").string();
}

}  // namespace

// -- DeviceContext --------------------------------------------------------------------

Storage::~Storage() { device->deallocate(buffer); }

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
  kiln_kernel kernel{};
  kernel.struct_size = sizeof(kiln_kernel);
  kiln_status* status = call_plugin(api_->name, concat("get_kernel(", op_name(op), ")"),
                                    [&] { return api_->get_kernel(handle_, op_name(op), 1, &kernel); });
  if (status) {
    // A lookup error is logged and treated as "not provided": the op can still
    // run through the CPU fallback, and the report shows it.
    log(KILN_LOG_WARNING, api_->name,
        concat("get_kernel(", op_name(op), ") failed: ", consume_status(status)));
    kernel.run = nullptr;
  }
  if (kernel.run && kernel.struct_size < KILN_KERNEL_SIZE_1_0) {
    log(KILN_LOG_WARNING, api_->name,
        concat("get_kernel(", op_name(op), ") returned struct_size ", kernel.struct_size,
               " < ", KILN_KERNEL_SIZE_1_0, "; ignoring the kernel"));
    kernel.run = nullptr;
  }
  slot.kernel = kernel;
  slot.state.store(kernel.run ? KernelSlot::State::Native : KernelSlot::State::Missing,
                   std::memory_order_release);
}

std::shared_ptr<Storage> DeviceContext::allocate(size_t bytes) {
  kiln_buffer* buffer = nullptr;
  void* data = nullptr;
  call("allocate", [&] { return api_->allocate(handle_, bytes, 64, nullptr, &buffer, &data); });
  if (profiler_active()) [[unlikely]] profiler_allocated(bytes);
  try {
    return std::make_shared<Storage>(this, buffer, data, bytes);
  } catch (...) {
    deallocate(buffer);
    throw;
  }
}

void DeviceContext::deallocate(kiln_buffer* buffer) noexcept {
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
  call("copy", [&] { return api_->copy(handle_, nullptr, kind, dst, src, bytes); });
}

bool DeviceContext::has_copy_peer() const { return plugin_->copy_peer != nullptr; }

void DeviceContext::copy_peer(void* dst, DeviceContext& from, const void* src, size_t bytes) {
  if (bytes == 0) return;
  KILN_CHECK(from.plugin_ == plugin_ && plugin_->copy_peer, "copy_peer: ", from.name(), " -> ",
             name_, " is not a peer copy within one plugin that provides it");
  const std::string what = concat("copy_peer from ", from.name());
  check(call_plugin(api_->name, what,
                    [&] { return plugin_->copy_peer(handle_, nullptr, dst, from.handle_, src, bytes); }),
        what.c_str());
}

void DeviceContext::synchronize() {
  call("synchronize", [&] { return api_->stream_synchronize(handle_, nullptr); });
  if (profiler_active()) [[unlikely]] profiler_synchronized(*this);
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

// -- Registry: discovery ------------------------------------------------------------

Registry& Registry::get() {
  // Deliberately leaked: plugins are never unloaded and tensors destroyed during
  // static destruction must still find their device.
  static Registry* registry = new Registry();
  return *registry;
}

Registry::Registry() {
  for (auto& dir : split_path_list(std::getenv("KILN_PLUGIN_PATH"))) search_path_.push_back(dir);
  std::string builtin = default_plugin_folder();
  if (!builtin.empty()) search_path_.push_back(builtin);

  for (const std::string& dir : search_path_) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      failures_.push_back({dir, "plugin folder does not exist (or is not a folder)"});
      continue;
    }
    std::vector<fs::path> candidates;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      std::string file = entry.path().filename().string();
      if (!file.starts_with(KILN_PLUGIN_FILE_PREFIX) || !file.ends_with(KILN_PLUGIN_FILE_SUFFIX))
        continue;
      // Only regular files (links to them included): opening a FIFO blocks forever,
      // and folders or devices are no libraries either.
      std::error_code type_error;
      if (!fs::is_regular_file(entry.path(), type_error)) {
        failures_.push_back({entry.path().string(),
                             "not a regular file (a FIFO, device, socket or folder): skipped"});
        continue;
      }
      candidates.push_back(entry.path());
    }
    if (ec) failures_.push_back({dir, "cannot list folder: " + ec.message()});
    std::sort(candidates.begin(), candidates.end());
    for (const fs::path& path : candidates) {
      std::string reason = load_plugin(path);
      if (!reason.empty()) {
        failures_.push_back({path.string(), reason});
        log(KILN_LOG_INFO, "loader", concat("skipped ", path.string(), ": ", reason));
      }
    }
  }
  if (Plugin* cpu = find("cpu"); cpu && cpu->device_count > 0) cpu_ = open(*cpu, 0);
}

// Loads one candidate; returns why it was rejected, or "" on success.
std::string Registry::load_plugin(const fs::path& path) {
  std::string file = path.filename().string();
  std::string expected_name = file.substr(
      std::strlen(KILN_PLUGIN_FILE_PREFIX),
      file.size() - std::strlen(KILN_PLUGIN_FILE_PREFIX) - std::strlen(KILN_PLUGIN_FILE_SUFFIX));
  if (Plugin* existing = find(expected_name))
    return concat("a plugin named '", expected_name, "' is already loaded from ",
                  existing->path, " (earlier folders take precedence)");

  // Never unloaded, even when rejected: a library whose init ran may have started
  // threads or registered handlers that must not vanish under them.
  auto library = std::make_unique<boost::dll::shared_library>();
  std::error_code ec;
  dlerror();
  library->load(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local, ec);
  if (ec) {
    const char* detail = dlerror();
    return concat("not a loadable shared library: ", detail ? detail : ec.message());
  }
  libraries_.push_back(std::move(library));
  boost::dll::shared_library* lib = libraries_.back().get();
  if (!lib->has(KILN_PLUGIN_ENTRY_SYMBOL)) return kiln::sdk::missing_entry_reason(path.string());
  auto init = lib->get<kiln_status*(const kiln_host_api*, const kiln_plugin_api**)>(
      KILN_PLUGIN_ENTRY_SYMBOL);

  const kiln_plugin_api* api = nullptr;
  try {
    if (kiln_status* status = init(&host_api(), &api))
      return concat("kiln_plugin_init failed: ", consume_status(status));
  } catch (...) {
    return concat("ABI violation: ", escaped_exception_text(), " escaped from kiln_plugin_init");
  }
  if (std::string problem = validate_plugin_table(api, expected_name); !problem.empty())
    return problem;

  auto plugin = std::make_unique<Plugin>();
  plugin->path = path.string();
  plugin->api = api;
  if (api->abi_minor >= 1 &&
      api->struct_size >= offsetof(kiln_plugin_api, copy_peer) + sizeof api->copy_peer)
    plugin->copy_peer = api->copy_peer;
  if (api->abi_minor >= 2 && api->struct_size >= KILN_PLUGIN_API_SIZE_1_2) {
    if (api->event_create) plugin->event_elapsed = api->event_elapsed;
    plugin->range_push = api->range_push;
    plugin->range_pop = api->range_pop;
  }
  if (api->get_extension) {
    const kiln_collectives_api* collectives = nullptr;
    try {
      collectives = static_cast<const kiln_collectives_api*>(
          api->get_extension(api->context, KILN_EXTENSION_COLLECTIVES));
    } catch (...) {
      return concat("ABI violation: ", escaped_exception_text(), " escaped from get_extension");
    }
    // Usable only if it holds the 1.1 table whole (every entry up to barrier) with
    // every required entry set; otherwise Kiln reduces through the host.
    if (std::string problem = validate_collectives_table(collectives); !problem.empty())
      log(KILN_LOG_WARNING, api->name, problem + "; reducing through the host instead");
    else
      plugin->collectives = collectives;
  }
  try {
    if (kiln_status* status = api->device_count(api->context, &plugin->device_count))
      return concat("device_count failed: ", consume_status(status));
  } catch (...) {
    return concat("ABI violation: ", escaped_exception_text(), " escaped from device_count");
  }
  if (plugin->device_count < 0) plugin->device_count = 0;
  plugin->devices.resize(static_cast<size_t>(plugin->device_count));
  plugins_.push_back(std::move(plugin));
  return "";
}

// -- Registry: lookups ----------------------------------------------------------------

Plugin* Registry::find(const std::string& name) const {
  for (const auto& p : plugins_)
    if (name == p->api->name) return p.get();
  return nullptr;
}

std::string Registry::describe_loaded() const {
  if (plugins_.empty()) return "none";
  std::ostringstream out;
  for (size_t i = 0; i < plugins_.size(); ++i) {
    if (i) out << ", ";
    out << plugins_[i]->api->name << " (" << plugins_[i]->device_count
        << (plugins_[i]->device_count == 1 ? " device)" : " devices)");
  }
  return out.str();
}

DeviceContext* Registry::open(Plugin& plugin, int index) {
  std::lock_guard lock(plugin.open_mutex);
  auto& slot = plugin.devices[static_cast<size_t>(index)];
  if (!slot) {
    kiln_device* handle = nullptr;
    if (kiln_status* status = call_plugin(plugin.api->name, "device_open", [&] {
          return plugin.api->device_open(plugin.api->context, index, &handle);
        }))
      throw Error(concat("opening device ", plugin.api->name, ":", index, " failed: ",
                         consume_status(status)));
    slot = std::make_unique<DeviceContext>(&plugin, index, handle);
  }
  return slot.get();
}

DeviceContext* Registry::resolve(const Device& device) {
  Plugin* plugin = find(device.backend());
  if (!plugin) {
    // Found but refused: say so, and why, rather than "not found".
    const std::string file = concat(KILN_PLUGIN_FILE_PREFIX, device.backend(), KILN_PLUGIN_FILE_SUFFIX);
    for (const PluginLoadFailure& f : failures_)
      if (fs::path(f.path).filename() == file)
        throw Error(concat("the plugin for '", device.backend(), "' was found at ", f.path,
                           " but refused: ", f.reason));
    std::ostringstream searched;
    for (size_t i = 0; i < search_path_.size(); ++i) searched << (i ? ":" : "") << search_path_[i];
    throw Error(concat("no plugin named '", device.backend(), "' was found; loaded plugins: ",
                       describe_loaded(), " (searched: ", searched.str(),
                       "; kiln-info lists the candidates that failed to load)"));
  }
  if (device.index() < 0 || device.index() >= plugin->device_count) {
    std::string why;
    if (plugin->api->describe) why = concat(" (", plugin->api->describe(plugin->api->context), ")");
    throw Error(concat("device ", device.str(), " is out of range: plugin '", device.backend(),
                       "' has ", plugin->device_count,
                       plugin->device_count == 1 ? " device" : " devices", why));
  }
  return open(*plugin, device.index());
}

DeviceContext* Registry::cpu() {
  KILN_CHECK(cpu_, "the CPU plugin (libkiln_cpu.so) is not loaded, so ops this device lacks "
                   "cannot fall back to it; loaded plugins: ", describe_loaded());
  return cpu_;
}

DeviceContext* Registry::default_context() {
  DeviceContext* d = default_.load(std::memory_order_acquire);
  if (d) [[likely]] return d;
  std::lock_guard lock(default_mutex_);
  if ((d = default_.load())) return d;
  const char* env = std::getenv("KILN_BACKEND");
  if (env && *env) {
    try {
      d = resolve(Device(std::string_view(env)));
    } catch (const Error& e) {
      throw Error(concat("KILN_BACKEND=", env, ": ", e.what()));
    }
  } else {
    d = resolve(Device("cpu", 0));
  }
  default_.store(d, std::memory_order_release);
  return d;
}

void Registry::set_default(const Device& device) {
  DeviceContext* d = resolve(device);
  std::lock_guard lock(default_mutex_);
  default_.store(d, std::memory_order_release);
}

}  // namespace kiln::detail
