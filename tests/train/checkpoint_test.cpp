// kiln-train's checkpoint restore path (examples/train/checkpoint.h) against hostile
// files, generated here: deep JSON, huge and malformed numbers, oversized text. Each
// must be refused with a short kiln::Error that names the file and changes nothing.
#include <gtest/gtest.h>
#include <kiln/kiln.h>
#include <kiln/nn/modules.h>
#include <kiln/optim/scheduler.h>
#include <kiln/optim/sgd.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "checkpoint.h"

namespace {

using kiln::train::Args;
using kiln::train::History;

// A tiny run: Linear(4, 3), SGD with momentum, a cosine schedule; a checkpoint of it
// in a temporary folder.
class CheckpointRestore : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "kiln-train-ckpt-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    args_.model = "tiny";
    args_.epochs = 3;
    args_.checkpoint = (dir_ / "run.safetensors").string();
    kiln::manual_seed(7);
    model_ = std::make_shared<kiln::nn::Linear>(4, 3);
    optimizer_ = std::make_unique<kiln::optim::SGD>(model_->parameters(),
                                                    kiln::optim::SGDOptions(0.1).momentum(0.9));
    schedule_ = std::make_unique<kiln::optim::CosineAnnealingLR>(*optimizer_, 30);
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  // A valid checkpoint after 2 epochs, as kiln-train writes it.
  kiln::io::SafetensorsFile valid_file() {
    History history{{0.9, 0.5}, {0.6, 0.7}, {1.0, 1.1}};
    // One step first, so that the optimizer has momentum buffers to save.
    model_->forward(kiln::ones({2, 4})).sum().backward();
    optimizer_->step();
    for (int i = 0; i < 4; ++i) schedule_->step();
    kiln::train::save_checkpoint(args_, *model_, *optimizer_, schedule_.get(), nullptr, 2, history);
    return kiln::io::load_safetensors(args_.checkpoint);
  }

  // restore() of `file` with metadata `key` set to `value`; returns the error's text
  // (or fails the test if restore accepts it).
  std::string refusal(kiln::io::SafetensorsFile file, const std::string& key,
                      const std::string& value) {
    file.metadata[key] = value;
    History history;
    try {
      kiln::train::restore(args_, file, *model_, *optimizer_, schedule_.get(), nullptr, history);
    } catch (const kiln::Error& e) {
      return e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "restore threw a " << typeid(e).name()
                    << ", not a kiln::Error: " << e.what();
      return e.what();
    }
    ADD_FAILURE() << "restore accepted '" << key << "' = " << value.substr(0, 80);
    return "";
  }

  std::filesystem::path dir_;
  Args args_;
  std::shared_ptr<kiln::nn::Linear> model_;
  std::unique_ptr<kiln::optim::SGD> optimizer_;
  std::unique_ptr<kiln::optim::CosineAnnealingLR> schedule_;
};

std::string nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// Every refusal names the file and stays short, whatever the file holds.
void expect_short_and_named(const std::string& message, const std::string& path) {
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_LT(message.size(), 800u) << message.substr(0, 800);
}

TEST_F(CheckpointRestore, RoundTripRestoresEverything) {
  auto file = valid_file();
  const auto weight = model_->parameters()[0].to_vector<float>();
  const auto generator = kiln::generator_state();
  kiln::manual_seed(99);
  kiln::NoGradGuard no_grad;
  model_->parameters()[0].fill_(0.0);
  History history;
  schedule_->set_step(0);
  EXPECT_EQ(
      kiln::train::restore(args_, file, *model_, *optimizer_, schedule_.get(), nullptr, history),
      2);
  EXPECT_EQ(model_->parameters()[0].to_vector<float>(), weight);
  EXPECT_EQ(kiln::generator_state().seed, generator.seed);
  EXPECT_EQ(kiln::generator_state().offset, generator.offset);
  EXPECT_EQ(schedule_->last_step(), 4);
  EXPECT_EQ(history.train_loss, (std::vector<double>{0.9, 0.5}));
  EXPECT_EQ(history.seconds, (std::vector<double>{1.0, 1.1}));
}

// --precision fp16: the GradScaler's state rides along, and a hostile value in it is
// refused naming the file and the key.
TEST_F(CheckpointRestore, TheLossScalersStateRoundTripsAndIsChecked) {
  args_.precision = "fp16";
  kiln::amp::GradScaler scaler(kiln::amp::GradScalerOptions{.init_scale = 512});
  scaler.update(128.0);
  History history{{0.9}, {0.6}, {1.0}};
  kiln::train::save_checkpoint(args_, *model_, *optimizer_, schedule_.get(), &scaler, 1, history);
  auto file = kiln::io::load_safetensors(args_.checkpoint);
  kiln::amp::GradScaler restored;
  EXPECT_EQ(
      kiln::train::restore(args_, file, *model_, *optimizer_, schedule_.get(), &restored, history),
      1);
  EXPECT_EQ(restored.get_scale(), 128.0);
  for (auto& [name, t] : file.tensors)
    if (name == "scaler.scale") t = kiln::scalar_tensor(-1.0, kiln::TensorOptions(kiln::float64));
  try {
    kiln::train::restore(args_, file, *model_, *optimizer_, schedule_.get(), &restored, history);
    ADD_FAILURE() << "a negative loss scale was accepted";
  } catch (const kiln::Error& e) {
    expect_short_and_named(e.what(), args_.checkpoint);
    EXPECT_NE(std::string(e.what()).find("'scale'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(restored.get_scale(), 128.0);
  // A run with another precision is another run.
  args_.precision = "bf16";
  EXPECT_NE(refusal(file, "format", "kiln-train checkpoint v2").find("other options"),
            std::string::npos);
}

TEST_F(CheckpointRestore, LoadCheckpointReadsTheFile) {
  valid_file();
  History history;
  EXPECT_EQ(
      kiln::train::load_checkpoint(args_, *model_, *optimizer_, schedule_.get(), nullptr, history),
      2);
  EXPECT_EQ(history.test_accuracy, (std::vector<double>{0.6, 0.7}));
}

// Issue 11, item 1: a 100000-level "run" crashed restore() when it printed it.
TEST_F(CheckpointRestore, DeeplyNestedRunIsRefused) {
  auto file = valid_file();
  // 16 levels are accepted (then refused as another run's), 17 are not.
  EXPECT_NE(refusal(file, "run", nested(16)).find("other options"), std::string::npos);
  for (size_t depth : {size_t{17}, size_t{100000}, size_t{1000000}}) {
    std::string message = refusal(file, "run", nested(depth));
    EXPECT_NE(message.find("'run' metadata nests deeper than 16 levels"), std::string::npos)
        << message;
    expect_short_and_named(message, args_.checkpoint);
  }
  // Objects nest as deep as lists.
  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += "{\"a\":";
  objects += "1" + std::string(100000, '}');
  EXPECT_NE(refusal(file, "run", objects).find("nests deeper"), std::string::npos);
}

TEST_F(CheckpointRestore, DeeplyNestedHistoryIsRefused) {
  auto file = valid_file();
  std::string message = refusal(file, "history", nested(100000));
  EXPECT_NE(message.find("'history' metadata nests deeper"), std::string::npos) << message;
  expect_short_and_named(message, args_.checkpoint);
}

// The same through the file: save_safetensors stores the deep text as a string value,
// so load_safetensors accepts it and restore() must refuse it.
TEST_F(CheckpointRestore, DeeplyNestedRunInAFileIsRefused) {
  auto file = valid_file();
  file.metadata["run"] = nested(100000);
  kiln::io::save_safetensors(args_.checkpoint, file.tensors, file.metadata);
  History history;
  try {
    kiln::train::load_checkpoint(args_, *model_, *optimizer_, schedule_.get(), nullptr, history);
    ADD_FAILURE() << "load_checkpoint accepted a 100000-level 'run'";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("nests deeper"), std::string::npos) << e.what();
    expect_short_and_named(e.what(), args_.checkpoint);
  }
}

TEST_F(CheckpointRestore, OtherRunIsRefusedWithAnExcerpt) {
  auto file = valid_file();
  // A flat but huge "run": the message quotes an excerpt, not the megabyte.
  std::string message = refusal(file, "run", "[\"" + std::string(1 << 20, 'x') + "\"]");
  EXPECT_NE(message.find("was written by a run with other options"), std::string::npos);
  expect_short_and_named(message, args_.checkpoint);
  Args other = args_;
  other.lr = 0.5;
  message = refusal(file, "run", kiln::train::run_identity(other).dump());
  EXPECT_NE(message.find("\"lr\":0.5"), std::string::npos) << message;
}

TEST_F(CheckpointRestore, InvalidJsonIsRefusedBriefly) {
  auto file = valid_file();
  // An unterminated megabyte string: nlohmann's error quotes the whole token.
  for (const std::string& text : {std::string("\"") + std::string(1 << 20, 'y'),
                                  std::string("{\"train_loss\": [1, 2,"), std::string("")}) {
    std::string message = refusal(file, "history", text);
    EXPECT_NE(message.find("'history' metadata is not valid JSON"), std::string::npos) << message;
    expect_short_and_named(message, args_.checkpoint);
  }
  std::string message = refusal(file, "history", R"({"train_loss": "no"})");
  expect_short_and_named(message, args_.checkpoint);
}

TEST_F(CheckpointRestore, MalformedNumbersAreRefused) {
  auto file = valid_file();
  for (const char* key : {"epochs_done", "kiln.rng.seed", "kiln.rng.offset"}) {
    for (const std::string& text :
         {std::string("-1"), std::string("abc"), std::string("12abc"), std::string(" 1"),
          std::string(""), std::string("99999999999999999999999"), std::string(5000, '9')}) {
      std::string message = refusal(file, key, text);
      EXPECT_NE(message.find(key), std::string::npos) << message;
      expect_short_and_named(message, args_.checkpoint);
    }
  }
  // epochs_done beyond the run's epochs.
  EXPECT_NE(refusal(file, "epochs_done", "4").find("from 0 to 3"), std::string::npos);
}

TEST_F(CheckpointRestore, HistoryMustMatchEpochsDone) {
  auto file = valid_file();
  std::string message =
      refusal(file, "history", R"({"train_loss":[1],"test_accuracy":[1],"seconds":[1]})");
  EXPECT_NE(message.find("epochs_done is 2"), std::string::npos) << message;
}

TEST_F(CheckpointRestore, MissingMetadataIsRefused) {
  auto file = valid_file();
  file.metadata.erase("kiln.rng.offset");
  History history;
  EXPECT_THROW(
      kiln::train::restore(args_, file, *model_, *optimizer_, schedule_.get(), nullptr, history),
      kiln::Error);
}

// load_safetensors quotes names from the file in its messages; load_checkpoint cuts
// them, so a megabyte-long tensor name does not become a megabyte of error.
TEST_F(CheckpointRestore, HugeNamesInLoadErrorsAreCut) {
  std::string header = "{\"" + std::string(1 << 20, 'n') +
                       "\":{\"dtype\":\"F33\",\"shape\":[],\"data_offsets\":[0,0]}}";
  header.resize((header.size() + 7) / 8 * 8, ' ');
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  {
    std::ofstream out(args_.checkpoint, std::ios::binary);
    out << bytes << header;
  }
  History history;
  try {
    kiln::train::load_checkpoint(args_, *model_, *optimizer_, schedule_.get(), nullptr, history);
    ADD_FAILURE() << "load_checkpoint accepted dtype F33";
  } catch (const kiln::Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(args_.checkpoint), std::string::npos) << message.substr(0, 200);
    EXPECT_LE(message.size(), 2003u);  // 2000 and "..."
  }
}

// Tensors that do not fit the model: the model's own error, naming the file too.
TEST_F(CheckpointRestore, MismatchedTensorsNameTheFile) {
  auto file = valid_file();
  for (auto& [name, tensor] : file.tensors)
    if (name == "model.weight") tensor = kiln::zeros({5, 4});
  History history;
  try {
    kiln::train::restore(args_, file, *model_, *optimizer_, schedule_.get(), nullptr, history);
    ADD_FAILURE() << "restore accepted a [5, 4] weight for Linear(4, 3)";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("size mismatch for: weight"), std::string::npos)
        << e.what();
    expect_short_and_named(e.what(), args_.checkpoint);
  }
}

// Checkpoints of kiln-train before kiln::save (format v1, hand-prefixed keys) are
// refused with a message that says so (docs/design-decisions.md).
TEST_F(CheckpointRestore, FormatV1IsRefusedClearly) {
  auto file = valid_file();
  std::string message = refusal(file, "format", "kiln-train checkpoint v1");
  EXPECT_NE(message.find("older kiln-train (format v1"), std::string::npos) << message;
  expect_short_and_named(message, args_.checkpoint);
  EXPECT_NE(refusal(file, "format", "something else").find("its format is"), std::string::npos);
}

// The optimizer's learning rate is range-checked through kiln::CheckpointFile::restore:
// -1 or NaN is refused naming the file and the full key, and nothing changes (the
// model, the schedule and the generator included, though they come first in the file).
TEST_F(CheckpointRestore, BadLearningRateIsRefusedNamingTheKey) {
  auto file = valid_file();
  kiln::NoGradGuard no_grad;
  model_->parameters()[0].fill_(0.25);
  schedule_->set_step(1);
  const double lr = optimizer_->param_groups()[0].options->lr();
  kiln::manual_seed(5);
  for (double bad : {-1.0, std::nan("")}) {
    auto copy = file;
    for (auto& [name, t] : copy.tensors)
      if (name == "optimizer.param_groups.0.lr")
        t = kiln::scalar_tensor(bad, kiln::TensorOptions(kiln::float64));
    std::string message = refusal(copy, "format", "kiln-train checkpoint v2");
    EXPECT_NE(message.find("key 'optimizer.param_groups.0.lr'"), std::string::npos) << message;
    expect_short_and_named(message, args_.checkpoint);
  }
  for (float v : model_->parameters()[0].to_vector<float>()) EXPECT_EQ(v, 0.25f);
  EXPECT_EQ(schedule_->last_step(), 1);
  EXPECT_EQ(optimizer_->param_groups()[0].options->lr(), lr);
  EXPECT_EQ(kiln::generator_state().seed, 5u);
}

// After --resume the banner shows the learning rate the checkpoint restored, and
// divergence is not blamed on --lr (issue 28: the banner showed --lr's value).
TEST_F(CheckpointRestore, ResumedRunsReportTheRestoredLearningRate) {
  args_.lr = 0.1;
  auto file = valid_file();  // its schedule has taken the rate below 0.1
  History history;
  kiln::train::restore(args_, file, *model_, *optimizer_, schedule_.get(), nullptr, history);
  std::ostringstream restored;
  restored << optimizer_->param_groups()[0].options->lr();
  ASSERT_NE(restored.str(), "0.1");
  EXPECT_EQ(kiln::train::lr_source(args_, true, *optimizer_),
            restored.str() + " (restored from " + args_.checkpoint + "; --lr 0.1)");
  const std::string advice = kiln::train::divergence_advice(args_, true, *optimizer_);
  EXPECT_NE(advice.find("the learning rate in effect, " + restored.str() + ", was restored from " +
                        args_.checkpoint + " (not taken from --lr)"),
            std::string::npos)
      << advice;
  // A fresh run: --lr's value, and --lr to blame.
  EXPECT_EQ(kiln::train::lr_source(args_, false, *optimizer_), "0.1");
  EXPECT_EQ(kiln::train::divergence_advice(args_, false, *optimizer_), "try a smaller --lr");
}

// A refused checkpoint changes nothing: all metadata is checked before any state.
TEST_F(CheckpointRestore, RefusalLeavesTheRunUntouched) {
  auto file = valid_file();
  kiln::NoGradGuard no_grad;
  model_->parameters()[0].fill_(0.25);
  schedule_->set_step(1);
  kiln::manual_seed(5);
  refusal(file, "history", nested(100000));
  refusal(file, "kiln.rng.seed", "-1");
  for (float v : model_->parameters()[0].to_vector<float>()) EXPECT_EQ(v, 0.25f);
  EXPECT_EQ(schedule_->last_step(), 1);
  EXPECT_EQ(kiln::generator_state().seed, 5u);
  EXPECT_EQ(kiln::generator_state().offset, 0u);
}

}  // namespace
