#include "checkpoint.h"

#include <kiln/error.h>
#include <kiln/kiln.h>

#include <charconv>
#include <exception>
#include <limits>
#include <sstream>
#include <string>

namespace kiln::train {

namespace {

using json = nlohmann::json;

// The longest message passed on from libkiln about a checkpoint (load_safetensors,
// load_state_dict), which may quote names from the file.
constexpr size_t kMaxMessage = 2000;

// At most `limit` characters of `text`, for messages about untrusted input (a
// nlohmann parse error quotes the whole token it was reading, which may be huge).
std::string shorten(const std::string& text, size_t limit = 200) {
  return text.size() > limit ? text.substr(0, limit) + "..." : text;
}

// At most `limit` characters of `value` printed, control characters escaped.
std::string excerpt(const json& value, size_t limit = 200) {
  return shorten(value.dump(-1, ' ', false, json::error_handler_t::replace), limit);
}

// Parses JSON that kiln-train wrote into a checkpoint's metadata. A file may be
// hostile: nesting beyond what kiln-train writes is refused while parsing, before a
// deep tree exists that building, printing or freeing would recurse through.
json parse_metadata_json(const Args& a, const std::string& key, const std::string& text) {
  struct TooDeep {};
  try {
    // `depth` counts the containers around the event; a container's start is itself
    // one level deeper.
    return json::parse(text, [](int depth, json::parse_event_t event, json&) {
      const bool opens =
          event == json::parse_event_t::object_start || event == json::parse_event_t::array_start;
      if (depth + (opens ? 1 : 0) > kMaxMetadataDepth) throw TooDeep{};
      return true;
    });
  } catch (const TooDeep&) {
    KILN_FAIL("--resume: ", a.checkpoint, ": its '", key, "' metadata nests deeper than ",
              kMaxMetadataDepth, " levels; it is not a kiln-train checkpoint");
  } catch (const json::exception& e) {
    KILN_FAIL("--resume: ", a.checkpoint, ": its '", key, "' metadata is not valid JSON (",
              shorten(e.what()), ")");
  }
}

// A whole decimal number in [min, max]; spaces, '+' or trailing characters are
// refused, and so is "-1" for an unsigned key (std::stoull made it 18446744073709551615).
template <typename Int>
Int parse_integer(const Args& a, const std::string& key, const std::string& text, Int min,
                  Int max) {
  Int value{};
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  KILN_CHECK(!text.empty() && error == std::errc() && end == text.data() + text.size() &&
                 value >= min && value <= max,
             "--resume: ", a.checkpoint, ": its '", key, "' metadata ", excerpt(json(text), 60),
             " is not a whole number from ", min, " to ", max);
  return value;
}

}  // namespace

json History::to_json() const {
  return {{"train_loss", train_loss}, {"test_accuracy", test_accuracy}, {"seconds", seconds}};
}

History History::from_json(const json& j) {
  History h;
  h.train_loss = j.at("train_loss").get<std::vector<double>>();
  h.test_accuracy = j.at("test_accuracy").get<std::vector<double>>();
  h.seconds = j.at("seconds").get<std::vector<double>>();
  return h;
}

json run_identity(const Args& a) {
  return {{"model", a.model},
          {"optimizer", a.optimizer},
          {"schedule", a.schedule},
          {"epochs", a.epochs},
          {"batch_size", a.batch_size},
          {"lr", a.lr},
          {"weight_decay", a.weight_decay},
          {"dropout", a.dropout},
          {"label_smoothing", a.label_smoothing},
          {"seed", a.seed},
          {"batch_norm", !a.no_batch_norm},
          {"augment", !a.no_augment},
          {"limit_batches", a.limit_batches},
          {"precision", a.precision}};
}

namespace {
// The entries of a kiln-train checkpoint (examples/train/checkpoint.h).
std::vector<CheckpointItem> entries(nn::Module& model, optim::Optimizer& opt,
                                    optim::LRScheduler* schedule, amp::GradScaler* scaler) {
  std::vector<CheckpointItem> items{
      {"model", model}, {"optimizer", opt}, {"rng", global_generator}};
  if (schedule) items.push_back({"scheduler", *schedule});
  if (scaler) items.push_back({"scaler", *scaler});
  return items;
}
}  // namespace

void save_checkpoint(const Args& a, nn::Module& model, optim::Optimizer& opt,
                     optim::LRScheduler* schedule, amp::GradScaler* scaler, int64_t epochs_done,
                     const History& history) {
  save(entries(model, opt, schedule, scaler), a.checkpoint,
       {{"format", kCheckpointFormat},
        {"epochs_done", std::to_string(epochs_done)},
        {"run", run_identity(a).dump()},
        {"history", history.to_json().dump()}});
}

int64_t restore(const Args& a, const io::SafetensorsFile& file, nn::Module& model,
                optim::Optimizer& opt, optim::LRScheduler* schedule, amp::GradScaler* scaler,
                History& history) {
  auto meta = [&](const std::string& key) -> const std::string& {
    auto it = file.metadata.find(key);
    KILN_CHECK(it != file.metadata.end(), "--resume: ", a.checkpoint,
               " is not a kiln-train checkpoint (no '", key, "' in its metadata)");
    return it->second;
  };
  try {
    // Everything is parsed and checked before any state changes.
    const std::string& format = meta("format");
    KILN_CHECK(format != "kiln-train checkpoint v1", "--resume: ", a.checkpoint,
               " was written by an older kiln-train (format v1, before kiln::save), which this "
               "one does not read; start the run again without --resume");
    KILN_CHECK(format == kCheckpointFormat, "--resume: ", a.checkpoint, ": its format is ",
               excerpt(json(format), 60), ", not \"", kCheckpointFormat, "\"");
    const json saved = parse_metadata_json(a, "run", meta("run"));
    const json expected = run_identity(a);
    KILN_CHECK(saved == expected, "--resume: ", a.checkpoint,
               " was written by a run with other options; it has ", excerpt(saved),
               " but this run has ", expected.dump());
    const int64_t epochs_done =
        parse_integer<int64_t>(a, "epochs_done", meta("epochs_done"), 0, a.epochs);
    History saved_history = History::from_json(parse_metadata_json(a, "history", meta("history")));
    const auto epochs = static_cast<size_t>(epochs_done);
    KILN_CHECK(saved_history.train_loss.size() == epochs &&
                   saved_history.test_accuracy.size() == epochs &&
                   saved_history.seconds.size() == epochs,
               "--resume: ", a.checkpoint, ": its history holds ", saved_history.train_loss.size(),
               ", ", saved_history.test_accuracy.size(), " and ", saved_history.seconds.size(),
               " entries (train_loss, test_accuracy, seconds), but epochs_done is ", epochs_done);
    try {
      // Checks every entry against its object, then sets them all (or throws first).
      parse_checkpoint(file, a.checkpoint).restore(entries(model, opt, schedule, scaler));
    } catch (const Error& e) {
      // Its messages name the file and may list many long names from it.
      KILN_FAIL("--resume: ", shorten(e.what(), kMaxMessage));
    }
    history = std::move(saved_history);
    return epochs_done;
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    KILN_FAIL("--resume: ", a.checkpoint, " has malformed kiln-train metadata (", shorten(e.what()),
              ")");
  }
}

int64_t load_checkpoint(const Args& a, nn::Module& model, optim::Optimizer& opt,
                        optim::LRScheduler* schedule, amp::GradScaler* scaler, History& history) {
  io::SafetensorsFile file;
  try {
    file = io::load_safetensors(a.checkpoint);
  } catch (const Error& e) {
    // Its messages quote names and JSON from the file, which can be megabytes long.
    const std::string message = e.what();
    if (message.size() <= kMaxMessage) throw;
    KILN_FAIL(shorten(message, kMaxMessage));
  }
  return restore(a, file, model, opt, schedule, scaler, history);
}

namespace {
// The first group's rate (kiln-train makes one group), as std::cout prints a double.
std::string lr_in_effect(const optim::Optimizer& opt) {
  std::ostringstream text;
  text << opt.param_groups().at(0).options->lr();
  return text.str();
}
}  // namespace

std::string lr_source(const Args& a, bool resumed, const optim::Optimizer& opt) {
  std::ostringstream text;
  if (resumed)
    text << lr_in_effect(opt) << " (restored from " << a.checkpoint << "; --lr " << a.lr << ")";
  else
    text << a.lr;
  return text.str();
}

std::string divergence_advice(const Args& a, bool resumed, const optim::Optimizer& opt) {
  if (!resumed) return "try a smaller --lr";
  return "the learning rate in effect, " + lr_in_effect(opt) + ", was restored from " +
         a.checkpoint +
         " (not taken from --lr): check that checkpoint, or start the run again without "
         "--resume (with a smaller --lr if it diverges then too)";
}

}  // namespace kiln::train
