// The ABI check CI runs on every build: the header being built must keep every
// promise ABI 1.0 made (api/README.md, "The compatibility promise"). It compares
// sizes, offsets, alignments and types of every 1.0 struct member, enum values,
// macros and function signatures between the frozen copy of the 1.0 header
// (tests/abi/v1.0) and api/include/kiln/c_api.h.
//
// A failure here means a change would break plugins already built against 1.0.
// Such a change needs a new major version (and a new frozen baseline), not an edit of
// the baseline.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <stdexcept>

#include "abi_layout.h"

namespace kiln::abi_test {
namespace {

using Kind = AbiEntry::Kind;

std::map<std::string, AbiEntry> by_name(const std::vector<AbiEntry>& rows) {
  std::map<std::string, AbiEntry> out;
  for (const AbiEntry& row : rows) out.emplace(row.name, row);
  return out;
}

uint64_t align_up(uint64_t value, uint64_t alignment) {
  return alignment == 0 ? value : (value + alignment - 1) / alignment * alignment;
}

TEST(AbiBaseline, ListsEveryFieldOfEveryFrozenStruct) {
  // The frozen rows of each struct, sorted by offset, must tile it: each field starts
  // where the previous one ended (rounded up to its alignment), and the last one
  // ends where the struct does (rounded up to the struct's alignment). A field
  // missing from abi_v1_0.def leaves a hole and fails here.
  const auto rows = frozen_abi_layout();
  std::map<std::string, std::vector<AbiEntry>> fields;
  for (const AbiEntry& row : rows)
    if (row.kind == Kind::Field) fields[row.owner].push_back(row);
  int structs = 0;
  for (const AbiEntry& row : rows) {
    if (row.kind != Kind::Struct && row.kind != Kind::FixedStruct) continue;
    ++structs;
    auto members = fields[row.name];
    ASSERT_FALSE(members.empty()) << row.name << " lists no fields";
    std::sort(members.begin(), members.end(),
              [](const AbiEntry& a, const AbiEntry& b) { return a.offset < b.offset; });
    uint64_t end = 0;
    for (const AbiEntry& m : members) {
      EXPECT_EQ(m.offset, align_up(end, m.alignment))
          << m.name << ": a field between it and the previous one is not listed";
      end = m.offset + m.size;
    }
    EXPECT_EQ(align_up(end, row.alignment), row.size)
        << row.name << ": fields after " << members.back().name << " are not listed";
  }
  EXPECT_EQ(structs, 9) << "the nine structs of ABI 1.0";
}

// Every way `current` breaks a promise `frozen` made, one message each.
std::vector<std::string> incompatibilities(const std::vector<AbiEntry>& frozen,
                                           const std::vector<AbiEntry>& current_rows) {
  const auto current = by_name(current_rows);
  std::vector<std::string> problems;
  auto report = [&](const AbiEntry& old, const std::string& what, auto was, auto is) {
    std::ostringstream out;
    out << old.name << ": " << what << " (1.0: " << was << ", now: " << is << ")";
    problems.push_back(out.str());
  };
  for (const AbiEntry& old : frozen) {
    auto it = current.find(old.name);
    if (it == current.end()) {
      problems.push_back(old.name + ": missing");
      continue;
    }
    const AbiEntry& now = it->second;
    switch (old.kind) {
      case Kind::Struct:
        // Structs that carry struct_size may grow, at the end only (their fields'
        // offsets are checked one by one), and keep their alignment.
        if (now.size < old.size) report(old, "shrank", old.size, now.size);
        if (now.alignment != old.alignment)
          report(old, "changed its alignment", old.alignment, now.alignment);
        break;
      case Kind::FixedStruct:
        // No struct_size: arrays of it are indexed with sizeof, so the size is final.
        if (now.size != old.size)
          report(old, "has no struct_size, so it may not grow", old.size, now.size);
        if (now.alignment != old.alignment)
          report(old, "changed its alignment", old.alignment, now.alignment);
        break;
      case Kind::Field:
      case Kind::UnionMember:
        if (now.offset != old.offset)
          report(old, "moved (fields are only appended)", old.offset, now.offset);
        if (now.size != old.size) report(old, "changed its size", old.size, now.size);
        if (now.alignment != old.alignment)
          report(old, "changed its alignment", old.alignment, now.alignment);
        if (now.text != old.text) report(old, "changed its type", old.text, now.text);
        break;
      case Kind::Enum:
      case Kind::Macro:
        if (now.value != old.value) report(old, "was renumbered", old.value, now.value);
        break;
      case Kind::MacroAtLeast:
        if (now.value < old.value) report(old, "went down", old.value, now.value);
        break;
      case Kind::String:
        if (now.text != old.text) report(old, "changed", old.text, now.text);
        break;
      case Kind::Type:
        if (now.text != old.text) report(old, "changed its signature", old.text, now.text);
        break;
    }
  }
  return problems;
}

TEST(AbiCompatibility, CurrentHeaderKeepsEveryPromiseOfVersion1_0) {
  const auto problems = incompatibilities(frozen_abi_layout(), current_abi_layout());
  std::ostringstream all;
  for (const std::string& p : problems) all << "\n  " << p;
  EXPECT_TRUE(problems.empty())
      << "api/include/kiln/c_api.h breaks ABI 1.0 (api/README.md, 'The compatibility "
         "promise'); such a change needs a new major version:"
      << all.str();
}

TEST(AbiCompatibility, TheCheckDetectsEachKindOfBreak) {
  // The comparison must be able to fail: one break of each kind, each reported.
  auto rows = current_abi_layout();
  auto row = [&](const std::string& name) -> AbiEntry& {
    auto it =
        std::find_if(rows.begin(), rows.end(), [&](const AbiEntry& r) { return r.name == name; });
    if (it == rows.end()) throw std::runtime_error("no row " + name);
    return *it;
  };
  row("kiln_plugin_api.allocate").offset += 8;         // an entry inserted before it
  row("kiln_tensor_view.ndim").text = "x";             // a field retyped
  row("KILN_DTYPE_BOOL").value = 9;                    // an enum renumbered
  row("kiln_attr").size += 8;                          // a fixed struct grown
  row("kiln_memory_stats").size -= 8;                  // a struct shrunk
  row("KILN_ABI_MINOR").value = -1;                    // the minor version lowered
  row("KILN_PLUGIN_ENTRY_SYMBOL").text = "kiln_init";  // the entry point renamed
  row("kiln_plugin_init_fn").text = "other";           // a signature changed
  EXPECT_EQ(incompatibilities(frozen_abi_layout(), rows).size(), 8u);
  // Growing a struct that carries struct_size, by appending, is allowed.
  auto grown = current_abi_layout();
  for (AbiEntry& r : grown)
    if (r.name == "kiln_plugin_api") r.size += 16;
  EXPECT_TRUE(incompatibilities(frozen_abi_layout(), grown).empty());
}

TEST(AbiCompatibility, VersionFieldsKeepTheirPlaceInEveryMajor) {
  // The one layout promise that spans majors: a loader of any major can read
  // struct_size, abi_major and abi_minor of a table or host description and refuse
  // politely (api/README.md).
  const auto current = by_name(current_abi_layout());
  for (const char* table : {"kiln_plugin_api", "kiln_host_api"}) {
    const std::string t = table;
    EXPECT_EQ(current.at(t + ".struct_size").offset, 0u) << t;
    EXPECT_EQ(current.at(t + ".abi_major").offset, sizeof(size_t)) << t;
    EXPECT_EQ(current.at(t + ".abi_minor").offset, sizeof(size_t) + 4) << t;
  }
}

}  // namespace
}  // namespace kiln::abi_test
