// kiln/base/table_entries.h — which entries of a plugin's tables are required, checked.
//
// c_api.h marks every table entry (required) or (optional); some optional entries come
// in groups provided together or not at all. This header turns those marks into one
// check, used by Kiln's loader, by kiln-conformance, and by any vendor test that wants
// to refuse an incomplete table before Kiln does:
//
// @code
//   const kiln::base::TableDefects defects = kiln::base::plugin_table_defects(*api);
//   if (!defects.empty()) fail(defects.describe());
// @endcode
#ifndef KILN_BASE_TABLE_ENTRIES_H
#define KILN_BASE_TABLE_ENTRIES_H

#include <string>
#include <utility>
#include <vector>

#include "kiln/c_api.h"

namespace kiln::base {

/// Everything wrong with the entries of one table, not just the first defect.
struct TableDefects {
  std::vector<std::string> missing;  ///< required entries that are NULL, in table order
  std::vector<std::string> partial;  ///< optional groups provided in part, described

  bool empty() const noexcept { return missing.empty() && partial.empty(); }

  /// "required entries NULL: memory_stats, get_kernel; stream_create is set but
  /// stream_destroy is NULL (...)", or "" when empty().
  std::string describe() const {
    std::string out;
    if (!missing.empty()) {
      out = missing.size() == 1 ? "required entry NULL: " : "required entries NULL: ";
      for (size_t i = 0; i < missing.size(); ++i) out += (i ? ", " : "") + missing[i];
    }
    for (const std::string& p : partial) out += (out.empty() ? "" : "; ") + p;
    return out;
  }
};

/// The defects of a plugin table's entries. The caller has checked that the table is
/// an ABI 1.x table of at least KILN_PLUGIN_API_SIZE_1_0 bytes; entries of later minor
/// versions are read only where abi_minor and struct_size say they exist.
inline TableDefects plugin_table_defects(const kiln_plugin_api& api) {
  TableDefects d;
#define KILN_SDK_CHECK_REQUIRED(entry) \
  if (api.entry == nullptr) d.missing.emplace_back(#entry);
  KILN_PLUGIN_API_REQUIRED_ENTRIES(KILN_SDK_CHECK_REQUIRED)
#undef KILN_SDK_CHECK_REQUIRED
  if ((api.stream_create == nullptr) != (api.stream_destroy == nullptr))
    d.partial.push_back(std::string(api.stream_create ? "stream_create is set but stream_destroy"
                                                      : "stream_destroy is set but stream_create") +
                        " is NULL (the two are provided together or not at all)");
  const void* const events[] = {reinterpret_cast<const void*>(api.event_create),
                                reinterpret_cast<const void*>(api.event_destroy),
                                reinterpret_cast<const void*>(api.event_record),
                                reinterpret_cast<const void*>(api.stream_wait_event),
                                reinterpret_cast<const void*>(api.event_synchronize)};
  int provided = 0;
  for (const void* e : events) provided += e != nullptr;
  if (provided != 0 && provided != 5)
    d.partial.push_back(std::to_string(provided) +
                        " of the 5 event functions are set (event_create, event_destroy, "
                        "event_record, stream_wait_event and event_synchronize are provided "
                        "together or not at all)");
  // The 1.2 entries exist only in tables that say so and are large enough.
  if (api.abi_minor >= 2 && api.struct_size >= KILN_PLUGIN_API_SIZE_1_2) {
    if (api.event_elapsed != nullptr && provided != 5)
      d.partial.push_back("event_elapsed is set without the event functions it times");
    if ((api.range_push == nullptr) != (api.range_pop == nullptr))
      d.partial.push_back(std::string(api.range_push ? "range_push is set but range_pop"
                                                     : "range_pop is set but range_push") +
                          " is NULL (the two are provided together or not at all)");
  }
  return d;
}

/// The defects of a collectives extension table of at least
/// KILN_COLLECTIVES_API_SIZE_1_1 bytes (the caller checks the size).
inline TableDefects collectives_table_defects(const kiln_collectives_api& t) {
  TableDefects d;
  if (t.comm_init_group == nullptr && t.comm_init_rank == nullptr)
    d.missing.emplace_back("comm_init_group or comm_init_rank");
  const std::pair<const char*, const void*> required[] = {
      {"comm_destroy", reinterpret_cast<const void*>(t.comm_destroy)},
      {"all_reduce", reinterpret_cast<const void*>(t.all_reduce)},
      {"broadcast", reinterpret_cast<const void*>(t.broadcast)},
      {"all_gather", reinterpret_cast<const void*>(t.all_gather)},
      {"reduce_scatter", reinterpret_cast<const void*>(t.reduce_scatter)},
      {"barrier", reinterpret_cast<const void*>(t.barrier)}};
  for (const auto& [name, entry] : required)
    if (entry == nullptr) d.missing.emplace_back(name);
  return d;
}

}  // namespace kiln::base

#endif  // KILN_BASE_TABLE_ENTRIES_H
