// nn::ModuleList, nn::ModuleDict and Module::apply: registration names, indexing,
// insertion order, errors, clone and printing.

#include <gtest/gtest.h>

#include <kiln/kiln.h>
#include <kiln/nn.h>
#include <functional>
#include <sstream>
#include <string>

namespace {

using namespace kiln;

std::vector<std::string> names(const nn::StateDict& d) {
  std::vector<std::string> out;
  for (const auto& [n, t] : d) out.push_back(n);
  return out;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

struct Stack : nn::Module {
  Stack() : nn::Module("Stack") {
    layers = register_module<nn::ModuleList>("layers");
    layers->push_back<nn::Linear>(2, 3);
    layers->append(std::make_shared<nn::ReLU>());
    layers->extend({std::make_shared<nn::Linear>(3, 4, false)});
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = x;
    for (const auto& layer : *layers) h = layer->forward(h);
    return h;
  }
  std::shared_ptr<nn::ModuleList> layers;
};

TEST(ModuleList, RegistersItemsByIndex) {
  Stack s;
  EXPECT_EQ(s.layers->size(), 3u);
  EXPECT_EQ(names(s.named_parameters()),
            (std::vector<std::string>{"layers.0.weight", "layers.0.bias", "layers.2.weight"}));
  EXPECT_EQ(s.forward(randn({5, 2})).shape().vec(), (std::vector<int64_t>{5, 4}));
  int count = 0;
  for (const auto& m : *s.layers) count += m != nullptr;
  EXPECT_EQ(count, 3);
}

TEST(ModuleList, IndexingCountsFromTheEndAndNamesBadIndices) {
  Stack s;
  nn::ModuleList& list = *s.layers;
  EXPECT_EQ(list[-1].get(), list[2].get());
  EXPECT_EQ(list[-3].get(), list[0].get());
  EXPECT_NE(list[0]->as<nn::Linear>(), nullptr);
  EXPECT_EQ(list[1]->type_name(), "ReLU");
  EXPECT_NE(error_of([&] { (void)list[3]; }).find("index 3 is out of range for a list of size 3"),
            std::string::npos);
  EXPECT_NE(error_of([&] { (void)list[-4]; }).find("index -4"), std::string::npos);
  EXPECT_THROW(list.push_back(nullptr), Error);
}

TEST(ModuleList, PrintsAndClones) {
  Stack s;
  std::ostringstream out;
  s.layers->pretty_print(out);
  EXPECT_NE(out.str().find("ModuleList(\n  (0): Linear(in_features=2, out_features=3"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("(1): ReLU()"), std::string::npos) << out.str();

  auto copy = std::dynamic_pointer_cast<nn::ModuleList>(s.layers->clone());
  ASSERT_TRUE(copy);
  ASSERT_EQ(copy->size(), 3u);
  const auto a = s.layers->state_dict(), b = copy->state_dict();
  ASSERT_EQ(names(a), names(b));
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_NE(a[i].second.impl(), b[i].second.impl());
    EXPECT_TRUE(allclose(a[i].second, b[i].second));
  }
}

TEST(ModuleDict, InsertionOrderLookupAndPop) {
  auto heads = std::make_shared<nn::ModuleDict>();
  heads->insert("policy", std::make_shared<nn::Linear>(4, 2));
  heads->update({{"value", std::make_shared<nn::Linear>(4, 1)},
                 {"aux", std::make_shared<nn::Linear>(4, 3, false)}});
  nn::Sequential parent;
  parent.register_module("heads", heads);
  EXPECT_EQ(
      names(parent.named_parameters()),
      (std::vector<std::string>{"heads.policy.weight", "heads.policy.bias", "heads.value.weight",
                                "heads.value.bias", "heads.aux.weight"}));
  EXPECT_EQ(heads->keys(), (std::vector<std::string>{"policy", "value", "aux"}));
  EXPECT_EQ(heads->values().size(), 3u);
  EXPECT_EQ(heads->items()[1].first, "value");
  EXPECT_TRUE(heads->contains("aux"));
  EXPECT_FALSE(heads->contains("critic"));
  EXPECT_EQ((*heads)["value"]->as<nn::Linear>()->weight.size(0), 1);

  // Replacing keeps the position, as PyTorch's d[key] = module.
  heads->insert("value", std::make_shared<nn::Linear>(4, 5));
  EXPECT_EQ(heads->keys(), (std::vector<std::string>{"policy", "value", "aux"}));
  EXPECT_EQ((*heads)["value"]->as<nn::Linear>()->weight.size(0), 5);
  EXPECT_EQ(names(heads->named_parameters())[2], "value.weight");
  EXPECT_EQ(heads->named_parameters()[2].second.size(0), 5);

  auto popped = heads->pop("policy");
  EXPECT_NE(popped->as<nn::Linear>(), nullptr);
  EXPECT_EQ(heads->keys(), (std::vector<std::string>{"value", "aux"}));
  EXPECT_EQ(names(heads->named_parameters()),
            (std::vector<std::string>{"value.weight", "value.bias", "aux.weight"}));

  EXPECT_NE(error_of([&] { (void)(*heads)["critic"]; }).find("no module under key 'critic'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { heads->pop("policy"); }).find("'policy'"), std::string::npos);
  EXPECT_THROW(heads->insert("a.b", std::make_shared<nn::ReLU>()), Error);

  auto copy = std::dynamic_pointer_cast<nn::ModuleDict>(heads->clone());
  ASSERT_TRUE(copy);
  EXPECT_EQ(copy->keys(), heads->keys());
  EXPECT_TRUE(allclose((*copy)["aux"]->as<nn::Linear>()->weight,
                       (*heads)["aux"]->as<nn::Linear>()->weight));
}

TEST(ModuleApply, VisitsChildrenFirstThenSelf) {
  Stack s;
  std::vector<std::string> order;
  nn::Module& returned = s.apply([&](nn::Module& m) { order.push_back(m.type_name()); });
  EXPECT_EQ(&returned, &s);
  EXPECT_EQ(order, (std::vector<std::string>{"Linear", "ReLU", "Linear", "ModuleList", "Stack"}));
}

TEST(ModuleApply, InitializesByType) {
  Stack s;
  s.apply([](nn::Module& m) {
    if (auto* linear = m.as<nn::Linear>()) {
      nn::init::constant_(linear->weight, 0.5);
      if (linear->bias.defined()) nn::init::zeros_(linear->bias);
    }
  });
  for (const auto& [n, t] : s.named_parameters())
    EXPECT_EQ(t.abs().max().item<float>(), n.ends_with("bias") ? 0.0f : 0.5f) << n;
}

}  // namespace
