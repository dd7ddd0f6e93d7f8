#include "plugin_fixture.h"

#include <dlfcn.h>

#include <mutex>

namespace kiln::test {

namespace {

std::mutex log_mutex;

void capture_log(int32_t level, const char* plugin, const char* message) {
  std::lock_guard lock(log_mutex);
  captured_log().push_back(std::to_string(level) + " " + plugin + ": " + message);
}

std::vector<kiln_tensor_view> views_of(std::initializer_list<const View*> views) {
  std::vector<kiln_tensor_view> out;
  for (const View* v : views) out.push_back(v->view);
  return out;
}

}  // namespace

std::vector<std::string>& captured_log() {
  static std::vector<std::string> lines;
  return lines;
}

kiln_host_api make_host_api(uint32_t major, uint32_t minor) {
  kiln_host_api host{};
  host.struct_size = sizeof(kiln_host_api);
  host.abi_major = major;
  host.abi_minor = minor;
  host.kiln_version = "0.1.0-test";
  host.log = &capture_log;
  host.log_level = KILN_LOG_DEBUG;
  return host;
}

CpuPlugin& CpuPlugin::get() {
  static CpuPlugin plugin = [] {
    CpuPlugin p;
    p.library = dlopen(KILN_CPU_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    if (p.library == nullptr) {
      ADD_FAILURE() << "dlopen(" << KILN_CPU_PLUGIN_PATH << "): " << dlerror();
      return p;
    }
    p.init = reinterpret_cast<kiln_plugin_init_fn>(dlsym(p.library, KILN_PLUGIN_ENTRY_SYMBOL));
    if (p.init == nullptr) {
      ADD_FAILURE() << "no " << KILN_PLUGIN_ENTRY_SYMBOL << " in the plugin";
      return p;
    }
    const kiln_host_api host = make_host_api(KILN_ABI_MAJOR, KILN_ABI_MINOR);
    const Outcome init = take(p.init(&host, &p.api));
    if (!init.ok() || p.api == nullptr) {
      ADD_FAILURE() << "kiln_plugin_init failed: " << init.message;
      return p;
    }
    const Outcome open = take(p.api->device_open(p.api->context, 0, &p.device));
    if (!open.ok()) ADD_FAILURE() << "device_open(0) failed: " << open.message;
    return p;
  }();
  if (plugin.device == nullptr) {
    ADD_FAILURE() << "the CPU plugin is not usable";
    std::abort();  // every later test would dereference a null table
  }
  return plugin;
}

Outcome take(kiln_status* status) {
  Outcome out;
  if (status == nullptr) return out;
  out.code = status->code;
  out.message = status->message ? status->message : "";
  status->destroy(status);
  return out;
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

View::View(void* data, kiln_dtype dtype, std::vector<int64_t> shape_, std::vector<int64_t> strides_,
           int64_t byte_offset)
    : shape(std::move(shape_)),
      strides(strides_.empty() ? contiguous_strides(shape) : std::move(strides_)) {
  view.struct_size = sizeof(kiln_tensor_view);
  view.data = data;
  view.byte_offset = byte_offset;
  view.shape = shape.data();
  view.strides = strides.data();
  view.ndim = static_cast<int32_t>(shape.size());
  view.dtype = dtype;
  view.device = CpuPlugin::get().device;
}

View::View(const View& other) : shape(other.shape), strides(other.strides), view(other.view) {
  view.shape = shape.data();
  view.strides = strides.data();
}

kiln_attr float_attr(const char* name, double value) {
  kiln_attr a{};
  a.name = name;
  a.type = KILN_ATTR_FLOAT;
  a.value.f = value;
  return a;
}

kiln_attr int_attr(const char* name, int64_t value) {
  kiln_attr a{};
  a.name = name;
  a.type = KILN_ATTR_INT;
  a.value.i = value;
  return a;
}

kiln_attr string_attr(const char* name, const char* value) {
  kiln_attr a{};
  a.name = name;
  a.type = KILN_ATTR_STRING;
  a.value.s = value;
  return a;
}

kiln_attr ints_attr(const char* name, const int64_t* values, int64_t count) {
  kiln_attr a{};
  a.name = name;
  a.type = KILN_ATTR_INTS;
  a.count = count;
  a.value.ints = values;
  return a;
}

kiln_kernel get_kernel(const char* name, int32_t version) {
  CpuPlugin& p = CpuPlugin::get();
  kiln_kernel kernel{};
  kernel.struct_size = sizeof(kernel);
  const Outcome o = take(p.api->get_kernel(p.device, name, version, &kernel));
  EXPECT_TRUE(o.ok()) << o.message;
  return kernel;
}

Outcome run_op(const char* name, std::initializer_list<const View*> inputs,
               std::initializer_list<const View*> outputs, std::initializer_list<kiln_attr> attrs) {
  const kiln_kernel kernel = get_kernel(name);
  if (kernel.run == nullptr)
    return Outcome{KILN_STATUS_UNSUPPORTED, std::string("no kernel ") + name};
  const std::vector<kiln_tensor_view> in = views_of(inputs), out = views_of(outputs);
  const std::vector<kiln_attr> attr_list(attrs);
  kiln_op_args args{sizeof(kiln_op_args), in.data(),        in.size(),        out.data(),
                    out.size(),           attr_list.data(), attr_list.size(), nullptr};
  return take(kernel.run(kernel.context, &args));
}

int32_t op_supports(const char* name, std::initializer_list<const View*> inputs,
                    std::initializer_list<const View*> outputs,
                    std::initializer_list<kiln_attr> attrs) {
  const kiln_kernel kernel = get_kernel(name);
  EXPECT_NE(kernel.run, nullptr) << name;
  if (kernel.supports == nullptr) return 1;
  const std::vector<kiln_tensor_view> in = views_of(inputs), out = views_of(outputs);
  const std::vector<kiln_attr> attr_list(attrs);
  kiln_op_args args{sizeof(kiln_op_args), in.data(),        in.size(),        out.data(),
                    out.size(),           attr_list.data(), attr_list.size(), nullptr};
  return kernel.supports(kernel.context, &args);
}

}  // namespace kiln::test
