#pragma once
// abi_checks.h — the plugin's answers through the C ABI itself: entry point and
// versions, devices and properties, memory and statistics, copies, streams and
// events, kernel lookups. Each function is one group, run in its own process
// (isolation.h); each reports one CheckResult per check.

#include <string>
#include <vector>

#include "isolation.h"

namespace kiln::conformance {

struct AbiTarget {
  std::string path;              ///< the plugin file
  int device = 0;                ///< the device index under test
  std::vector<std::string> ops;  ///< catalogue names to look up in abi_kernels
};

/// dlopen, entry symbol, kiln_plugin_init with this Kiln's host, the table's size,
/// version, name (and the file name it implies), required and optional entries.
/// Reports the facts "name", "version", "abi", "device_count".
void abi_entry(const AbiTarget& target, Reporter& reporter);
/// kiln_plugin_init with bad arguments and with a host of another major version
/// (must be refused with ABI_MISMATCH), and with a host of a later minor version
/// whose struct is larger (must be accepted).
void abi_versions(const AbiTarget& target, Reporter& reporter);
/// device_count, device_get_properties (consistency, struct_size respected),
/// device_open (same handle twice, bad indices refused).
void abi_devices(const AbiTarget& target, Reporter& reporter);
/// allocate/deallocate (alignment, zero bytes, bad arguments, out of memory) and
/// memory_stats (they move as they should and return to their starting values).
void abi_memory(const AbiTarget& target, Reporter& reporter);
/// copy in every direction, at offsets and odd sizes; bad arguments refused.
void abi_copies(const AbiTarget& target, Reporter& reporter);
/// Streams and events: ordering within a stream, one stream waiting on another.
void abi_streams(const AbiTarget& target, Reporter& reporter);
/// get_kernel for every catalogue op (reports the fact "provided": the ops found),
/// unknown names and versions, bad arguments, struct_size respected.
void abi_kernels(const AbiTarget& target, Reporter& reporter);

}  // namespace kiln::conformance
