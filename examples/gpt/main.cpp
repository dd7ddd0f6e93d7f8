// kiln-gpt: a character-level GPT trained on the fortune cookies Debian ships (the
// `fortunes` package), with nanoGPT's recipe: AdamW without decay on biases and
// norms, a linear warm-up then a cosine schedule, gradient clipping at 1.0, periodic
// validation loss, checkpoints, bf16 autocast, graph replay of the step, and a sample
// printed at the end (generated with a key/value cache, model.h).
#include <kiln/kiln.h>
#include <kiln/nn.h>
#include <kiln/optim.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <numbers>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "model.h"

namespace {

namespace F = kiln::nn::functional;

struct Args {
  std::vector<std::string> data = {"/usr/share/games/fortunes"};
  std::string device, precision = "fp32", checkpoint;
  int64_t steps = 1000, batch_size = 32, block_size = 64, layers = 4, heads = 4, embd = 128;
  int64_t warmup = 100, eval_every = 250, eval_batches = 20, sample_tokens = 300, top_k = 0;
  double dropout = 0.0, lr = 1e-3, min_lr = 1e-4, weight_decay = 0.1, grad_clip = 1.0;
  double temperature = 0.8, top_p = 0.95, min_improvement = 0;
  uint64_t seed = 1337;
  bool graph = false, resume = false;
};

// The text of every fortune file under the paths (a folder: its files without an
// extension, which is how the package names the cookies; .dat indexes are skipped).
std::string read_corpus(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (const std::string& p : paths) {
    KILN_CHECK(fs::exists(p), "kiln-gpt: ", p,
               " does not exist (install Debian's `fortunes` package, or pass --data FILE)");
    if (fs::is_directory(p)) {
      for (const auto& entry : fs::directory_iterator(p))
        if (entry.is_regular_file() && !entry.is_symlink() && !entry.path().has_extension())
          files.push_back(entry.path());
    } else {
      files.push_back(p);
    }
  }
  std::sort(files.begin(), files.end());
  std::string text;
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    KILN_CHECK(in, "kiln-gpt: cannot read ", f.string());
    std::ostringstream s;
    s << in.rdbuf();
    text += s.str();
  }
  KILN_CHECK(text.size() > 1000, "kiln-gpt: the corpus under ", paths.front(), " holds only ",
             text.size(), " bytes");
  return text;
}

// Characters as token ids: the distinct bytes of the corpus, in byte order.
struct Vocabulary {
  explicit Vocabulary(const std::string& text) {
    std::set<unsigned char> seen(text.begin(), text.end());
    chars.assign(seen.begin(), seen.end());
    for (size_t i = 0; i < chars.size(); ++i) ids[chars[i]] = static_cast<int64_t>(i);
  }
  std::vector<int64_t> encode(const std::string& s) const {
    std::vector<int64_t> out;
    out.reserve(s.size());
    for (unsigned char c : s) out.push_back(ids[c]);
    return out;
  }
  std::string decode(const std::vector<int64_t>& tokens) const {
    std::string s;
    for (int64_t t : tokens) s += static_cast<char>(chars[static_cast<size_t>(t)]);
    return s;
  }
  std::vector<unsigned char> chars;
  int64_t ids[256] = {};
};

// nanoGPT's schedule: linear warm-up to the base rate, then a cosine down to
// min_ratio of it at the last step.
class WarmupCosine : public kiln::optim::LRScheduler {
 public:
  WarmupCosine(kiln::optim::Optimizer& o, int64_t warmup, int64_t total, double min_ratio)
      : LRScheduler(o), warmup_(warmup), total_(total), min_ratio_(min_ratio) {
    apply();
  }

 protected:
  double lr_at(double base, int64_t t) const override {
    if (t < warmup_) return base * static_cast<double>(t + 1) / static_cast<double>(warmup_);
    if (t >= total_) return base * min_ratio_;
    const double r = static_cast<double>(t - warmup_) / static_cast<double>(total_ - warmup_);
    return base * (min_ratio_ + 0.5 * (1 + std::cos(std::numbers::pi * r)) * (1 - min_ratio_));
  }

 private:
  int64_t warmup_, total_;
  double min_ratio_;
};

// Random windows of block_size + 1 tokens: inputs and the next-token targets.
struct Batches {
  const std::vector<int64_t>& tokens;
  int64_t batch, block;
  kiln::Device device;
  std::pair<kiln::Tensor, kiln::Tensor> draw() const {
    const kiln::Tensor starts =
        kiln::randint(0, static_cast<int64_t>(tokens.size()) - block - 1, {batch});
    std::vector<int64_t> x, y;
    for (int64_t s : starts.to_vector<int64_t>()) {
      x.insert(x.end(), tokens.begin() + s, tokens.begin() + s + block);
      y.insert(y.end(), tokens.begin() + s + 1, tokens.begin() + s + block + 1);
    }
    return {kiln::from_vector<int64_t>(x, {batch, block}).to(device),
            kiln::from_vector<int64_t>(y, {batch, block}).to(device)};
  }
};

int run(const Args& a) {
  const kiln::Device device = a.device.empty() ? kiln::default_device() : kiln::Device(a.device);
  kiln::manual_seed(a.seed);
  const std::string text = read_corpus(a.data);
  const Vocabulary vocab(text);
  const std::vector<int64_t> tokens = vocab.encode(text);
  const size_t split = tokens.size() * 9 / 10;
  const std::vector<int64_t> train(tokens.begin(), tokens.begin() + static_cast<int64_t>(split));
  const std::vector<int64_t> val(tokens.begin() + static_cast<int64_t>(split), tokens.end());

  kiln::gpt::Config config;
  config.vocab_size = static_cast<int64_t>(vocab.chars.size());
  config.block_size = a.block_size;
  config.n_layer = a.layers;
  config.n_head = a.heads;
  config.n_embd = a.embd;
  config.dropout = a.dropout;
  auto model = std::make_shared<kiln::gpt::GPT>(config);
  model->to(device);
  kiln::optim::AdamW optimizer(
      model->param_groups(
          kiln::optim::AdamWOptions(a.lr).betas({0.9, 0.99}).weight_decay(a.weight_decay)),
      kiln::optim::AdamWOptions(a.lr));
  WarmupCosine schedule(optimizer, a.warmup, a.steps, a.min_lr / a.lr);
  int64_t first_step = 0;
  if (a.resume) {
    kiln::load({{"model", *model},
                {"optimizer", optimizer},
                {"scheduler", schedule},
                {"rng", kiln::global_generator}},
               a.checkpoint);
    first_step = schedule.last_step();
  }
  int64_t parameters = 0;
  for (const kiln::Tensor& p : model->parameters()) parameters += p.numel();
  std::cout << "kiln-gpt: " << text.size() << " characters (" << config.vocab_size << " distinct), "
            << a.layers << " layers, " << a.heads << " heads, " << a.embd << " wide, context "
            << a.block_size << ", " << parameters << " parameters, on " << device.str()
            << (a.precision == "bf16" ? ", bf16 autocast" : "") << (a.graph ? ", graph replay" : "")
            << "\n";

  const Batches train_batches{train, a.batch_size, a.block_size, device};
  const Batches val_batches{val, a.batch_size, a.block_size, device};
  auto loss_of = [&](const kiln::Tensor& x, const kiln::Tensor& y) {
    std::optional<kiln::autocast> mixed;
    if (a.precision == "bf16") mixed.emplace(device.backend(), kiln::DType::BFloat16);
    const kiln::Tensor logits = model->forward(x);
    return F::cross_entropy(logits.view({-1, config.vocab_size}).to(kiln::DType::Float32),
                            y.view({-1}));
  };
  auto validation_loss = [&] {
    kiln::NoGradGuard no_grad;
    model->eval();
    double sum = 0;
    for (int64_t i = 0; i < a.eval_batches; ++i) {
      auto [x, y] = val_batches.draw();
      sum += loss_of(x, y).item<double>();
    }
    model->train();
    return sum / static_cast<double>(a.eval_batches);
  };
  auto train_step = [&](const kiln::Tensor& x, const kiln::Tensor& y) {
    kiln::Tensor loss = loss_of(x, y);
    loss.backward();
    kiln::optim::clip_grad_norm_(model->parameters(), a.grad_clip);
    optimizer.step();
    return loss;
  };

  const double first_val = validation_loss();
  std::cout << "step " << first_step << ": validation loss " << std::fixed << std::setprecision(4)
            << first_val << std::endl;
  double last_val = first_val;
  kiln::Graph graph;
  kiln::Tensor graph_x, graph_y, graph_loss;
  constexpr int64_t kGraphWarmup = 3;
  const auto start = std::chrono::steady_clock::now();
  double recent = 0;
  int64_t recent_steps = 0;
  for (int64_t step = first_step; step < a.steps; ++step) {
    auto [x, y] = train_batches.draw();
    kiln::Tensor loss;
    if (a.graph && step - first_step >= kGraphWarmup) {
      if (!graph.captured()) {
        graph_x = kiln::empty_like(x);
        graph_y = kiln::empty_like(y);
        optimizer.zero_grad();  // the gradients come from the graph's pool
        kiln::GraphCapture capture(graph, device);
        graph_loss = train_step(graph_x, graph_y);
      }
      graph_x.copy_(x);
      graph_y.copy_(y);
      graph.replay();
      loss = graph_loss;
    } else {
      optimizer.zero_grad();
      loss = train_step(x, y);
    }
    schedule.step();
    const double value = loss.item<double>();
    KILN_CHECK(std::isfinite(value), "kiln-gpt: training diverged at step ", step + 1,
               ": the loss is ", value, " (lower --lr?)");
    recent += value;
    ++recent_steps;
    const bool last = step + 1 == a.steps;
    if ((step + 1) % a.eval_every == 0 || last) {
      last_val = validation_loss();
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::cout << "step " << step + 1 << ": train loss " << recent / recent_steps
                << ", validation loss " << last_val << ", lr " << std::setprecision(6)
                << schedule.get_last_lr()[0] << std::setprecision(4) << ", " << std::setprecision(1)
                << 1000 * seconds / (step + 1 - first_step) << " ms/step" << std::setprecision(4)
                << std::endl;
      recent = 0;
      recent_steps = 0;
      if (!a.checkpoint.empty())
        kiln::save({{"model", *model},
                    {"optimizer", optimizer},
                    {"scheduler", schedule},
                    {"rng", kiln::global_generator}},
                   a.checkpoint);
    }
  }

  model->eval();
  const kiln::Tensor prompt = kiln::from_vector<int64_t>(vocab.encode("\n"), {1, 1}).to(device);
  const kiln::Tensor sample =
      kiln::gpt::generate(*model, prompt, a.sample_tokens, a.temperature, a.top_k, a.top_p);
  std::cout << std::defaultfloat << "--- sample (temperature " << a.temperature << ", top_p "
            << a.top_p << ") ---"
            << vocab.decode(sample.to(kiln::Device("cpu")).view({-1}).to_vector<int64_t>())
            << "\n---\n";
  std::cout << std::fixed << std::setprecision(4) << "validation loss " << first_val << " -> "
            << last_val << "\n";
  if (first_val - last_val < a.min_improvement) {
    std::cerr << "kiln-gpt: the validation loss improved by " << first_val - last_val
              << ", less than --min-improvement " << a.min_improvement << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{
      "kiln-gpt: trains a character-level GPT (nanoGPT's model and recipe) on "
      "Debian's fortune cookies and prints a sample"};
  app.add_option("--data", a.data, "fortune files or folders of them")->capture_default_str();
  app.add_option("--device", a.device, "the device (default: KILN_BACKEND's)");
  app.add_option("--steps", a.steps, "optimizer steps")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000000));
  app.add_option("--batch-size", a.batch_size)->capture_default_str()->check(CLI::Range(1, 65536));
  app.add_option("--block-size", a.block_size, "context length")
      ->capture_default_str()
      ->check(CLI::Range(2, 65536));
  app.add_option("--layers", a.layers)->capture_default_str()->check(CLI::Range(1, 256));
  app.add_option("--heads", a.heads)->capture_default_str()->check(CLI::Range(1, 256));
  app.add_option("--embd", a.embd, "model width (a multiple of --heads)")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  app.add_option("--dropout", a.dropout)->capture_default_str()->check(CLI::Range(0.0, 0.99));
  app.add_option("--lr", a.lr, "peak learning rate")
      ->capture_default_str()
      ->check(CLI::Range(1e-8, 10.0));
  app.add_option("--min-lr", a.min_lr, "the rate at the last step")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 10.0));
  app.add_option("--warmup", a.warmup, "warm-up steps")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000000));
  app.add_option("--weight-decay", a.weight_decay)
      ->capture_default_str()
      ->check(CLI::Range(0.0, 10.0));
  app.add_option("--grad-clip", a.grad_clip)->capture_default_str()->check(CLI::Range(0.0, 1e6));
  app.add_option("--eval-every", a.eval_every, "steps between validation losses")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000000));
  app.add_option("--eval-batches", a.eval_batches)
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--precision", a.precision, "fp32 or bf16 (autocast)")
      ->capture_default_str()
      ->check(CLI::IsMember({"fp32", "bf16"}));
  app.add_flag("--graph", a.graph, "capture the training step once, replay it");
  app.add_option("--checkpoint", a.checkpoint, "save here at every validation");
  app.add_flag("--resume", a.resume, "continue from --checkpoint");
  app.add_option("--sample-tokens", a.sample_tokens)
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  app.add_option("--temperature", a.temperature)
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  app.add_option("--top-k", a.top_k, "0: every token")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  app.add_option("--top-p", a.top_p)->capture_default_str()->check(CLI::Range(1e-6, 1.0));
  app.add_option("--seed", a.seed)->capture_default_str();
  app.add_option("--min-improvement", a.min_improvement,
                 "exit 1 unless the validation loss falls by this much (for tests)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    KILN_CHECK(!a.resume || !a.checkpoint.empty(), "kiln-gpt: --resume needs --checkpoint");
    KILN_CHECK(a.embd % a.heads == 0, "kiln-gpt: --embd (", a.embd,
               ") must be a multiple of --heads (", a.heads, ")");
    return run(a);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
