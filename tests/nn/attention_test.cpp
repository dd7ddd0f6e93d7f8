// scaled_dot_product_attention: the fused op against the composed version (values and
// gradients, every mask, dropout's decisions), gradcheck in float64, PyTorch's
// semantics at the edges, memory that grows with L + S, and clear errors.

#include <gtest/gtest.h>

#include <kiln/kiln.h>
#include <kiln/nn.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace {

using namespace kiln;
namespace F = kiln::nn::functional;

// Runs `fn` with scaled_dot_product_attention pinned to `backend` on this thread.
template <class Fn>
auto with_backend(F::AttentionBackend backend, Fn&& fn) {
  struct Restore {
    F::AttentionBackend old;
    ~Restore() { F::set_attention_backend(old); }
  } restore{F::set_attention_backend(backend)};
  return fn();
}

Tensor leaf(IntArrayRef shape, DType dtype, uint64_t seed) {
  manual_seed(seed);
  Tensor t = randn(shape, TensorOptions(dtype));
  t.requires_grad_();
  return t;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  return (a.to(DType::Float64) - b.to(DType::Float64)).abs().max().item<double>();
}

using Attention = std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>;

struct Result {
  Tensor out, dq, dk, dv;
};

// The output and the gradients of a fixed random projection of it, under `backend`.
Result run(F::AttentionBackend backend, const Attention& f, const Tensor& q, const Tensor& k,
           const Tensor& v) {
  return with_backend(backend, [&] {
    Tensor q1 = q.detach().requires_grad_(), k1 = k.detach().requires_grad_(),
           v1 = v.detach().requires_grad_();
    Tensor out = f(q1, k1, v1);
    manual_seed(99);
    Tensor weights = randn(out.shape(), TensorOptions(out.dtype()));
    (out * weights).sum().backward();
    return Result{out.detach(), q1.grad(), k1.grad(), v1.grad()};
  });
}

// Fused and composed agree on values and on all three gradients within `tol`.
void expect_fused_matches_composed(const Attention& f, const Tensor& q, const Tensor& k,
                                   const Tensor& v, double tol, const std::string& what) {
  const Result fused = run(F::AttentionBackend::Fused, f, q, k, v);
  const Result composed = run(F::AttentionBackend::Composed, f, q, k, v);
  EXPECT_EQ(fused.out.shape(), composed.out.shape()) << what;
  EXPECT_LE(max_abs_diff(fused.out, composed.out), tol) << what << ": out";
  EXPECT_LE(max_abs_diff(fused.dq, composed.dq), tol) << what << ": dq";
  EXPECT_LE(max_abs_diff(fused.dk, composed.dk), tol) << what << ": dk";
  EXPECT_LE(max_abs_diff(fused.dv, composed.dv), tol) << what << ": dv";
}

// Shapes that cross the CPU kernel's tiles (64 query rows, 128 keys) unevenly.
TEST(Attention, FusedMatchesComposedAcrossTiles) {
  for (DType d : {DType::Float64, DType::Float32}) {
    const double tol = d == DType::Float64 ? 1e-12 : 2e-5;
    const Tensor q = leaf({2, 3, 130, 16}, d, 1), k = leaf({2, 3, 200, 16}, d, 2),
                 v = leaf({2, 3, 200, 24}, d, 3);
    const std::string dt = std::string(dtype_name(d));
    expect_fused_matches_composed(
        [](auto& a, auto& b, auto& c) { return F::scaled_dot_product_attention(a, b, c); }, q, k, v,
        tol, dt + " plain");
    expect_fused_matches_composed(
        [](auto& a, auto& b, auto& c) {
          return F::scaled_dot_product_attention(a, b, c, {}, 0, true);
        },
        q, k, v, tol, dt + " causal");
    expect_fused_matches_composed(
        [](auto& a, auto& b, auto& c) {
          return F::scaled_dot_product_attention(a, b, c, {}, 0, false, 0.05);
        },
        q, k, v, tol, dt + " scale 0.05");
  }
}

TEST(Attention, FusedMatchesComposedWithMasks) {
  const DType d = DType::Float64;
  const Tensor q = leaf({2, 2, 70, 8}, d, 4), k = leaf({2, 2, 150, 8}, d, 5),
               v = leaf({2, 2, 150, 8}, d, 6);
  // Boolean key padding [2, 1, 1, 150]: batch b attends its first 150 − 60b keys.
  const Tensor keys = arange(150, TensorOptions(DType::Int64)).view({1, 1, 1, 150});
  const Tensor padding = keys < from_vector<int64_t>({150, 90}, {2, 1, 1, 1});
  expect_fused_matches_composed(
      [&](auto& a, auto& b, auto& c) { return F::scaled_dot_product_attention(a, b, c, padding); },
      q, k, v, 1e-12, "boolean key padding");
  // An additive [L, S] mask broadcast over batch and heads.
  manual_seed(7);
  const Tensor additive = randn({70, 150}, TensorOptions(d)) * 3.0;
  expect_fused_matches_composed(
      [&](auto& a, auto& b, auto& c) { return F::scaled_dot_product_attention(a, b, c, additive); },
      q, k, v, 1e-12, "additive [L, S]");
  // Unbatched [L, E] operands, and k/v shared by every head (stride-0 broadcast).
  const Tensor q2 = leaf({70, 8}, d, 8), k2 = leaf({150, 8}, d, 9), v2 = leaf({150, 5}, d, 10);
  expect_fused_matches_composed(
      [](auto& a, auto& b, auto& c) { return F::scaled_dot_product_attention(a, b, c); }, q2, k2,
      v2, 1e-12, "unbatched");
  const Tensor k3 = leaf({2, 1, 150, 8}, d, 11), v3 = leaf({2, 1, 150, 8}, d, 12);
  expect_fused_matches_composed(
      [](auto& a, auto& b, auto& c) { return F::scaled_dot_product_attention(a, b, c); }, q, k3, v3,
      1e-12, "k and v broadcast over heads");
}

// Heads split from [B, L, H·E] and transposed, as MultiheadAttention makes them: the
// kernel reads the strided operands directly.
TEST(Attention, FusedReadsTransposedHeads) {
  const Tensor x = leaf({2, 90, 4 * 16}, DType::Float32, 13);
  auto heads = [](const Tensor& t) { return t.view({2, 90, 4, 16}).transpose(1, 2); };
  expect_fused_matches_composed(
      [&](auto& a, auto& b, auto& c) {
        return F::scaled_dot_product_attention(heads(a), heads(b * 0.5), heads(c), {}, 0, true);
      },
      x, x, x, 2e-5, "transposed heads");
}

// Dropout draws position (b, h, i, j) of the generator's stream in both versions, so
// they agree exactly in which probabilities they drop; a seed reproduces them.
TEST(Attention, DropoutIsReproducibleAndSharedWithComposed) {
  const DType d = DType::Float64;
  const Tensor q = leaf({1, 2, 40, 8}, d, 14), k = leaf({1, 2, 140, 8}, d, 15),
               v = leaf({1, 2, 140, 8}, d, 16);
  auto f = [](const Tensor& a, const Tensor& b, const Tensor& c) {
    manual_seed(2024);
    return F::scaled_dot_product_attention(a, b, c, {}, 0.3, true);
  };
  expect_fused_matches_composed(f, q, k, v, 1e-12, "dropout 0.3");
  const Result once = run(F::AttentionBackend::Fused, f, q, k, v);
  const Result again = run(F::AttentionBackend::Fused, f, q, k, v);
  EXPECT_EQ(max_abs_diff(once.out, again.out), 0.0);
  const Result no_dropout = run(
      F::AttentionBackend::Fused,
      [](auto& a, auto& b, auto& c) {
        return F::scaled_dot_product_attention(a, b, c, {}, 0.0, true);
      },
      q, k, v);
  EXPECT_GT(max_abs_diff(once.out, no_dropout.out), 1e-3) << "dropout changed nothing";
  // The expectation is kept: the mean over many seeds approaches the undropped output.
  Tensor mean = zeros_like(no_dropout.out);
  constexpr int kSeeds = 200;
  with_backend(F::AttentionBackend::Fused, [&] {
    NoGradGuard no_grad;
    for (int seed = 0; seed < kSeeds; ++seed) {
      manual_seed(static_cast<uint64_t>(seed));
      mean = mean + F::scaled_dot_product_attention(q, k, v, {}, 0.3, true);
    }
    return 0;
  });
  EXPECT_LE(max_abs_diff(mean / static_cast<double>(kSeeds), no_dropout.out), 0.15);
}

// A captured step replays the fused op and its backward; with dropout the step takes
// the composed version, whose kiln.dropout the graph re-seeds at every replay.
TEST(Attention, GraphReplaysTheFusedStep) {
  for (double p : {0.0, 0.4}) {
    Tensor q = leaf({1, 2, 70, 8}, DType::Float32, 40), k = leaf({1, 2, 70, 8}, DType::Float32, 41),
           v = leaf({1, 2, 70, 8}, DType::Float32, 42);
    auto step = [&] {
      Tensor out = F::scaled_dot_product_attention(q, k, v, {}, p, true);
      out.sum().backward();
      return out;
    };
    for (int i = 0; i < 2; ++i) step();  // warm-up
    for (Tensor* t : {&q, &k, &v}) t->set_grad({});
    manual_seed(5);
    const Tensor eager = step().detach().clone();
    const Tensor eager_dq = q.grad().clone();
    for (Tensor* t : {&q, &k, &v}) t->set_grad({});
    Graph graph;
    Tensor out;
    {
      GraphCapture capture(graph, Device("cpu"));
      out = step();
    }
    manual_seed(5);
    graph.replay();
    EXPECT_LE(max_abs_diff(out, eager), 1e-6) << "p = " << p;
    EXPECT_LE(max_abs_diff(q.grad(), eager_dq), 1e-5) << "p = " << p;
    const Tensor first = out.clone();
    graph.replay();  // the generator moved on: new dropout decisions, if any
    if (p > 0)
      EXPECT_GT(max_abs_diff(out, first), 1e-3);
    else
      EXPECT_EQ(max_abs_diff(out, first), 0.0);
  }
}

TEST(Attention, GradcheckInFloat64) {
  const DType d = DType::Float64;
  const std::vector<Tensor> inputs = {leaf({1, 2, 5, 3}, d, 17), leaf({1, 2, 7, 3}, d, 18),
                                      leaf({1, 2, 7, 4}, d, 19)};
  const Tensor mask = from_vector<int64_t>({1, 1, 0, 1, 1, 1, 0}, {7}).to(DType::Bool);
  for (bool causal : {false, true}) {
    const GradcheckResult r = with_backend(F::AttentionBackend::Fused, [&] {
      return gradcheck(
          [&](const std::vector<Tensor>& in) {
            return F::scaled_dot_product_attention(in[0], in[1], in[2], causal ? Tensor() : mask, 0,
                                                   causal);
          },
          inputs);
    });
    EXPECT_TRUE(r.ok) << (causal ? "causal: " : "masked: ") << r.message;
  }
}

// An additive mask that needs a gradient gets one (through the composed version).
TEST(Attention, AdditiveMaskGetsItsGradient) {
  const DType d = DType::Float64;
  const std::vector<Tensor> inputs = {leaf({2, 4, 3}, d, 20), leaf({2, 5, 3}, d, 21),
                                      leaf({2, 5, 3}, d, 22), leaf({4, 5}, d, 23)};
  const GradcheckResult r = gradcheck(
      [](const std::vector<Tensor>& in) {
        return F::scaled_dot_product_attention(in[0], in[1], in[2], in[3]);
      },
      inputs);
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(Attention, EdgesAsTheComposedVersion) {
  const DType d = DType::Float32;
  // A row that may attend nowhere is NaN in both; the other rows are untouched.
  const Tensor q = leaf({1, 1, 3, 4}, d, 24), k = leaf({1, 1, 5, 4}, d, 25),
               v = leaf({1, 1, 5, 2}, d, 26);
  const Tensor mask =
      from_vector<int64_t>({1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}, {3, 5}).to(DType::Bool);
  for (auto backend : {F::AttentionBackend::Fused, F::AttentionBackend::Composed}) {
    const Tensor out = with_backend(
        backend, [&] { return F::scaled_dot_product_attention(q, k, v, mask).detach(); });
    const std::vector<float> values = out.to_vector<float>();
    for (int64_t j = 0; j < 2; ++j) {
      EXPECT_TRUE(std::isfinite(values[static_cast<size_t>(j)]));
      EXPECT_TRUE(std::isnan(values[static_cast<size_t>(2 + j)]));
      // Row 2 attends key 0 only: exactly v[0].
      EXPECT_FLOAT_EQ(values[static_cast<size_t>(4 + j)],
                      v.detach().view({5, 2})[0][j].item<float>());
    }
  }
  // No keys: zeros, as softmax over nothing times nothing.
  const Tensor none = F::scaled_dot_product_attention(q, zeros({1, 1, 0, 4}), zeros({1, 1, 0, 2}));
  EXPECT_EQ(none.shape(), (std::vector<int64_t>{1, 1, 3, 2}));
  EXPECT_EQ(none.abs().sum().item<float>(), 0.0f);
  // dropout_p = 1 drops everything.
  EXPECT_EQ(F::scaled_dot_product_attention(q, k, v, {}, 1.0).abs().sum().item<float>(), 0.0f);
}

TEST(Attention, HalfPrecisionWithinItsRounding) {
  const Tensor q = leaf({2, 2, 80, 16}, DType::Float32, 27),
               k = leaf({2, 2, 140, 16}, DType::Float32, 28),
               v = leaf({2, 2, 140, 16}, DType::Float32, 29);
  const Tensor exact = F::scaled_dot_product_attention(q, k, v, {}, 0, true).detach();
  for (DType d : {DType::BFloat16, DType::Float16}) {
    Tensor qh = q.detach().to(d).requires_grad_();
    const Tensor out =
        F::scaled_dot_product_attention(qh, k.detach().to(d), v.detach().to(d), {}, 0, true);
    EXPECT_EQ(out.dtype(), d);
    EXPECT_LE(max_abs_diff(out, exact), d == DType::BFloat16 ? 3e-2 : 4e-3) << dtype_name(d);
    out.sum().backward();
    ASSERT_TRUE(qh.grad().defined());
    EXPECT_EQ(qh.grad().dtype(), d);
  }
  // Under autocast the operands are lowered.
  {
    autocast guard("cpu", DType::BFloat16);
    EXPECT_EQ(F::scaled_dot_product_attention(q, k, v).dtype(), DType::BFloat16);
  }
}

// The fused op's memory grows with L, the composed version's with L²: at L = S = 2048
// the composed version holds [L, S] scores and probabilities (16 MiB each). The peak is
// the process's, so CTest runs this test alone in a process of its own (nn.attention_memory),
// fused first.
TEST(AttentionMemory, FusedGrowsWithTheContextNotItsSquare) {
  const Device cpu("cpu");
  const int64_t t = 2048;
  const Tensor q = leaf({1, 1, t, 32}, DType::Float32, 30),
               k = leaf({1, 1, t, 32}, DType::Float32, 31),
               v = leaf({1, 1, t, 32}, DType::Float32, 32);
  const uint64_t before = memory_stats(cpu).bytes_in_use;
  auto peak_after = [&](F::AttentionBackend backend) {
    with_backend(backend, [&] {
      Tensor out = F::scaled_dot_product_attention(q, k, v, {}, 0, true);
      out.sum().backward();
      return 0;
    });
    return memory_stats(cpu).peak_bytes_in_use - before;
  };
  const uint64_t fused = peak_after(F::AttentionBackend::Fused);
  const uint64_t composed = peak_after(F::AttentionBackend::Composed);
  const uint64_t square = static_cast<uint64_t>(t * t) * sizeof(float);
  EXPECT_LT(fused, square / 2) << "fused peak " << fused << " bytes above the inputs";
  EXPECT_GT(composed, square) << "composed peak " << composed << " bytes above the inputs";
}

TEST(Attention, BadInputIsAClearError) {
  const Tensor q = randn({2, 3, 4}), k = randn({2, 5, 4}), v = randn({2, 5, 6});
  auto expect_error = [](const std::function<void()>& f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error([&] { F::scaled_dot_product_attention(q, randn({2, 5, 3}), v); }, "last dim");
  expect_error([&] { F::scaled_dot_product_attention(q, k, randn({2, 4, 6})); }, "as many rows");
  expect_error([&] { F::scaled_dot_product_attention(q, k.to(DType::Float64), v); }, "one dtype");
  expect_error([&] { F::scaled_dot_product_attention(q, k, v, {}, 1.5); }, "dropout_p");
  expect_error(
      [&] {
        F::scaled_dot_product_attention(q, k, v, ones({3, 5}, TensorOptions(DType::Bool)), 0, true);
      },
      "is_causal");
  expect_error(
      [&] {
        F::scaled_dot_product_attention(q, k, v, ones({3, 4}, TensorOptions(DType::Bool)));
      },
      "does not broadcast");
  expect_error(
      [&] {
        F::scaled_dot_product_attention(q, k, v, ones({3, 5}, TensorOptions(DType::Int64)));
      },
      "bool or q's dtype");
  expect_error(
      [&] {
        F::scaled_dot_product_attention(randn({3, 4, 4}), k, v);
      },
      "cannot be broadcast");
  expect_error([&] { F::scaled_dot_product_attention(randn({4}), k, v); }, "[..., L, E]");
  expect_error(
      [&] {
        F::scaled_dot_product_attention(randn({2, 3, 0}), randn({2, 5, 0}), v);
      },
      "E = 0");
}

}  // namespace
