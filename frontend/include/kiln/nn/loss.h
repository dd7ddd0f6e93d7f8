#pragma once
/// @file loss.h
/// Losses as modules, as torch.nn's: construct once with the options, call with
/// (input, target).
///
/// @code
///   kiln::nn::CrossEntropyLoss criterion(
///       kiln::nn::CrossEntropyLossOptions().label_smoothing(0.1));
///   auto loss = criterion(model(x), y);
/// @endcode
///
/// Each is its functional counterpart (kiln/nn/functional.h) with the options bound.

#include "kiln/nn/functional.h"
#include "kiln/nn/module.h"

namespace kiln::nn {

/// The options every loss has.
struct LossOptions {
  LossOptions& reduction(Reduction r) {
    reduction_ = r;
    return *this;
  }
  Reduction reduction() const { return reduction_; }

 private:
  Reduction reduction_ = Reduction::Mean;
};

/// A loss: a module called with (input, target); it has no parameters.
class Loss : public Module {
 public:
  explicit Loss(std::string name) : Module(std::move(name)) {}
  virtual Tensor forward(const Tensor& input, const Tensor& target) = 0;
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }

 private:
  // Module's one-input forward is not a loss's call (it throws); named here so that the
  // two-input forward does not hide it (clang's -Woverloaded-virtual, part of -Wall).
  using Module::forward;
};

class MSELoss : public Loss {
 public:
  explicit MSELoss(LossOptions options = {}) : Loss("MSELoss"), options_(options) {}
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::mse_loss(input, target, options_.reduction());
  }
  std::shared_ptr<Module> clone() const override { return std::make_shared<MSELoss>(options_); }

 private:
  LossOptions options_;
};

class L1Loss : public Loss {
 public:
  explicit L1Loss(LossOptions options = {}) : Loss("L1Loss"), options_(options) {}
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::l1_loss(input, target, options_.reduction());
  }
  std::shared_ptr<Module> clone() const override { return std::make_shared<L1Loss>(options_); }

 private:
  LossOptions options_;
};

struct NLLLossOptions {
  NLLLossOptions& reduction(Reduction r) {
    reduction_ = r;
    return *this;
  }
  NLLLossOptions& ignore_index(int64_t i) {
    ignore_index_ = i;
    return *this;
  }
  /// Class weights [C] (undefined: every class weighs 1).
  NLLLossOptions& weight(Tensor w) {
    weight_ = std::move(w);
    return *this;
  }
  Reduction reduction() const { return reduction_; }
  int64_t ignore_index() const { return ignore_index_; }
  const Tensor& weight() const { return weight_; }

 private:
  Reduction reduction_ = Reduction::Mean;
  int64_t ignore_index_ = -100;
  Tensor weight_;
};

/// Input: log-probabilities [N, C] or [N, C, d1, ...] (or [C]); target: int64 class
/// indices [N] or [N, d1, ...] (or []). The class weight, if given, is the buffer
/// "weight" (it moves with to()).
class NLLLoss : public Loss {
 public:
  explicit NLLLoss(NLLLossOptions options = {}) : Loss("NLLLoss"), options_(options) {
    if (options_.weight().defined()) weight = register_buffer("weight", options_.weight());
  }
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::nll_loss(input, target, options_.reduction(), options_.ignore_index(),
                                weight);
  }
  std::shared_ptr<Module> clone() const override {
    NLLLossOptions o = options_;
    if (weight.defined()) o.weight(weight.detach().clone());
    return copy_state_into(std::make_shared<NLLLoss>(o));
  }

  Tensor weight;

 protected:
  std::vector<TensorField> tensor_fields() override { return {{"weight", &weight, true}}; }

 private:
  NLLLossOptions options_;
};

struct CrossEntropyLossOptions {
  CrossEntropyLossOptions& reduction(Reduction r) {
    reduction_ = r;
    return *this;
  }
  CrossEntropyLossOptions& ignore_index(int64_t i) {
    ignore_index_ = i;
    return *this;
  }
  CrossEntropyLossOptions& label_smoothing(double e) {
    label_smoothing_ = e;
    return *this;
  }
  /// Class weights [C] (undefined: every class weighs 1).
  CrossEntropyLossOptions& weight(Tensor w) {
    weight_ = std::move(w);
    return *this;
  }
  Reduction reduction() const { return reduction_; }
  int64_t ignore_index() const { return ignore_index_; }
  double label_smoothing() const { return label_smoothing_; }
  const Tensor& weight() const { return weight_; }

 private:
  Reduction reduction_ = Reduction::Mean;
  int64_t ignore_index_ = -100;
  double label_smoothing_ = 0.0;
  Tensor weight_;
};

/// Input: logits [N, C] or [N, C, d1, ...] (or [C]); target: int64 class indices [N] or
/// [N, d1, ...] (or []). The class weight, if given, is the buffer "weight".
class CrossEntropyLoss : public Loss {
 public:
  explicit CrossEntropyLoss(CrossEntropyLossOptions options = {})
      : Loss("CrossEntropyLoss"), options_(options) {
    if (options_.weight().defined()) weight = register_buffer("weight", options_.weight());
  }
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::cross_entropy(input, target, options_.reduction(), options_.ignore_index(),
                                     options_.label_smoothing(), weight);
  }
  std::shared_ptr<Module> clone() const override {
    CrossEntropyLossOptions o = options_;
    if (weight.defined()) o.weight(weight.detach().clone());
    return copy_state_into(std::make_shared<CrossEntropyLoss>(o));
  }

  Tensor weight;

 protected:
  std::vector<TensorField> tensor_fields() override { return {{"weight", &weight, true}}; }

 private:
  CrossEntropyLossOptions options_;
};

/// Input: logits; target: probabilities in [0, 1] of the same shape.
class BCEWithLogitsLoss : public Loss {
 public:
  explicit BCEWithLogitsLoss(LossOptions options = {})
      : Loss("BCEWithLogitsLoss"), options_(options) {}
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::binary_cross_entropy_with_logits(input, target, options_.reduction());
  }
  std::shared_ptr<Module> clone() const override {
    return std::make_shared<BCEWithLogitsLoss>(options_);
  }

 private:
  LossOptions options_;
};

}  // namespace kiln::nn
