#pragma once
// How ops join the tape: needs_grad() is the cheap test every differentiable op
// makes; record() attaches a backward node to the op's output.
//
//   Tensor out = ...forward...;
//   if (autograd::needs_grad({&a, &b}))
//     autograd::record("MulBackward", out, {&a, &b}, {a, b},
//                      [](const std::vector<Tensor>& s, const Tensor& g) -> std::vector<Tensor> {
//                        return {g * s[1], g * s[0]};
//                      });
//
// Backward lambdas run with recording disabled and return one gradient per input
// (undefined for none); the engine reduces nothing for them, so a broadcast
// operand's gradient must be reduced with sum_to().

#include <memory>
#include <string>
#include <vector>

#include "core/tensor_impl.h"
#include "kiln/autograd.h"

namespace kiln::detail::autograd_impl {

inline thread_local bool grad_enabled = true;

inline bool requires_grad(const Tensor& t) {
  return t.defined() && t.impl()->autograd && t.impl()->autograd->requires_grad;
}

inline bool needs_grad(std::initializer_list<const Tensor*> inputs) {
  if (!grad_enabled) [[likely]] {
    return false;
  }
  for (const Tensor* t : inputs)
    if (requires_grad(*t)) return true;
  return false;
}

/// A tensor saved for backward: a detached handle (so saving an op's own output
/// makes no reference cycle) plus the storage version at the time.
struct SavedTensor {
  Tensor tensor;
  uint64_t version = 0;
};
SavedTensor save(const Tensor& t);

/// The tensor's autograd state, created on first use.
AutogradMeta& meta_of(const Tensor& t);

/// The gradient edge of `t`: its grad_fn, or its leaf accumulator, or invalid.
kiln::autograd::Edge gradient_edge(const Tensor& t);

/// Makes `out` (a fresh op output) the output of `node`, whose next edges are
/// those of `inputs`.
void attach(Tensor& out, const std::shared_ptr<kiln::autograd::Node>& node,
            std::initializer_list<const Tensor*> inputs);
void attach(Tensor& out, const std::shared_ptr<kiln::autograd::Node>& node,
            const std::vector<Tensor>& inputs);

/// Unpacks saved tensors, throwing if the graph was freed or one of them was
/// modified in place since it was saved.
std::vector<Tensor> unpack(const std::vector<SavedTensor>& saved, bool released,
                           const std::string& node_name);

uint64_t next_sequence_nr();

template <typename F>
class LambdaNode final : public kiln::autograd::Node {
 public:
  LambdaNode(const char* name, std::vector<SavedTensor> saved, F f)
      : name_(name), saved_(std::move(saved)), f_(std::move(f)) {}
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    return f_(unpack(saved_, released, name_), grads[0]);
  }
  std::string name() const override { return name_; }
  void release_saved() override {
    if (saved_.empty()) return;
    saved_.clear();
    released = true;
  }

 private:
  const char* name_;
  std::vector<SavedTensor> saved_;
  F f_;
};

template <typename F>
void record(const char* name, Tensor& out, std::initializer_list<const Tensor*> inputs,
            std::initializer_list<Tensor> saved, F&& backward) {
  std::vector<SavedTensor> s;
  s.reserve(saved.size());
  for (const Tensor& t : saved) s.push_back(save(t));
  auto node =
      std::make_shared<LambdaNode<std::decay_t<F>>>(name, std::move(s), std::forward<F>(backward));
  attach(out, node, inputs);
}

/// Sums `grad` over the dims that broadcasting added or expanded, so it has `shape`.
Tensor sum_to(const Tensor& grad, IntArrayRef shape);

/// Refuses an in-place write into `self` (or from `other`) while recording when
/// either requires grad, and bumps self's storage version.
void check_inplace(const Tensor& self, const char* op, const Tensor* other = nullptr);

}  // namespace kiln::detail::autograd_impl
