// Writes the hostile inputs that tests/train's CTests feed to kiln-train, generated
// here rather than stored as blobs:
//
//   kiln_train_hostile_inputs DIR
//     DIR/deep_run.safetensors      a checkpoint of kiln-train's MLP, valid but for its
//                                   "run" metadata: JSON nested 100000 levels deep
//     DIR/deep_history.safetensors  the same for the run `kiln-train --model mlp
//                                   --epochs 1 --limit-batches 2` (so "run" matches),
//                                   with its "history" nested 100000 levels deep
//     DIR/empty_data/               Fashion-MNIST in the IDX format with 0 images in
//                                   each split
//     DIR/negative_lr.safetensors   a checkpoint of `kiln-train --model mlp --epochs 1
//                                   --limit-batches 2 --schedule none` after 0 epochs,
//                                   valid but for its optimizer's learning rate: -1
//     DIR/huge_lr.safetensors       the same for `... --optimizer sgd --lr 0.01
//                                   --limit-batches 50`, with a learning rate of 1e12
//                                   (valid, but training diverges)
#include <kiln/io/safetensors.h>
#include <kiln/kiln.h>
#include <kiln/optim/adam.h>
#include <kiln/optim/sgd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "checkpoint.h"
#include "models.h"

namespace {

constexpr size_t kDepth = 100000;

std::string nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// An uncompressed IDX file: big-endian magic number, sizes, no elements.
void write_empty_idx(const std::filesystem::path& path, uint32_t magic,
                     const std::vector<uint32_t>& sizes) {
  std::ofstream out(path, std::ios::binary);
  auto put = [&](uint32_t v) {
    const char bytes[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                           static_cast<char>(v >> 8), static_cast<char>(v)};
    out.write(bytes, 4);
  };
  put(magic);
  for (uint32_t s : sizes) put(s);
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

// A checkpoint of the model and optimizer kiln-train builds for `a`, after 0 epochs.
void write_checkpoint(const kiln::train::Args& a) {
  kiln::train::ModelOptions options;
  options.batch_norm = !a.no_batch_norm;
  options.dropout = a.dropout;
  options.hidden = 256;  // kiln-train's MLP width
  auto model = kiln::train::make_model(a.model, options);
  std::unique_ptr<kiln::optim::Optimizer> optimizer;
  if (a.optimizer == "sgd")
    optimizer = std::make_unique<kiln::optim::SGD>(model->parameters(),
                                                   kiln::optim::SGDOptions(a.lr).momentum(0.9));
  else
    optimizer =
        std::make_unique<kiln::optim::Adam>(model->parameters(), kiln::optim::AdamOptions(a.lr));
  kiln::train::save_checkpoint(a, *model, *optimizer, nullptr, nullptr, 0, {});
}

// A checkpoint for `a` (no schedule) re-saved to `path` with the optimizer's learning
// rate set to `lr`.
void write_with_lr(kiln::train::Args a, const std::filesystem::path& path, double lr) {
  a.schedule = "none";
  a.checkpoint = path.string();
  write_checkpoint(a);
  kiln::io::SafetensorsFile file = kiln::io::load_safetensors(path);
  bool found = false;
  for (auto& [name, t] : file.tensors)
    if (name == "optimizer.param_groups.0.lr") {
      t = kiln::scalar_tensor(lr, kiln::TensorOptions(kiln::float64));
      found = true;
    }
  if (!found) throw std::runtime_error("no optimizer.param_groups.0.lr in " + path.string());
  kiln::io::save_safetensors(path, file.tensors, file.metadata);
}

// `file` re-saved to `path` with metadata `key` replaced by `value`.
void write_with(const kiln::io::SafetensorsFile& file, const std::filesystem::path& path,
                const std::string& key, const std::string& value) {
  kiln::io::Metadata metadata = file.metadata;
  metadata[key] = value;
  kiln::io::save_safetensors(path, file.tensors, metadata);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: kiln_train_hostile_inputs DIR\n";
    return 2;
  }
  try {
    const std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir / "empty_data");
    kiln::train::Args a;  // what `kiln-train --model mlp --epochs 1 --limit-batches 2` runs
    a.model = "mlp";
    a.epochs = 1;
    a.limit_batches = 2;
    a.checkpoint = (dir / "valid.safetensors").string();
    write_checkpoint(a);
    const auto valid = kiln::io::load_safetensors(a.checkpoint);
    write_with(valid, dir / "deep_run.safetensors", "run", nested(kDepth));
    write_with(valid, dir / "deep_history.safetensors", "history", nested(kDepth));
    write_with_lr(a, dir / "negative_lr.safetensors", -1.0);
    kiln::train::Args sgd = a;
    sgd.optimizer = "sgd";
    sgd.lr = 0.01;
    sgd.limit_batches = 50;
    write_with_lr(sgd, dir / "huge_lr.safetensors", 1e12);

    for (const char* split : {"train", "t10k"}) {
      write_empty_idx(dir / "empty_data" / (std::string(split) + "-images-idx3-ubyte"), 2051,
                      {0, 28, 28});
      write_empty_idx(dir / "empty_data" / (std::string(split) + "-labels-idx1-ubyte"), 2049, {0});
    }
    std::cout << "wrote the hostile inputs to " << dir.string() << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "kiln_train_hostile_inputs: " << e.what() << "\n";
    return 1;
  }
}
