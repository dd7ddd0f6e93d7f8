#pragma once
// Helpers shared by the tests of tests/distributed: the small CNN they train, a
// relative difference of two tensors, and an assertion on kiln::Error messages.

#include <gtest/gtest.h>
#include <kiln/kiln.h>
#include <kiln/nn.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>

namespace kiln::test {

/// The training example's CNN without dropout (and by default without BatchNorm), on
/// 12x12 images so that twenty steps take a moment on two cores.
inline std::shared_ptr<nn::Sequential> small_cnn(bool batch_norm = false) {
  auto net = std::make_shared<nn::Sequential>();
  net->push_back(std::make_shared<nn::Conv2d>(1, 8, 3, nn::Conv2dOptions().padding(1)));
  if (batch_norm) net->push_back(std::make_shared<nn::BatchNorm2d>(8));
  net->push_back(std::make_shared<nn::ReLU>());
  net->push_back(std::make_shared<nn::MaxPool2d>(2));
  net->push_back(std::make_shared<nn::Conv2d>(8, 16, 3, nn::Conv2dOptions().padding(1)));
  net->push_back(std::make_shared<nn::ReLU>());
  net->push_back(std::make_shared<nn::MaxPool2d>(2));
  net->push_back(std::make_shared<nn::Flatten>());
  net->push_back(std::make_shared<nn::Linear>(16 * 3 * 3, 32));
  net->push_back(std::make_shared<nn::ReLU>());
  net->push_back(std::make_shared<nn::Linear>(32, 10));
  return net;
}

/// max |a - b| / max |b| over one tensor (the plain difference when b is all zero).
inline double relative_difference(const Tensor& a, const Tensor& b) {
  const auto x = a.to_vector<double>(), y = b.to_vector<double>();
  double diff = 0, scale = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    diff = std::max(diff, std::abs(x[i] - y[i]));
    scale = std::max(scale, std::abs(y[i]));
  }
  return scale == 0 ? diff : diff / scale;
}

/// Expects `f` to throw kiln::Error whose message contains every one of `parts`.
inline void expect_error(const std::function<void()>& f, std::initializer_list<const char*> parts) {
  try {
    f();
    ADD_FAILURE() << "expected kiln::Error";
  } catch (const Error& e) {
    for (const char* p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "'" << p << "' not in: " << e.what();
  }
}

}  // namespace kiln::test
