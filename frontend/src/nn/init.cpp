#include "kiln/nn/init.h"

#include <cmath>

#include "kiln/autograd.h"
#include "kiln/error.h"
#include "kiln/random.h"

namespace kiln::nn::init {

namespace {
Tensor& fill_from(Tensor& t, const Tensor& values) {
  NoGradGuard no_grad;
  t.copy_(values);
  return t;
}
TensorOptions options_of(const Tensor& t) { return TensorOptions(t.dtype()).device(t.device()); }
double fan(const Tensor& t, const std::string& mode) {
  auto [in, out] = fans(t);
  KILN_CHECK(mode == "fan_in" || mode == "fan_out",
             "init: mode must be \"fan_in\" or \"fan_out\", got \"", mode, "\"");
  return static_cast<double>(mode == "fan_in" ? in : out);
}
}  // namespace

std::pair<int64_t, int64_t> fans(const Tensor& t) {
  KILN_CHECK(t.dim() >= 2, "init: fan in/out need a tensor with at least 2 dims, got shape ",
             t.shape());
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

double calculate_gain(const std::string& nonlinearity, double param) {
  if (nonlinearity == "linear" || nonlinearity == "conv2d" || nonlinearity == "sigmoid") return 1.0;
  if (nonlinearity == "tanh") return 5.0 / 3.0;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") return std::sqrt(2.0 / (1.0 + param * param));
  KILN_FAIL("calculate_gain: unknown nonlinearity '", nonlinearity, "'");
}

Tensor& uniform_(Tensor& t, double low, double high) {
  return fill_from(t, uniform(t.shape(), low, high, options_of(t)));
}
Tensor& normal_(Tensor& t, double mean, double std) {
  return fill_from(t, normal(t.shape(), mean, std, options_of(t)));
}
Tensor& constant_(Tensor& t, double value) {
  NoGradGuard no_grad;
  t.fill_(value);
  return t;
}
Tensor& zeros_(Tensor& t) { return constant_(t, 0.0); }
Tensor& ones_(Tensor& t) { return constant_(t, 1.0); }

Tensor& kaiming_uniform_(Tensor& t, double a, const std::string& mode,
                         const std::string& nonlinearity) {
  double bound = calculate_gain(nonlinearity, a) * std::sqrt(3.0 / fan(t, mode));
  return uniform_(t, -bound, bound);
}
Tensor& kaiming_normal_(Tensor& t, double a, const std::string& mode,
                        const std::string& nonlinearity) {
  return normal_(t, 0.0, calculate_gain(nonlinearity, a) / std::sqrt(fan(t, mode)));
}
Tensor& xavier_uniform_(Tensor& t, double gain) {
  auto [in, out] = fans(t);
  double bound = gain * std::sqrt(6.0 / static_cast<double>(in + out));
  return uniform_(t, -bound, bound);
}
Tensor& xavier_normal_(Tensor& t, double gain) {
  auto [in, out] = fans(t);
  return normal_(t, 0.0, gain * std::sqrt(2.0 / static_cast<double>(in + out)));
}

}  // namespace kiln::nn::init
