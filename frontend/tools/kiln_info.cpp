// kiln-info: what Kiln found on this machine — version, plugin search path, every
// plugin with its devices and declared ops, every candidate that failed to load and
// why, and the default device. Exits 1 when KILN_BACKEND names something unusable, 2
// on a wrong command line.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "kiln/kiln.h"

namespace {
std::string human_bytes(uint64_t b) {
  char buf[32];
  if (b >= (1ull << 30))
    std::snprintf(buf, sizeof buf, "%.1f GiB", b / double(1ull << 30));
  else if (b >= (1ull << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / double(1ull << 20));
  else
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
  return buf;
}

// One declared vendor op on one line: "acme.swish v1 (x) -> (y: shape of input 0);
// beta FLOAT (optional); dtypes float; gradient acme.swish_backward".
std::string describe_op(const kiln::OpSchema& op) {
  using Rule = kiln::OpSchema::ShapeRule;
  std::string line = op.name + " v" + std::to_string(op.version) + " (";
  for (size_t i = 0; i < op.inputs.size(); ++i) line += (i ? ", " : "") + op.inputs[i].name;
  line += ") -> (";
  for (size_t i = 0; i < op.outputs.size(); ++i) {
    const auto& out = op.outputs[i];
    line += (i ? ", " : "") + out.name;
    if (out.shape == Rule::SameAs) line += ": shape of input " + std::to_string(out.shape_input);
    if (out.shape == Rule::Broadcast) line += ": broadcast shape";
    if (out.shape == Rule::Scalar) line += ": scalar";
  }
  line += ")";
  for (const auto& a : op.attributes) {
    line += "; " + a.name + " ";
    line += a.type == kiln::OpSchema::AttributeType::Int     ? "INT"
            : a.type == kiln::OpSchema::AttributeType::Float ? "FLOAT"
                                                             : "STRING";
    if (a.optional) line += " (optional)";
  }
  line += "; dtypes " + op.dtype_class;
  if (!op.gradient.empty()) line += "; gradient " + op.gradient;
  return line;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "kiln-info: what Kiln found on this machine: its version, the plugin search path, every\n"
      "plugin with its devices and declared ops, every plugin candidate that failed to load\n"
      "and why, and the default device.\n\n"
      "Environment: KILN_PLUGIN_PATH (extra plugin folders, searched first), KILN_BACKEND\n"
      "(the default device, e.g. cuda:0), KILN_LOG_LEVEL.\n"
      "Exit status: 0, or 1 when KILN_BACKEND names an unusable device, 2 on a wrong command line.",
      "kiln-info"};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help prints usage and exits 0
  }
  std::cout << "Kiln " << kiln::version() << " (plugin ABI " << kiln::abi_version() << ")\n\n";
  std::cout << "Plugin search path (KILN_PLUGIN_PATH, then the folder beside libkiln):\n";
  for (const auto& dir : kiln::plugin_search_path()) std::cout << "  " << dir << "\n";

  auto plugins = kiln::loaded_plugins();
  const std::vector<kiln::OpSchema> declared_ops = kiln::vendor_ops();
  std::cout << "\nPlugins loaded: " << plugins.size() << "\n";
  for (const auto& p : plugins) {
    std::cout << "  " << p.name << " " << p.version << " (ABI " << p.abi_major << "." << p.abi_minor
              << ")  " << p.path << "\n";
    if (!p.description.empty()) std::cout << "    " << p.description << "\n";
    if (p.devices.empty())
      std::cout << "    no devices\n";
    else
      std::cout << "    collectives: "
                << (p.devices[0].collectives ? "the plugin's own" : "through the host (fallback)")
                << "; peer copies: " << (p.devices[0].peer_copies ? "yes" : "through the host")
                << "\n";
    for (const auto& d : p.devices) {
      std::cout << "    " << d.device.str() << ": " << d.name << " [" << d.kind;
      if (d.compute_capability_major)
        std::cout << ", compute " << d.compute_capability_major << "."
                  << d.compute_capability_minor;
      if (d.multiprocessor_count)
        std::cout << ", " << d.multiprocessor_count
                  << (d.kind == "cpu" ? " threads" : " multiprocessors");
      if (d.total_memory_bytes) {
        // 0 free means unknown: a GPU plugin measures it only once the device is open.
        std::cout << ", " << human_bytes(d.total_memory_bytes) << " total, ";
        if (d.free_memory_bytes)
          std::cout << human_bytes(d.free_memory_bytes) << " free";
        else
          std::cout << "free memory unknown until the device is opened";
      }
      if (d.host_accessible) std::cout << ", host-accessible memory";
      std::cout << "]\n";
    }
    // Code built but never run on the plugin's hardware ("kiln.staged.v1").
    if (!p.staged.empty()) {
      size_t on = 0;
      for (const auto& s : p.staged) on += s.enabled;
      std::cout << "    staged, never ran on its hardware: " << p.staged.size() << " (" << on
                << " switched on)\n";
      for (const auto& s : p.staged)
        std::cout << "      " << s.name << " [" << s.kind << (s.enabled ? ", on" : ", off") << "] "
                  << s.summary << "; covered by " << s.test << "\n";
    }
    // Ops outside the catalogue that the plugin declared ("kiln.op_schemas.v1").
    size_t count = 0;
    for (const auto& op : declared_ops) count += op.plugin == p.name;
    if (count) std::cout << "    declared ops: " << count << "\n";
    for (const auto& op : declared_ops)
      if (op.plugin == p.name) std::cout << "      " << describe_op(op) << "\n";
  }

  auto failures = kiln::plugin_load_failures();
  std::cout << "\nCandidates that did not load: " << failures.size() << "\n";
  for (const auto& f : failures) std::cout << "  " << f.path << "\n    " << f.reason << "\n";

  // A long value is cut, as libkiln's messages cut it.
  std::string backend = std::getenv("KILN_BACKEND") ? std::getenv("KILN_BACKEND") : "(unset)";
  if (backend.size() > 200)
    backend = backend.substr(0, 200) + "... (" + std::to_string(backend.size() - 200) +
              " more characters)";
  std::cout << "\nKILN_BACKEND=" << backend << "\n";
  try {
    kiln::Device d = kiln::default_device();
    std::cout << "Default device: " << d.str() << "\n";
  } catch (const kiln::Error& e) {
    std::cout << "Default device: unusable\n  " << e.what() << "\n";
    return 1;
  }
  return 0;
}
