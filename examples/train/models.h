#pragma once
// The models kiln-train trains (and kiln-bench times): a small CNN and an MLP for
// 28x28 grey images and 10 classes.

#include <memory>
#include <string>

#include <kiln/nn/modules.h>

namespace kiln::train {

struct ModelOptions {
  bool batch_norm = true;  // CNN only
  double dropout = 0.25;   // before the last layer
  int64_t hidden = 128;    // CNN: fully connected width; MLP: hidden width (256 default below)
};

/// conv3x3(1→32) [BN] ReLU maxpool2 → conv3x3(32→64) [BN] ReLU maxpool2 →
/// flatten → linear(3136→hidden) ReLU [dropout] → linear(hidden→10).
std::shared_ptr<nn::Sequential> make_cnn(const ModelOptions& options);
/// flatten → linear(784→hidden) ReLU [dropout] → linear(hidden→10).
std::shared_ptr<nn::Sequential> make_mlp(const ModelOptions& options);
/// "cnn" or "mlp"; throws kiln::Error naming the choices otherwise.
std::shared_ptr<nn::Sequential> make_model(const std::string& name, const ModelOptions& options);

}  // namespace kiln::train
