#pragma once
/// @file module.h
/// kiln::nn::Module: named parameters, buffers and submodules, as torch::nn::Module.
///
/// @code
///   struct Net : kiln::nn::Module {
///     Net() {
///       fc1 = register_module<kiln::nn::Linear>("fc1", 784, 128);
///       fc2 = register_module<kiln::nn::Linear>("fc2", 128, 10);
///     }
///     kiln::Tensor forward(const kiln::Tensor& x) override {
///       return fc2->forward(fc1->forward(x.flatten(1)).relu());
///     }
///     std::shared_ptr<kiln::nn::Linear> fc1, fc2;
///   };
/// @endcode
///
/// Parameters and buffers are Tensor handles shared with the module's fields:
/// `to(device)` and `load_state_dict` replace their data in place (set_data), so
/// every handle — the field, an optimizer's list — sees the change.

#include <concepts>
#include <iosfwd>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kiln/device.h"
#include "kiln/dtype.h"
#include "kiln/tensor.h"

namespace kiln::nn {

/// Named tensors in a stable order (registration order, depth first): what
/// state_dict() returns and load_state_dict() and kiln::io read and write.
using StateDict = std::vector<std::pair<std::string, Tensor>>;

class Module {
 public:
  explicit Module(std::string type_name = "Module") : type_name_(std::move(type_name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// This module as an `M` (`seq[0]->as<nn::Linear>()->weight`), or null when it is not
  /// one, as libtorch's Module::as.
  template <typename M>
  M* as() noexcept {
    return dynamic_cast<M*>(this);
  }
  template <typename M>
  const M* as() const noexcept {
    return dynamic_cast<const M*>(this);
  }

  /// The module's computation for one input. Modules with other signatures define
  /// their own forward and leave this one throwing.
  virtual Tensor forward(const Tensor& input);
  /// model(x), as in PyTorch: forward(x).
  Tensor operator()(const Tensor& input) { return forward(input); }

  // -- registration (from a derived constructor) --------------------------------------
  /// Registers a parameter (requires grad unless `requires_grad` is false) and
  /// returns the stored handle; an undefined tensor registers "no parameter".
  Tensor register_parameter(const std::string& name, Tensor tensor, bool requires_grad = true);
  /// Registers a buffer: state saved in state_dict but not trained (running stats).
  Tensor register_buffer(const std::string& name, Tensor tensor);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }
  /// Builds the submodule in place: fc1 = register_module<nn::Linear>("fc1", 784, 128).
  template <typename M, typename... Args>
  requires std::derived_from<M, Module> && std::constructible_from<M, Args...> std::shared_ptr<M>
  register_module(const std::string& name, Args&&... args) {
    return register_module(name, std::make_shared<M>(std::forward<Args>(args)...));
  }

  // -- access ----------------------------------------------------------------------------
  std::vector<Tensor> parameters(bool recurse = true) const;
  StateDict named_parameters(bool recurse = true) const;
  StateDict named_buffers(bool recurse = true) const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;
  /// "Linear", "Sequential", ...
  const std::string& type_name() const { return type_name_; }

  // -- state -------------------------------------------------------------------------------
  /// Moves every parameter and buffer (in place, keeping autograd leaf status).
  void to(const Device& device);
  /// Converts floating-point parameters and buffers.
  void to(DType dtype);
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  /// Clears every parameter's gradient (set_to_none) or zeroes it in place.
  void zero_grad(bool set_to_none = true);

  /// Parameters then buffers of each module, depth first, named "block.0.weight".
  StateDict state_dict() const;
  /// Copies values from `state` into the module's tensors (converted to their dtype
  /// and device). strict: every key must match, in both directions. A shape mismatch
  /// is always an error. Errors name the keys; nothing is modified when one is found.
  void load_state_dict(const StateDict& state, bool strict = true);
  /// The checks of load_state_dict alone: throws the same kiln::Error for the same
  /// `state`, and changes nothing either way (kiln::load checks every entry first).
  void check_state_dict(const StateDict& state, bool strict = true) const;

  /// Writes the module tree, e.g. "Sequential(\n  (0): Linear(in=784, out=10)\n)".
  virtual void pretty_print(std::ostream& out) const;

  /// A deep copy: same structure, parameter and buffer values (on the same devices),
  /// requires_grad flags and train/eval mode, sharing no tensor with this module.
  /// Every built-in layer implements it; a custom module overrides it to be used with
  /// nn::DataParallel, typically as
  /// @code
  ///   std::shared_ptr<Module> clone() const override {
  ///     return copy_state_into(std::make_shared<Net>(/* same options */));
  ///   }
  /// @endcode
  /// (submodules registered by the constructor are then copied too). The default
  /// throws kiln::Error naming the type.
  virtual std::shared_ptr<Module> clone() const;

 protected:
  /// A module built as a temporary can be moved into its owner (nn::Sequential's
  /// variadic constructor); the moved-from module is empty.
  Module(Module&&) = default;
  /// Extra details inside the parentheses of pretty_print, e.g. "in=784, out=10".
  virtual std::string extra_repr() const { return ""; }
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  /// Copies this module's parameters and buffers (recursively, by name), their
  /// requires_grad flags and the training mode into `fresh`, a newly built module of
  /// the same structure, and returns it. Throws if the names or shapes differ.
  std::shared_ptr<Module> copy_state_into(std::shared_ptr<Module> fresh) const;

 private:
  void collect(const std::string& prefix, bool recurse, bool params, bool buffers,
               StateDict& out) const;
  void print_tree(std::ostream& out, int indent) const;

  std::string type_name_;
  bool training_ = true;
  StateDict parameters_;
  StateDict buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

std::ostream& operator<<(std::ostream& out, const Module& module);

}  // namespace kiln::nn
