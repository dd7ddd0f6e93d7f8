#pragma once
// abi_session.h — the plugin under test, driven through its C entry points only, as a
// loader would (dlopen, kiln_plugin_init, the table). Used by the ABI checks, which
// must see exactly what the plugin answers, before any frontend logic.

#include <kiln/c_api.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::conformance {

/// A status taken apart and destroyed: code (0 = success) and message, plus what was
/// wrong with the status object itself (NULL destroy, no message, ...).
struct Outcome {
  int32_t code = KILN_STATUS_OK;
  std::string message;
  std::string defect;  ///< "" when the status object was well-formed
  bool ok() const { return code == KILN_STATUS_OK; }
};

/// "INVALID_ARGUMENT", for messages.
const char* status_code_name(int32_t code);

/// A host description of ABI major.minor whose log callback discards the messages.
/// `extra_bytes` > 0 makes it look like a later minor's larger struct (the extra bytes
/// are garbage a plugin must not read: it only knows the fields its own minor has).
struct HostApi {
  explicit HostApi(uint32_t major = KILN_ABI_MAJOR, uint32_t minor = KILN_ABI_MINOR,
                   size_t extra_bytes = 0);
  const kiln_host_api* get() const {
    return reinterpret_cast<const kiln_host_api*>(storage_.data());
  }

 private:
  std::vector<uint64_t> storage_;
};

class AbiSession {
 public:
  /// dlopen()s the library (RTLD_NOW | RTLD_LOCAL) and looks the entry point up;
  /// error() says why when that failed. Never unloaded.
  explicit AbiSession(const std::string& path);

  const std::string& error() const { return error_; }
  kiln_plugin_init_fn entry() const { return entry_; }

  /// Calls kiln_plugin_init with `host`; on success api() is the table.
  Outcome init(const kiln_host_api* host);
  const kiln_plugin_api* api() const { return api_; }

  /// Consumes `status`, recording defects of the status object in defects().
  Outcome take(kiln_status* status);
  /// Problems with status objects seen so far ("a status with a NULL destroy", ...).
  const std::vector<std::string>& defects() const { return defects_; }

  /// Opens device `index` (after a successful init); "" on success, else why not.
  std::string open(int32_t index);
  kiln_device* device() const { return device_; }

 private:
  std::string path_;
  std::string error_;
  void* library_ = nullptr;
  kiln_plugin_init_fn entry_ = nullptr;
  const kiln_plugin_api* api_ = nullptr;
  kiln_device* device_ = nullptr;
  std::vector<std::string> defects_;
};

/// True when `api`'s declared size covers `field` (which ends at `end` bytes).
inline bool table_has(const kiln_plugin_api* api, size_t end) { return api->struct_size >= end; }
#define KILN_TABLE_HAS(api, field) \
  ::kiln::conformance::table_has((api), offsetof(kiln_plugin_api, field) + sizeof(void*))

}  // namespace kiln::conformance
