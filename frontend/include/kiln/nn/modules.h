#pragma once
/// @file modules.h
/// The layers of kiln::nn, with PyTorch's defaults and initializations. Each is a
/// Module; create with std::make_shared and register in a parent.
///
/// @code
///   auto net = std::make_shared<kiln::nn::Sequential>();
///   net->push_back<kiln::nn::Conv2d>(1, 32, 3, kiln::nn::Conv2dOptions().padding(1));
///   net->push_back<kiln::nn::ReLU>();
/// @endcode

#include <concepts>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "kiln/nn/functional.h"
#include "kiln/nn/module.h"

namespace kiln::nn {

/// y = x·Wᵀ + b; W and b ~ U(−1/√in, 1/√in) (PyTorch's default).
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<Module> clone() const override;
  Tensor weight, bias;

 protected:
  std::vector<TensorField> tensor_fields() override {
    return {{"weight", &weight}, {"bias", &bias}};
  }
  std::string extra_repr() const override;

 private:
  int64_t in_, out_;
};

/// Like every options struct: `o.stride(2)` sets and returns the options, `o.stride()`
/// reads.
struct Conv2dOptions {
  Conv2dOptions& stride(Size2 s) {
    stride_ = s;
    return *this;
  }
  Conv2dOptions& padding(Size2 p) {
    padding_ = p;
    return *this;
  }
  Conv2dOptions& dilation(Size2 d) {
    dilation_ = d;
    return *this;
  }
  Conv2dOptions& groups(int64_t g) {
    groups_ = g;
    return *this;
  }
  Conv2dOptions& bias(bool b) {
    bias_ = b;
    return *this;
  }
  Size2 stride() const { return stride_; }
  Size2 padding() const { return padding_; }
  Size2 dilation() const { return dilation_; }
  int64_t groups() const { return groups_; }
  bool bias() const { return bias_; }

 private:
  Size2 stride_ = 1, padding_ = 0, dilation_ = 1;
  int64_t groups_ = 1;
  bool bias_ = true;
};

/// 2-D convolution; weight [out, in/groups, kH, kW] and bias initialized as PyTorch.
class Conv2d : public Module {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, Size2 kernel_size, Conv2dOptions options = {});
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<Module> clone() const override;
  Tensor weight, bias;

 protected:
  std::vector<TensorField> tensor_fields() override {
    return {{"weight", &weight}, {"bias", &bias}};
  }
  std::string extra_repr() const override;

 private:
  int64_t in_, out_;
  Size2 kernel_;
  Conv2dOptions options_;
};

struct MaxPool2dOptions {
  explicit MaxPool2dOptions(Size2 kernel_size) : kernel_size_(kernel_size) {}
  /// Default: the kernel size.
  MaxPool2dOptions& stride(Size2 s) {
    stride_ = s;
    return *this;
  }
  MaxPool2dOptions& padding(Size2 p) {
    padding_ = p;
    return *this;
  }
  MaxPool2dOptions& dilation(Size2 d) {
    dilation_ = d;
    return *this;
  }
  MaxPool2dOptions& ceil_mode(bool c) {
    ceil_mode_ = c;
    return *this;
  }
  Size2 kernel_size() const { return kernel_size_; }
  std::optional<Size2> stride() const { return stride_; }
  Size2 padding() const { return padding_; }
  Size2 dilation() const { return dilation_; }
  bool ceil_mode() const { return ceil_mode_; }

 private:
  Size2 kernel_size_;
  std::optional<Size2> stride_;
  Size2 padding_ = 0, dilation_ = 1;
  bool ceil_mode_ = false;
};

/// MaxPool2d(2), or MaxPool2d(MaxPool2dOptions(3).stride(2).padding(1)).
class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(Size2 kernel_size, std::optional<Size2> stride = std::nullopt,
                     Size2 padding = 0, Size2 dilation = 1, bool ceil_mode = false);
  explicit MaxPool2d(const MaxPool2dOptions& o)
      : MaxPool2d(o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode()) {}
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<Module> clone() const override;

 private:
  Size2 kernel_, padding_, dilation_;
  std::optional<Size2> stride_;
  bool ceil_mode_;
};

struct AvgPool2dOptions {
  explicit AvgPool2dOptions(Size2 kernel_size) : kernel_size_(kernel_size) {}
  /// Default: the kernel size.
  AvgPool2dOptions& stride(Size2 s) {
    stride_ = s;
    return *this;
  }
  AvgPool2dOptions& padding(Size2 p) {
    padding_ = p;
    return *this;
  }
  AvgPool2dOptions& ceil_mode(bool c) {
    ceil_mode_ = c;
    return *this;
  }
  AvgPool2dOptions& count_include_pad(bool c) {
    count_include_pad_ = c;
    return *this;
  }
  Size2 kernel_size() const { return kernel_size_; }
  std::optional<Size2> stride() const { return stride_; }
  Size2 padding() const { return padding_; }
  bool ceil_mode() const { return ceil_mode_; }
  bool count_include_pad() const { return count_include_pad_; }

 private:
  Size2 kernel_size_;
  std::optional<Size2> stride_;
  Size2 padding_ = 0;
  bool ceil_mode_ = false, count_include_pad_ = true;
};

/// AvgPool2d(2), or AvgPool2d(AvgPool2dOptions(3).stride(1).padding(1)).
class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(Size2 kernel_size, std::optional<Size2> stride = std::nullopt,
                     Size2 padding = 0, bool ceil_mode = false, bool count_include_pad = true);
  explicit AvgPool2d(const AvgPool2dOptions& o)
      : AvgPool2d(o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(), o.count_include_pad()) {}
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<Module> clone() const override;

 private:
  Size2 kernel_, padding_;
  std::optional<Size2> stride_;
  bool ceil_mode_, count_include_pad_;
};

class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(Size2 output_size);
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<Module> clone() const override;

 private:
  Size2 output_size_;
};

/// BatchNorm1d(64), or BatchNorm2d(BatchNormOptions(64).eps(1e-3).momentum(0.01)).
struct BatchNormOptions {
  explicit BatchNormOptions(int64_t num_features) : num_features_(num_features) {}
  BatchNormOptions& eps(double v) {
    eps_ = v;
    return *this;
  }
  BatchNormOptions& momentum(double v) {
    momentum_ = v;
    return *this;
  }
  BatchNormOptions& affine(bool v) {
    affine_ = v;
    return *this;
  }
  BatchNormOptions& track_running_stats(bool v) {
    track_running_stats_ = v;
    return *this;
  }
  int64_t num_features() const { return num_features_; }
  double eps() const { return eps_; }
  double momentum() const { return momentum_; }
  bool affine() const { return affine_; }
  bool track_running_stats() const { return track_running_stats_; }

 private:
  int64_t num_features_;
  double eps_ = 1e-5, momentum_ = 0.1;
  bool affine_ = true, track_running_stats_ = true;
};

/// Batch normalization over [N, C] (BatchNorm1d, also [N, C, L]) or [N, C, H, W]
/// (BatchNorm2d): weight 1, bias 0, running mean 0 / var 1, momentum 0.1, eps 1e-5.
class BatchNorm : public Module {
 public:
  BatchNorm(const char* type_name, int64_t expected_dim, int64_t num_features, double eps,
            double momentum, bool affine, bool track_running_stats);
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;

 protected:
  std::vector<TensorField> tensor_fields() override {
    return {{"weight", &weight},
            {"bias", &bias},
            {"running_mean", &running_mean, true},
            {"running_var", &running_var, true},
            {"num_batches_tracked", &num_batches_tracked, true}};
  }
  std::string extra_repr() const override;
  /// copy_state_into(make(features, eps, momentum, affine, track_running_stats)).
  template <class Derived>
  std::shared_ptr<Module> clone_as() const {
    return copy_state_into(std::make_shared<Derived>(features_, eps_, momentum_, weight.defined(),
                                                     running_mean.defined()));
  }

 protected:
  int64_t expected_dim_, features_;
  double eps_, momentum_;
};

class BatchNorm1d : public BatchNorm {
 public:
  explicit BatchNorm1d(int64_t num_features, double eps = 1e-5, double momentum = 0.1,
                       bool affine = true, bool track_running_stats = true)
      : BatchNorm("BatchNorm1d", 2, num_features, eps, momentum, affine, track_running_stats) {}
  explicit BatchNorm1d(const BatchNormOptions& o)
      : BatchNorm1d(o.num_features(), o.eps(), o.momentum(), o.affine(), o.track_running_stats()) {}
  std::shared_ptr<Module> clone() const override;
};

class BatchNorm2d : public BatchNorm {
 public:
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5, double momentum = 0.1,
                       bool affine = true, bool track_running_stats = true)
      : BatchNorm("BatchNorm2d", 4, num_features, eps, momentum, affine, track_running_stats) {}
  explicit BatchNorm2d(const BatchNormOptions& o)
      : BatchNorm2d(o.num_features(), o.eps(), o.momentum(), o.affine(), o.track_running_stats()) {}
  std::shared_ptr<Module> clone() const override;
};

struct LayerNormOptions {
  explicit LayerNormOptions(std::vector<int64_t> normalized_shape)
      : normalized_shape_(std::move(normalized_shape)) {}
  LayerNormOptions& eps(double v) {
    eps_ = v;
    return *this;
  }
  LayerNormOptions& elementwise_affine(bool v) {
    elementwise_affine_ = v;
    return *this;
  }
  const std::vector<int64_t>& normalized_shape() const { return normalized_shape_; }
  double eps() const { return eps_; }
  bool elementwise_affine() const { return elementwise_affine_; }

 private:
  std::vector<int64_t> normalized_shape_;
  double eps_ = 1e-5;
  bool elementwise_affine_ = true;
};

/// LayerNorm({64}), or LayerNorm(LayerNormOptions({64}).eps(1e-6)).
class LayerNorm : public Module {
 public:
  explicit LayerNorm(std::vector<int64_t> normalized_shape, double eps = 1e-5,
                     bool elementwise_affine = true);
  explicit LayerNorm(const LayerNormOptions& o)
      : LayerNorm(o.normalized_shape(), o.eps(), o.elementwise_affine()) {}
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<Module> clone() const override;
  Tensor weight, bias;

 protected:
  std::vector<TensorField> tensor_fields() override {
    return {{"weight", &weight}, {"bias", &bias}};
  }
  std::string extra_repr() const override;

 private:
  std::vector<int64_t> shape_;
  double eps_;
};

/// Active in train(), the identity in eval().
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<Module> clone() const override;

 protected:
  std::string extra_repr() const override;

 private:
  double p_;
};

/// weight [num_embeddings, dim] ~ N(0, 1), as PyTorch.
class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim);
  Tensor forward(const Tensor& indices) override;
  std::shared_ptr<Module> clone() const override;
  Tensor weight;

 protected:
  std::vector<TensorField> tensor_fields() override { return {{"weight", &weight}}; }
  std::string extra_repr() const override;
};

class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1);
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<Module> clone() const override;

 private:
  int64_t start_, end_;
};

class ReLU : public Module {
 public:
  ReLU() : Module("ReLU") {}
  std::shared_ptr<Module> clone() const override { return std::make_shared<ReLU>(); }
  Tensor forward(const Tensor& x) override { return x.relu(); }
};
class GELU : public Module {
 public:
  explicit GELU(std::string approximate = "none")
      : Module("GELU"), approximate_(std::move(approximate)) {}
  Tensor forward(const Tensor& x) override { return x.gelu(approximate_); }
  std::shared_ptr<Module> clone() const override { return std::make_shared<GELU>(approximate_); }

 private:
  std::string approximate_;
};
class Sigmoid : public Module {
 public:
  Sigmoid() : Module("Sigmoid") {}
  std::shared_ptr<Module> clone() const override { return std::make_shared<Sigmoid>(); }
  Tensor forward(const Tensor& x) override { return x.sigmoid(); }
};
class Tanh : public Module {
 public:
  Tanh() : Module("Tanh") {}
  std::shared_ptr<Module> clone() const override { return std::make_shared<Tanh>(); }
  Tensor forward(const Tensor& x) override { return x.tanh(); }
};

/// Runs its children in order; they are registered as "0", "1", ...
/// What nn::Sequential's variadic constructor takes: a module built in place (a
/// temporary, moved into a shared_ptr) or a shared_ptr to one.
template <typename M>
concept SequentialItem = std::convertible_to<M, std::shared_ptr<Module>> ||
    (std::derived_from<std::remove_cvref_t<M>, Module> && !std::is_lvalue_reference_v<M> &&
     std::move_constructible<std::remove_cvref_t<M>>);

class Sequential : public Module {
 public:
  Sequential() : Module("Sequential") {}
  explicit Sequential(std::vector<std::shared_ptr<Module>> modules);
  /// Sequential({std::make_shared<nn::Linear>(4, 8), ...}): the braced list picks this
  /// constructor over building a Sequential from its elements and moving it.
  explicit Sequential(std::initializer_list<std::shared_ptr<Module>> modules)
      : Sequential(std::vector<std::shared_ptr<Module>>(modules)) {}
  /// nn::Sequential(nn::Linear(784, 128), nn::ReLU(), nn::Linear(128, 10)), as in
  /// libtorch; shared_ptrs to modules may be mixed in.
  /// (One Sequential alone is the move constructor's: excluded first, so that checking
  /// whether a Sequential is movable never recurses into this constructor.)
  template <typename... Ms>
  requires(sizeof...(Ms) > 0 &&
           !(sizeof...(Ms) == 1 && (std::is_same_v<std::remove_cvref_t<Ms>, Sequential> && ...)) &&
           (SequentialItem<Ms> && ...)) explicit Sequential(Ms&&... modules)
      : Module("Sequential") {
    (push_back(hold(std::forward<Ms>(modules))), ...);
  }
  void push_back(std::shared_ptr<Module> module);
  /// Builds a module in place and appends it: push_back<nn::Linear>(784, 128).
  template <typename M, typename... Args>
  requires std::derived_from<M, Module> && std::constructible_from<M, Args...> std::shared_ptr<M>
  push_back(Args&&... args) {
    auto module = std::make_shared<M>(std::forward<Args>(args)...);
    push_back(std::shared_ptr<Module>(module));
    return module;
  }
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<Module> clone() const override;
  size_t size() const { return modules_.size(); }
  std::shared_ptr<Module> operator[](size_t i) const { return modules_.at(i); }

 private:
  template <typename M>
  static std::shared_ptr<Module> hold(M&& module) {
    if constexpr (std::convertible_to<M, std::shared_ptr<Module>>)
      return std::forward<M>(module);
    else
      return std::make_shared<std::remove_cvref_t<M>>(std::move(module));
  }

  std::vector<std::shared_ptr<Module>> modules_;
};

}  // namespace kiln::nn
