// kiln/sdk/kernel_table.h — publishing a plugin's kernels to `get_kernel`.
//
// A kernel is written as `void impl(const kiln::sdk::OpArgs&)` that throws
// kiln::sdk::Error on bad arguments. `run_kernel<impl>` is its ABI-facing wrapper: it
// catches everything and prefixes messages with the op's name ("kiln.gather: index 7
// is out of range ..."). `lookup` hands out each kernel's `supports` predicate behind
// the same firewall (guarded_supports). A plugin lists its kernels in a KernelTable and answers
// `get_kernel` with `KernelTable::lookup`:
//
// @code
//   const kiln::sdk::KernelTable& table() {
//     static const kiln::sdk::KernelTable t({
//         {"kiln.add", &kiln::sdk::run_kernel<add>, nullptr, kiln::sdk::kStridedInOut},
//     });
//     return t;
//   }
//   kiln_status* get_kernel(kiln_device*, const char* name, int32_t version,
//                           kiln_kernel* kernel) {
//     return kiln::sdk::guard("get_kernel", [&] { table().lookup(name, version, kernel); });
//   }
// @endcode
#ifndef KILN_SDK_KERNEL_TABLE_H
#define KILN_SDK_KERNEL_TABLE_H

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "kiln/c_api.h"
#include "kiln/sdk/op_args.h"
#include "kiln/sdk/status.h"

namespace kiln::sdk {

using SupportsFn = int32_t (*)(void* context, const kiln_op_args* args);

struct KernelEntry {
  const char* name;     // catalogue name, e.g. "kiln.add"
  kiln_kernel_fn run;   // receives a pointer to this entry as its context
  SupportsFn supports;  // nullptr: every valid argument list
  uint32_t flags;       // KILN_KERNEL_*
  /// The plugin's own data for this kernel. A plugin whose every call needs the same
  /// work around the kernel (make its device current, pick the stream, release
  /// scratch memory, check for launch errors) points `run` of every entry at one
  /// wrapper, its per-call hook, and `data` at what that wrapper then calls.
  const void* data = nullptr;
};

using KernelList = std::vector<KernelEntry>;

inline constexpr uint32_t kStridedInOut = KILN_KERNEL_STRIDED_INPUTS | KILN_KERNEL_STRIDED_OUTPUTS;

template <void (*Impl)(const OpArgs&)>
kiln_status* run_kernel(void* context, const kiln_op_args* args) noexcept {
  const auto* entry = static_cast<const KernelEntry*>(context);
  return guard(entry != nullptr ? entry->name : "kiln op", [&] { Impl(OpArgs(args)); });
}

/// Where a `supports` predicate's exception is reported (the plugin kit points it at
/// Kiln's log; NULL: nowhere). One per plugin library, since plugins hide their symbols.
using SupportsErrorSink = void (*)(const char* op, const char* message) noexcept;
inline std::atomic<SupportsErrorSink> supports_error_sink{nullptr};

/// How guarded_supports reports a predicate's exception: "<op>: supports() threw: <what>;
/// declining the arguments". kiln-conformance looks for these words in the log.
inline constexpr char kSupportsThrew[] = "supports() threw";

/// The `supports` that `lookup` hands out: the entry's own predicate behind the
/// exception firewall. An exception must not cross the C ABI; one escaping the
/// predicate is reported to supports_error_sink and declines the arguments (the op then
/// runs on the CPU plugin, and Kiln's fallback report shows it). It is a defect all the
/// same: kiln-conformance fails the plugin for it.
inline int32_t guarded_supports(void* context, const kiln_op_args* args) noexcept {
  const auto* entry = static_cast<const KernelEntry*>(context);
  try {
    return entry->supports(context, args);
  } catch (...) {
    if (SupportsErrorSink sink = supports_error_sink.load(std::memory_order_acquire)) {
      std::string message = kSupportsThrew;
      try {
        throw;
      } catch (const std::exception& e) {
        message += std::string(": ") + e.what();
      } catch (...) {
      }
      message += "; declining the arguments";
      sink(entry->name, message.c_str());
    }
    return 0;
  }
}

/// The kernels of one plugin (every one at version 1, as the whole catalogue is),
/// sorted by name for lookup. Entries live as long as the table, which is meant to
/// be a function-local static living for the process.
class KernelTable {
 public:
  /// Throws INTERNAL if two entries share a name (the plugin's load then fails with
  /// the name, rather than one of the two kernels being picked silently).
  explicit KernelTable(KernelList entries) : entries_(std::move(entries)) {
    std::sort(entries_.begin(), entries_.end(), [](const KernelEntry& a, const KernelEntry& b) {
      return std::strcmp(a.name, b.name) < 0;
    });
    const auto twice = std::adjacent_find(entries_.begin(), entries_.end(),
                                          [](const KernelEntry& a, const KernelEntry& b) {
                                            return std::strcmp(a.name, b.name) == 0;
                                          });
    KILN_SDK_CHECK(twice == entries_.end(), KILN_STATUS_INTERNAL, "two kernels are registered for ",
                   twice->name);
  }

  /// The entry for (name, version), or nullptr.
  const KernelEntry* find(const char* name, int32_t version) const {
    if (name == nullptr || version != 1) return nullptr;
    auto it = std::lower_bound(
        entries_.begin(), entries_.end(), name,
        [](const KernelEntry& e, const char* n) { return std::strcmp(e.name, n) < 0; });
    if (it == entries_.end() || std::strcmp(it->name, name) != 0) return nullptr;
    return &*it;
  }

  /// Answers `get_kernel`: fills the fields of `kernel` that fit in its struct_size;
  /// an unknown op or version leaves `run` NULL, which is not an error.
  void lookup(const char* name, int32_t version, kiln_kernel* kernel) const {
    KILN_SDK_CHECK(kernel != nullptr && name != nullptr, KILN_STATUS_INVALID_ARGUMENT,
                   "null name or kernel");
    KILN_SDK_CHECK(kernel->struct_size >= offsetof(kiln_kernel, run) + sizeof(kernel->run),
                   KILN_STATUS_ABI_MISMATCH, "kiln_kernel.struct_size ", kernel->struct_size,
                   " is too small to hold run");
    kiln_kernel full{};
    full.struct_size = kernel->struct_size;
    if (const KernelEntry* entry = find(name, version)) {
      full.run = entry->run;
      full.context = const_cast<KernelEntry*>(entry);
      full.supports = entry->supports != nullptr ? &guarded_supports : nullptr;
      full.flags = entry->flags;
    }
    std::memcpy(kernel, &full, std::min(kernel->struct_size, sizeof full));
  }

  const KernelList& entries() const noexcept { return entries_; }

 private:
  KernelList entries_;
};

}  // namespace kiln::sdk

#endif  // KILN_SDK_KERNEL_TABLE_H
