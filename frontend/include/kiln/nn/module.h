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
///
/// Sharing (weight tying), as PyTorch: one tensor may be registered by several
/// modules or under several names. parameters(), named_parameters() and
/// named_buffers() list it once, under its first name (registration order, depth
/// first); state_dict() keeps every name; to(), zero_grad() and clone() treat it as
/// one tensor and keep it shared. Assigning a built-in layer's field ties for real:
/// @code
///   lm_head->weight = wte->weight;  // lm_head's registered "weight" is now wte's
/// @endcode
/// (the module re-registers the field the next time its tensors are listed; see
/// tensor_fields()).

#include <concepts>
#include <functional>
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
  /// Over an existing parameter name it replaces that parameter in place, keeping
  /// its position (PyTorch's `module.weight = other_param`), and updates the field
  /// bound to that name (tensor_fields()); passing another module's parameter ties
  /// the two. Throws kiln::Error when `name` is already a buffer or a submodule.
  Tensor register_parameter(const std::string& name, Tensor tensor, bool requires_grad = true);
  /// Registers a buffer: state saved in state_dict but not trained (running stats).
  /// Over an existing buffer name it replaces that buffer; throws kiln::Error when
  /// `name` is already a parameter or a submodule.
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
  /// Every parameter once: a tensor shared by several modules or names (weight
  /// tying) appears under its first name only, as PyTorch's remove_duplicate=True.
  /// What optimizers, clip_grad_norm_ and the data-parallel wrappers take.
  std::vector<Tensor> parameters(bool recurse = true) const;
  /// ("fc1.weight", tensor) pairs, depth first, each tensor once (see parameters()).
  StateDict named_parameters(bool recurse = true) const;
  /// ("bn.running_mean", tensor) pairs, depth first, each tensor once.
  StateDict named_buffers(bool recurse = true) const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;
  /// Calls `fn` on every submodule, children first (depth first), then on this
  /// module, as PyTorch's Module.apply; returns *this. Typical use, initializing by
  /// type:
  /// @code
  ///   model.apply([](nn::Module& m) {
  ///     if (auto* linear = m.as<nn::Linear>()) nn::init::normal_(linear->weight, 0, 0.02);
  ///   });
  /// @endcode
  Module& apply(const std::function<void(Module&)>& fn);
  /// "Linear", "Sequential", ...
  const std::string& type_name() const { return type_name_; }

  // -- state -------------------------------------------------------------------------------
  /// Moves every parameter and buffer (in place, keeping autograd leaf status; a
  /// shared tensor is moved once and stays shared).
  void to(const Device& device);
  /// Converts floating-point parameters and buffers (in place, like to(device)).
  void to(DType dtype);
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  /// Clears every parameter's gradient (set_to_none) or zeroes it in place.
  void zero_grad(bool set_to_none = true);

  /// Parameters then buffers of each module, depth first, named "block.0.weight".
  /// A shared tensor appears under every name ("wte.weight" and "lm_head.weight"),
  /// as in PyTorch; load_state_dict then writes it once per name.
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
  /// Tensors shared inside this module are shared inside the copy too (one new
  /// tensor under the same names).
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
  /// Registers a submodule; throws kiln::Error when `name` is taken.
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  /// Replaces the submodule `name` in place, or appends it when there is none (for
  /// containers: nn::ModuleDict).
  void set_child(const std::string& name, std::shared_ptr<Module> module);
  /// Unregisters the submodule `name`; throws kiln::Error when there is none.
  void remove_child(const std::string& name);
  /// Copies this module's parameters and buffers (recursively, by name), their
  /// requires_grad flags and the training mode into `fresh`, a newly built module of
  /// the same structure, and returns it. Tensors shared in this module are tied in
  /// `fresh` the same way. Throws if the names or shapes differ.
  std::shared_ptr<Module> copy_state_into(std::shared_ptr<Module> fresh) const;

  /// A public Tensor field bound to a registered name (Linear::weight -> "weight").
  struct TensorField {
    std::string name;
    Tensor* field;
    bool buffer = false;  ///< a buffer field (BatchNorm::running_mean), else a parameter
  };
  /// The public Tensor fields that mirror registered tensors. Every built-in layer
  /// lists its own; a custom module that exposes its parameters as fields overrides
  /// it to get the same behaviour:
  ///  - register_parameter / register_buffer over a listed name update the field;
  ///  - a field assigned by the user (`lm_head->weight = wte->weight`) is
  ///    re-registered under its name before the module's tensors are next listed
  ///    (named_parameters, state_dict, to, ...), so field and registered tensor never
  ///    diverge. A parameter field assigned a non-leaf tensor (the result of an
  ///    autograd op) is refused there with a kiln::Error naming the field.
  virtual std::vector<TensorField> tensor_fields() { return {}; }

 private:
  using StateVisitor = std::function<void(Module& owner, const std::string& prefix,
                                          const std::string& name, Tensor& t, bool buffer)>;
  void collect(const std::string& prefix, bool recurse, bool params, bool buffers,
               std::vector<const void*>* seen, StateDict& out) const;
  /// Visits every parameter then buffer of each module, depth first, shared or not.
  void visit_state(const std::string& prefix, const StateVisitor& visit) const;
  /// Re-registers the fields of tensor_fields() that were assigned since (see there).
  void sync_fields() const;
  /// The tensors of state_dict(), each once.
  std::vector<Tensor> unique_state() const;
  void print_tree(std::ostream& out, int indent) const;

  std::string type_name_;
  bool training_ = true;
  // Mutable: sync_fields(), called from const accessors, brings these up to date with
  // the fields the user assigned (the registry follows the fields).
  mutable StateDict parameters_;
  mutable StateDict buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

std::ostream& operator<<(std::ostream& out, const Module& module);

}  // namespace kiln::nn
