// kiln::save / kiln::load (kiln/io/checkpoint.h): a model, Adam with state, a schedule,
// a loss scaler and the generator continue training bit-identically after a round trip;
// bad files are refused naming the file and the key, before anything changes; saves
// are atomic.
#include <kiln/io/checkpoint.h>
#include <kiln/optim.h>
#include <signal.h>
#include <sys/resource.h>

#include <cmath>
#include <limits>

#include "io_test_util.h"
#include "kiln_test.h"

namespace kiln::test {
namespace {

struct Net : nn::Module {
  Net() : Module("Net") {
    fc1 = register_module<nn::Linear>("fc1", 4, 8);
    fc2 = register_module<nn::Linear>("fc2", 8, 3);
  }
  Tensor forward(const Tensor& x) override { return fc2->forward(fc1->forward(x).relu()); }
  std::shared_ptr<nn::Linear> fc1, fc2;
};

// Everything a training run holds, built from `seed`.
struct TrainingRun {
  explicit TrainingRun(uint64_t seed) {
    manual_seed(seed);
    model = std::make_shared<Net>();
    opt = std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions(1e-2));
    sched = std::make_unique<optim::StepLR>(*opt, 2, 0.5);
  }
  // One step on random data (so the generator's state matters too).
  void step() {
    Tensor x = randn({5, 4});
    opt->zero_grad();
    Tensor y = model->forward(x);
    Tensor loss = (y * y).mean();
    scaler.scale(loss).backward();
    scaler.step(*opt);
    scaler.update();
    sched->step();
    ++steps;
  }
  std::vector<CheckpointItem> items() {
    return {{"model", model},   {"optimizer", *opt},       {"scheduler", *sched},
            {"scaler", scaler}, {"rng", global_generator}, {"steps", steps}};
  }
  std::vector<std::vector<float>> weights() const {
    std::vector<std::vector<float>> out;
    for (const auto& p : model->parameters()) out.push_back(p.to_vector<float>());
    return out;
  }

  std::shared_ptr<Net> model;
  std::unique_ptr<optim::Adam> opt;
  std::unique_ptr<optim::StepLR> sched;
  amp::GradScaler scaler{amp::GradScalerOptions{.init_scale = 1024, .growth_interval = 2}};
  int64_t steps = 0;
};

// `from` re-saved to `to` with tensor `key` replaced by `value` (or removed when
// undefined) and metadata `meta_key` set to `meta_value` (when not empty).
void rewrite(const std::filesystem::path& from, const std::filesystem::path& to,
             const std::string& key, const Tensor& value, const std::string& meta_key = "",
             const std::string& meta_value = "") {
  io::SafetensorsFile file = io::load_safetensors(from);
  io::NamedTensors tensors;
  for (auto& [name, t] : file.tensors)
    if (name != key)
      tensors.emplace_back(name, t);
    else if (value.defined())
      tensors.emplace_back(name, value);
  if (!meta_key.empty()) file.metadata[meta_key] = meta_value;
  io::save_safetensors(to, tensors, file.metadata);
}

TEST(Checkpoint, RoundTripContinuesTrainingBitIdentically) {
  TempDir dir;
  TrainingRun uninterrupted(11);
  for (int i = 0; i < 5; ++i) uninterrupted.step();

  TrainingRun first(11);
  first.step();
  first.step();
  kiln::save(first.items(), dir / "ckpt.safetensors", {{"note", "two steps"}});

  TrainingRun resumed(99);  // other weights, no optimizer state, another generator state
  ASSERT_NE(resumed.weights(), first.weights());
  const io::Metadata meta = kiln::load(resumed.items(), dir / "ckpt.safetensors");
  EXPECT_EQ(meta, (io::Metadata{{"note", "two steps"}}));
  EXPECT_EQ(resumed.steps, 2);
  EXPECT_EQ(resumed.weights(), first.weights());
  EXPECT_EQ(resumed.sched->last_step(), 2);
  EXPECT_EQ(resumed.opt->param_groups()[0].options->lr(),
            first.opt->param_groups()[0].options->lr());
  EXPECT_EQ(resumed.scaler.get_scale(), first.scaler.get_scale());
  EXPECT_EQ(generator_state().seed, 11u);
  for (int i = 0; i < 3; ++i) resumed.step();
  // Adam's moments and step counts, the schedule, the scale and the random data all
  // came back: the same weights, bit for bit.
  EXPECT_EQ(resumed.weights(), uninterrupted.weights());
  EXPECT_EQ(resumed.scaler.get_scale(), uninterrupted.scaler.get_scale());
  EXPECT_EQ(resumed.opt->param_groups()[0].options->lr(),
            uninterrupted.opt->param_groups()[0].options->lr());
}

TEST(Checkpoint, FileIsPlainSafetensorsWithTypedMetadata) {
  TempDir dir;
  TrainingRun run(1);
  run.step();
  kiln::save(run.items(), dir / "c.safetensors");
  auto file = io::load_safetensors(dir / "c.safetensors");
  EXPECT_EQ(file.metadata.at("kiln.format"), "kiln checkpoint");
  EXPECT_EQ(file.metadata.at("kiln.version"), "1");
  EXPECT_EQ(file.metadata.at("kiln.entries"),
            "model:module,optimizer:optimizer,scheduler:lr_scheduler,scaler:grad_scaler,"
            "rng:generator,steps:int64");
  EXPECT_EQ(file.metadata.at("kiln.optimizer.type"), "Adam");
  EXPECT_EQ(file.metadata.at("kiln.rng.seed"), "1");
  EXPECT_TRUE(file.contains("model.fc1.weight"));
  EXPECT_TRUE(file.contains("optimizer.state.0.exp_avg"));
  EXPECT_TRUE(file.contains("scheduler.last_step"));
  EXPECT_EQ(file.at("scaler.scale").item<double>(), 1024.0);
  EXPECT_EQ(file.at("steps").item<int64_t>(), 1);
}

// A learning rate of -1 or NaN in the file: an error naming the file and the key, and
// nothing restored, though the model and the scheduler pass their checks. The target
// has taken other steps than the file's one, so every value it keeps is told apart.
TEST(Checkpoint, BadLearningRateNamesFileAndKeyAndChangesNothing) {
  TempDir dir;
  TrainingRun saved(3);
  saved.step();
  kiln::save(saved.items(), dir / "good.safetensors");
  for (double bad : {-1.0, std::numeric_limits<double>::quiet_NaN()}) {
    const auto path = dir / "bad.safetensors";
    rewrite(dir / "good.safetensors", path, "optimizer.param_groups.0.lr",
            scalar_tensor(bad, DType::Float64));
    TrainingRun target(4);
    for (int i = 0; i < 3; ++i) target.step();
    const auto weights = target.weights();
    const double lr = target.opt->param_groups()[0].options->lr();
    const double scale = target.scaler.get_scale();
    const GeneratorState generator = generator_state();
    auto items = target.items();
    EXPECT_KILN_ERROR(kiln::load(items, path), path.string(), "'optimizer.param_groups.0.lr'",
                      "finite and non-negative");
    EXPECT_EQ(target.weights(), weights);
    EXPECT_EQ(target.opt->param_groups()[0].options->lr(), lr);
    EXPECT_EQ(target.sched->last_step(), 3);
    EXPECT_EQ(target.steps, 3);
    EXPECT_EQ(target.scaler.get_scale(), scale);
    EXPECT_EQ(generator_state().seed, generator.seed);
    EXPECT_EQ(generator_state().offset, generator.offset);
  }
}

TEST(Checkpoint, MismatchedEntriesAndTensorsAreRefused) {
  TempDir dir;
  const auto good = dir / "good.safetensors", bad = dir / "bad.safetensors";
  TrainingRun run(5);
  run.step();
  kiln::save(run.items(), good);
  auto items = run.items();

  rewrite(good, bad, "model.fc2.bias", Tensor());
  EXPECT_KILN_ERROR(kiln::load(items, bad), bad.string(), "entry 'model'",
                    "missing keys: fc2.bias");
  rewrite(good, bad, "model.fc1.weight", zeros({2, 2}));
  EXPECT_KILN_ERROR(kiln::load(items, bad), bad.string(), "size mismatch for: fc1.weight");
  rewrite(good, bad, "model.fc1.weight", zeros({8, 4}, DType::Float64));
  EXPECT_KILN_ERROR(kiln::load(items, bad), bad.string(), "key 'model.fc1.weight'", "float64");
  rewrite(good, bad, "scaler.scale", scalar_tensor(0.0, DType::Float64));
  EXPECT_KILN_ERROR(kiln::load(items, bad), bad.string(), "key 'scaler.scale'");
  rewrite(good, bad, "scheduler.last_step", scalar_tensor(int64_t{1} << 60, DType::Int64));
  EXPECT_KILN_ERROR(kiln::load(items, bad), bad.string(), "key 'scheduler.last_step'", "9e15");
  rewrite(good, bad, "steps", scalar_tensor(2.0, DType::Float32));
  EXPECT_KILN_ERROR(kiln::load(items, bad), bad.string(), "key 'steps'", "0-d");
  {  // A tensor named like the generator entry: refused, not ignored.
    io::SafetensorsFile file = io::load_safetensors(good);
    file.tensors.emplace_back("rng", zeros({1}));
    io::save_safetensors(bad, file.tensors, file.metadata);
  }
  EXPECT_KILN_ERROR(kiln::load(items, bad), bad.string(), "tensor 'rng'", "generator entry 'rng'");
  // An invalid name given to load: the error names the file too.
  std::vector<CheckpointItem> dotted = {{"model.x", run.model}};
  EXPECT_KILN_ERROR(kiln::load(dotted, good), good.string(), "'model.x'");

  // An entry missing from the file, one the caller did not pass, one of another kind.
  TrainingRun other(6);
  auto more = run.items();
  more.push_back({"ema", *other.model});
  EXPECT_KILN_ERROR(kiln::load(more, good), good.string(), "no entry 'ema'");
  std::vector<CheckpointItem> fewer(items.begin(), items.begin() + 2);
  EXPECT_KILN_ERROR(kiln::load(fewer, good), "entry 'scheduler'", "not given");
  std::vector<CheckpointItem> swapped = {{"model", *run.opt},       {"optimizer", *run.opt},
                                         {"scheduler", *run.sched}, {"scaler", run.scaler},
                                         {"rng", global_generator}, {"steps", run.steps}};
  EXPECT_KILN_ERROR(kiln::load(swapped, good), "entry 'model' has kind 'module'",
                    "has kind 'optimizer'");
  // Another algorithm's state.
  optim::SGD sgd(run.model->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  std::vector<CheckpointItem> with_sgd = {{"model", run.model},      {"optimizer", sgd},
                                          {"scheduler", *run.sched}, {"scaler", run.scaler},
                                          {"rng", global_generator}, {"steps", run.steps}};
  EXPECT_KILN_ERROR(kiln::load(with_sgd, good), "state of Adam", "SGD");
}

TEST(Checkpoint, HostileFilesAreRefusedNamingTheFile) {
  TempDir dir;
  const auto good = dir / "good.safetensors", bad = dir / "bad.safetensors";
  TrainingRun run(7);
  kiln::save(run.items(), good);
  auto items = run.items();
  const std::string bytes = read_bytes(good);

  write_bytes(bad, bytes.substr(0, 20));  // truncated
  EXPECT_KILN_ERROR(kiln::load(items, bad), "kiln::load", bad.string());
  std::string huge = bytes;
  for (int i = 0; i < 8; ++i) huge[static_cast<size_t>(i)] = i == 7 ? '\x40' : '\0';
  write_bytes(bad, huge);  // a header length of 2^62
  EXPECT_KILN_ERROR(kiln::load(items, bad), bad.string());
  io::save_safetensors(bad, io::NamedTensors{{"w", zeros({2})}});
  EXPECT_KILN_ERROR(kiln::load(items, bad), bad.string(), "not a Kiln checkpoint");

  for (auto [key, value, expected] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"kiln.version", "2", "version '2'"},
           {"kiln.format", "pickle", "not a Kiln checkpoint"},
           {"kiln.entries", "model:blob", "model:blob"},
           {"kiln.entries", "model:module,model:module", "twice"},
           {"kiln.entries", "model:module", "belongs to no entry"},
           {"kiln.rng.seed", "-1", "'kiln.rng.seed'"},
           {"kiln.rng.offset", std::string(5000, '9'), "'kiln.rng.offset'"},
           {"kiln.optimizer.type", "Lion", "state of Lion"}}) {
    rewrite(good, bad, "", Tensor(), key, value);
    const std::string message = kiln_error_message([&] { kiln::load(items, bad); });
    EXPECT_TRUE(contains(message, bad.string())) << message;
    EXPECT_TRUE(contains(message, expected)) << key << ": " << message;
    EXPECT_LT(message.size(), 1000u) << message.substr(0, 1000);
  }
}

TEST(Checkpoint, SaveRefusesBadNamesWritingNothing) {
  TempDir dir;
  TrainingRun run(8);
  const auto path = dir / "c.safetensors";
  std::vector<CheckpointItem> dotted = {{"model.x", run.model}};
  EXPECT_KILN_ERROR(kiln::save(dotted, path), "kiln::save", "'model.x'");
  std::vector<CheckpointItem> twice = {{"model", run.model}, {"model", *run.opt}};
  EXPECT_KILN_ERROR(kiln::save(twice, path), "'model' is given twice");
  std::vector<CheckpointItem> model = {{"model", run.model}};
  EXPECT_KILN_ERROR(kiln::save(model, path, {{"kiln.mine", "x"}}), "'kiln.mine'");
  Tensor undefined;
  std::vector<CheckpointItem> empty = {{"t", undefined}};
  EXPECT_KILN_ERROR(kiln::save(empty, path), "'t' is undefined");
  EXPECT_TRUE(dir.entries().empty());
}

TEST(Checkpoint, TensorEntriesCopyIntoDefinedTensorsAndSetUndefinedOnes) {
  TempDir dir;
  Tensor saved = from_vector<float>({1, 2, 3});
  double ratio = 0.25;
  std::vector<CheckpointItem> items = {{"t", saved}, {"ratio", ratio}};
  kiln::save(items, dir / "t.safetensors");
  Tensor into = zeros({3});
  Tensor alias = into;
  Tensor unset;
  double r = 0;
  std::vector<CheckpointItem> a = {{"t", into}, {"ratio", r}};
  kiln::load(a, dir / "t.safetensors");
  EXPECT_EQ(alias.to_vector<float>(), (std::vector<float>{1, 2, 3}));  // in place
  EXPECT_EQ(r, 0.25);
  std::vector<CheckpointItem> b = {{"t", unset}, {"ratio", r}};
  kiln::load(b, dir / "t.safetensors");
  EXPECT_EQ(unset.to_vector<float>(), (std::vector<float>{1, 2, 3}));
  Tensor wrong = zeros({4});
  std::vector<CheckpointItem> c = {{"t", wrong}, {"ratio", r}};
  EXPECT_KILN_ERROR(kiln::load(c, dir / "t.safetensors"), "key 't'", "[4]");
}

// kiln::load checks every destination before it sets anything: a tensor it cannot
// write into (an expanded view, whose elements overlap) is refused naming the file and
// the entry, and the module listed before it keeps its weights (they were replaced
// first, and the error named neither). A module parameter alike.
TEST(Checkpoint, UnwritableDestinationsAreRefusedBeforeAnythingIsSet) {
  TempDir dir;
  const auto path = dir / "m.safetensors";
  auto saved = std::make_shared<nn::Linear>(2, 2);
  Tensor w = from_vector<float>({1, 2, 3});
  kiln::save({{"model", saved}, {"w", w}}, path);

  auto model = std::make_shared<nn::Linear>(2, 2);
  const std::vector<float> weights = model->weight.to_vector<float>();
  Tensor overlapping = zeros({1}).expand({3});
  EXPECT_KILN_ERROR(kiln::load({{"model", model}, {"w", overlapping}}, path), path.string(), "'w'",
                    "overlap");
  EXPECT_EQ(model->weight.to_vector<float>(), weights);

  auto expanded = std::make_shared<nn::Linear>(2, 2);
  expanded->register_parameter("bias", zeros({1}).expand({2}));
  const std::vector<float> before = expanded->weight.to_vector<float>();
  Tensor w_into = zeros({3});
  EXPECT_KILN_ERROR(kiln::load({{"model", expanded}, {"w", w_into}}, path), path.string(),
                    "'model'", "cannot write into", "bias");
  EXPECT_EQ(expanded->weight.to_vector<float>(), before);
  EXPECT_EQ(w_into.to_vector<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_KILN_ERROR(expanded->load_state_dict(saved->state_dict()), "cannot write into", "bias");
  EXPECT_EQ(expanded->weight.to_vector<float>(), before);
}

// The file-size limit makes the write fail part-way (as a full disk would): the
// previous checkpoint stays byte for byte, and no temporary file is left.
TEST(Checkpoint, FailedSaveLeavesThePreviousFileIntact) {
  TempDir dir;
  const auto path = dir / "c.safetensors";
  TrainingRun run(9);
  kiln::save(run.items(), path);
  const std::string before = read_bytes(path);
  Tensor big = zeros({256, 1024});  // 1 MiB
  auto items = run.items();
  items.push_back({"big", big});
  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto previous_handler = ::signal(SIGXFSZ, SIG_IGN);
  struct rlimit limited = saved;
  limited.rlim_cur = 64 * 1024;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
  const std::string message = kiln_error_message([&] { kiln::save(items, path); });
  ::setrlimit(RLIMIT_FSIZE, &saved);
  ::signal(SIGXFSZ, previous_handler);
  EXPECT_TRUE(contains(message, path.string())) << message;
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"c.safetensors"}));
  // And into a folder that does not exist: an error naming the path, nothing created.
  const auto missing = dir / "no/such/c.safetensors";
  EXPECT_KILN_ERROR(kiln::save(items, missing), missing.string());
}

}  // namespace
}  // namespace kiln::test
