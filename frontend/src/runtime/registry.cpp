// Plugin discovery, loading and validation, and the device registry.
//
// Loading never throws past a single candidate: every failure becomes a recorded
// PluginLoadFailure so one broken plugin cannot stop the others, and kiln-info can
// say why a plugin is missing.

#include "runtime/registry.h"

#define BOOST_DLL_USE_STD_FS
#include <dlfcn.h>

#include <kiln/base/elf_symbols.h>
#include <kiln/base/regular_file.h>
#include <algorithm>
#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "kiln/error.h"
#include "runtime/log.h"
#include "runtime/op_schema.h"
#include "runtime/plugin_table.h"

namespace fs = std::filesystem;

namespace kiln::detail {

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

// "acme" for .../libkiln_acme.so (the caller has checked the pattern).
std::string backend_name_of(const fs::path& path) {
  const std::string file = path.filename().string();
  return file.substr(
      std::strlen(KILN_PLUGIN_FILE_PREFIX),
      file.size() - std::strlen(KILN_PLUGIN_FILE_PREFIX) - std::strlen(KILN_PLUGIN_FILE_SUFFIX));
}

// KILN_PLUGINS, "cpu,acme": the plugins to load (besides cpu, always loaded).
std::vector<std::string> split_names(const char* list) {
  std::vector<std::string> out;
  if (!list) return out;
  std::stringstream in(list);
  for (std::string name; std::getline(in, name, ',');) {
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    if (!name.empty()) out.push_back(name);
  }
  return out;
}

// Records a candidate that was not loaded (kiln-info and plugin_load_failures() list it)
// and logs it at info: KILN_LOG_LEVEL=info promises every skipped candidate.
void record_skipped(std::vector<PluginLoadFailure>& failures, std::string path,
                    std::string reason) {
  log(KILN_LOG_INFO, "loader", concat("skipped ", path, ": ", reason));
  failures.push_back({std::move(path), std::move(reason)});
}

}  // namespace

// -- Registry: discovery ------------------------------------------------------------

Registry& Registry::get() {
  // Deliberately leaked: plugins are never unloaded and tensors destroyed during
  // static destruction must still find their device.
  static Registry* registry = new Registry();
  return *registry;
}

Registry::Registry() {
  // Loading the plugins is a plugin call: an exit that begins meanwhile waits for it
  // (runtime/exit_guard.h).
  arm_exit_guard();
  PluginCallScope loading;
  if (const char* list = std::getenv("KILN_PLUGINS"); list && *list) {
    allowed_ = split_names(list);
    allowed_text_ = list;
  }
  for (auto& dir : split_path_list(std::getenv("KILN_PLUGIN_PATH"))) search_path_.push_back(dir);
  std::string builtin = default_plugin_folder();
  if (!builtin.empty()) search_path_.push_back(builtin);

  for (const std::string& dir : search_path_) load_folder(dir);
  if (Plugin* cpu = find("cpu"); cpu && cpu->device_count > 0) cpu_ = open(*cpu, 0);
  arm_exit_guard();  // after the plugins' statics
}

void Registry::load_folder(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    record_skipped(failures_, dir, "plugin folder does not exist (or is not a folder)");
    return;
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
      record_skipped(failures_, entry.path().string(),
                     "not a regular file (a FIFO, device, socket or folder): skipped");
      continue;
    }
    candidates.push_back(entry.path());
  }
  if (ec) record_skipped(failures_, dir, "cannot list folder: " + ec.message());
  std::sort(candidates.begin(), candidates.end());
  for (const fs::path& path : candidates) consider(path);
}

void Registry::consider(const fs::path& path) {
  // KILN_PLUGINS: a plugin left out is never opened (so it costs nothing at start-up).
  const std::string name = backend_name_of(path);
  if (!allowed_.empty() && name != "cpu" &&
      std::find(allowed_.begin(), allowed_.end(), name) == allowed_.end()) {
    record_skipped(failures_, path.string(),
                   concat("not in KILN_PLUGINS=", shorten_for_message(allowed_text_),
                          ": skipped without opening it"));
    return;
  }
  std::string reason = load_plugin(path);
  if (!reason.empty()) record_skipped(failures_, path.string(), std::move(reason));
}

std::vector<Plugin*> Registry::add_plugins(const std::string& path) {
  std::error_code ec;
  const bool folder = fs::is_directory(path, ec);
  const std::string file = fs::path(path).filename().string();
  const bool plugin_file =
      !folder && fs::is_regular_file(path, ec) && file.starts_with(KILN_PLUGIN_FILE_PREFIX) &&
      file.ends_with(KILN_PLUGIN_FILE_SUFFIX) &&
      file.size() > std::strlen(KILN_PLUGIN_FILE_PREFIX KILN_PLUGIN_FILE_SUFFIX);
  const std::string problem = folder ? std::string() : kiln::base::regular_file_problem(path);
  KILN_CHECK(folder || plugin_file, "load_plugins(\"", path, "\"): ",
             problem == "does not exist" ? "no such file or folder"
             : !problem.empty()
                 ? problem  // a FIFO, a device: never opened
                 : "neither a folder nor a plugin file named " KILN_PLUGIN_FILE_PREFIX
                   "<name>" KILN_PLUGIN_FILE_SUFFIX);
  std::unique_lock lock(mutex_);
  const size_t before = plugins_.size();
  if (folder) {
    search_path_.push_back(path);
    load_folder(path);
  } else {
    consider(path);
  }
  std::vector<Plugin*> added;
  for (size_t i = before; i < plugins_.size(); ++i) added.push_back(plugins_[i].get());
  // A process that started without the CPU plugin gets its fallback target now.
  if (Plugin* cpu = find("cpu"); cpu && cpu->device_count > 0 && !cpu_.load())
    cpu_.store(open(*cpu, 0), std::memory_order_release);
  arm_exit_guard();  // after the new plugins' statics
  return added;
}

// Loads one candidate; returns why it was rejected, or "" on success.
std::string Registry::load_plugin(const fs::path& path) {
  const std::string expected_name = backend_name_of(path);
  if (Plugin* existing = find(expected_name))
    return concat("a plugin named '", expected_name, "' is already loaded from ", existing->path,
                  " (earlier folders take precedence)");

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
  if (!lib->has(KILN_PLUGIN_ENTRY_SYMBOL)) return kiln::base::missing_entry_reason(path.string());
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
  const kiln_op_schemas_api* op_schemas = nullptr;  // taken once the plugin is accepted
  if (api->get_extension) {
    const kiln_collectives_api* collectives = nullptr;
    const kiln_threads_api* threads = nullptr;
    const kiln_graphs_api* graphs = nullptr;
    const kiln_staged_api* staged = nullptr;
    try {
      collectives = static_cast<const kiln_collectives_api*>(
          api->get_extension(api->context, KILN_EXTENSION_COLLECTIVES));
      threads = static_cast<const kiln_threads_api*>(
          api->get_extension(api->context, KILN_EXTENSION_THREADS));
      op_schemas = static_cast<const kiln_op_schemas_api*>(
          api->get_extension(api->context, KILN_EXTENSION_OP_SCHEMAS));
      staged = static_cast<const kiln_staged_api*>(
          api->get_extension(api->context, KILN_EXTENSION_STAGED));
      graphs = static_cast<const kiln_graphs_api*>(
          api->get_extension(api->context, KILN_EXTENSION_GRAPHS));
    } catch (...) {
      return concat("ABI violation: ", escaped_exception_text(), " escaped from get_extension");
    }
    // Usable only if it holds the 1.1 table whole (every entry up to barrier) with
    // every required entry set; otherwise Kiln reduces through the host.
    if (std::string problem = validate_collectives_table(collectives); !problem.empty())
      log(KILN_LOG_WARNING, api->name, problem + "; reducing through the host instead");
    else
      plugin->collectives = collectives;
    if (threads && (threads->struct_size < sizeof(kiln_threads_api) || !threads->set_num_threads ||
                    !threads->get_num_threads))
      log(KILN_LOG_WARNING, api->name,
          "the kiln.threads.v1 table is incomplete (struct_size " +
              std::to_string(threads->struct_size) + "); kiln::set_num_threads leaves it alone");
    else
      plugin->threads = threads;
    if (graphs && (graphs->struct_size < KILN_GRAPHS_API_SIZE_V1 || !graphs->capture_begin ||
                   !graphs->capture_end || !graphs->launch || !graphs->destroy))
      log(KILN_LOG_WARNING, api->name,
          "the kiln.graphs.v1 table is incomplete (struct_size " +
              std::to_string(graphs->struct_size) + "); kiln::Graph replays call by call");
    else
      plugin->graphs = graphs;
    // Read whole or not at all: a count no plugin has, or entries missing, is a broken table.
    constexpr size_t kMaxStagedEntries = 4096;
    if (staged && (staged->struct_size < KILN_STAGED_API_SIZE_V1 ||
                   staged->count > kMaxStagedEntries || (staged->count > 0 && !staged->entries)))
      log(KILN_LOG_WARNING, api->name,
          concat("the kiln.staged.v1 table is malformed (struct_size ", staged->struct_size,
                 ", count ", staged->count, ", at most ", kMaxStagedEntries,
                 "); its staged code is not listed"));
    else
      plugin->staged = staged;
  }
  try {
    if (kiln_status* status = api->device_count(api->context, &plugin->device_count))
      return concat("device_count failed: ", consume_status(status));
  } catch (...) {
    return concat("ABI violation: ", escaped_exception_text(), " escaped from device_count");
  }
  if (plugin->device_count < 0) plugin->device_count = 0;
  plugin->devices.resize(static_cast<size_t>(plugin->device_count));
  register_op_schemas(api->name, op_schemas);
  plugins_.push_back(std::move(plugin));
  return "";
}

// -- Registry: lookups ----------------------------------------------------------------

Plugin* Registry::find(const std::string& name) const {
  for (const auto& p : plugins_)
    if (name == p->api->name) return p.get();
  return nullptr;
}

std::vector<Plugin*> Registry::plugins() const {
  std::shared_lock lock(mutex_);
  std::vector<Plugin*> out;
  for (const auto& p : plugins_) out.push_back(p.get());
  return out;
}

std::vector<PluginLoadFailure> Registry::failures() const {
  std::shared_lock lock(mutex_);
  return failures_;
}

std::vector<std::string> Registry::search_path() const {
  std::shared_lock lock(mutex_);
  return search_path_;
}

std::string Registry::describe_loaded() const {
  std::shared_lock lock(mutex_);
  return describe_loaded_locked();
}

std::string Registry::describe_loaded_locked() const {
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
      throw Error(concat("opening device ", plugin.api->name, ":", index,
                         " failed: ", consume_status(status)));
    slot = std::make_unique<DeviceContext>(&plugin, index, handle);
    arm_exit_guard();  // after what opening the device built
  }
  return slot.get();
}

DeviceContext* Registry::resolve(const Device& device) {
  std::shared_lock lock(mutex_);
  Plugin* plugin = find(device.backend());
  if (!plugin) {
    // Found but refused: say so, and why, rather than "not found".
    const std::string file =
        concat(KILN_PLUGIN_FILE_PREFIX, device.backend(), KILN_PLUGIN_FILE_SUFFIX);
    for (const PluginLoadFailure& f : failures_)
      if (fs::path(f.path).filename() == file)
        throw Error(concat("the plugin for '", device.backend(), "' was found at ", f.path,
                           " but refused: ", f.reason));
    std::ostringstream searched;
    for (size_t i = 0; i < search_path_.size(); ++i) searched << (i ? ":" : "") << search_path_[i];
    throw Error(concat("no plugin named '", shorten_for_message(device.backend()),
                       "' was found; loaded plugins: ", describe_loaded_locked(), " (searched: ",
                       searched.str(), "; kiln-info lists the candidates that failed to load)"));
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
  DeviceContext* cpu = cpu_.load(std::memory_order_acquire);
  KILN_CHECK(cpu,
             "the CPU plugin (libkiln_cpu.so) is not loaded, so ops this device lacks "
             "cannot fall back to it; loaded plugins: ",
             describe_loaded());
  return cpu;
}

DeviceContext* Registry::default_context() {
  DeviceContext* d = default_.load(std::memory_order_acquire);
  if (d) [[likely]]
    return d;
  std::lock_guard lock(default_mutex_);
  if ((d = default_.load())) return d;
  const char* env = std::getenv("KILN_BACKEND");
  if (env && *env) {
    try {
      d = resolve(Device(std::string_view(env)));
    } catch (const Error& e) {
      // e.what() quotes the value already (shortened): a long value is named here by
      // its length rather than quoted a second time.
      const std::string_view value(env);
      if (value.size() <= kMaxEchoedValue)
        throw Error(concat("KILN_BACKEND=", value, ": ", e.what()));
      throw Error(concat("KILN_BACKEND (", value.size(), " characters): ", e.what()));
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
