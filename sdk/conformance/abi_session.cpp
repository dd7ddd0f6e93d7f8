// Loading the plugin under test the way Kiln's loader does, without Kiln.
#include "abi_session.h"

#include <kiln/base/regular_file.h>
#include <kiln/sdk/elf_symbols.h>

#include <dlfcn.h>

#include <cstring>

namespace kiln::conformance {

const char* status_code_name(int32_t code) {
  switch (code) {
    case KILN_STATUS_OK:
      return "OK";
    case KILN_STATUS_INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case KILN_STATUS_OUT_OF_MEMORY:
      return "OUT_OF_MEMORY";
    case KILN_STATUS_UNSUPPORTED:
      return "UNSUPPORTED";
    case KILN_STATUS_DEVICE_ERROR:
      return "DEVICE_ERROR";
    case KILN_STATUS_INTERNAL:
      return "INTERNAL";
    case KILN_STATUS_ABI_MISMATCH:
      return "ABI_MISMATCH";
    default:
      return "an unknown status code";
  }
}

namespace {
void discard_log(int32_t, const char*, const char*) {}
}  // namespace

HostApi::HostApi(uint32_t major, uint32_t minor, size_t extra_bytes)
    : storage_((sizeof(kiln_host_api) + extra_bytes + 7) / 8, 0xA5A5A5A5A5A5A5A5ull) {
  kiln_host_api host{};
  host.struct_size = sizeof(kiln_host_api) + extra_bytes;
  host.abi_major = major;
  host.abi_minor = minor;
  host.kiln_version = "kiln-conformance";
  host.log = &discard_log;
  host.log_level = KILN_LOG_ERROR;
  std::memcpy(storage_.data(), &host, sizeof host);
}

AbiSession::AbiSession(const std::string& path) : path_(path) {
  if (std::string problem = kiln::base::regular_file_problem(path); !problem.empty()) {
    error_ = "the path " + problem;  // dlopen would wait on a FIFO
    return;
  }
  dlerror();
  library_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library_ == nullptr) {
    const char* why = dlerror();
    error_ = std::string("not a loadable shared library: ") + (why ? why : "dlopen failed");
    return;
  }
  entry_ = reinterpret_cast<kiln_plugin_init_fn>(::dlsym(library_, KILN_PLUGIN_ENTRY_SYMBOL));
  if (entry_ == nullptr) error_ = kiln::sdk::missing_entry_reason(path);
}

Outcome AbiSession::take(kiln_status* status) {
  Outcome out;
  if (status == nullptr) return out;
  out.code = status->code;
  if (status->struct_size < offsetof(kiln_status, destroy) + sizeof(void*)) {
    out.defect = "a status object whose struct_size (" + std::to_string(status->struct_size) +
                 ") does not cover destroy";
  } else if (status->message == nullptr) {
    out.defect = "a status object with a NULL message";
  }
  out.message = status->message ? status->message : "(no message)";
  if (out.code == KILN_STATUS_OK)
    out.defect = "a non-NULL status with code OK (return NULL for success)";
  if (status->destroy == nullptr) {
    out.defect = "a status object whose destroy is NULL (it can never be freed)";
  } else {
    status->destroy(status);
  }
  if (out.code == KILN_STATUS_OK) out.code = KILN_STATUS_INTERNAL;  // count it as an error
  if (!out.defect.empty()) defects_.push_back(out.defect + " (message: " + out.message + ")");
  return out;
}

Outcome AbiSession::init(const kiln_host_api* host) {
  const kiln_plugin_api* api = nullptr;
  Outcome out = take(entry_(host, &api));
  if (out.ok()) {
    if (api == nullptr) {
      out.code = KILN_STATUS_INTERNAL;
      out.message = "kiln_plugin_init returned success but no table";
    } else {
      api_ = api;
    }
  }
  return out;
}

std::string AbiSession::open(int32_t index) {
  if (api_ == nullptr) return "the plugin is not initialized";
  kiln_device* device = nullptr;
  Outcome out = take(api_->device_open(api_->context, index, &device));
  if (!out.ok()) return "device_open(" + std::to_string(index) + ") failed: " + out.message;
  if (device == nullptr) return "device_open(" + std::to_string(index) + ") returned no handle";
  device_ = device;
  return "";
}

}  // namespace kiln::conformance
