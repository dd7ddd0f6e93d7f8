// kiln-train: trains a CNN or an MLP on Fashion-MNIST on any Kiln backend.
//
//   kiln-train --model cnn --epochs 8                       # the README's main job
//   KILN_BACKEND=cuda kiln-train --model cnn                # the same on a GPU
//   kiln-train --checkpoint run.safetensors                 # saves after every epoch
//   kiln-train --checkpoint run.safetensors --resume        # continues, bit-identically
//   KILN_CPU_DEVICES=2 kiln-train --devices cpu:0,cpu:1     # nn::DataParallel in one process
//   mpirun -np 4 kiln-train                                 # DistributedDataParallel, 4 processes
//
// Under an MPI launcher (detected from its environment) every process is one rank:
// it trains on its own shard of each epoch (DistributedSampler) with --batch-size
// samples per step, so the global batch is ranks x --batch-size; gradients are
// averaged by DistributedDataParallel; rank 0 alone evaluates, prints, writes
// --checkpoint and --metrics-json. Each rank uses device <backend>:<local rank>
// when its backend has that many devices (one GPU per process), else device 0.
//
// Determinism: everything random is a function of --seed (initialization, dropout
// masks through the Philox generator; shuffling and flips through (seed, epoch,
// sample)), and a checkpoint stores the generator state, so resuming from any
// epoch reproduces the uninterrupted run exactly on the same backend.

#include <CLI/CLI.hpp>
#include <kiln/data/dataloader.h>
#include <kiln/data/mnist.h>
#include <kiln/data/transforms.h>
#include <kiln/io/atomic_file.h>
#include <kiln/io/safetensors.h>
#include <kiln/kiln.h>
#include <kiln/nn.h>
#include <kiln/optim/adam.h>
#include <kiln/optim/rmsprop.h>
#include <kiln/optim/scheduler.h>
#include <kiln/optim/sgd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#if KILN_TRAIN_HAS_MPI
#include <kiln/distributed/mpi.h>
#endif

#include "models.h"
#include "progress.h"

namespace {

namespace F = kiln::nn::functional;
using json = nlohmann::json;

struct Args {
  std::string model = "cnn";
  std::string optimizer = "adam";
  std::string schedule = "cosine";
  std::string device;
  std::string devices;
  std::string data;
  std::string checkpoint;
  std::string metrics_json;
  int64_t epochs = 8;
  int64_t batch_size = 64;
  int64_t limit_batches = 0;
  int64_t stop_after = 0;
  double lr = 1e-3;
  double weight_decay = -1;
  double dropout = 0.25;
  double label_smoothing = 0;
  uint64_t seed = 0;
  bool resume = false;
  bool no_batch_norm = false;
  bool no_augment = false;
};

// Fashion-MNIST's pixel mean and standard deviation (training set).
constexpr double kMean = 0.2860, kStd = 0.3530;

std::unique_ptr<kiln::optim::Optimizer> make_optimizer(const Args& a,
                                                       std::vector<kiln::Tensor> params) {
  using namespace kiln::optim;
  // A negative --weight-decay (the default) keeps each optimizer's own default.
  bool wd = a.weight_decay >= 0;
  if (a.optimizer == "adam") {
    AdamOptions o(a.lr);
    if (wd) o.weight_decay(a.weight_decay);
    return std::make_unique<Adam>(params, o);
  }
  if (a.optimizer == "adamw") {
    AdamWOptions o(a.lr);
    if (wd) o.weight_decay(a.weight_decay);
    return std::make_unique<AdamW>(params, o);
  }
  if (a.optimizer == "sgd") {
    SGDOptions o(a.lr);
    o.momentum(0.9);
    if (wd) o.weight_decay(a.weight_decay);
    return std::make_unique<SGD>(params, o);
  }
  if (a.optimizer == "rmsprop") {
    RMSpropOptions o(a.lr);
    if (wd) o.weight_decay(a.weight_decay);
    return std::make_unique<RMSprop>(params, o);
  }
  KILN_FAIL("unknown optimizer '", a.optimizer, "' (expected adam, adamw, sgd or rmsprop)");
}

std::unique_ptr<kiln::optim::LRScheduler> make_schedule(const Args& a, kiln::optim::Optimizer& opt,
                                                        int64_t total_steps) {
  using namespace kiln::optim;
  if (a.schedule == "none") return nullptr;
  if (a.schedule == "cosine") return std::make_unique<CosineAnnealingLR>(opt, total_steps);
  if (a.schedule == "onecycle") return std::make_unique<OneCycleLR>(opt, a.lr, total_steps);
  if (a.schedule == "step")
    return std::make_unique<StepLR>(opt, std::max<int64_t>(total_steps / 3, 1), 0.1);
  KILN_FAIL("unknown schedule '", a.schedule, "' (expected cosine, onecycle, step or none)");
}

double evaluate(kiln::nn::Module& model, kiln::data::DataLoader& loader) {
  kiln::NoGradGuard no_grad;
  model.eval();
  int64_t correct = 0, total = 0;
  for (auto& batch : loader) {
    kiln::Tensor predicted = model.forward(batch.input).argmax(1);
    correct += (predicted == batch.target).sum().item<int64_t>();
    total += batch.target.numel();
  }
  model.train();
  return total ? static_cast<double>(correct) / static_cast<double>(total) : 0.0;
}

struct History {
  std::vector<double> train_loss, test_accuracy, seconds;
  json to_json() const {
    return {{"train_loss", train_loss}, {"test_accuracy", test_accuracy}, {"seconds", seconds}};
  }
  static History from_json(const json& j) {
    History h;
    h.train_loss = j.at("train_loss").get<std::vector<double>>();
    h.test_accuracy = j.at("test_accuracy").get<std::vector<double>>();
    h.seconds = j.at("seconds").get<std::vector<double>>();
    return h;
  }
};

// The options that must match for --resume to continue the same run.
json run_identity(const Args& a) {
  return {{"model", a.model},         {"optimizer", a.optimizer}, {"schedule", a.schedule},
          {"epochs", a.epochs},       {"batch_size", a.batch_size}, {"lr", a.lr},
          {"weight_decay", a.weight_decay}, {"dropout", a.dropout},
          {"label_smoothing", a.label_smoothing}, {"seed", a.seed},
          {"batch_norm", !a.no_batch_norm}, {"augment", !a.no_augment},
          {"limit_batches", a.limit_batches}};
}

void save_checkpoint(const Args& a, kiln::nn::Module& model, kiln::optim::Optimizer& opt,
                     const kiln::optim::LRScheduler* schedule, int64_t epochs_done,
                     const History& history) {
  kiln::io::NamedTensors tensors;
  for (auto& [n, t] : model.state_dict()) tensors.emplace_back("model." + n, t);
  for (auto& [n, t] : opt.state_dict()) tensors.emplace_back("optimizer." + n, t);
  kiln::GeneratorState g = kiln::generator_state();
  kiln::io::Metadata meta{
      {"format", "kiln-train checkpoint v1"},
      {"epochs_done", std::to_string(epochs_done)},
      {"generator_seed", std::to_string(g.seed)},
      {"generator_offset", std::to_string(g.offset)},
      {"schedule_step", std::to_string(schedule ? schedule->last_step() : 0)},
      {"run", run_identity(a).dump()},
      {"history", history.to_json().dump()}};
  kiln::io::save_safetensors(a.checkpoint, tensors, meta);
}

int64_t restore(const Args& a, const kiln::io::SafetensorsFile& file, kiln::nn::Module& model,
                kiln::optim::Optimizer& opt, kiln::optim::LRScheduler* schedule, History& history);

// Parses JSON that kiln-train wrote into a checkpoint's metadata. A file may be
// hostile: nesting beyond what kiln-train writes is refused while parsing, before a
// deep tree exists that building, printing or freeing would recurse through.
json parse_metadata_json(const Args& a, const std::string& key, const std::string& text) {
  struct TooDeep {};
  try {
    return json::parse(text, [](int depth, json::parse_event_t, json&) {
      if (depth > 16) throw TooDeep{};
      return true;
    });
  } catch (const TooDeep&) {
    KILN_FAIL("--resume: ", a.checkpoint, ": its '", key,
              "' metadata nests deeper than 16 levels; it is not a kiln-train checkpoint");
  }
}

// At most `limit` characters of `value` printed, for messages about untrusted input.
std::string excerpt(const json& value, size_t limit = 200) {
  std::string text = value.dump();
  return text.size() > limit ? text.substr(0, limit) + "..." : text;
}

// Restores a checkpoint; returns the number of epochs it had completed. Malformed
// metadata (numbers, JSON) is reported as a kiln::Error naming the file.
int64_t load_checkpoint(const Args& a, kiln::nn::Module& model, kiln::optim::Optimizer& opt,
                        kiln::optim::LRScheduler* schedule, History& history) {
  auto file = kiln::io::load_safetensors(a.checkpoint);
  try {
    return restore(a, file, model, opt, schedule, history);
  } catch (const kiln::Error&) {
    throw;
  } catch (const std::exception& e) {
    KILN_FAIL("--resume: ", a.checkpoint, " has malformed kiln-train metadata (", e.what(), ")");
  }
}

int64_t restore(const Args& a, const kiln::io::SafetensorsFile& file, kiln::nn::Module& model,
                kiln::optim::Optimizer& opt, kiln::optim::LRScheduler* schedule, History& history) {
  auto meta = [&](const std::string& key) {
    auto it = file.metadata.find(key);
    KILN_CHECK(it != file.metadata.end(), "--resume: ", a.checkpoint,
               " is not a kiln-train checkpoint (no '", key, "' in its metadata)");
    return it->second;
  };
  json saved = parse_metadata_json(a, "run", meta("run"));
  KILN_CHECK(saved == run_identity(a), "--resume: ", a.checkpoint,
             " was written by a run with other options; it has ", excerpt(saved),
             " but this run has ", run_identity(a).dump());
  kiln::nn::StateDict model_state, opt_state;
  for (auto& [n, t] : file.tensors) {
    if (n.rfind("model.", 0) == 0) model_state.emplace_back(n.substr(6), t);
    else if (n.rfind("optimizer.", 0) == 0) opt_state.emplace_back(n.substr(10), t);
  }
  model.load_state_dict(model_state);
  opt.load_state_dict(opt_state);
  if (schedule) schedule->set_step(std::stoll(meta("schedule_step")));
  kiln::set_generator_state({std::stoull(meta("generator_seed")), std::stoull(meta("generator_offset"))});
  history = History::from_json(parse_metadata_json(a, "history", meta("history")));
  return std::stoll(meta("epochs_done"));
}

// "cpu:0,cpu:1" -> devices; errors name the argument.
std::vector<kiln::Device> parse_devices(const std::string& list) {
  std::vector<kiln::Device> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    std::string item = list.substr(start, end - start);
    KILN_CHECK(!item.empty(), "--devices '", list, "': empty device name");
    out.emplace_back(item);
    start = end + 1;
  }
  return out;
}

// The process group when an MPI launcher started this process, else null.
std::shared_ptr<kiln::distributed::ProcessGroup> process_group() {
#if KILN_TRAIN_HAS_MPI
  if (kiln::distributed::mpi::launched()) return kiln::distributed::mpi::init();
#endif
  return nullptr;
}

// Fails now, naming the argument, if `path` cannot be written: before an epoch of
// training, not after it. (A writer made and discarded: it leaves nothing behind.)
void check_writable(const char* argument, const std::string& path) {
  try {
    kiln::io::AtomicFileWriter probe(path);
  } catch (const kiln::Error& e) {
    KILN_FAIL(argument, " ", path, ": ", e.what());
  }
}

int run(const Args& a) {
  if (!a.metrics_json.empty()) check_writable("--metrics-json", a.metrics_json);
  if (!a.checkpoint.empty()) check_writable("--checkpoint", a.checkpoint);
  auto group = process_group();
  const bool main_rank = !group || group->is_main();
  const int ranks = group ? group->size() : 1;
  KILN_CHECK(!(group && !a.devices.empty()), "--devices (DataParallel in one process) cannot be "
             "combined with an MPI launch (one process per device); use one or the other");
  KILN_CHECK(a.device.empty() || a.devices.empty(), "--device and --devices exclude each other");
  std::vector<kiln::Device> devices;
  if (!a.devices.empty()) devices = parse_devices(a.devices);
  kiln::Device device = !devices.empty() ? devices[0]
                        : !a.device.empty() ? kiln::Device(a.device)
                                            : kiln::default_device();
#if KILN_TRAIN_HAS_MPI
  if (group && a.device.empty()) {
    // One device per process on a machine with several: the local rank's.
    const int local = kiln::distributed::mpi::local_rank();
    if (kiln::device_count(device.backend()) > local) device = kiln::Device(device.backend(), local);
  }
#endif
  kiln::manual_seed(a.seed);

  kiln::train::ModelOptions mo;
  mo.batch_norm = !a.no_batch_norm;
  mo.dropout = a.dropout;
  mo.hidden = a.model == "mlp" ? 256 : 128;
  auto model = kiln::train::make_model(a.model, mo);
  model->to(device);
  // What runs a step: the model itself, DataParallel over --devices, or DDP.
  std::shared_ptr<kiln::nn::Module> net = model;
  if (devices.size() > 1) net = std::make_shared<kiln::nn::DataParallel>(model, devices);
  if (group) net = std::make_shared<kiln::nn::DistributedDataParallel>(model, group);

  std::filesystem::path root = a.data.empty() ? kiln::data::FashionMNIST::default_root()
                                              : std::filesystem::path(a.data);
  auto data_options = kiln::data::MNISTOptions().normalize(kMean, kStd);
  auto train_set = std::make_shared<kiln::data::FashionMNIST>(root, true, data_options);
  auto test_set = std::make_shared<kiln::data::FashionMNIST>(root, false, data_options);
  KILN_CHECK(train_set->size() > 0, "--data ", root.string(), ": the training set has no images");

  auto train_options = kiln::data::DataLoaderOptions().batch_size(a.batch_size).shuffle(true)
                           .seed(a.seed).device(device);
  if (group) train_options.distributed(group->size(), group->rank());
  if (a.model == "cnn" && !a.no_augment)
    train_options.transform(kiln::data::RandomHorizontalFlip(0.5, a.seed));
  kiln::data::DataLoader train_loader(train_set, train_options);
  kiln::data::DataLoader test_loader(
      test_set, kiln::data::DataLoaderOptions().batch_size(1000).shuffle(false).device(device));

  int64_t batches = train_loader.size();
  if (a.limit_batches > 0) batches = std::min(batches, a.limit_batches);
  KILN_CHECK(a.epochs <= INT64_MAX / std::max<int64_t>(batches, 1), "--epochs ", a.epochs,
             ": epochs x ", batches, " batches per epoch does not fit the step counter");
  auto optimizer = make_optimizer(a, model->parameters());
  auto schedule = make_schedule(a, *optimizer, a.epochs * batches);

  History history;
  int64_t start_epoch = 0;
  if (a.resume) {
    if (std::filesystem::exists(a.checkpoint)) {
      start_epoch = load_checkpoint(a, *model, *optimizer, schedule.get(), history);
      std::cout << "resumed from " << a.checkpoint << " after epoch " << start_epoch << "\n";
    } else {
      std::cout << "no checkpoint at " << a.checkpoint << " yet: starting from scratch\n";
    }
  }

  std::string where = device.str();
  if (devices.size() > 1) where = "DataParallel over " + a.devices;
  if (group) where = std::to_string(ranks) + " MPI ranks (DistributedDataParallel), rank 0 on " + where;
  if (main_rank)
    std::cout << "kiln-train: model " << a.model << ", optimizer " << a.optimizer << ", lr " << a.lr
              << ", batch " << a.batch_size << (group ? " per rank" : "") << ", " << a.epochs
              << " epochs on " << where << " (" << train_set->size() << " training / "
              << test_set->size() << " test images)\n";

  for (int64_t epoch = start_epoch; epoch < a.epochs; ++epoch) {
    train_loader.set_epoch(epoch);
    model->train();
    kiln::train::Progress progress(epoch + 1, a.epochs, batches, a.batch_size, main_rank);
    double loss_sum = 0;
    int64_t done = 0;
    for (auto& batch : train_loader) {
      if (done == batches) break;
      optimizer->zero_grad();
      kiln::Tensor loss = F::cross_entropy(net->forward(batch.input), batch.target,
                                           kiln::nn::Reduction::Mean, -100, a.label_smoothing);
      loss.backward();
      double value = loss.item<double>();
      KILN_CHECK(std::isfinite(value), "training diverged: the loss is ", value, " at epoch ",
                 epoch + 1, ", step ", done + 1, " (global step ", epoch * batches + done + 1,
                 "); try a smaller --lr");
      optimizer->step();
      if (schedule) schedule->step();
      loss_sum += value;
      progress.update(++done, value);
    }
    double train_loss = loss_sum / static_cast<double>(std::max<int64_t>(done, 1));
    const double train_seconds = progress.elapsed();
    std::string throughput;
    if (group) {
      // The mean loss over ranks, and every rank's samples per second.
      kiln::Tensor shared = kiln::from_vector<double>(
          {train_loss, static_cast<double>(done * a.batch_size) / std::max(train_seconds, 1e-9)}, {2});
      kiln::Tensor all = kiln::zeros({2 * ranks}, kiln::TensorOptions().dtype(kiln::DType::Float64));
      group->all_gather(shared, all);
      const std::vector<double> v = all.to_vector<double>();
      double loss_total = 0, rate_total = 0;
      throughput = ", samples/s per rank:";
      for (int r = 0; r < ranks; ++r) {
        loss_total += v[static_cast<size_t>(2 * r)];
        rate_total += v[static_cast<size_t>(2 * r + 1)];
        throughput += " " + std::to_string(static_cast<int64_t>(v[static_cast<size_t>(2 * r + 1)]));
      }
      train_loss = loss_total / ranks;
      throughput += ", total " + std::to_string(static_cast<int64_t>(rate_total));
    }
    double accuracy = main_rank ? evaluate(*model, test_loader) : 0.0;
    char summary[160];
    std::snprintf(summary, sizeof summary, "epoch %lld/%lld: train loss %.4f, test accuracy %.4f",
                  static_cast<long long>(epoch + 1), static_cast<long long>(a.epochs), train_loss,
                  accuracy);
    double seconds = progress.finish(summary + throughput);
    history.train_loss.push_back(train_loss);
    history.test_accuracy.push_back(accuracy);
    history.seconds.push_back(seconds);
    if (!a.checkpoint.empty() && main_rank)
      save_checkpoint(a, *model, *optimizer, schedule.get(), epoch + 1, history);
    if (a.stop_after > 0 && epoch + 1 == a.stop_after) {
      std::cout << "stopping after epoch " << a.stop_after << " (--stop-after)\n";
      return 0;
    }
  }

  if (!a.metrics_json.empty() && main_rank) {
    double total_seconds = 0;
    for (double s : history.seconds) total_seconds += s;
    double per_epoch = history.seconds.empty() ? 0 : total_seconds / static_cast<double>(history.seconds.size());
    json metrics = {
        {"backend", device.backend()},
        {"device", device.str()},
        {"model", a.model},
        {"optimizer", a.optimizer},
        {"epochs", a.epochs},
        {"batch_size", a.batch_size},
        {"final_train_loss", history.train_loss.empty() ? 0.0 : history.train_loss.back()},
        {"test_accuracy", history.test_accuracy.empty() ? 0.0 : history.test_accuracy.back()},
        {"seconds_per_epoch", per_epoch},
        {"samples_per_second",
         per_epoch > 0 ? static_cast<double>(ranks * batches * a.batch_size) / per_epoch : 0.0},
        {"ranks", ranks},
        {"devices", devices.size() > 1 ? a.devices : device.str()},
        {"history", history.to_json()}};
    const std::string text = metrics.dump(2) + "\n";
    kiln::io::AtomicFileWriter out(a.metrics_json);  // errors name the path
    out.write(text.data(), text.size());
    out.commit();
  }
  auto report = kiln::fallback_report();
  if (!report.empty() && main_rank) std::cout << report.str();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"Train a classifier on Fashion-MNIST with Kiln, on any backend."};
  app.add_option("--model", a.model, "cnn or mlp")->capture_default_str();
  app.add_option("--epochs", a.epochs, "passes over the training set")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--batch-size", a.batch_size)->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--lr", a.lr, "learning rate")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--optimizer", a.optimizer, "adam, adamw, sgd (momentum 0.9) or rmsprop")->capture_default_str();
  app.add_option("--schedule", a.schedule, "learning-rate schedule per step: cosine, onecycle, step or none")->capture_default_str();
  app.add_option("--weight-decay", a.weight_decay, "default: the optimizer's own (0, AdamW 0.01)")->check(CLI::NonNegativeNumber);
  app.add_option("--dropout", a.dropout, "dropout before the last layer")->capture_default_str()->check(CLI::Range(0.0, 0.99));
  app.add_option("--label-smoothing", a.label_smoothing)->capture_default_str()->check(CLI::Range(0.0, 1.0));
  app.add_flag("--no-batch-norm", a.no_batch_norm, "CNN without BatchNorm");
  app.add_flag("--no-augment", a.no_augment, "no random horizontal flips (CNN)");
  app.add_option("--device", a.device, "e.g. cpu, cuda:0 (default: KILN_BACKEND, else cpu)");
  app.add_option("--devices", a.devices, "train on several devices of this process with "
                 "nn::DataParallel, e.g. cpu:0,cpu:1 (the batch is split across them)");
  app.add_option("--seed", a.seed)->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--data", a.data, "folder with the Fashion-MNIST .gz files (default: /usr/share/datasets/fashion-mnist)");
  app.add_option("--checkpoint", a.checkpoint, "safetensors file written after every epoch")
      ->check([](const std::string& v) { return v.empty() ? std::string("the path is empty") : std::string(); });
  app.add_flag("--resume", a.resume, "continue from --checkpoint if it exists");
  app.add_option("--metrics-json", a.metrics_json, "write a summary of the run here")
      ->check([](const std::string& v) { return v.empty() ? std::string("the path is empty") : std::string(); });
  app.add_option("--limit-batches", a.limit_batches, "stop each epoch after this many batches (quick runs)")->check(CLI::NonNegativeNumber);
  app.add_option("--stop-after", a.stop_after, "end the run after this epoch, as if interrupted (to try --resume)")->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);
  if (a.resume && a.checkpoint.empty()) {
    std::cerr << "kiln-train: --resume needs --checkpoint FILE\n";
    return 2;
  }
  try {
    return run(a);
  } catch (const std::exception& e) {
    std::cerr << "kiln-train: " << e.what() << "\n";
    return 1;
  }
}
