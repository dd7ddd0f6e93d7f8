// kiln::save and the entry types: every item's state under "<name>.", Kiln's typed
// metadata beside it, one atomic safetensors write.
#include "kiln/io/checkpoint.h"

#include <set>

#include "io/checkpoint_format.h"
#include "kiln/amp.h"
#include "kiln/error.h"
#include "kiln/optim/optimizer.h"
#include "kiln/optim/scheduler.h"
#include "kiln/random.h"

namespace kiln {

namespace {
template <typename... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <typename... F>
Overloaded(F...) -> Overloaded<F...>;
}  // namespace

nn::Module* CheckpointEntry::checked(nn::Module* module) {
  KILN_CHECK(module != nullptr, "kiln checkpoint entry: the module pointer is null");
  return module;
}

const char* CheckpointEntry::kind() const {
  return std::visit(
      Overloaded{[](nn::Module*) { return "module"; },
                 [](optim::Optimizer*) { return "optimizer"; },
                 [](optim::LRScheduler*) { return "lr_scheduler"; },
                 [](amp::GradScaler*) { return "grad_scaler"; },
                 [](GlobalGenerator) { return "generator"; }, [](Tensor*) { return "tensor"; },
                 [](int64_t*) { return "int64"; }, [](double*) { return "float64"; }},
      target_);
}

namespace checkpoint_format {

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string excerpt(std::string_view text, size_t limit) {
  std::string out;
  for (char c : text.substr(0, limit)) {
    const auto u = static_cast<unsigned char>(c);
    out += u < 0x20 || u == 0x7f ? '?' : c;
  }
  if (text.size() > limit) out += "...";
  return out;
}

void check_names(const char* who, const std::vector<CheckpointItem>& items) {
  std::set<std::string> seen;
  for (const auto& item : items) {
    KILN_CHECK(valid_name(item.name), who, ": entry name '", excerpt(item.name), "' must be 1 to ",
               kMaxNameLength, " letters, digits, '_' or '-'");
    KILN_CHECK(seen.insert(item.name).second, who, ": entry '", item.name, "' is given twice");
  }
}

}  // namespace checkpoint_format

void save(const std::vector<CheckpointItem>& items, const std::filesystem::path& path,
          const io::Metadata& metadata) {
  using namespace checkpoint_format;
  check_names("kiln::save", items);
  io::Metadata meta;
  for (const auto& [key, value] : metadata) {
    KILN_CHECK(key.rfind(kPrefix, 0) != 0, "kiln::save: metadata key '", excerpt(key),
               "' starts with '", kPrefix, "', which is Kiln's own");
    meta.emplace(key, value);
  }
  io::NamedTensors tensors;
  std::string entries;
  for (const auto& item : items) {
    const std::string& name = item.name;
    auto add_state = [&](const nn::StateDict& state) {
      for (const auto& [key, t] : state) tensors.emplace_back(name + "." + key, t);
    };
    std::visit(
        Overloaded{
            [&](nn::Module* m) { add_state(m->state_dict()); },
            [&](optim::Optimizer* o) {
              add_state(o->state_dict());
              meta[meta_key(name, "type")] = o->name();
            },
            [&](optim::LRScheduler* s) { add_state(s->state_dict()); },
            [&](amp::GradScaler* s) { add_state(s->state_dict()); },
            [&](GlobalGenerator) {
              const GeneratorState g = generator_state();
              meta[meta_key(name, "seed")] = std::to_string(g.seed);
              meta[meta_key(name, "offset")] = std::to_string(g.offset);
            },
            [&](Tensor* t) {
              KILN_CHECK(t->defined(), "kiln::save: tensor entry '", name, "' is undefined");
              tensors.emplace_back(name, *t);
            },
            [&](int64_t* v) { tensors.emplace_back(name, scalar_tensor(*v, DType::Int64)); },
            [&](double* v) { tensors.emplace_back(name, scalar_tensor(*v, DType::Float64)); }},
        item.entry.target());
    entries += (entries.empty() ? "" : ",") + name + ":" + item.entry.kind();
  }
  meta[kFormatKey] = kFormat;
  meta[kVersionKey] = std::to_string(kVersion);
  meta[kEntriesKey] = entries;
  io::save_safetensors(path, tensors, meta);  // atomic; its errors name the path
}

io::Metadata load(const std::vector<CheckpointItem>& items, const std::filesystem::path& path) {
  CheckpointFile file = read_checkpoint(path);
  file.restore(items);
  return file.metadata();
}

}  // namespace kiln
