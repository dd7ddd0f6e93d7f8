// ABI checks of the plugin as a whole: entry point, versions, devices, kernel lookups.
#include <cstring>
#include <filesystem>
#include <set>

#include <kiln/sdk/elf_symbols.h>
#include <kiln/sdk/table_entries.h>

#include "abi_check.h"
#include "abi_checks.h"
#include "abi_common.h"

namespace kiln::conformance {

namespace {

bool valid_backend_name(const char* name) {
  if (name == nullptr || *name == '\0') return false;
  for (const char* c = name; *c; ++c)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_')) return false;
  return true;
}

}  // namespace

void abi_entry(const AbiTarget& target, Reporter& reporter) {
  AbiSession session(target.path);
  {
    Check check(reporter, "entry point");
    if (!session.error().empty()) {
      check.fail(session.error());
      return;
    }
    check.note(std::string("exports ") + KILN_PLUGIN_ENTRY_SYMBOL);
  }
  {
    // Other exported symbols can collide with those of other plugins or of the host
    // (two libstdc++ inline copies, two SDK versions); kiln_add_plugin hides them.
    Check check(reporter, "exported symbols");
    if (const auto symbols = kiln::sdk::elf_defined_symbols(target.path)) {
      std::vector<std::string> others;
      for (const kiln::sdk::ElfSymbol& s : *symbols)
        if (s.exported && s.name != KILN_PLUGIN_ENTRY_SYMBOL) others.push_back(s.name);
      if (!others.empty()) {
        std::string some;
        for (size_t i = 0; i < others.size() && i < 3; ++i) some += (i ? ", " : "") + others[i];
        check.warn(std::to_string(others.size()) + " symbols besides " + KILN_PLUGIN_ENTRY_SYMBOL +
                   " are exported (e.g. " + some +
                   "); build with kiln_add_plugin, which hides them");
      }
      check.note(std::string("only ") + KILN_PLUGIN_ENTRY_SYMBOL);
    } else {
      check.note("not a 64-bit ELF file: not inspected");
    }
  }
  const HostApi host;
  const kiln_plugin_api* api = nullptr;
  {
    Check check(reporter, "kiln_plugin_init");
    const Outcome outcome = session.init(host.get());
    if (!check.expect_ok(outcome, "kiln_plugin_init with an ABI " + std::to_string(KILN_ABI_MAJOR) +
                                      "." + std::to_string(KILN_ABI_MINOR) + " host"))
      return;
    api = session.api();
    if (api->struct_size < offsetof(kiln_plugin_api, abi_minor) + sizeof(uint32_t)) {
      check.fail("the table's struct_size " + std::to_string(api->struct_size) +
                 " is too small to hold the ABI version");
      return;
    }
    reporter.fact("abi", std::to_string(api->abi_major) + "." + std::to_string(api->abi_minor));
    if (api->abi_major != KILN_ABI_MAJOR) {
      check.fail("the plugin speaks ABI " + std::to_string(api->abi_major) + "." +
                 std::to_string(api->abi_minor) + "; this Kiln speaks " +
                 std::to_string(KILN_ABI_MAJOR) + "." + std::to_string(KILN_ABI_MINOR) +
                 " (a different major version: rebuild the plugin against this Kiln)");
      return;
    }
    if (api->struct_size < KILN_PLUGIN_API_SIZE_1_0) {
      check.fail("the table's struct_size " + std::to_string(api->struct_size) +
                 " is smaller than ABI 1.0's " + std::to_string(KILN_PLUGIN_API_SIZE_1_0));
      return;
    }
    check.note("ABI " + std::to_string(api->abi_major) + "." + std::to_string(api->abi_minor) +
               ", table of " + std::to_string(api->struct_size) + " bytes");
  }
  {
    Check check(reporter, "name and version");
    if (!valid_backend_name(api->name)) {
      check.fail(std::string("backend name '") + (api->name ? api->name : "(null)") +
                 "' is not [a-z0-9_]+");
    } else {
      reporter.fact("name", api->name);
      const std::string expected =
          std::string(KILN_PLUGIN_FILE_PREFIX) + api->name + KILN_PLUGIN_FILE_SUFFIX;
      const std::string file = std::filesystem::path(target.path).filename().string();
      if (file != expected)
        check.fail("the file is named '" + file + "' but the plugin calls itself '" + api->name +
                   "': Kiln's loader only loads it as '" + expected + "'");
    }
    if (api->version == nullptr)
      check.fail("the table's version string is NULL");
    else
      reporter.fact("version", api->version);
    check.note(std::string(api->name ? api->name : "?") + " " +
               (api->version ? api->version : "?"));
  }
  {
    Check check(reporter, "required and optional entries");
    // The same check as Kiln's loader (kiln/sdk/table_entries.h), one line per defect.
    const kiln::sdk::TableDefects defects = kiln::sdk::plugin_table_defects(*api);
    for (const std::string& entry : defects.missing)
      check.fail("required entry '" + entry + "' is NULL");
    for (const std::string& group : defects.partial) check.fail(group);
    const bool events = api->event_create != nullptr;
    if (api->describe != nullptr && api->describe(api->context) == nullptr)
      check.fail("describe() returned NULL (return \"\" when there is nothing to say)");
    check.note(events ? "streams and events provided" : "no events (a synchronous plugin)");
    if (check.failed()) return;
  }
  {
    Check check(reporter, "device_count");
    int32_t first = -1, second = -1;
    if (!check.expect_ok(session.take(api->device_count(api->context, &first)), "device_count"))
      return;
    check.expect_ok(session.take(api->device_count(api->context, &second)), "device_count (again)");
    if (first != second)
      check.fail("device_count answered " + std::to_string(first) + ", then " +
                 std::to_string(second));
    reporter.fact("device_count", first);
    if (first < 1) {
      const char* why = api->describe ? api->describe(api->context) : nullptr;
      check.fail("the plugin has " + std::to_string(first) + " devices" +
                 (why && *why ? std::string(": ") + why : std::string()) +
                 "; there is nothing to certify");
    } else if (target.device >= first) {
      check.fail("--device " + std::to_string(target.device) + " is out of range: the plugin has " +
                 std::to_string(first) + (first == 1 ? " device" : " devices"));
    }
    check.note(std::to_string(first) + (first == 1 ? " device" : " devices"));
  }
  report_status_defects(session, reporter);
}

void abi_versions(const AbiTarget& target, Reporter& reporter) {
  AbiSession session(target.path);
  if (!session.error().empty()) return skip_group(reporter, "versions", session.error());
  {
    Check check(reporter, "refuses bad init arguments");
    const HostApi host;
    const kiln_plugin_api* api = nullptr;
    check.expect_error(session.take(session.entry()(nullptr, &api)), KILN_STATUS_INVALID_ARGUMENT,
                       "kiln_plugin_init(NULL host)");
    check.expect_error(session.take(session.entry()(host.get(), nullptr)),
                       KILN_STATUS_INVALID_ARGUMENT, "kiln_plugin_init(NULL table pointer)");
  }
  {
    Check check(reporter, "refuses another ABI major");
    const HostApi foreign(KILN_ABI_MAJOR + 1, 0);
    const Outcome outcome = session.init(foreign.get());
    const std::string call =
        "kiln_plugin_init with an ABI " + std::to_string(KILN_ABI_MAJOR + 1) + ".0 host";
    check.expect_error(outcome, KILN_STATUS_ABI_MISMATCH, call);
    if (!outcome.ok() &&
        outcome.message.find(std::to_string(KILN_ABI_MAJOR + 1) + ".") == std::string::npos)
      check.warn(call + ": the message should name both versions, got \"" + outcome.message + "\"");
    if (!outcome.ok()) check.note("\"" + outcome.message + "\"");
  }
  {
    Check check(reporter, "accepts a later ABI minor");
    // A loader of a later minor passes a larger host struct: the plugin must accept it
    // and read only the fields it knows.
    const HostApi later(KILN_ABI_MAJOR, KILN_ABI_MINOR + 1, 64);
    if (check.expect_ok(session.init(later.get()),
                        "kiln_plugin_init with an ABI " + std::to_string(KILN_ABI_MAJOR) + "." +
                            std::to_string(KILN_ABI_MINOR + 1) + " host (64 bytes larger)")) {
      int32_t count = -1;
      check.expect_ok(session.take(session.api()->device_count(session.api()->context, &count)),
                      "device_count after that");
      check.note("host struct of " + std::to_string(sizeof(kiln_host_api) + 64) +
                 " bytes accepted");
    }
  }
  report_status_defects(session, reporter);
}

void abi_devices(const AbiTarget& target, Reporter& reporter) {
  AbiSession session(target.path);
  if (!start_session(session, target, reporter, "devices", /*open_device=*/false)) return;
  const kiln_plugin_api* api = session.api();
  int32_t count = 0;
  session.take(api->device_count(api->context, &count));
  {
    Check check(reporter, "device_count(NULL)");
    check.expect_error(session.take(api->device_count(api->context, nullptr)),
                       KILN_STATUS_INVALID_ARGUMENT, "device_count(NULL)");
  }
  {
    Check check(reporter, "device properties");
    kiln_device_properties a{}, b{};
    a.struct_size = b.struct_size = sizeof a;
    const int32_t index = target.device;
    if (!check.expect_ok(session.take(api->device_get_properties(api->context, index, &a)),
                         "device_get_properties"))
      return;
    session.take(api->device_get_properties(api->context, index, &b));
    if (a.struct_size != sizeof a) check.fail("the plugin changed the caller's struct_size");
    if (strnlen(a.name, sizeof a.name) == sizeof a.name)
      check.fail("name is not NUL-terminated");
    else if (a.name[0] == '\0')
      check.fail("name is empty");
    if (a.kind < KILN_DEVICE_KIND_CPU || a.kind > KILN_DEVICE_KIND_ACCELERATOR)
      check.fail("kind " + std::to_string(a.kind) + " is not a kiln_device_kind");
    if (a.total_memory_bytes != 0 && a.free_memory_bytes > a.total_memory_bytes)
      check.fail("free_memory_bytes " + std::to_string(a.free_memory_bytes) +
                 " exceeds total_memory_bytes " + std::to_string(a.total_memory_bytes));
    if (a.memory_alignment & (a.memory_alignment - 1))
      check.fail("memory_alignment " + std::to_string(a.memory_alignment) +
                 " is not a power of two");
    // Everything but the free memory must be the same on every call.
    b.free_memory_bytes = a.free_memory_bytes;
    if (std::memcmp(&a, &b, sizeof a) != 0)
      check.fail("two calls returned different properties (only free_memory_bytes may change)");
    // An older caller's smaller struct: fields that fit are filled, nothing else written.
    SentinelBox<kiln_device_properties> small(offsetof(kiln_device_properties, kind) +
                                              sizeof(int32_t));
    if (check.expect_ok(session.take(api->device_get_properties(api->context, index, small.get())),
                        "device_get_properties with a smaller struct_size")) {
      if (!small.tail_intact())
        check.fail("device_get_properties wrote past the caller's struct_size");
      else if (small.get()->kind != a.kind ||
               std::strncmp(small.get()->name, a.name, sizeof a.name))
        check.fail("a smaller struct_size got different name/kind");
    }
    check.expect_error(session.take(api->device_get_properties(api->context, count, &b)),
                       KILN_STATUS_INVALID_ARGUMENT,
                       "device_get_properties(" + std::to_string(count) + "), out of range");
    check.expect_error(session.take(api->device_get_properties(api->context, -1, &b)),
                       KILN_STATUS_INVALID_ARGUMENT, "device_get_properties(-1)");
    check.expect_error(session.take(api->device_get_properties(api->context, index, nullptr)),
                       KILN_STATUS_INVALID_ARGUMENT, "device_get_properties(NULL)");
    reporter.fact("device_name", std::string(a.name, strnlen(a.name, sizeof a.name)));
    check.note(std::string("\"") + std::string(a.name, strnlen(a.name, sizeof a.name)) + "\"");
  }
  {
    Check check(reporter, "device_open");
    kiln_device *first = nullptr, *second = nullptr, *bad = nullptr;
    check.expect_ok(session.take(api->device_open(api->context, target.device, &first)),
                    "device_open");
    check.expect_ok(session.take(api->device_open(api->context, target.device, &second)),
                    "device_open (again)");
    if (first == nullptr) check.fail("device_open returned a NULL handle");
    if (first != second) check.fail("opening a device twice returned two different handles");
    check.expect_error(session.take(api->device_open(api->context, count, &bad)),
                       KILN_STATUS_INVALID_ARGUMENT,
                       "device_open(" + std::to_string(count) + "), out of range");
    check.expect_error(session.take(api->device_open(api->context, -1, &bad)),
                       KILN_STATUS_INVALID_ARGUMENT, "device_open(-1)");
    check.expect_error(session.take(api->device_open(api->context, target.device, nullptr)),
                       KILN_STATUS_INVALID_ARGUMENT, "device_open(NULL)");
  }
  report_status_defects(session, reporter);
}

void abi_kernels(const AbiTarget& target, Reporter& reporter) {
  AbiSession session(target.path);
  if (!start_session(session, target, reporter, "kernels", /*open_device=*/true)) return;
  const kiln_plugin_api* api = session.api();
  kiln_device* device = session.device();
  nlohmann::json provided = nlohmann::json::array();
  {
    Check check(reporter, "get_kernel lookups");
    const uint32_t known_flags = KILN_KERNEL_STRIDED_INPUTS | KILN_KERNEL_STRIDED_OUTPUTS;
    for (const std::string& op : target.ops) {
      reporter.begin("abi: get_kernel(" + op + ")");
      kiln_kernel kernel{};
      kernel.struct_size = sizeof kernel;
      const Outcome outcome = session.take(api->get_kernel(device, op.c_str(), 1, &kernel));
      if (!outcome.ok()) {
        check.fail("get_kernel(" + op +
                   ") failed (an op that is not provided is not an error): " + outcome.message);
        continue;
      }
      if (kernel.struct_size != sizeof kernel)
        check.fail("get_kernel(" + op + ") changed the caller's struct_size");
      if (kernel.run == nullptr) continue;
      if (kernel.flags & ~known_flags)
        check.warn("get_kernel(" + op + ") sets unknown flag bits " + std::to_string(kernel.flags));
      provided.push_back(
          {{"name", op}, {"flags", kernel.flags}, {"supports", kernel.supports != nullptr}});
    }
    reporter.begin("abi: get_kernel of unknown ops");
    kiln_kernel kernel{};
    kernel.struct_size = sizeof kernel;
    if (check.expect_ok(session.take(api->get_kernel(device, "kiln.no_such_op", 1, &kernel)),
                        "get_kernel(\"kiln.no_such_op\")") &&
        kernel.run != nullptr)
      check.fail("get_kernel(\"kiln.no_such_op\") returned a kernel");
    kernel = kiln_kernel{};
    kernel.struct_size = sizeof kernel;
    if (check.expect_ok(session.take(api->get_kernel(device, "kiln.add", 9999, &kernel)),
                        "get_kernel(\"kiln.add\", version 9999)") &&
        kernel.run != nullptr)
      check.fail(
          "get_kernel(\"kiln.add\", version 9999) returned a kernel for a version that "
          "does not exist");
    check.expect_error(session.take(api->get_kernel(device, nullptr, 1, &kernel)),
                       KILN_STATUS_INVALID_ARGUMENT, "get_kernel(NULL name)");
    check.expect_error(session.take(api->get_kernel(device, "kiln.add", 1, nullptr)),
                       KILN_STATUS_INVALID_ARGUMENT, "get_kernel(NULL kernel)");
    if (!provided.empty()) {
      // An older caller's smaller kiln_kernel: run fits, nothing past it may be written.
      const std::string op = provided[0]["name"];
      SentinelBox<kiln_kernel> small(offsetof(kiln_kernel, run) + sizeof(kiln_kernel_fn));
      if (check.expect_ok(session.take(api->get_kernel(device, op.c_str(), 1, small.get())),
                          "get_kernel(" + op + ") with a smaller struct_size")) {
        if (!small.tail_intact())
          check.fail("get_kernel wrote past the caller's struct_size");
        else if (small.get()->run == nullptr)
          check.fail("get_kernel(" + op + ") with a smaller struct_size returned no kernel");
      }
    }
    check.note(std::to_string(provided.size()) + " of " + std::to_string(target.ops.size()) +
               " catalogue ops provided");
  }
  reporter.fact("provided", provided);
  report_status_defects(session, reporter);
}

}  // namespace kiln::conformance
