// kiln/sdk/table_entries.h — the table-entry checks, for plugins written against SDK 1.x:
// they now live one layer down, in kiln/base/table_entries.h, shared by Kiln's loader
// and the kit. This header keeps the kiln::sdk names.
#ifndef KILN_SDK_TABLE_ENTRIES_H
#define KILN_SDK_TABLE_ENTRIES_H

#include "kiln/base/table_entries.h"

namespace kiln::sdk {
using base::collectives_table_defects;
using base::plugin_table_defects;
using base::TableDefects;
}  // namespace kiln::sdk

#endif  // KILN_SDK_TABLE_ENTRIES_H
