// kiln::read_checkpoint and CheckpointFile::restore: the file is checked as a file,
// then every entry against its object (each object's own check_state_dict) and the
// copies setting it needs are made, and only then is anything set. Errors name the
// file, the entry and, where they can, the key.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "core/tensor_impl.h"
#include "io/checkpoint_format.h"
#include "kiln/amp.h"
#include "kiln/autograd.h"
#include "kiln/error.h"
#include "kiln/io/checkpoint.h"
#include "kiln/optim/optimizer.h"
#include "kiln/optim/scheduler.h"
#include "kiln/random.h"

namespace kiln {

namespace {

using namespace checkpoint_format;

// The longest message of an object's check passed on: module errors list keys, and
// the keys come from the file.
constexpr size_t kMaxMessage = 2000;

std::string shorten(const std::string& text, size_t limit = kMaxMessage) {
  return text.size() > limit ? text.substr(0, limit) + "..." : text;
}

template <typename... Args>
[[noreturn]] void refuse(const std::filesystem::path& path, Args&&... args) {
  KILN_FAIL("kiln::load: '", path.string(), "': ", std::forward<Args>(args)...);
}

bool holds_state_dict(std::string_view kind) {
  return kind == "module" || kind == "optimizer" || kind == "lr_scheduler" || kind == "grad_scaler";
}

bool known_kind(std::string_view kind) {
  return holds_state_dict(kind) || kind == "generator" || kind == "tensor" || kind == "int64" ||
         kind == "float64";
}

// A whole decimal uint64: no sign, spaces or trailing characters.
bool parse_uint64(const std::string& text, uint64_t& value) {
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && error == std::errc() && end == text.data() + text.size();
}

// The order restore() sets things in: optimizers last, so that their learning rates
// are the file's even where a scheduler's load_state_dict sets them too.
int apply_rank(std::string_view kind) {
  if (kind == "module") return 0;
  if (kind == "lr_scheduler") return 2;
  if (kind == "grad_scaler") return 3;
  if (kind == "optimizer") return 4;
  return 1;
}

// Rethrows an object's refusal with the file and entry in front, and the full key
// when the message (as passed on) quotes exactly one of the entry's keys. The quoted
// pieces are taken from the message once: an entry may have a million keys.
[[noreturn]] void rethrow_in_context(const std::filesystem::path& path,
                                     const CheckpointFile::Entry& entry, const Error& error) {
  const std::string inner = shorten(error.what());
  std::set<std::string_view> pieces;  // every 'piece' of the message
  for (size_t open = inner.find('\''); open != std::string::npos;) {
    const size_t close = inner.find('\'', open + 1);
    if (close == std::string::npos) break;
    pieces.insert(std::string_view(inner).substr(open + 1, close - open - 1));
    open = close;
  }
  const std::string* quoted = nullptr;
  int matches = 0;
  for (const auto& [key, t] : entry.state)
    if (pieces.count(key)) {
      quoted = &key;
      ++matches;
    }
  if (matches == 1) {
    const std::string full = holds_state_dict(entry.kind) ? entry.name + "." + *quoted : *quoted;
    refuse(path, "key '", excerpt(full, 200), "': ", inner);
  }
  refuse(path, "entry '", entry.name, "' (", entry.kind, "): ", inner);
}

// Where the object already holds a key, the file's tensor must have its dtype:
// load_state_dict would convert, and a checkpoint restores exactly.
void check_dtypes(const nn::StateDict& live, const nn::StateDict& given) {
  std::map<std::string, DType> own;
  for (const auto& [key, t] : live)
    if (t.defined()) own.emplace(key, t.dtype());
  for (const auto& [key, t] : given) {
    auto it = own.find(key);
    KILN_CHECK(it == own.end() || it->second == t.dtype(), "key '", key, "': ", t.dtype(),
               " in the file, but ", it->second, " here");
  }
}

GeneratorState generator_of(const std::filesystem::path& path, const io::Metadata& meta,
                            const std::string& name) {
  GeneratorState state;
  for (const char* field : {"seed", "offset"}) {
    const std::string key = meta_key(name, field);
    auto it = meta.find(key);
    if (it == meta.end()) refuse(path, "generator entry '", name, "' lacks metadata '", key, "'");
    uint64_t& value = field[0] == 's' ? state.seed : state.offset;
    if (!parse_uint64(it->second, value))
      refuse(path, "metadata '", key, "' is '", excerpt(it->second),
             "', not a whole number from 0 to 18446744073709551615");
  }
  return state;
}

// What restore() sets one object to, made before anything is set: the file's tensors
// on the devices (an optimizer's state: also in the dtypes) the object keeps them on,
// a generator's state, a value.
struct Prepared {
  nn::StateDict state;
  GeneratorState generator{};
  int64_t int_value = 0;
  double float_value = 0;
};

// The checks of one entry against its object, and the copies that restore() would
// otherwise make while setting it; changes nothing.
Prepared prepare_entry(const CheckpointEntry& item, const CheckpointFile::Entry& entry,
                       const std::string& saved_type) {
  const nn::StateDict& state = entry.state;
  Prepared out;
  NoGradGuard no_grad;
  std::visit(
      [&](auto target) {
        using T = decltype(target);
        if constexpr (std::is_same_v<T, nn::Module*>) {
          const nn::StateDict live = target->state_dict();
          check_dtypes(live, state);
          target->check_state_dict(state, /*strict=*/true);
          std::map<std::string_view, Device> devices;
          for (const auto& [key, t] : live)
            if (t.defined()) devices.emplace(key, t.device());
          for (const auto& [key, t] : state) {
            auto it = devices.find(key);
            out.state.emplace_back(key, it == devices.end() ? t : t.to(it->second));
          }
        } else if constexpr (std::is_same_v<T, optim::Optimizer*>) {
          KILN_CHECK(saved_type == target->name(), "it holds the state of ", excerpt(saved_type),
                     ", but the optimizer given is ", target->name());
          check_dtypes(target->state_dict(), state);
          target->check_state_dict(state);
          // Checked: every "state.<i>.<name>" has a parameter i.
          std::vector<Tensor> params;
          for (const auto& group : target->param_groups())
            for (const auto& p : group.params) params.push_back(p);
          for (const auto& [key, t] : state) {
            const size_t dot = key.find('.', 6);
            size_t i = 0;
            if (key.rfind("state.", 0) == 0 &&
                key.compare(dot + 1, std::string::npos, "step") != 0) {
              std::from_chars(key.data() + 6, key.data() + dot, i);
              out.state.emplace_back(key, t.to(params[i].device()).to(params[i].dtype()));
            } else {
              out.state.emplace_back(key, t);
            }
          }
        } else if constexpr (std::is_same_v<T, optim::LRScheduler*> ||
                             std::is_same_v<T, amp::GradScaler*>) {
          check_dtypes(target->state_dict(), state);
          target->check_state_dict(state);
          out.state = state;
        } else if constexpr (std::is_same_v<T, Tensor*>) {
          const Tensor& t = state.at(0).second;
          KILN_CHECK(
              !target->defined() || (target->shape() == t.shape() && target->dtype() == t.dtype()),
              "key '", entry.name, "': ", t.dtype(), " ", t.shape(), " in the file, but ",
              target->dtype(), " ", target->shape(), " here");
          KILN_CHECK(!target->defined() || !target->impl()->has_internal_overlap(),
                     "cannot write into the tensor given: its elements overlap (an expanded "
                     "view)");
          // Set: its own copy, not the file's tensor.
          out.state.emplace_back(entry.name,
                                 target->defined() ? t.to(target->device()) : t.clone());
        } else if constexpr (std::is_same_v<T, int64_t*> || std::is_same_v<T, double*>) {
          const DType want = std::is_same_v<T, int64_t*> ? DType::Int64 : DType::Float64;
          const Tensor& t = state.at(0).second;
          KILN_CHECK(t.dtype() == want && t.dim() == 0, "key '", entry.name, "': expected a 0-d ",
                     want, " tensor, got ", t.dtype(), " ", t.shape());
          if constexpr (std::is_same_v<T, int64_t*>)
            out.int_value = t.template item<int64_t>();
          else
            out.float_value = t.template item<double>();
        }
      },
      item.target());
  return out;
}

}  // namespace

CheckpointFile read_checkpoint(const std::filesystem::path& path) {
  io::SafetensorsFile raw;
  try {
    raw = io::load_safetensors(path);
  } catch (const Error& e) {
    // Its messages name the file; they may quote long names from it.
    KILN_FAIL("kiln::load: ", shorten(e.what()));
  }
  return parse_checkpoint(std::move(raw), path);
}

CheckpointFile parse_checkpoint(io::SafetensorsFile raw, const std::filesystem::path& path) {
  CheckpointFile out;
  out.path_ = path;
  for (auto& [key, value] : raw.metadata)
    (key.rfind(kPrefix, 0) == 0 ? out.kiln_metadata_ : out.metadata_).emplace(key, value);
  auto get = [&](const char* key) -> const std::string& {
    auto it = out.kiln_metadata_.find(key);
    if (it == out.kiln_metadata_.end())
      refuse(path, "not a Kiln checkpoint: its metadata has no '", key, "'");
    return it->second;
  };
  if (get(kFormatKey) != kFormat)
    refuse(path, "not a Kiln checkpoint: '", kFormatKey, "' is '", excerpt(get(kFormatKey)),
           "', not '", kFormat, "'");
  if (get(kVersionKey) != std::to_string(kVersion))
    refuse(path, "checkpoint format version '", excerpt(get(kVersionKey)),
           "' is not one this Kiln reads (", kVersion, ")");

  // kiln.entries: "name:kind,name:kind,...".
  const std::string& list = get(kEntriesKey);
  std::map<std::string, size_t, std::less<>> index;
  for (size_t begin = 0; !list.empty() && begin <= list.size();) {
    size_t end = std::min(list.find(',', begin), list.size());
    const std::string_view item = std::string_view(list).substr(begin, end - begin);
    const size_t colon = item.find(':');
    const std::string_view name = item.substr(0, colon);
    const std::string_view kind = colon == item.npos ? "" : item.substr(colon + 1);
    if (!valid_name(name) || !known_kind(kind))
      refuse(path, "'", kEntriesKey, "' holds '", excerpt(item),
             "', not name:kind with a name of 1 to ", kMaxNameLength,
             " of [A-Za-z0-9_-] and a known kind");
    if (!index.emplace(std::string(name), out.entries_.size()).second)
      refuse(path, "'", kEntriesKey, "' names entry '", name, "' twice");
    out.entries_.push_back({std::string(name), std::string(kind), {}});
    begin = end + 1;
  }

  // Every tensor belongs to one entry: "<name>.<key>" for state dicts, "<name>" alone
  // for values.
  for (auto& [key, t] : raw.tensors) {
    const size_t dot = key.find('.');
    auto it = index.find(std::string_view(key).substr(0, dot));
    if (it == index.end())
      refuse(path, "tensor '", excerpt(key), "' belongs to no entry of '", kEntriesKey, "' ('",
             excerpt(list, 200), "')");
    CheckpointFile::Entry& entry = out.entries_[it->second];
    if (entry.kind == "generator")
      refuse(path, "tensor '", excerpt(key), "' belongs to generator entry '", entry.name,
             "', which holds no tensors (its state is the metadata '", meta_key(entry.name, "seed"),
             "' and '", meta_key(entry.name, "offset"), "')");
    const bool state = holds_state_dict(entry.kind);
    if (state != (dot != std::string::npos))
      refuse(path, "tensor '", excerpt(key), "' does not fit entry '", entry.name, "', a ",
             entry.kind, state ? " (its keys are '<name>.<key>')" : " (stored as '<name>' alone)");
    entry.state.emplace_back(state ? key.substr(dot + 1) : key, std::move(t));
  }
  for (const auto& entry : out.entries_) {
    if (!holds_state_dict(entry.kind) && entry.kind != "generator" && entry.state.empty())
      refuse(path, "entry '", entry.name, "' (", entry.kind, ") has no tensor '", entry.name, "'");
    if (entry.kind == "generator") generator_of(path, out.kiln_metadata_, entry.name);
    if (entry.kind == "optimizer" && !out.kiln_metadata_.count(meta_key(entry.name, "type")))
      refuse(path, "optimizer entry '", entry.name, "' lacks metadata '",
             meta_key(entry.name, "type"), "'");
  }
  return out;
}

void CheckpointFile::restore(const std::vector<CheckpointItem>& items) const {
  check_names(("kiln::load: '" + path_.string() + "'").c_str(), items);
  auto names = [&] {
    std::string s;
    for (const auto& e : entries_) s += (s.empty() ? "" : ", ") + e.name + " (" + e.kind + ")";
    return s.empty() ? std::string("nothing") : excerpt(s, 500);
  };
  // Each item has an entry of its kind, and each entry an item.
  std::vector<const Entry*> matched;
  for (const auto& item : items) {
    auto it = std::find_if(entries_.begin(), entries_.end(),
                           [&](const Entry& e) { return e.name == item.name; });
    if (it == entries_.end())
      refuse(path_, "there is no entry '", item.name, "' to restore (the file holds ", names(),
             ")");
    if (it->kind != item.entry.kind())
      refuse(path_, "entry '", item.name, "' has kind '", it->kind,
             "' in the file, but the object given for it has kind '", item.entry.kind(), "'");
    matched.push_back(&*it);
  }
  for (const auto& entry : entries_)
    if (std::none_of(items.begin(), items.end(),
                     [&](const CheckpointItem& i) { return i.name == entry.name; }))
      refuse(path_, "entry '", entry.name, "' (", entry.kind,
             ") was not given anything to restore into");

  // Check and prepare everything, then set everything.
  std::vector<Prepared> prepared;
  prepared.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    const Entry& entry = *matched[i];
    if (entry.kind == "generator") {
      prepared.push_back({});
      prepared.back().generator = generator_of(path_, kiln_metadata_, entry.name);
      continue;
    }
    auto type = kiln_metadata_.find(meta_key(entry.name, "type"));
    try {
      prepared.push_back(
          prepare_entry(items[i].entry, entry, type == kiln_metadata_.end() ? "" : type->second));
    } catch (const Error& e) {
      rethrow_in_context(path_, entry, e);
    }
  }
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return apply_rank(matched[a]->kind) < apply_rank(matched[b]->kind);
  });
  for (size_t i : order) {
    const Prepared& ready = prepared[i];
    std::visit(
        [&](auto target) {
          using T = decltype(target);
          if constexpr (std::is_same_v<T, GlobalGenerator>) {
            set_generator_state(ready.generator);
          } else if constexpr (std::is_same_v<T, Tensor*>) {
            NoGradGuard no_grad;
            if (target->defined())
              target->copy_(ready.state.at(0).second);
            else
              *target = ready.state.at(0).second;
          } else if constexpr (std::is_same_v<T, int64_t*>) {
            *target = ready.int_value;
          } else if constexpr (std::is_same_v<T, double*>) {
            *target = ready.float_value;
          } else {
            target->load_state_dict(ready.state);
          }
        },
        items[i].entry.target());
  }
}

}  // namespace kiln
