// User-defined functions: autograd::Function's context (saved tensors) and the node
// that calls a Function's backward.

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

#include "autograd/record.h"
#include "kiln/error.h"
#include "kiln/ops.h"

namespace kiln {

namespace ag = detail::autograd_impl;
using autograd::Node;

namespace autograd {

struct ContextAccess {
  static void release(AutogradContext& c) {
    c.saved_.clear();
    c.released_ = true;
  }
  static void set_name(AutogradContext& c, std::string n) { c.name_ = std::move(n); }
};

void AutogradContext::save_for_backward(std::vector<Tensor> tensors) {
  saved_.clear();
  versions_.clear();
  for (const Tensor& t : tensors) {
    auto s = ag::save(t);
    saved_.push_back(s.tensor);
    versions_.push_back(s.version);
  }
}

std::vector<Tensor> AutogradContext::saved() const {
  std::vector<ag::SavedTensor> s;
  for (size_t i = 0; i < saved_.size(); ++i) s.push_back({saved_[i], versions_[i]});
  return ag::unpack(s, released_, name_);
}

namespace {
class FunctionNode final : public Node {
 public:
  using Backward = std::function<std::vector<Tensor>(AutogradContext&, std::vector<Tensor>)>;
  FunctionNode(std::string name, std::shared_ptr<AutogradContext> ctx, Backward backward,
               std::vector<IntArrayRef> shapes)
      : name_(std::move(name)), ctx_(std::move(ctx)), backward_(std::move(backward)) {
    for (auto s : shapes) shapes_.push_back(s.vec());
  }
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    std::vector<Tensor> out = backward_(*ctx_, std::move(grads));
    KILN_CHECK(out.size() == next_edges.size(), name_, "::backward returned ", out.size(),
               " gradients, but forward took ", next_edges.size(), " tensor arguments");
    for (size_t i = 0; i < out.size(); ++i)
      if (out[i].defined())
        KILN_CHECK(out[i].shape() == IntArrayRef(shapes_[i]), name_,
                   "::backward returned a "
                   "gradient of shape ",
                   out[i].shape(), " for argument ", i, " of shape ", IntArrayRef(shapes_[i]));
    return out;
  }
  std::string name() const override { return name_; }
  void release_saved() override { ContextAccess::release(*ctx_); }

 private:
  std::string name_;
  std::shared_ptr<AutogradContext> ctx_;
  Backward backward_;
  std::vector<std::vector<int64_t>> shapes_;
};
}  // namespace

std::string detail::demangle(const std::type_info& type) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(
      abi::__cxa_demangle(type.name(), nullptr, nullptr, &status), std::free);
  return status == 0 && name ? name.get() : type.name();
}

Tensor detail::record_function(
    std::string name, std::shared_ptr<AutogradContext> ctx, const std::vector<Tensor>& inputs,
    Tensor output,
    std::function<std::vector<Tensor>(AutogradContext&, std::vector<Tensor>)> backward) {
  KILN_CHECK(output.defined(), name, "::forward returned an undefined tensor");
  bool needs = is_grad_enabled();
  if (needs) {
    needs = false;
    for (const Tensor& t : inputs) needs |= t.requires_grad();
  }
  ContextAccess::set_name(*ctx, name);
  if (!needs) return output;
  // The output of forward may alias an input; give it its own handle.
  Tensor out = output.detach();
  std::vector<IntArrayRef> shapes;
  for (const Tensor& t : inputs) shapes.push_back(t.shape());
  auto node = std::make_shared<FunctionNode>(name, std::move(ctx), std::move(backward), shapes);
  ag::attach(out, node, inputs);
  return out;
}

}  // namespace autograd

}  // namespace kiln
