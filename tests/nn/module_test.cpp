// nn::Module: registration, traversal, state dicts, train/eval, device moves, init.

#include <gtest/gtest.h>

#include <kiln/kiln.h>
#include <kiln/nn.h>
#include <cmath>
#include <sstream>

namespace {

using namespace kiln;

std::shared_ptr<nn::Sequential> small_cnn() {
  auto net = std::make_shared<nn::Sequential>();
  net->push_back(std::make_shared<nn::Conv2d>(1, 4, 3, nn::Conv2dOptions().padding(1)));
  net->push_back(std::make_shared<nn::BatchNorm2d>(4));
  net->push_back(std::make_shared<nn::ReLU>());
  net->push_back(std::make_shared<nn::MaxPool2d>(2));
  net->push_back(std::make_shared<nn::Flatten>());
  net->push_back(std::make_shared<nn::Linear>(4 * 2 * 2, 3));
  return net;
}

TEST(Module, NamedParametersAndStateDictOrder) {
  auto net = small_cnn();
  std::vector<std::string> names;
  for (auto& [n, t] : net->named_parameters()) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias", "5.weight",
                                             "5.bias"}));
  std::vector<std::string> state;
  for (auto& [n, t] : net->state_dict()) state.push_back(n);
  EXPECT_EQ(state, (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias",
                                             "1.running_mean", "1.running_var",
                                             "1.num_batches_tracked", "5.weight", "5.bias"}));
  for (auto& p : net->parameters()) EXPECT_TRUE(p.requires_grad());
}

TEST(Module, ForwardBackwardReachesEveryParameter) {
  auto net = small_cnn();
  auto y = net->forward(randn({2, 1, 4, 4}));
  EXPECT_EQ(y.shape().vec(), (std::vector<int64_t>{2, 3}));
  y.sum().backward();
  for (auto& [n, p] : net->named_parameters()) EXPECT_TRUE(p.grad().defined()) << n;
  net->zero_grad();
  for (auto& p : net->parameters()) EXPECT_FALSE(p.grad().defined());
}

TEST(Module, DefaultInitializationMatchesPyTorchBounds) {
  manual_seed(0);
  nn::Linear fc(400, 10);
  double bound = 1.0 / std::sqrt(400.0);
  EXPECT_LE(fc.weight.abs().max().item<float>(), bound + 1e-6);
  EXPECT_GT(fc.weight.abs().max().item<float>(), 0.9 * bound);  // spans the range
  EXPECT_LE(fc.bias.abs().max().item<float>(), bound + 1e-6);
  nn::Conv2d conv(8, 4, 3);
  double cbound = 1.0 / std::sqrt(8.0 * 9.0);
  EXPECT_LE(conv.weight.abs().max().item<float>(), cbound + 1e-6);
}

TEST(Module, TrainEvalChangesBatchNormAndDropout) {
  manual_seed(1);
  nn::Dropout drop(0.5);
  auto x = ones({1000});
  auto y = drop.forward(x);
  double zeros_fraction = (y == 0).sum().item<int64_t>() / 1000.0;
  EXPECT_NEAR(zeros_fraction, 0.5, 0.06);
  drop.eval();
  EXPECT_TRUE(allclose(drop.forward(x), x));

  nn::BatchNorm1d bn(2);
  auto batch = from_vector<float>({1, 10, 3, 20, 5, 30}, {3, 2});
  bn.forward(batch);  // running_mean = 0.9*0 + 0.1*mean
  EXPECT_NEAR(bn.running_mean.to_vector<float>()[0], 0.3, 1e-5);
  EXPECT_NEAR(bn.running_mean.to_vector<float>()[1], 2.0, 1e-5);
  // unbiased variance of {1,3,5} is 4: 0.9*1 + 0.1*4
  EXPECT_NEAR(bn.running_var.to_vector<float>()[0], 1.3, 1e-5);
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 1);
  bn.eval();
  auto e = bn.forward(batch);
  EXPECT_NEAR(e.to_vector<float>()[0], (1 - 0.3) / std::sqrt(1.3 + 1e-5), 1e-4);
}

TEST(Module, LoadStateDictRoundTripAndErrors) {
  auto a = small_cnn(), b = small_cnn();
  b->load_state_dict(a->state_dict());
  for (size_t i = 0; i < a->state_dict().size(); ++i)
    EXPECT_TRUE(
        allclose(a->state_dict()[i].second.to(float64), b->state_dict()[i].second.to(float64)));

  auto state = a->state_dict();
  state.pop_back();
  try {
    b->load_state_dict(state);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing keys: 5.bias"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(b->load_state_dict(state, /*strict=*/false));

  state = a->state_dict();
  state.emplace_back("extra.weight", zeros({1}));
  try {
    b->load_state_dict(state);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unexpected keys: extra.weight"), std::string::npos);
  }

  nn::Linear other(5, 3);
  state = a->state_dict();
  for (auto& [n, t] : state)
    if (n == "5.weight") t = other.weight;
  try {
    b->load_state_dict(state, false);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("size mismatch for: 5.weight"), std::string::npos)
        << e.what();
  }
}

TEST(Module, MovingDevicesKeepsHandlesInSync) {
  auto net = small_cnn();
  Tensor w = net->parameters()[0];
  net->to(Device("cpu", 0));
  net->to(float64);
  EXPECT_EQ(w.dtype(), float64);  // the handle sees the conversion
  EXPECT_TRUE(w.requires_grad());
  EXPECT_TRUE(w.is_leaf());
}

TEST(Module, PrettyPrint) {
  std::ostringstream s;
  s << *small_cnn();
  EXPECT_NE(s.str().find("(0): Conv2d(1, 4, kernel_size=(3, 3)"), std::string::npos) << s.str();
  EXPECT_NE(s.str().find("(5): Linear(in_features=16, out_features=3"), std::string::npos);
}

TEST(Module, RegistrationErrors) {
  struct Bad : nn::Module {
    Bad() {
      register_buffer("w", zeros({1}));
      register_parameter("w", zeros({1}));  // a buffer's name (a parameter's is replaced)
    }
  };
  EXPECT_THROW(Bad(), Error);
  EXPECT_THROW(nn::Linear(0, 3), Error);
  EXPECT_THROW(nn::Module().forward(zeros({1})), Error);
}

TEST(Module, EmbeddingLayerNormAndActivations) {
  nn::Embedding emb(10, 4);
  auto y = emb.forward(from_vector<int64_t>({1, 2, 9}, {3}));
  EXPECT_EQ(y.shape().vec(), (std::vector<int64_t>{3, 4}));
  EXPECT_THROW(emb.forward(from_vector<int64_t>({10})), Error);  // out of range
  nn::LayerNorm ln({4});
  auto z = ln.forward(randn({5, 4}));
  EXPECT_NEAR(z.mean({1}).abs().max().item<float>(), 0.0, 1e-5);
  nn::GELU gelu;
  EXPECT_NEAR(gelu.forward(from_vector<float>({1.0f})).item<float>(), 0.8413447, 1e-5);
}

}  // namespace

namespace {

struct InPlaceNet : kiln::nn::Module {
  InPlaceNet() {
    fc1 = register_module<kiln::nn::Linear>("fc1", 4, 3);
    fc2 = register_module<kiln::nn::Linear>("fc2", 3, 2, /*bias=*/false);
  }
  kiln::Tensor forward(const kiln::Tensor& x) override { return (*fc2)((*fc1)(x).relu()); }
  std::shared_ptr<kiln::nn::Linear> fc1, fc2;
};

TEST(Module, SubmodulesBuiltInPlace) {
  InPlaceNet net;
  std::vector<std::string> names;
  for (const auto& [name, p] : net.named_parameters()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight"}));
  EXPECT_EQ(net.fc1->weight.shape().vec(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(net(kiln::randn({5, 4})).shape().vec(), (std::vector<int64_t>{5, 2}));

  kiln::nn::Sequential seq;
  auto linear = seq.push_back<kiln::nn::Linear>(4, 2);
  seq.push_back<kiln::nn::ReLU>();
  EXPECT_EQ(seq.size(), 2u);
  EXPECT_EQ(seq[0], linear) << "push_back<M> returns the module it appended";
  EXPECT_EQ(seq.named_parameters().front().first, "0.weight");
  EXPECT_GE(seq(kiln::randn({3, 4})).min().item<float>(), 0.0f);
}

TEST(Module, SequentialIsBuiltFromModulesInPlaceAsInLibtorch) {
  manual_seed(4);
  auto shared = std::make_shared<nn::Linear>(8, 3);
  nn::Sequential seq(nn::Linear(4, 8), nn::ReLU(), shared);
  ASSERT_EQ(seq.size(), 3u);
  EXPECT_EQ(seq[2], shared) << "a shared_ptr is appended as it is";
  nn::Linear* first = seq[0]->as<nn::Linear>();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->weight.shape().vec(), (std::vector<int64_t>{8, 4}));
  EXPECT_EQ(seq[1]->as<nn::Linear>(), nullptr) << "a ReLU is not a Linear";
  EXPECT_NE(seq[1]->as<nn::ReLU>(), nullptr);
  // The moved module's parameters are the sequence's, registered under their index.
  std::vector<std::string> names;
  for (const auto& [name, p] : seq.named_parameters()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  EXPECT_TRUE(seq.parameters()[0].shares_storage_with(first->weight));
  const Tensor x = randn({5, 4});
  const Tensor expected = shared->forward(first->forward(x).relu());
  EXPECT_EQ(seq(x).to_vector<float>(), expected.to_vector<float>());
  // Nested, and held by a shared_ptr as a model usually is.
  auto model = std::make_shared<nn::Sequential>(nn::Sequential(nn::Linear(4, 4), nn::Tanh()),
                                                nn::Linear(4, 1));
  EXPECT_EQ(model->named_parameters().front().first, "0.0.weight");
  EXPECT_EQ(model->forward(x).shape().vec(), (std::vector<int64_t>{5, 1}));
  // A braced list of shared_ptrs still means the list, as before.
  nn::Sequential braced({std::make_shared<nn::Linear>(4, 2), std::make_shared<nn::ReLU>()});
  EXPECT_EQ(braced.size(), 2u);
}

}  // namespace
