// nn::ModuleList and nn::ModuleDict: the module registry of Module, indexed.

#include "kiln/nn/containers.h"

#include <algorithm>

#include "kiln/error.h"

namespace kiln::nn {

ModuleList::ModuleList(std::vector<std::shared_ptr<Module>> modules) : ModuleList() {
  for (auto& m : modules) push_back(std::move(m));
}

void ModuleList::push_back(std::shared_ptr<Module> module) {
  KILN_CHECK(module != nullptr, "ModuleList::push_back: module ", modules_.size(), " is null");
  add_child(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}

ModuleList& ModuleList::append(std::shared_ptr<Module> module) {
  push_back(std::move(module));
  return *this;
}

ModuleList& ModuleList::extend(const std::vector<std::shared_ptr<Module>>& modules) {
  for (const auto& m : modules) push_back(m);
  return *this;
}

std::shared_ptr<Module> ModuleList::operator[](int64_t index) const {
  const auto size = static_cast<int64_t>(modules_.size());
  KILN_CHECK(index >= -size && index < size, "ModuleList: index ", index,
             " is out of range for a list of size ", size);
  return modules_[static_cast<size_t>(index < 0 ? index + size : index)];
}

std::shared_ptr<Module> ModuleList::clone() const {
  auto copy = std::make_shared<ModuleList>();
  for (const auto& m : modules_) copy->push_back(m->clone());
  // Ties between the modules (and the train/eval mode) come from the original.
  return copy_state_into(copy);
}

ModuleDict::ModuleDict(std::vector<Item> items) : ModuleDict() { update(items); }

void ModuleDict::insert(const std::string& key, std::shared_ptr<Module> module) {
  KILN_CHECK(module != nullptr, "ModuleDict::insert: the module for key '", key, "' is null");
  for (auto& [k, m] : items_)
    if (k == key) {
      set_child(key, module);
      m = std::move(module);
      return;
    }
  add_child(key, module);
  items_.emplace_back(key, std::move(module));
}

ModuleDict& ModuleDict::update(const std::vector<Item>& items) {
  for (const auto& [k, m] : items) insert(k, m);
  return *this;
}

namespace {
std::string key_list(const std::vector<ModuleDict::Item>& items) {
  std::string s;
  for (const auto& [k, m] : items) s += (s.empty() ? "'" : ", '") + k + "'";
  return s.empty() ? "none" : s;
}
}  // namespace

std::shared_ptr<Module> ModuleDict::operator[](const std::string& key) const {
  for (const auto& [k, m] : items_)
    if (k == key) return m;
  KILN_FAIL("ModuleDict: no module under key '", key, "' (keys: ", key_list(items_), ")");
}

bool ModuleDict::contains(const std::string& key) const {
  return std::any_of(items_.begin(), items_.end(), [&](const Item& i) { return i.first == key; });
}

std::shared_ptr<Module> ModuleDict::pop(const std::string& key) {
  for (auto it = items_.begin(); it != items_.end(); ++it)
    if (it->first == key) {
      std::shared_ptr<Module> module = it->second;
      remove_child(key);
      items_.erase(it);
      return module;
    }
  KILN_FAIL("ModuleDict::pop: no module under key '", key, "' (keys: ", key_list(items_), ")");
}

std::vector<std::string> ModuleDict::keys() const {
  std::vector<std::string> out;
  for (const auto& [k, m] : items_) out.push_back(k);
  return out;
}

std::vector<std::shared_ptr<Module>> ModuleDict::values() const {
  std::vector<std::shared_ptr<Module>> out;
  for (const auto& [k, m] : items_) out.push_back(m);
  return out;
}

std::shared_ptr<Module> ModuleDict::clone() const {
  auto copy = std::make_shared<ModuleDict>();
  for (const auto& [k, m] : items_) copy->insert(k, m->clone());
  return copy_state_into(copy);
}

}  // namespace kiln::nn
