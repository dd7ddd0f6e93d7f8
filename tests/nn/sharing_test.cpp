// Parameter sharing (weight tying) as PyTorch does it: one tensor under several names
// is one parameter for training (parameters(), optimizers, clip_grad_norm_) and every
// name in state dicts; clone, to() and field assignment keep the tie.

#include <gtest/gtest.h>

#include <kiln/kiln.h>
#include <kiln/nn.h>
#include <unistd.h>
#include <cmath>
#include <filesystem>
#include <string>

namespace {

using namespace kiln;
namespace F = kiln::nn::functional;

constexpr int64_t kVocab = 7, kDim = 4;

// GPT's tying: token embedding wte [V, D] and lm_head = Linear(D, V) whose weight is
// also [V, D], assigned as PyTorch code does (`lm_head.weight = wte.weight`).
struct TiedLM : nn::Module {
  explicit TiedLM(bool tie = true) : nn::Module("TiedLM") {
    wte = register_module<nn::Embedding>("wte", kVocab, kDim);
    lm_head = register_module<nn::Linear>("lm_head", kDim, kVocab, /*bias=*/false);
    if (tie) lm_head->weight = wte->weight;
  }
  Tensor forward(const Tensor& indices) override { return lm_head->forward(wte->forward(indices)); }
  // Built untied: copy_state_into must tie the copy itself.
  std::shared_ptr<Module> clone() const override {
    return copy_state_into(std::make_shared<TiedLM>(false));
  }
  std::shared_ptr<nn::Embedding> wte;
  std::shared_ptr<nn::Linear> lm_head;
};

bool same(const Tensor& a, const Tensor& b) { return a.impl() == b.impl(); }

std::vector<std::string> names(const nn::StateDict& d) {
  std::vector<std::string> out;
  for (const auto& [n, t] : d) out.push_back(n);
  return out;
}

Tensor tokens() { return from_vector<int64_t>({1, 2, 3, 1, 6}, {5}); }

// A loss with a fixed random weighting, so every logit has its own gradient.
Tensor loss_of(const Tensor& logits, const Tensor& r) { return (logits * r).sum(); }

TEST(WeightTying, FieldAssignmentTiesTheRegisteredParameter) {
  TiedLM m;
  EXPECT_EQ(m.parameters().size(), 1u);
  EXPECT_EQ(names(m.named_parameters()), (std::vector<std::string>{"wte.weight"}));
  const nn::StateDict state = m.state_dict();
  ASSERT_EQ(names(state), (std::vector<std::string>{"wte.weight", "lm_head.weight"}));
  EXPECT_TRUE(same(state[0].second, state[1].second));
  EXPECT_TRUE(same(m.lm_head->named_parameters()[0].second, m.wte->weight));
}

TEST(WeightTying, GradientSumsBothUses) {
  TiedLM m;
  m.to(float64);
  ASSERT_TRUE(same(m.wte->weight, m.lm_head->weight));
  ASSERT_EQ(m.wte->weight.dtype(), float64);
  const Tensor r = randn({5, kVocab}, float64);
  loss_of(m.forward(tokens()), r).backward();
  const Tensor tied_grad = m.wte->weight.grad();
  ASSERT_TRUE(tied_grad.defined());

  // Untied: two copies of the same values, the gradients summed by hand.
  Tensor e = m.wte->weight.detach().clone().requires_grad_();
  Tensor l = m.wte->weight.detach().clone().requires_grad_();
  loss_of(F::linear(F::embedding(tokens(), e), l), r).backward();
  EXPECT_GT(e.grad().abs().sum().item<double>(), 0.0);
  EXPECT_GT(l.grad().abs().sum().item<double>(), 0.0);
  EXPECT_TRUE(allclose(tied_grad, e.grad() + l.grad(), 1e-12, 1e-12));
}

TEST(WeightTying, OptimizerAndClipSeeTheTensorOnce) {
  TiedLM m;
  m.to(float64);
  loss_of(m.forward(tokens()), randn({5, kVocab}, float64)).backward();
  const Tensor g = m.wte->weight.grad().clone();
  const double expected = std::sqrt((g * g).sum().item<double>());
  const Tensor total = optim::clip_grad_norm_(m.parameters(), 1e9);
  EXPECT_NEAR(total.item<double>(), expected, 1e-12 * expected);

  std::unique_ptr<optim::AdamW> opt;
  ASSERT_NO_THROW(opt = std::make_unique<optim::AdamW>(m.parameters()));
  const Tensor before = m.wte->weight.detach().clone();
  opt->step();
  EXPECT_FALSE(allclose(before, m.wte->weight));
  EXPECT_TRUE(same(m.wte->weight, m.lm_head->weight));
  m.zero_grad();
  EXPECT_FALSE(m.lm_head->weight.grad().defined());
}

TEST(WeightTying, StateDictLoadsIntoATiedModel) {
  TiedLM a, b;
  EXPECT_NO_THROW(b.check_state_dict(a.state_dict()));
  b.load_state_dict(a.state_dict());
  EXPECT_TRUE(allclose(b.wte->weight, a.wte->weight));
  EXPECT_TRUE(same(b.wte->weight, b.lm_head->weight));
}

TEST(WeightTying, SaveLoadRoundTrip) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("kiln-tying-" + std::to_string(static_cast<long>(::getpid())));
  std::filesystem::create_directories(dir);
  auto a = std::make_shared<TiedLM>();
  auto b = std::make_shared<TiedLM>();
  kiln::save({{"model", a}}, dir / "tied.safetensors");
  kiln::load({{"model", b}}, dir / "tied.safetensors");
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(allclose(b->wte->weight, a->wte->weight));
  EXPECT_TRUE(same(b->wte->weight, b->lm_head->weight));
  EXPECT_EQ(b->parameters().size(), 1u);
}

TEST(WeightTying, CloneKeepsTheTieInTheCopy) {
  TiedLM m;
  auto copy = std::dynamic_pointer_cast<TiedLM>(m.clone());
  ASSERT_TRUE(copy);
  EXPECT_TRUE(same(copy->wte->weight, copy->lm_head->weight));
  EXPECT_FALSE(same(copy->wte->weight, m.wte->weight));
  EXPECT_TRUE(allclose(copy->lm_head->weight, m.wte->weight));
  EXPECT_EQ(copy->parameters().size(), 1u);
  const nn::StateDict state = copy->state_dict();
  EXPECT_TRUE(same(state[0].second, state[1].second));

  // A copy whose constructor ties what the original has untied since is untied.
  struct TiedByDefault : nn::Module {
    TiedByDefault() : nn::Module("TiedByDefault") {
      a = register_module<nn::Linear>("a", 3, 3, false);
      b = register_module<nn::Linear>("b", 3, 3, false);
      b->weight = a->weight;
    }
    std::shared_ptr<Module> clone() const override {
      return copy_state_into(std::make_shared<TiedByDefault>());
    }
    std::shared_ptr<nn::Linear> a, b;
  } untied;
  untied.b->weight = zeros({3, 3});
  auto copy2 = std::dynamic_pointer_cast<TiedByDefault>(untied.clone());
  EXPECT_FALSE(same(copy2->a->weight, copy2->b->weight));
  EXPECT_TRUE(allclose(copy2->a->weight, untied.a->weight));
  EXPECT_EQ(copy2->b->weight.abs().sum().item<float>(), 0.0f);
  EXPECT_TRUE(copy2->b->weight.requires_grad());
}

TEST(WeightTying, SequentialCloneKeepsATieBetweenItsLayers) {
  auto first = std::make_shared<nn::Linear>(3, 3);
  auto second = std::make_shared<nn::Linear>(3, 3);
  second->weight = first->weight;
  nn::Sequential seq({first, second});
  EXPECT_EQ(names(seq.named_parameters()),
            (std::vector<std::string>{"0.weight", "0.bias", "1.bias"}));
  auto copy = std::dynamic_pointer_cast<nn::Sequential>(seq.clone());
  EXPECT_TRUE(same((*copy)[0]->as<nn::Linear>()->weight, (*copy)[1]->as<nn::Linear>()->weight));
  EXPECT_EQ(copy->parameters().size(), 3u);
}

TEST(WeightTying, RegisterParameterReplacesOrShares) {
  nn::Linear lin(2, 3);
  const Tensor w = zeros({3, 2});
  const Tensor stored = lin.register_parameter("weight", w);
  EXPECT_TRUE(same(stored, w));
  EXPECT_TRUE(same(lin.weight, w));  // the field follows
  EXPECT_TRUE(w.requires_grad());
  EXPECT_EQ(names(lin.named_parameters()), (std::vector<std::string>{"weight", "bias"}));

  // One tensor under a second name: listed once for training, twice in the state.
  lin.register_parameter("weight_alias", lin.weight);
  EXPECT_EQ(lin.parameters().size(), 2u);
  EXPECT_EQ(names(lin.state_dict()), (std::vector<std::string>{"weight", "bias", "weight_alias"}));
  EXPECT_NO_THROW(optim::AdamW{lin.parameters()});
}

TEST(WeightTying, RegisteringOverAnotherKindIsRefused) {
  nn::BatchNorm1d bn(3);
  try {
    bn.register_parameter("running_mean", zeros({3}));
    FAIL() << "expected kiln::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'running_mean' is already a buffer of BatchNorm1d"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(bn.register_buffer("weight", zeros({3})), Error);
  nn::Sequential seq({std::make_shared<nn::ReLU>()});
  EXPECT_THROW(seq.register_parameter("0", zeros({1})), Error);
}

TEST(WeightTying, FieldAssignedAComputedTensorIsRefused) {
  nn::Linear lin(2, 3);
  lin.weight = lin.weight * 2;  // not a leaf: not a parameter
  try {
    (void)lin.parameters();
    FAIL() << "expected kiln::Error";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("Linear::weight was assigned the result of an autograd op"),
        std::string::npos)
        << e.what();
  }
}

TEST(WeightTying, FieldAssignmentOfAFreshTensorOrNone) {
  nn::Linear lin(2, 3);
  lin.weight = ones({3, 2});  // a fresh leaf: becomes the parameter, trainable like the old one
  EXPECT_TRUE(same(lin.named_parameters()[0].second, lin.weight));
  EXPECT_TRUE(lin.weight.requires_grad());
  lin.bias = Tensor();  // PyTorch's `lin.bias = None`
  EXPECT_EQ(names(lin.named_parameters()), (std::vector<std::string>{"weight"}));
  // A plain Tensor copied out of a field is just a handle: assigning it changes nothing.
  Tensor w = lin.weight;
  w = zeros({3, 2});
  EXPECT_TRUE(same(lin.named_parameters()[0].second, lin.weight));
  EXPECT_EQ(lin.weight.sum().item<float>(), 6.0f);
}

TEST(WeightTying, ToDtypeConvertsOnceAndKeepsTheTie) {
  TiedLM m;
  const Tensor handle = m.lm_head->weight;  // e.g. an optimizer's
  m.to(float64);
  EXPECT_TRUE(same(m.wte->weight, m.lm_head->weight));
  EXPECT_TRUE(same(handle, m.wte->weight));
  EXPECT_EQ(m.wte->weight.dtype(), float64);
  m.to(Device("cpu"));
  EXPECT_TRUE(same(m.wte->weight, m.lm_head->weight));
}

}  // namespace
