#pragma once
/// @file containers.h
/// nn::ModuleList and nn::ModuleDict: submodules held in a list or by key, registered
/// so that their parameters show in the parent's ("layers.0.weight"), as PyTorch's.
/// Neither has a forward(); the owner runs the modules it holds.
///
/// @code
///   struct Transformer : kiln::nn::Module {
///     Transformer() {
///       blocks = register_module<kiln::nn::ModuleList>("blocks");
///       for (int i = 0; i < 4; ++i) blocks->push_back<Block>(64);
///     }
///     kiln::Tensor forward(const kiln::Tensor& x) override {
///       kiln::Tensor h = x;
///       for (const auto& block : *blocks) h = block->forward(h);
///       return h;
///     }
///     std::shared_ptr<kiln::nn::ModuleList> blocks;
///   };
/// @endcode

#include <concepts>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kiln/nn/module.h"

namespace kiln::nn {

/// Modules in a list, registered as "0", "1", ... in order.
class ModuleList : public Module {
 public:
  using Iterator = std::vector<std::shared_ptr<Module>>::const_iterator;

  ModuleList() : Module("ModuleList") {}
  explicit ModuleList(std::vector<std::shared_ptr<Module>> modules);

  /// Appends `module` (registered as the next index); throws kiln::Error on null.
  void push_back(std::shared_ptr<Module> module);
  /// Builds a module in place and appends it: push_back<nn::Linear>(64, 64).
  template <typename M, typename... Args>
  requires std::derived_from<M, Module> && std::constructible_from<M, Args...> std::shared_ptr<M>
  push_back(Args&&... args) {
    auto module = std::make_shared<M>(std::forward<Args>(args)...);
    push_back(std::shared_ptr<Module>(module));
    return module;
  }
  /// PyTorch's name for push_back; returns *this.
  ModuleList& append(std::shared_ptr<Module> module);
  /// Appends every module of `modules` in order; returns *this.
  ModuleList& extend(const std::vector<std::shared_ptr<Module>>& modules);
  /// The module at `index`; a negative index counts from the end (-1: the last).
  /// Throws kiln::Error naming the index and the size when out of range.
  std::shared_ptr<Module> operator[](int64_t index) const;
  size_t size() const { return modules_.size(); }
  bool empty() const { return modules_.empty(); }
  Iterator begin() const { return modules_.begin(); }
  Iterator end() const { return modules_.end(); }

  /// A deep copy of every module; tensors shared between them stay shared in the copy.
  std::shared_ptr<Module> clone() const override;

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};

/// Modules by key, in insertion order; a key is registered as the submodule's name
/// (non-empty, no '.').
class ModuleDict : public Module {
 public:
  using Item = std::pair<std::string, std::shared_ptr<Module>>;

  ModuleDict() : Module("ModuleDict") {}
  explicit ModuleDict(std::vector<Item> items);

  /// Adds `module` under `key`, or replaces the module there keeping its position
  /// (PyTorch's `d[key] = module`). Throws kiln::Error on null or an invalid key.
  void insert(const std::string& key, std::shared_ptr<Module> module);
  /// insert() for each item, in order; returns *this.
  ModuleDict& update(const std::vector<Item>& items);
  /// The module under `key`; throws kiln::Error naming the key when there is none.
  std::shared_ptr<Module> operator[](const std::string& key) const;
  bool contains(const std::string& key) const;
  /// Removes the module under `key` and returns it; throws like operator[].
  std::shared_ptr<Module> pop(const std::string& key);
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  /// Keys, modules, and (key, module) pairs, in insertion order.
  std::vector<std::string> keys() const;
  std::vector<std::shared_ptr<Module>> values() const;
  const std::vector<Item>& items() const { return items_; }

  /// A deep copy of every module; tensors shared between them stay shared in the copy.
  std::shared_ptr<Module> clone() const override;

 private:
  std::vector<Item> items_;
};

}  // namespace kiln::nn
