// kiln/sdk/versioned.h — the two rules of versioned structs every plugin applies.
//
// @code
//   kiln::sdk::check_host_abi(host, api, "acme");  // in kiln_plugin_init, first of all
//   kiln::sdk::write_sized(properties, full);      // answering a struct the caller sized
// @endcode
#ifndef KILN_SDK_VERSIONED_H
#define KILN_SDK_VERSIONED_H

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "kiln/c_api.h"
#include "kiln/sdk/status.h"

namespace kiln::sdk {

/// Writes `full` into the caller's struct as far as the caller's struct_size reaches
/// (an older, smaller struct gets the fields it knows), leaving struct_size alone.
template <class T>
void write_sized(T* out, const T& full) {
  const size_t size = std::min(out->struct_size, sizeof(T));
  if (size > sizeof(size_t)) {
    std::memcpy(reinterpret_cast<char*>(out) + sizeof(size_t),
                reinterpret_cast<const char*>(&full) + sizeof(size_t), size - sizeof(size_t));
  }
}

/// The handshake of kiln_plugin_init: throws ABI_MISMATCH (naming both versions and
/// `plugin`) unless `host` is large enough to state its ABI version and speaks this
/// major version; INVALID_ARGUMENT for null pointers.
inline void check_host_abi(const kiln_host_api* host, const kiln_plugin_api* const* api,
                           const char* plugin) {
  KILN_SDK_CHECK(host != nullptr && api != nullptr, KILN_STATUS_INVALID_ARGUMENT,
                 "kiln_plugin_init: null host or api pointer");
  const size_t version_end = offsetof(kiln_host_api, abi_minor) + sizeof(host->abi_minor);
  KILN_SDK_CHECK(host->struct_size >= version_end, KILN_STATUS_ABI_MISMATCH,
                 "kiln_host_api.struct_size ", host->struct_size,
                 " is too small to hold the ABI version; ", plugin, " speaks ABI ", KILN_ABI_MAJOR,
                 ".", KILN_ABI_MINOR);
  KILN_SDK_CHECK(host->abi_major == KILN_ABI_MAJOR, KILN_STATUS_ABI_MISMATCH,
                 "ABI major version mismatch: the host speaks ABI ", host->abi_major, ".",
                 host->abi_minor, ", ", plugin, " speaks ABI ", KILN_ABI_MAJOR, ".",
                 KILN_ABI_MINOR);
}

/// Whether `host` is large enough to carry its log callback and level.
inline bool host_has_log(const kiln_host_api* host) {
  return host->struct_size >= offsetof(kiln_host_api, log_level) + sizeof(host->log_level);
}

}  // namespace kiln::sdk

#endif  // KILN_SDK_VERSIONED_H
