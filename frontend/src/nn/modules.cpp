// The layers: parameters created and initialized as PyTorch does, forward through
// kiln::nn::functional.

#include "kiln/nn/modules.h"

#include <cmath>
#include <sstream>

#include "kiln/autograd.h"
#include "kiln/error.h"
#include "kiln/nn/init.h"
#include "kiln/ops.h"

namespace kiln::nn {

namespace F = functional;

namespace {
// PyTorch's reset_parameters for Linear and Conv: kaiming_uniform_(a=√5) for the
// weight (U(±1/√fan_in)), and U(±1/√fan_in) for the bias.
void reset_linear_like(Tensor& weight, Tensor& bias) {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    double bound = 1.0 / std::sqrt(static_cast<double>(init::fans(weight).first));
    init::uniform_(bias, -bound, bound);
  }
}
// (ostringstream rather than string concatenation: g++ 12 warns falsely on the latter.)
std::string size2(Size2 s) {
  std::ostringstream out;
  out << "(" << s.h << ", " << s.w << ")";
  return out.str();
}
}  // namespace

Linear::Linear(int64_t in_features, int64_t out_features, bool with_bias)
    : Module("Linear"), in_(in_features), out_(out_features) {
  KILN_CHECK(in_features > 0 && out_features > 0,
             "Linear: sizes must be positive, got in=", in_features, " out=", out_features);
  weight = register_parameter("weight", empty({out_features, in_features}));
  if (with_bias) bias = register_parameter("bias", empty({out_features}));
  reset_linear_like(weight, bias);
}
Tensor Linear::forward(const Tensor& x) { return F::linear(x, weight, bias); }
std::shared_ptr<Module> Linear::clone() const {
  return copy_state_into(std::make_shared<Linear>(in_, out_, bias.defined()));
}
std::string Linear::extra_repr() const {
  std::ostringstream s;
  s << "in_features=" << in_ << ", out_features=" << out_
    << ", bias=" << (bias.defined() ? "true" : "false");
  return s.str();
}

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, Size2 kernel_size, Conv2dOptions options)
    : Module("Conv2d"),
      in_(in_channels),
      out_(out_channels),
      kernel_(kernel_size),
      options_(options) {
  KILN_CHECK(in_channels > 0 && out_channels > 0 && options.groups() > 0 &&
                 in_channels % options.groups() == 0 && out_channels % options.groups() == 0,
             "Conv2d: channels (", in_channels, ", ", out_channels,
             ") must be positive and divisible by groups=", options.groups());
  weight = register_parameter("weight", empty({out_channels, in_channels / options.groups(),
                                               kernel_size.h, kernel_size.w}));
  if (options.bias()) bias = register_parameter("bias", empty({out_channels}));
  reset_linear_like(weight, bias);
}
Tensor Conv2d::forward(const Tensor& x) {
  return F::conv2d(x, weight, bias, options_.stride(), options_.padding(), options_.dilation(),
                   options_.groups());
}
std::shared_ptr<Module> Conv2d::clone() const {
  return copy_state_into(std::make_shared<Conv2d>(in_, out_, kernel_, options_));
}
std::string Conv2d::extra_repr() const {
  std::ostringstream s;
  s << in_ << ", " << out_ << ", kernel_size=" << size2(kernel_)
    << ", stride=" << size2(options_.stride()) << ", padding=" << size2(options_.padding());
  return s.str();
}

MaxPool2d::MaxPool2d(Size2 kernel_size, std::optional<Size2> stride, Size2 padding, Size2 dilation,
                     bool ceil_mode)
    : Module("MaxPool2d"),
      kernel_(kernel_size),
      padding_(padding),
      dilation_(dilation),
      stride_(stride),
      ceil_mode_(ceil_mode) {}
Tensor MaxPool2d::forward(const Tensor& x) {
  return F::max_pool2d(x, kernel_, stride_, padding_, dilation_, ceil_mode_);
}

std::shared_ptr<Module> MaxPool2d::clone() const {
  return copy_state_into(
      std::make_shared<MaxPool2d>(kernel_, stride_, padding_, dilation_, ceil_mode_));
}

AvgPool2d::AvgPool2d(Size2 kernel_size, std::optional<Size2> stride, Size2 padding, bool ceil_mode,
                     bool count_include_pad)
    : Module("AvgPool2d"),
      kernel_(kernel_size),
      padding_(padding),
      stride_(stride),
      ceil_mode_(ceil_mode),
      count_include_pad_(count_include_pad) {}
Tensor AvgPool2d::forward(const Tensor& x) {
  return F::avg_pool2d(x, kernel_, stride_, padding_, ceil_mode_, count_include_pad_);
}

std::shared_ptr<Module> AvgPool2d::clone() const {
  return copy_state_into(
      std::make_shared<AvgPool2d>(kernel_, stride_, padding_, ceil_mode_, count_include_pad_));
}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(Size2 output_size)
    : Module("AdaptiveAvgPool2d"), output_size_(output_size) {}
Tensor AdaptiveAvgPool2d::forward(const Tensor& x) {
  return F::adaptive_avg_pool2d(x, output_size_);
}
std::shared_ptr<Module> AdaptiveAvgPool2d::clone() const {
  return copy_state_into(std::make_shared<AdaptiveAvgPool2d>(output_size_));
}

BatchNorm::BatchNorm(const char* type_name, int64_t expected_dim, int64_t num_features, double eps,
                     double momentum, bool affine, bool track_running_stats)
    : Module(type_name),
      expected_dim_(expected_dim),
      features_(num_features),
      eps_(eps),
      momentum_(momentum) {
  KILN_CHECK(num_features > 0, type_name, ": num_features must be positive, got ", num_features);
  if (affine) {
    weight = register_parameter("weight", ones({num_features}));
    bias = register_parameter("bias", zeros({num_features}));
  }
  if (track_running_stats) {
    running_mean = register_buffer("running_mean", zeros({num_features}));
    running_var = register_buffer("running_var", ones({num_features}));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, DType::Int64));
  }
}
Tensor BatchNorm::forward(const Tensor& x) {
  KILN_CHECK(x.dim() == expected_dim_ || (expected_dim_ == 2 && x.dim() == 3), type_name(),
             ": expected a ", expected_dim_, "-D input, got shape ", x.shape());
  bool use_batch_stats = is_training() || !running_mean.defined();
  if (is_training() && num_batches_tracked.defined()) {
    NoGradGuard no_grad;
    num_batches_tracked.add_(1);
  }
  return F::batch_norm(x, running_mean, running_var, weight, bias, use_batch_stats, momentum_,
                       eps_);
}
std::shared_ptr<Module> BatchNorm1d::clone() const { return clone_as<BatchNorm1d>(); }
std::shared_ptr<Module> BatchNorm2d::clone() const { return clone_as<BatchNorm2d>(); }
std::string BatchNorm::extra_repr() const {
  std::ostringstream s;
  s << features_ << ", eps=" << eps_ << ", momentum=" << momentum_;
  return s.str();
}

LayerNorm::LayerNorm(std::vector<int64_t> normalized_shape, double eps, bool elementwise_affine)
    : Module("LayerNorm"), shape_(std::move(normalized_shape)), eps_(eps) {
  if (elementwise_affine) {
    weight = register_parameter("weight", ones(shape_));
    bias = register_parameter("bias", zeros(shape_));
  }
}
Tensor LayerNorm::forward(const Tensor& x) { return F::layer_norm(x, shape_, weight, bias, eps_); }
std::shared_ptr<Module> LayerNorm::clone() const {
  return copy_state_into(std::make_shared<LayerNorm>(shape_, eps_, weight.defined()));
}
std::string LayerNorm::extra_repr() const {
  std::ostringstream s;
  s << IntArrayRef(shape_) << ", eps=" << eps_;
  return s.str();
}

Dropout::Dropout(double p) : Module("Dropout"), p_(p) {
  KILN_CHECK(p >= 0 && p <= 1, "Dropout: p must be in [0, 1], got ", p);
}
Tensor Dropout::forward(const Tensor& x) { return F::dropout(x, p_, is_training()); }
std::shared_ptr<Module> Dropout::clone() const {
  return copy_state_into(std::make_shared<Dropout>(p_));
}
std::string Dropout::extra_repr() const {
  std::ostringstream s;
  s << "p=" << p_;
  return s.str();
}

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim) : Module("Embedding") {
  KILN_CHECK(num_embeddings > 0 && embedding_dim > 0, "Embedding: sizes must be positive");
  weight = register_parameter("weight", empty({num_embeddings, embedding_dim}));
  init::normal_(weight);
}
Tensor Embedding::forward(const Tensor& indices) { return F::embedding(indices, weight); }
std::shared_ptr<Module> Embedding::clone() const {
  return copy_state_into(std::make_shared<Embedding>(weight.size(0), weight.size(1)));
}
std::string Embedding::extra_repr() const {
  std::ostringstream s;
  s << weight.size(0) << ", " << weight.size(1);
  return s.str();
}

Flatten::Flatten(int64_t start_dim, int64_t end_dim)
    : Module("Flatten"), start_(start_dim), end_(end_dim) {}
Tensor Flatten::forward(const Tensor& x) { return x.flatten(start_, end_); }
std::shared_ptr<Module> Flatten::clone() const {
  return copy_state_into(std::make_shared<Flatten>(start_, end_));
}

Sequential::Sequential(std::vector<std::shared_ptr<Module>> modules) : Module("Sequential") {
  for (auto& m : modules) push_back(std::move(m));
}
void Sequential::push_back(std::shared_ptr<Module> module) {
  add_child(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}
std::shared_ptr<Module> Sequential::clone() const {
  auto copy = std::make_shared<Sequential>();
  for (const auto& m : modules_) copy->push_back(m->clone());
  return copy_state_into(copy);
}
Tensor Sequential::forward(const Tensor& x) {
  Tensor h = x;
  for (auto& m : modules_) h = m->forward(h);
  return h;
}

}  // namespace kiln::nn
