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

#include <kiln/data/dataloader.h>
#include <kiln/data/mnist.h>
#include <kiln/data/transforms.h>
#include <kiln/io/atomic_file.h>
#include <kiln/kiln.h>
#include <kiln/nn.h>
#include <kiln/optim/adam.h>
#include <kiln/optim/rmsprop.h>
#include <kiln/optim/scheduler.h>
#include <kiln/optim/sgd.h>
#include <CLI/CLI.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#if KILN_TRAIN_HAS_MPI
#include <kiln/distributed/mpi.h>
#endif

#include "args.h"
#include "checkpoint.h"
#include "cli_checks.h"
#include "models.h"
#include "profile_steps.h"
#include "progress.h"
#include "watchdog.h"

namespace {

namespace F = kiln::nn::functional;
using json = nlohmann::json;

using kiln::train::Args;
using kiln::train::History;

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

// The autocast of --precision: bf16 and fp16 lower the convolutions and matmuls of the
// forward pass (and of evaluation) to that type; fp32 leaves everything alone.
kiln::autocast precision_scope(const Args& a, const kiln::Device& device) {
  return kiln::autocast(device.backend(), a.precision == "fp16" ? kiln::float16 : kiln::bfloat16,
                        a.precision != "fp32");
}

constexpr int64_t kTestBatch = 1000;  // images per evaluation batch

double evaluate(const Args& a, kiln::nn::Module& model, kiln::data::DataLoader& loader,
                const kiln::Device& device) {
  kiln::NoGradGuard no_grad;
  model.eval();
  int64_t correct = 0, total = 0;
  const kiln::autocast scope = precision_scope(a, device);
  int64_t batches = 0;
  for (auto& batch : loader) {
    if (a.limit_test_batches > 0 && batches++ == a.limit_test_batches) break;
    kiln::Tensor predicted = model.forward(batch.input).argmax(1);
    correct += (predicted == batch.target).sum().item<int64_t>();
    total += batch.target.numel();
  }
  model.train();
  return total ? static_cast<double>(correct) / static_cast<double>(total) : 0.0;
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
  if (!a.profile.empty()) check_writable("--profile", a.profile);
  auto group = process_group();
  const bool main_rank = !group || group->is_main();
  const int ranks = group ? group->size() : 1;
  KILN_CHECK(!(group && !a.devices.empty()),
             "--devices (DataParallel in one process) cannot be "
             "combined with an MPI launch (one process per device); use one or the other");
  KILN_CHECK(a.device.empty() || a.devices.empty(), "--device and --devices exclude each other");
  // Autocast is per thread and DataParallel runs its replicas on threads of its own.
  KILN_CHECK(a.precision == "fp32" || a.devices.empty(), "--precision ", a.precision,
             " runs on one device per process: it cannot be combined with --devices");
  // A graph is one device's recorded step; loss scaling decides on the host each step.
  KILN_CHECK(!a.graph || (a.devices.empty() && !group),
             "--graph captures the step of one device in one process: it cannot be combined "
             "with --devices or an MPI launch");
  KILN_CHECK(!a.graph || a.precision != "fp16",
             "--graph cannot be combined with --precision fp16: the loss scaler reads the "
             "gradients' inf/NaN check back to the host every step (bf16 needs no scaler)");
  KILN_CHECK(!a.graph || a.optimizer != "rmsprop",
             "--graph captures the adam, adamw and sgd steps; rmsprop cannot be captured yet");
  std::vector<kiln::Device> devices;
  if (!a.devices.empty()) devices = parse_devices(a.devices);
  kiln::Device device = !devices.empty()    ? devices[0]
                        : !a.device.empty() ? kiln::Device(a.device)
                                            : kiln::default_device();
#if KILN_TRAIN_HAS_MPI
  if (group && a.device.empty()) {
    // One device per process on a machine with several: the local rank's.
    const int local = kiln::distributed::mpi::local_rank();
    if (kiln::device_count(device.backend()) > local)
      device = kiln::Device(device.backend(), local);
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

  std::filesystem::path root =
      a.data.empty() ? kiln::data::FashionMNIST::default_root() : std::filesystem::path(a.data);
  auto data_options = kiln::data::MNISTOptions().normalize(kMean, kStd);
  auto train_set = std::make_shared<kiln::data::FashionMNIST>(root, true, data_options);
  auto test_set = std::make_shared<kiln::data::FashionMNIST>(root, false, data_options);
  KILN_CHECK(train_set->size() > 0, "--data ", root.string(), ": the training set has no images");

  // A batch never holds more than the whole set; the clamp keeps the batch arithmetic
  // (batches per epoch, samples per second) far from overflow for a huge --batch-size.
  const int64_t batch_size = std::min(a.batch_size, train_set->size());
  auto train_options = kiln::data::DataLoaderOptions()
                           .batch_size(batch_size)
                           .shuffle(true)
                           .seed(a.seed)
                           .device(device);
  if (group) train_options.distributed(group->size(), group->rank());
  if (a.model == "cnn" && !a.no_augment)
    train_options.transform(kiln::data::RandomHorizontalFlip(0.5, a.seed));
  kiln::data::DataLoader train_loader(train_set, train_options);
  kiln::data::DataLoader test_loader(
      test_set,
      kiln::data::DataLoaderOptions().batch_size(kTestBatch).shuffle(false).device(device));

  // The test images evaluated: --limit-test-batches batches of kTestBatch, or all.
  const int64_t test_images =
      a.limit_test_batches > 0 &&
              a.limit_test_batches < (test_set->size() + kTestBatch - 1) / kTestBatch
          ? a.limit_test_batches * kTestBatch
          : test_set->size();
  int64_t batches = train_loader.size();
  if (a.limit_batches > 0) batches = std::min(batches, a.limit_batches);
  KILN_CHECK(a.epochs <= INT64_MAX / std::max<int64_t>(batches, 1), "--epochs ", a.epochs,
             ": epochs x ", batches, " batches per epoch does not fit the step counter");
  auto optimizer = make_optimizer(a, model->parameters());
  auto schedule = make_schedule(a, *optimizer, a.epochs * batches);
  // float16 needs loss scaling: its gradients would otherwise underflow.
  std::optional<kiln::amp::GradScaler> scaler;
  if (a.precision == "fp16") scaler.emplace();

  History history;
  int64_t start_epoch = 0;
  bool resumed = false;
  if (a.resume) {
    if (std::filesystem::exists(a.checkpoint)) {
      start_epoch = kiln::train::load_checkpoint(a, *model, *optimizer, schedule.get(),
                                                 scaler ? &*scaler : nullptr, history);
      resumed = true;
      std::cout << "resumed from " << a.checkpoint << " after epoch " << start_epoch << "\n";
    } else {
      std::cout << "no checkpoint at " << a.checkpoint << " yet: starting from scratch\n";
    }
  }

  std::string where = device.str();
  if (devices.size() > 1) where = "DataParallel over " + a.devices;
  if (group)
    where = std::to_string(ranks) + " MPI ranks (DistributedDataParallel), rank 0 on " + where;
  // After --resume the learning rate in effect is the checkpoint's (where its schedule
  // left it), not --lr's: the banner and the divergence advice say so.
  const std::string lr_source = kiln::train::lr_source(a, resumed, *optimizer);
  if (main_rank)
    std::cout << "kiln-train: model " << a.model << ", optimizer " << a.optimizer << ", lr "
              << lr_source << ", batch " << a.batch_size << (group ? " per rank" : "") << ", "
              << a.epochs << " epochs on " << where << ", precision " << a.precision
              << (a.precision == "bf16"   ? " (autocast)"
                  : a.precision == "fp16" ? " (autocast, loss scaling)"
                                          : "")
              << (a.graph ? ", graph replay" : "") << " (" << train_set->size() << " training / "
              << test_images << " test images)\n";

  auto step_loss = [&](const kiln::Tensor& x, const kiln::Tensor& y) {
    const kiln::autocast scope = precision_scope(a, device);
    return F::cross_entropy(net->forward(x), y, kiln::nn::Reduction::Mean, -100, a.label_smoothing);
  };
  // --graph: the step is captured after kGraphWarmup eager steps (kiln/graph.h).
  constexpr int64_t kGraphWarmup = 3;
  kiln::Graph step_graph;
  kiln::Tensor graph_x, graph_y, graph_loss;
  int64_t eager_steps = 0;

  kiln::train::StepProfiler step_profiler(main_rank ? a.profile : std::string(), a.profile_steps);
  kiln::train::Watchdog watchdog(a.watchdog);  // --watchdog: a hang ends the run, saying where
  bool stopped_early = false;
  for (int64_t epoch = start_epoch; epoch < a.epochs; ++epoch) {
    train_loader.set_epoch(epoch);
    model->train();
    kiln::train::Progress progress(epoch + 1, a.epochs, batches, batch_size, main_rank);
    double loss_sum = 0;
    int64_t done = 0, skipped = 0, finite = 0;
    for (auto& batch : train_loader) {
      if (done == batches) break;
      step_profiler.begin_step();
      // --graph: a full batch after the warm-up replays the captured step (capturing it
      // the first time); the warm-up and a short last batch run eagerly.
      const bool replayed = a.graph && batch.input.size(0) == batch_size &&
                            (step_graph.captured() || eager_steps >= kGraphWarmup);
      kiln::Tensor loss;
      if (replayed) {
        if (!step_graph.captured()) {
          graph_x = kiln::empty_like(batch.input);
          graph_y = kiln::empty_like(batch.target);
          optimizer->zero_grad();  // the gradients come from the graph's pool
          kiln::GraphCapture capture(step_graph, device);
          graph_loss = step_loss(graph_x, graph_y);
          graph_loss.backward();
          optimizer->step();
        }
        graph_x.copy_(batch.input);
        graph_y.copy_(batch.target);
        step_graph.replay();
        loss = graph_loss;
      } else {
        optimizer->zero_grad();
        loss = step_loss(batch.input, batch.target);
        (scaler ? scaler->scale(loss) : loss).backward();
        ++eager_steps;
      }
      double value = loss.item<double>();
      // With loss scaling an inf or NaN is a skipped step (the scale backs off), not
      // divergence: the scaler decides from the gradients.
      KILN_CHECK(scaler || std::isfinite(value), "training diverged: the loss is ", value,
                 " at epoch ", epoch + 1, ", step ", done + 1, " (global step ",
                 epoch * batches + done + 1, "); ",
                 kiln::train::divergence_advice(a, resumed, *optimizer));
      if (scaler) {
        if (!scaler->step(*optimizer)) ++skipped;
        scaler->update();
      } else if (!replayed) {
        optimizer->step();
      }
      if (schedule) schedule->step();
      step_profiler.end_step();
      if (std::isfinite(value)) {
        loss_sum += value;
        ++finite;
      }
      progress.update(++done, value);
      watchdog.kick("a training step");
    }
    watchdog.kick("the evaluation and checkpoint of an epoch");
    double train_loss = loss_sum / static_cast<double>(std::max<int64_t>(finite, 1));
    KILN_CHECK(skipped < done || done == 0, "training diverged: every step of epoch ", epoch + 1,
               " had an inf or NaN gradient (loss scale now ", scaler ? scaler->get_scale() : 0.0,
               "); ", kiln::train::divergence_advice(a, resumed, *optimizer));
    const double train_seconds = progress.elapsed();
    std::string throughput;
    if (group) {
      // The mean loss over ranks, and every rank's samples per second.
      kiln::Tensor shared = kiln::from_vector<double>(
          {train_loss, static_cast<double>(done * batch_size) / std::max(train_seconds, 1e-9)},
          {2});
      kiln::Tensor all =
          kiln::zeros({2 * ranks}, kiln::TensorOptions().dtype(kiln::DType::Float64));
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
    double accuracy = main_rank ? evaluate(a, *model, test_loader, device) : 0.0;
    char summary[160];
    std::snprintf(summary, sizeof summary, "epoch %lld/%lld: train loss %.4f, test accuracy %.4f",
                  static_cast<long long>(epoch + 1), static_cast<long long>(a.epochs), train_loss,
                  accuracy);
    if (skipped > 0) throughput += ", " + std::to_string(skipped) + " steps skipped (inf/NaN)";
    double seconds = progress.finish(summary + throughput);
    history.train_loss.push_back(train_loss);
    history.test_accuracy.push_back(accuracy);
    history.seconds.push_back(seconds);
    if (!a.checkpoint.empty() && main_rank)
      kiln::train::save_checkpoint(a, *model, *optimizer, schedule.get(),
                                   scaler ? &*scaler : nullptr, epoch + 1, history);
    watchdog.kick("a training step");
    if (a.stop_after > 0 && epoch + 1 == a.stop_after) {
      std::cout << "stopping after epoch " << a.stop_after << " (--stop-after)\n";
      stopped_early = true;  // the metrics below still describe the epochs run
      break;
    }
  }

  step_profiler.finish();
  if (!a.metrics_json.empty() && main_rank) {
    double total_seconds = 0;
    for (double s : history.seconds) total_seconds += s;
    double per_epoch =
        history.seconds.empty() ? 0 : total_seconds / static_cast<double>(history.seconds.size());
    json metrics = {
        {"backend", device.backend()},
        {"device", device.str()},
        {"model", a.model},
        {"optimizer", a.optimizer},
        {"precision", a.precision},
        {"graph", a.graph},
        {"epochs", a.epochs},
        {"epochs_completed", static_cast<int64_t>(history.train_loss.size())},
        {"stopped_early", stopped_early},
        {"batch_size", a.batch_size},
        {"final_train_loss", history.train_loss.empty() ? 0.0 : history.train_loss.back()},
        {"test_accuracy", history.test_accuracy.empty() ? 0.0 : history.test_accuracy.back()},
        {"seconds_per_epoch", per_epoch},
        {"samples_per_second",
         per_epoch > 0 ? static_cast<double>(ranks * batches * batch_size) / per_epoch : 0.0},
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
  using kiln::train::integer_in;
  using kiln::train::non_negative_number;
  using kiln::train::number_in;
  using kiln::train::positive_number;
  auto non_empty = [](const std::string& v) {
    return v.empty() ? std::string("the path is empty") : std::string();
  };
  Args a;
  CLI::App app{"Train a classifier on Fashion-MNIST with Kiln, on any backend."};
  app.add_option("--model", a.model, "cnn or mlp")->capture_default_str();
  app.add_option("--epochs", a.epochs, "passes over the training set")
      ->capture_default_str()
      ->check(integer_in(1));
  app.add_option("--batch-size", a.batch_size)->capture_default_str()->check(integer_in(1));
  app.add_option("--lr", a.lr, "learning rate")->capture_default_str()->check(positive_number());
  app.add_option("--optimizer", a.optimizer, "adam, adamw, sgd (momentum 0.9) or rmsprop")
      ->capture_default_str();
  app.add_option("--schedule", a.schedule,
                 "learning-rate schedule per step: cosine, onecycle, step or none")
      ->capture_default_str();
  app.add_option("--weight-decay", a.weight_decay, "default: the optimizer's own (0, AdamW 0.01)")
      ->check(non_negative_number());
  app.add_option("--dropout", a.dropout, "dropout before the last layer")
      ->capture_default_str()
      ->check(number_in(0.0, 0.99));
  app.add_option("--label-smoothing", a.label_smoothing)
      ->capture_default_str()
      ->check(number_in(0.0, 1.0));
  app.add_flag("--no-batch-norm", a.no_batch_norm, "CNN without BatchNorm");
  app.add_flag("--no-augment", a.no_augment, "no random horizontal flips (CNN)");
  app.add_option("--device", a.device, "e.g. cpu, cuda:0 (default: KILN_BACKEND, else cpu)");
  app.add_option("--devices", a.devices,
                 "train on several devices of this process with nn::DataParallel, e.g. "
                 "cpu:0,cpu:1 (the batch is split across them)");
  app.add_option("--precision", a.precision,
                 "fp32, bf16 (autocast) or fp16 (autocast and loss scaling)")
      ->capture_default_str()
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  app.add_flag("--graph", a.graph,
               "capture the training step after 3 warm-up steps and replay it (kiln::Graph)");
  app.add_option("--seed", a.seed)
      ->capture_default_str()
      ->check(integer_in(0, std::numeric_limits<uint64_t>::max()));
  app.add_option("--data", a.data,
                 "folder with the Fashion-MNIST .gz files (default: "
                 "/usr/share/datasets/fashion-mnist)");
  app.add_option("--checkpoint", a.checkpoint, "safetensors file written after every epoch")
      ->check(non_empty);
  app.add_flag("--resume", a.resume, "continue from --checkpoint if it exists");
  app.add_option("--metrics-json", a.metrics_json, "write a summary of the run here")
      ->check(non_empty);
  app.add_option("--profile", a.profile,
                 "profile --profile-steps steps after 5 warm-up steps: write a Chrome trace "
                 "here and print the top-10 ops")
      ->check(non_empty);
  app.add_option("--profile-steps", a.profile_steps, "steps to profile")
      ->capture_default_str()
      ->check(integer_in(1));
  app.add_option("--limit-batches", a.limit_batches,
                 "stop each epoch after this many batches (quick runs)")
      ->check(integer_in(0));
  app.add_option("--limit-test-batches", a.limit_test_batches,
                 "evaluate on this many test batches of 1000 images (quick runs); 0: all")
      ->check(integer_in(0));
  app.add_option("--watchdog", a.watchdog,
                 "seconds without a finished step before the run ends (exit 124), naming the "
                 "kernel it waits for; 0: off")
      ->capture_default_str()
      ->check(number_in(0, 1e6));
  app.add_option("--stop-after", a.stop_after,
                 "end the run after this epoch, as if interrupted (to try --resume)")
      ->check(integer_in(0));
  CLI11_PARSE(app, argc, argv);
  if (a.resume && a.checkpoint.empty()) {
    std::cerr << "kiln-train: --resume needs --checkpoint FILE\n";
    return 2;
  }
  // A plugin that crashes gets a last word naming the kernel (kiln/diagnostics.h).
  kiln::install_crash_reporter();
  try {
    return run(a);
  } catch (const std::exception& e) {
    std::cerr << "kiln-train: " << e.what() << "\n";
    return 1;
  }
}
