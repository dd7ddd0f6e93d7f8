#include "models.h"

#include <kiln/error.h>

namespace kiln::train {

std::shared_ptr<nn::Sequential> make_cnn(const ModelOptions& o) {
  auto net = std::make_shared<nn::Sequential>();
  net->push_back<nn::Conv2d>(1, 32, 3, nn::Conv2dOptions().padding(1));
  if (o.batch_norm) net->push_back<nn::BatchNorm2d>(32);
  net->push_back<nn::ReLU>();
  net->push_back<nn::MaxPool2d>(2);
  net->push_back<nn::Conv2d>(32, 64, 3, nn::Conv2dOptions().padding(1));
  if (o.batch_norm) net->push_back<nn::BatchNorm2d>(64);
  net->push_back<nn::ReLU>();
  net->push_back<nn::MaxPool2d>(2);
  net->push_back<nn::Flatten>();
  net->push_back<nn::Linear>(64 * 7 * 7, o.hidden);
  net->push_back<nn::ReLU>();
  if (o.dropout > 0) net->push_back<nn::Dropout>(o.dropout);
  net->push_back<nn::Linear>(o.hidden, 10);
  return net;
}

std::shared_ptr<nn::Sequential> make_mlp(const ModelOptions& o) {
  auto net = std::make_shared<nn::Sequential>();
  net->push_back<nn::Flatten>();
  net->push_back<nn::Linear>(28 * 28, o.hidden);
  net->push_back<nn::ReLU>();
  if (o.dropout > 0) net->push_back<nn::Dropout>(o.dropout);
  net->push_back<nn::Linear>(o.hidden, 10);
  return net;
}

std::shared_ptr<nn::Sequential> make_model(const std::string& name, const ModelOptions& options) {
  if (name == "cnn") return make_cnn(options);
  if (name == "mlp") return make_mlp(options);
  KILN_FAIL("unknown model '", name, "' (expected cnn or mlp)");
}

}  // namespace kiln::train
