// libFuzzer target: the loader's checks of a plugin's tables
// (kiln::detail::validate_plugin_table and validate_collectives_table,
// frontend/src/runtime/plugin_table.h) on tables built from the fuzz input.
//
// The input is read front to back, one field at a time; bytes past its end read as
// 0, and 0 always picks the well-formed choice, so the empty input is a complete,
// valid ABI 1.2 table of a plugin named "cpu" loaded from libkiln_cpu.so.
//
//   byte 0      struct_size: kSizes[b] for b < size of kSizes, else
//               sizeof(kiln_plugin_api) - 64 + (b - size of kSizes)
//   byte 1      abi_major: KILN_ABI_MAJOR, +1, 0, 0xffffffff by b % 4
//   byte 2      abi_minor: KILN_ABI_MINOR + b (mod 256)
//   byte 3, 4   the table's name, the file's name: kNames[b % N], where one choice
//               is NULL (table name only) and one takes a length byte and that many
//               input bytes
//   8 bytes     bit i set: entry i (from `describe` on) is NULL
//   byte        the collectives table: like byte 0 with kCollectiveSizes; 255: none
//   2 bytes     bit i set: collectives entry i is NULL
//
// Contract under test: the checks read only the fields that the table's struct_size
// (and ABI version) say it has — the bytes past struct_size are poisoned, so
// AddressSanitizer reports any read of them — and never crash; a table they accept
// really is complete and named as expected.
#include <kiln/c_api.h>
#include <sanitizer/asan_interface.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "runtime/plugin_table.h"

namespace {

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint64_t bits(int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= uint64_t{byte()} << (8 * i);
    return v;
  }
  std::string text() {
    const size_t n = byte();
    std::string s;
    while (s.size() < n && pos_ < size_) s += static_cast<char>(data_[pos_++]);
    return s;  // std::string keeps it NUL-terminated, with any embedded NULs
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

[[noreturn]] void fail(const char* why, const std::string& verdict) {
  std::fprintf(stderr, "fuzz_plugin_table: %s (verdict: '%s')\n", why, verdict.c_str());
  std::abort();
}

void dummy_entry() {}

// A table of `known` bytes (the layout this Kiln knows) that claims `size`, the bytes
// past `size` poisoned; a claim beyond `known` (a later minor version) is not backed
// by memory at all, so reading past `known` hits ASan's redzone. Entries from
// `first_entry` on are pointer slots, NULL where `null_bits` says, else dummy_entry.
class Table {
 public:
  Table(size_t size, size_t known, size_t first_entry, uint64_t null_bits)
      : size_(size), capacity_((known + 7) / 8 * 8), bytes_(new uint64_t[capacity_ / 8]()) {
    std::memcpy(data(), &size, sizeof size);  // struct_size comes first in every table
    void* entry = reinterpret_cast<void*>(&dummy_entry);
    for (size_t offset = first_entry, i = 0; offset + sizeof(void*) <= known;
         offset += sizeof(void*), ++i) {
      void* value = (i < 64 && (null_bits >> i) & 1) ? nullptr : entry;
      std::memcpy(data() + offset, &value, sizeof value);
    }
    // struct_size itself is always read; everything after what it claims is off limits.
    const size_t readable = std::max(size, sizeof(size_t));
    if (readable < capacity_) ASAN_POISON_MEMORY_REGION(data() + readable, capacity_ - readable);
  }
  ~Table() { ASAN_UNPOISON_MEMORY_REGION(data(), capacity_); }
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;

  char* data() { return reinterpret_cast<char*>(bytes_.get()); }
  // Writes a field that lies within the claimed size (a field past it stays unset).
  template <typename T>
  void set(size_t offset, const T& value) {
    if (offset + sizeof(T) <= std::max(size_, sizeof(size_t)) && offset + sizeof(T) <= capacity_)
      std::memcpy(data() + offset, &value, sizeof(T));
  }

 private:
  size_t size_;
  size_t capacity_;
  std::unique_ptr<uint64_t[]> bytes_;
};

size_t pick_size(uint8_t b, const size_t* sizes, size_t count, size_t full) {
  if (b < count) return sizes[b];
  const size_t offset = b - count;  // sizes around the full one, byte by byte
  return full >= 64 ? full - 64 + offset : offset;
}

bool required_entries_present(const kiln_plugin_api& api) {
  bool ok = true;
#define KILN_FUZZ_CHECK(entry) ok = ok && api.entry != nullptr;
  KILN_PLUGIN_API_REQUIRED_ENTRIES(KILN_FUZZ_CHECK)
#undef KILN_FUZZ_CHECK
  return ok;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader in(data, size);
  static const size_t kSizes[] = {sizeof(kiln_plugin_api),
                                  KILN_PLUGIN_API_SIZE_1_2,
                                  KILN_PLUGIN_API_SIZE_1_1,
                                  KILN_PLUGIN_API_SIZE_1_0,
                                  KILN_PLUGIN_API_SIZE_1_0 - 1,
                                  KILN_PLUGIN_API_SIZE_1_1 - 4,
                                  KILN_PLUGIN_API_SIZE_1_2 - 8,
                                  0,
                                  8,
                                  15,
                                  16,
                                  offsetof(kiln_plugin_api, name) + 4,
                                  sizeof(kiln_plugin_api) + 8,
                                  static_cast<size_t>(-1)};
  constexpr size_t kSizeCount = sizeof kSizes / sizeof kSizes[0];
  const size_t struct_size = pick_size(in.byte(), kSizes, kSizeCount, sizeof(kiln_plugin_api));
  const uint32_t majors[] = {KILN_ABI_MAJOR, KILN_ABI_MAJOR + 1, 0, 0xffffffffu};
  const uint32_t abi_major = majors[in.byte() % 4];
  const uint32_t abi_minor = (KILN_ABI_MINOR + in.byte()) % 256;

  const std::string long_name(300, 'a');
  std::string custom_table_name, custom_file_name;
  auto pick_name = [&](uint8_t b, std::string& custom, bool allow_null) -> const char* {
    const char* names[] = {"cpu",  "acme", "", "Cpu", "cp u", "a-b", "\xff\xfe", long_name.c_str(),
                           nullptr};
    constexpr size_t kNames = sizeof names / sizeof names[0];
    const size_t choice = b % (kNames + 1);
    if (choice == kNames) return (custom = in.text()).c_str();
    if (names[choice] == nullptr && !allow_null) return "cpu";
    return names[choice];
  };
  const char* table_name = pick_name(in.byte(), custom_table_name, true);
  const char* file_name_ptr = pick_name(in.byte(), custom_file_name, false);
  // The file's name may hold NULs when it is the custom one.
  const std::string_view file_name = file_name_ptr == custom_file_name.c_str()
                                         ? std::string_view(custom_file_name)
                                         : std::string_view(file_name_ptr);
  const uint64_t null_entries = in.bits(8);

  Table table(struct_size, sizeof(kiln_plugin_api), offsetof(kiln_plugin_api, describe),
              null_entries);
  table.set(offsetof(kiln_plugin_api, abi_major), abi_major);
  table.set(offsetof(kiln_plugin_api, abi_minor), abi_minor);
  table.set(offsetof(kiln_plugin_api, name), table_name);
  table.set(offsetof(kiln_plugin_api, version), "0.1.0");
  const auto* api = reinterpret_cast<const kiln_plugin_api*>(table.data());
  const std::string verdict = kiln::detail::validate_plugin_table(api, file_name);
  if (verdict.empty()) {
    // Accepted: then it is a complete 1.x table that calls itself what its file says.
    if (struct_size < KILN_PLUGIN_API_SIZE_1_0 || abi_major != KILN_ABI_MAJOR ||
        table_name == nullptr || file_name != table_name || *table_name == '\0' ||
        std::string_view(table_name).find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") !=
            std::string_view::npos)
      fail("accepted a table that is too small, of another ABI or misnamed", verdict);
    if (!required_entries_present(*api)) fail("accepted a table without a required entry", verdict);
  }
  if (kiln::detail::validate_plugin_table(nullptr, file_name).empty())
    fail("accepted no table at all", "");

  // The collectives extension table.
  static const size_t kCollectiveSizes[] = {sizeof(kiln_collectives_api),
                                            KILN_COLLECTIVES_API_SIZE_1_1,
                                            KILN_COLLECTIVES_API_SIZE_1_1 - 1,
                                            0,
                                            8,
                                            16,
                                            sizeof(kiln_collectives_api) + 8};
  constexpr size_t kCollectiveCount = sizeof kCollectiveSizes / sizeof kCollectiveSizes[0];
  const uint8_t choice = in.byte();
  const uint64_t null_collectives = in.bits(2);
  if (choice == 255) {
    if (!kiln::detail::validate_collectives_table(nullptr).empty())
      fail("refused the absence of a collectives table", "");
    return 0;
  }
  const size_t collectives_size =
      pick_size(choice, kCollectiveSizes, kCollectiveCount, sizeof(kiln_collectives_api));
  Table collectives(collectives_size, sizeof(kiln_collectives_api),
                    offsetof(kiln_collectives_api, comm_init_group), null_collectives);
  const auto* t = reinterpret_cast<const kiln_collectives_api*>(collectives.data());
  const std::string collectives_verdict = kiln::detail::validate_collectives_table(t);
  if (collectives_verdict.empty() &&
      (collectives_size < KILN_COLLECTIVES_API_SIZE_1_1 ||
       (t->comm_init_group == nullptr && t->comm_init_rank == nullptr) || !t->comm_destroy ||
       !t->all_reduce || !t->broadcast || !t->all_gather || !t->reduce_scatter || !t->barrier))
    fail("accepted an incomplete collectives table", collectives_verdict);
  return 0;
}
