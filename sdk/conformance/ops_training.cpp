// Training ops: convolution, pooling, normalization, softmax, dropout, losses,
// attention and the fused optimizer updates. Backward kernels are reached through
// gradients: the suite of `kiln.conv2d_backward_input` runs convolutions with
// gradients and fails when the device's input gradient differs from the CPU's.
#include <kiln/amp.h>
#include <kiln/nn/functional.h>
#include <kiln/optim.h>

#include <cmath>
#include <functional>
#include <limits>

#include "op_suite.h"

namespace kiln::conformance {

namespace F = kiln::nn::functional;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Half precision is compared with the float64 reference within its own tolerance
// (kiln/conformance/tensors.h), scaled as each suite says.
const std::vector<DType> kTrainTypes = {DType::Float32, DType::Float64, DType::Float16,
                                        DType::BFloat16};

// Cases of one differentiable function of float operands `shapes` (the first is the
// main input). `backward`: only cases with gradients (a backward op's suite).
std::vector<Case> function_cases(const std::string& what, const std::vector<Shape>& shapes,
                                 const std::function<Outputs(const Operands&)>& f, bool backward,
                                 double tolerance_scale = 4,
                                 Layout first_layout = Layout::Contiguous, double lo = -2,
                                 double hi = 2) {
  std::vector<Case> cases;
  for (DType d : kTrainTypes) {
    for (bool with_grad : {false, true}) {
      if (backward && !with_grad) continue;
      Case c;
      for (size_t i = 0; i < shapes.size(); ++i) {
        Operand x = operand(shapes[i], d, i == 0 ? first_layout : Layout::Contiguous, lo, hi,
                            static_cast<uint32_t>(61 + i));
        x.requires_grad = with_grad;
        c.inputs.push_back(x);
      }
      c.label = std::string(dtype_name(d)) + " " + what + (with_grad ? " with gradients" : "");
      c.fn = [f](const Operands& in, const Device&) { return f(in); };
      c.grad = with_grad;
      c.tolerance_scale = tolerance_scale;
      cases.push_back(c);
    }
  }
  return cases;
}

std::vector<Case> conv_cases(bool backward) {
  std::vector<Case> cases;
  struct Plan {
    std::string what;
    Shape x, w;
    nn::Size2 stride, padding, dilation;
    int64_t groups;
  };
  const std::vector<Plan> plans = {
      {"[2,3,6,6] * [4,3,3,3] padding 1", {2, 3, 6, 6}, {4, 3, 3, 3}, 1, 1, 1, 1},
      {"[1,2,7,6] * [3,2,3,2] stride 2 dilation 2", {1, 2, 7, 6}, {3, 2, 3, 2}, 2, 0, 2, 1},
      {"[1,4,5,5] * [6,2,3,3] groups 2", {1, 4, 5, 5}, {6, 2, 3, 3}, 1, 1, 1, 2},
      {"[2,2,5,4] * [2,2,1,3] stride (2,1) padding (0,1)",
       {2, 2, 5, 4},
       {2, 2, 1, 3},
       {2, 1},
       {0, 1},
       1,
       1},
  };
  for (const Plan& p : plans) {
    auto f = [p](const Operands& in) {
      return Outputs{F::conv2d(in[0], in[1], in[2], p.stride, p.padding, p.dilation, p.groups)};
    };
    for (Case& c : function_cases(p.what, {p.x, p.w, {p.w[0]}}, f, backward)) cases.push_back(c);
  }
  Case gc;
  for (const Shape& s : {Shape{1, 2, 4, 4}, Shape{2, 2, 3, 3}, Shape{2}}) {
    Operand x = operand(s, DType::Float64, Layout::Contiguous, -1, 1, 71);
    x.requires_grad = true;
    gc.inputs.push_back(x);
  }
  gc.label = "float64 [1,2,4,4] * [2,2,3,3] gradcheck";
  gc.fn = [](const Operands& in, const Device&) {
    return Outputs{F::conv2d(in[0], in[1], in[2], 1, 1)};
  };
  gc.gradcheck = true;
  cases.push_back(gc);
  return cases;
}

std::vector<Case> pool_cases(const std::string& kind, bool backward) {
  using Pool = std::function<Tensor(const Tensor&)>;
  std::vector<std::pair<std::string, Pool>> plans;
  if (kind == "max") {
    plans = {
        {"kernel 3 stride 2 padding 1", [](const Tensor& x) { return F::max_pool2d(x, 3, 2, 1); }},
        {"kernel 2", [](const Tensor& x) { return F::max_pool2d(x, 2); }},
        {"kernel 3 stride 2 ceil_mode",
         [](const Tensor& x) { return F::max_pool2d(x, 3, 2, 0, 1, true); }},
        {"kernel 2 stride 1 dilation 2",
         [](const Tensor& x) { return F::max_pool2d(x, 2, 1, 0, 2); }}};
  } else if (kind == "avg") {
    plans = {
        {"kernel 3 stride 2 padding 1", [](const Tensor& x) { return F::avg_pool2d(x, 3, 2, 1); }},
        {"kernel 3 stride 2 padding 1 count_include_pad=false",
         [](const Tensor& x) { return F::avg_pool2d(x, 3, 2, 1, false, false); }},
        {"kernel 2 ceil_mode", [](const Tensor& x) { return F::avg_pool2d(x, 2, 2, 0, true); }}};
  } else {
    plans = {{"to (3,2)",
              [](const Tensor& x) {
                return F::adaptive_avg_pool2d(x, {3, 2});
              }},
             {"to (1,1)", [](const Tensor& x) { return F::adaptive_avg_pool2d(x, 1); }},
             {"to (7,5)", [](const Tensor& x) {
                return F::adaptive_avg_pool2d(x, {7, 5});
              }}};
  }
  std::vector<Case> cases;
  for (const auto& [what, pool] : plans) {
    auto f = [pool = pool](const Operands& in) { return Outputs{pool(in[0])}; };
    for (Case& c :
         function_cases("[2,3,7,5] " + what, {{2, 3, 7, 5}}, f, backward, 4, Layout::Transposed))
      cases.push_back(c);
  }
  return cases;
}

// Max pooling's rules: the first maximum wins a tie, a NaN wins over every number (of
// two NaNs the last, as PyTorch), and the gradient goes to the winner alone.
const Operand kPoolTies = operand_of({1, 1, 4, 4}, DType::Float32,
                                     {1, 3, 2, 0, 3, 0, 5, 5, kNaN, 1, -1, -2, 2, kNaN, -3, -4});

std::vector<Case> max_pool_known(bool backward) {
  if (!backward) {
    return {known("[1,1,4,4] kernel 2: ties and NaN", {kPoolTies},
                  [](const Operands& in) { return Outputs{F::max_pool2d(in[0], 2)}; },
                  {{3, 5, kNaN, -1}})};
  }
  return {known(
      "[1,1,4,4] kernel 2: the gradient goes to the first maximum or the last NaN", {kPoolTies},
      [](const Operands& in) {
        Tensor x = in[0].detach();
        x.requires_grad_();
        const Tensor seed = make_tensor({1, 2, 3, 4}, {1, 1, 2, 2}, DType::Float32, x.device());
        F::max_pool2d(x, 2).backward(seed);
        return Outputs{x.grad()};
      },
      {{0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 3, 0, 0}})};
}

// Average pooling's divisor over a padded border: 9 with count_include_pad, else the
// number of real elements in the window (a 5x5 plane, kernel 3, stride 2, padding 1).
std::vector<Case> avg_pool_known() {
  const std::vector<double> x = random_values(25, 5);
  std::vector<Case> cases;
  for (bool include : {true, false}) {
    std::vector<double> y;
    for (int oh = 0; oh < 3; ++oh) {
      for (int ow = 0; ow < 3; ++ow) {
        double sum = 0;
        int count = 0;
        for (int ih = 2 * oh - 1; ih <= 2 * oh + 1; ++ih) {
          for (int iw = 2 * ow - 1; iw <= 2 * ow + 1; ++iw) {
            if (ih < 0 || ih >= 5 || iw < 0 || iw >= 5) continue;
            sum += x[static_cast<size_t>(ih * 5 + iw)];
            ++count;
          }
        }
        y.push_back(sum / (include ? 9.0 : count));
      }
    }
    cases.push_back(
        known(std::string("float64 [1,1,5,5] kernel 3 stride 2 padding 1 count_include_pad=") +
                  (include ? "true" : "false"),
              {operand_of({1, 1, 5, 5}, DType::Float64, x)},
              [include](const Operands& in) {
                return Outputs{F::avg_pool2d(in[0], 3, 2, 1, false, include)};
              },
              {y}));
  }
  return cases;
}

std::vector<Case> batch_norm_cases(bool backward) {
  std::vector<Case> cases;
  for (const Shape& shape : {Shape{4, 3, 5}, Shape{2, 3, 4, 4}}) {
    for (DType d : kTrainTypes) {
      for (bool with_grad : {false, true}) {
        if (backward && !with_grad) continue;
        Case c;
        Operand x = operand(shape, d, Layout::Contiguous, -2, 2, 81);
        Operand weight = operand({3}, d, Layout::Contiguous, 0.5, 1.5, 82);
        Operand bias = operand({3}, d, Layout::Contiguous, -1, 1, 83);
        x.requires_grad = weight.requires_grad = bias.requires_grad = with_grad;
        c.inputs = {x, weight, bias, operand_of({3}, d, {0.1, -0.2, 0.3}),
                    operand_of({3}, d, {1, 2, 0.5})};
        c.label = describe(x) + " training" + (with_grad ? " with gradients" : "");
        // Outputs: y, and the running statistics it updates in place.
        c.fn = [](const Operands& in, const Device&) {
          Tensor y = F::batch_norm(in[0], in[3], in[4], in[1], in[2], true, 0.1, 1e-5);
          return Outputs{y, in[3], in[4]};
        };
        c.grad = with_grad;
        c.tolerance_scale = 8;
        cases.push_back(c);
      }
    }
  }
  return cases;
}

std::vector<Case> layer_norm_cases(bool backward) {
  std::vector<Case> cases;
  for (const Shape& normalized : {Shape{5}, Shape{4, 5}}) {
    auto f = [normalized](const Operands& in) {
      return Outputs{F::layer_norm(in[0], IntArrayRef(normalized), in[1], in[2], 1e-5)};
    };
    for (Case& c : function_cases("[3,4,5] over " + shape_text(normalized),
                                  {{3, 4, 5}, normalized, normalized}, f, backward, 8))
      cases.push_back(c);
  }
  return cases;
}

std::vector<Case> softmax_cases(bool log, bool backward) {
  std::vector<Case> cases;
  struct Plan {
    Shape shape;
    int64_t dim;
  };
  for (const Plan& p : {Plan{{3, 5}, -1}, Plan{{3, 5}, 0}, Plan{{2, 3, 4}, 1}}) {
    auto f = [p, log](const Operands& in) {
      return Outputs{log ? F::log_softmax(in[0], p.dim) : F::softmax(in[0], p.dim)};
    };
    // Values up to ±30: exp would overflow float32 without the max subtracted.
    for (Case& c : function_cases(shape_text(p.shape) + " dim " + std::to_string(p.dim), {p.shape},
                                  f, backward, 4, Layout::Transposed, -30, 30))
      cases.push_back(c);
  }
  return cases;
}

std::vector<Case> dropout_cases() {
  std::vector<Case> cases;
  for (DType d : kTrainTypes) {
    for (const Shape& shape : {Shape{1001}, Shape{3, 5}}) {
      Case c;
      c.inputs = {operand(shape, d)};
      c.label = describe(c.inputs[0]) + " p=0.3";
      c.fn = [](const Operands& in, const Device&) {
        manual_seed(2024);
        return Outputs{F::dropout(in[0], 0.3, true)};
      };
      c.reference = Reference::SameDtype;  // the mask is Philox: identical on every backend
      cases.push_back(c);
    }
  }
  return cases;
}

// Attention across tile edges (the CPU kernel's are 64 query and 128 key rows), with
// each kind of mask; dropout's decisions are Philox positions, the same everywhere.
std::vector<Case> attention_cases(bool backward) {
  std::vector<Case> cases;
  struct Plan {
    std::string what;
    std::vector<Shape> shapes;  // q, k, v[, mask]
    std::function<Outputs(const Operands&)> f;
  };
  const std::vector<Plan> plans = {
      {"[2,3,5,4] keys [2,3,7,4] values [2,3,7,6]",
       {{2, 3, 5, 4}, {2, 3, 7, 4}, {2, 3, 7, 6}},
       [](const Operands& in) {
         return Outputs{F::scaled_dot_product_attention(in[0], in[1], in[2])};
       }},
      {"[1,2,70,8] keys 140 causal",
       {{1, 2, 70, 8}, {1, 2, 140, 8}, {1, 2, 140, 8}},
       [](const Operands& in) {
         return Outputs{F::scaled_dot_product_attention(in[0], in[1], in[2], {}, 0, true)};
       }},
      {"[2,1,6,4] additive mask [6,9] scale 0.3",
       {{2, 1, 6, 4}, {2, 1, 9, 4}, {2, 1, 9, 3}, {6, 9}},
       [](const Operands& in) {
         return Outputs{F::scaled_dot_product_attention(in[0], in[1], in[2], in[3], 0, false, 0.3)};
       }},
      {"[3,5,4] keys [1,7,4] broadcast, boolean mask [3,1,7]",
       {{3, 5, 4}, {1, 7, 4}, {1, 7, 2}},
       [](const Operands& in) {
         // Key padding: batch i attends its first 7 − 2i keys.
         const Tensor keys = arange(7, TensorOptions(DType::Int64).device(in[0].device()));
         const Tensor lengths = make_tensor({7, 5, 3}, {3, 1, 1}, DType::Int64, in[0].device());
         return Outputs{
             F::scaled_dot_product_attention(in[0], in[1], in[2], keys.view({1, 1, 7}) < lengths)};
       }},
  };
  for (const Plan& p : plans)
    for (Case& c : function_cases(p.what, p.shapes, p.f, backward, 8)) cases.push_back(c);
  for (DType d : kTrainTypes) {
    Case c;
    for (const Shape& shape : {Shape{2, 2, 9, 4}, Shape{2, 2, 9, 4}, Shape{2, 2, 9, 4}}) {
      Operand x = operand(shape, d, Layout::Contiguous, -2, 2, static_cast<uint32_t>(cases.size()));
      x.requires_grad = true;
      c.inputs.push_back(x);
    }
    c.label = std::string(dtype_name(d)) + " [2,2,9,4] causal, dropout 0.25 with gradients";
    c.fn = [](const Operands& in, const Device&) {
      manual_seed(77);
      return Outputs{F::scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.25, true)};
    };
    c.reference = Reference::SameDtype;  // the decisions are Philox: the same everywhere
    c.grad = true;
    c.tolerance_scale = 8;
    cases.push_back(c);
  }
  Case gc;
  for (const Shape& s : {Shape{1, 2, 5, 3}, Shape{1, 2, 6, 3}, Shape{1, 2, 6, 2}}) {
    Operand x = operand(s, DType::Float64, Layout::Contiguous, -1, 1, 73);
    x.requires_grad = true;
    gc.inputs.push_back(x);
  }
  gc.label = "float64 [1,2,5,3] keys 6 gradcheck";
  gc.fn = [](const Operands& in, const Device&) {
    return Outputs{F::scaled_dot_product_attention(in[0], in[1], in[2])};
  };
  gc.gradcheck = true;
  cases.push_back(gc);
  return cases;
}

std::vector<Case> nll_cases(bool backward) {
  std::vector<Case> cases;
  for (DType d : kTrainTypes) {
    for (auto reduction : {nn::Reduction::None, nn::Reduction::Mean}) {
      for (bool with_grad : {false, true}) {
        if (backward && !with_grad) continue;
        Case c;
        Operand logp = operand({4, 5}, d, Layout::Contiguous, -4, -0.1, 91);
        logp.requires_grad = with_grad;
        c.inputs = {logp, operand_of({4}, DType::Int64, {1, -100, 4, 0})};
        c.label = describe(logp) + (reduction == nn::Reduction::None ? " no reduction" : " mean") +
                  " ignore_index -100" + (with_grad ? " with gradients" : "");
        c.fn = [reduction](const Operands& in, const Device&) {
          return Outputs{F::nll_loss(in[0], in[1], reduction, -100)};
        };
        c.grad = with_grad;
        cases.push_back(c);
      }
    }
  }
  return cases;
}

// Three steps of an optimizer on one parameter with a fixed gradient.
std::vector<Case> optimizer_cases(bool adam) {
  using Make = std::function<std::unique_ptr<optim::Optimizer>(const Tensor&)>;
  std::vector<std::pair<std::string, Make>> plans;
  if (adam) {
    plans = {
        {"Adam lr 0.01",
         [](const Tensor& p) {
           return std::make_unique<optim::Adam>(std::vector<Tensor>{p}, optim::AdamOptions(0.01));
         }},
        {"Adam weight decay 0.1",
         [](const Tensor& p) {
           return std::make_unique<optim::Adam>(std::vector<Tensor>{p},
                                                optim::AdamOptions(0.01).weight_decay(0.1));
         }},
        {"AdamW", [](const Tensor& p) {
           return std::make_unique<optim::AdamW>(std::vector<Tensor>{p}, optim::AdamWOptions(0.01));
         }}};
  } else {
    plans = {{"SGD lr 0.1",
              [](const Tensor& p) {
                return std::make_unique<optim::SGD>(std::vector<Tensor>{p}, optim::SGDOptions(0.1));
              }},
             {"SGD momentum 0.9 dampening 0.1 weight decay 0.01",
              [](const Tensor& p) {
                return std::make_unique<optim::SGD>(
                    std::vector<Tensor>{p},
                    optim::SGDOptions(0.1).momentum(0.9).dampening(0.1).weight_decay(0.01));
              }},
             {"SGD nesterov", [](const Tensor& p) {
                return std::make_unique<optim::SGD>(
                    std::vector<Tensor>{p}, optim::SGDOptions(0.1).momentum(0.9).nesterov(true));
              }}};
  }
  std::vector<Case> cases;
  for (DType d : kTrainTypes) {
    for (const auto& [what, make] : plans) {
      Case c;
      c.inputs = {operand({3, 4}, d, Layout::Contiguous, -1, 1, 95),
                  operand({3, 4}, d, Layout::Contiguous, -1, 1, 96)};
      c.label = std::string(dtype_name(d)) + " [3,4] " + what + ", 3 steps";
      c.fn = [make = make](const Operands& in, const Device&) {
        Tensor p = in[0];
        p.requires_grad_();
        auto optimizer = make(p);
        for (int step = 0; step < 3; ++step) {
          p.set_grad(in[1]);
          optimizer->step();
        }
        return Outputs{p.detach()};
      };
      c.tolerance_scale = 10;  // Adam divides by sqrt(v) + eps, which amplifies rounding
      cases.push_back(c);
    }
  }
  // Known answers in float64: torch.optim's formulas written out here, three steps.
  const std::vector<double> p0 = {1.0, -2.0, 0.5, 3.0}, g = {0.1, -0.2, 0.3, 0.0};
  const Operand param = operand_of({4}, DType::Float64, p0),
                grad = operand_of({4}, DType::Float64, g);
  for (size_t k = 0; k < plans.size(); ++k) {
    std::vector<double> p = p0, buf(4, 0), m(4, 0), v(4, 0);
    for (int step = 1; step <= 3; ++step) {
      for (size_t i = 0; i < 4; ++i) {
        if (adam) {
          const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8;
          const double wd = k == 0 ? 0.0 : (k == 1 ? 0.1 : 0.01);
          double gi = g[i];
          if (k == 2) {
            p[i] *= 1 - lr * wd;  // AdamW: decoupled decay
          } else {
            gi += wd * p[i];
          }
          m[i] = b1 * m[i] + (1 - b1) * gi;
          v[i] = b2 * v[i] + (1 - b2) * gi * gi;
          const double m_hat = m[i] / (1 - std::pow(b1, step));
          const double v_hat = v[i] / (1 - std::pow(b2, step));
          p[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
        } else {
          const double lr = 0.1, momentum = k == 0 ? 0.0 : 0.9, dampening = k == 1 ? 0.1 : 0.0;
          const double wd = k == 1 ? 0.01 : 0.0;
          double d = g[i] + wd * p[i];
          if (momentum != 0) {
            buf[i] = step == 1 ? d : buf[i] * momentum + (1 - dampening) * d;
            d = k == 2 ? d + momentum * buf[i] : buf[i];  // nesterov
          }
          p[i] -= lr * d;
        }
      }
    }
    Case c = known("float64 [4] " + plans[k].first + ", 3 steps", {param, grad},
                   [make = plans[k].second](const Operands& in) {
                     Tensor x = in[0];
                     x.requires_grad_();
                     auto optimizer = make(x);
                     for (int step = 0; step < 3; ++step) {
                       x.set_grad(in[1]);
                       optimizer->step();
                     }
                     return Outputs{x.detach()};
                   },
                   {p});
    c.tolerance_scale = 10;  // the bias corrections are grouped differently here
    cases.push_back(c);
  }
  return cases;
}

// GradScaler::unscale_ over `grads.size()` parameters (more than 7 take two calls):
// outputs the unscaled gradients and whether step() then ran (1) or was skipped (0).
Outputs unscale_and_step(const Operands& grads) {
  std::vector<Tensor> params;
  for (const Tensor& g : grads) params.push_back(zeros_like(g).requires_grad_());
  optim::SGD sgd(params, optim::SGDOptions(0.0));
  for (size_t i = 0; i < params.size(); ++i) params[i].set_grad(grads[i].clone());
  amp::GradScaler scaler(amp::GradScalerOptions{.init_scale = 8.0});
  scaler.unscale_(sgd);
  const bool ran = scaler.step(sgd);
  Outputs out;
  for (const Tensor& p : params) out.push_back(p.grad());
  out.push_back(scalar_tensor(ran ? 1.0 : 0.0));
  return out;
}

std::vector<Case> unscale_cases() {
  std::vector<Case> cases;
  const double inf = std::numeric_limits<double>::infinity();
  // GradScaler refuses float16 gradients (PyTorch's rule), so they never reach the op.
  for (DType d : {DType::Float32, DType::Float64, DType::BFloat16}) {
    for (size_t count : {1, 3, 9}) {
      Case c;
      for (size_t i = 0; i < count; ++i)
        c.inputs.push_back(operand({3, static_cast<int64_t>(i + 1)}, d, Layout::Contiguous, -64, 64,
                                   static_cast<uint32_t>(101 + i)));
      c.label = std::to_string(count) + " " + std::string(dtype_name(d)) + " gradients";
      c.fn = [](const Operands& in, const Device&) { return unscale_and_step(in); };
      cases.push_back(c);
    }
    for (double bad : {inf, -inf, kNaN}) {
      Case c;
      c.inputs = {operand({2, 2}, d, Layout::Contiguous, -8, 8, 111),
                  operand_of({3}, d, {1, bad, 2})};
      c.label = std::string(dtype_name(d)) + " gradients holding " +
                (std::isnan(bad) ? "NaN"
                 : bad > 0       ? "inf"
                                 : "-inf") +
                ": the step is skipped";
      c.fn = [](const Operands& in, const Device&) { return unscale_and_step(in); };
      cases.push_back(c);
    }
  }
  cases.push_back(known("float32 [3] scale 8", {operand_of({3}, DType::Float32, {8, -16, 4})},
                        unscale_and_step, {{1, -2, 0.5}, {1}}));
  return cases;
}

}  // namespace

void add_training_suites(std::vector<OpSuite>& suites) {
  suites.push_back({"kiln.conv2d", [] { return conv_cases(false); }});
  suites.push_back({"kiln.conv2d_backward_input", [] { return conv_cases(true); }});
  suites.push_back({"kiln.conv2d_backward_weight", [] { return conv_cases(true); }});
  suites.push_back({"kiln.max_pool2d", [] {
                      auto cases = pool_cases("max", false);
                      for (Case& c : max_pool_known(false)) cases.push_back(std::move(c));
                      return cases;
                    }});
  suites.push_back({"kiln.max_pool2d_backward", [] {
                      auto cases = pool_cases("max", true);
                      for (Case& c : max_pool_known(true)) cases.push_back(std::move(c));
                      return cases;
                    }});
  suites.push_back({"kiln.avg_pool2d", [] {
                      auto cases = pool_cases("avg", false);
                      for (Case& c : avg_pool_known()) cases.push_back(std::move(c));
                      return cases;
                    }});
  suites.push_back({"kiln.avg_pool2d_backward", [] { return pool_cases("avg", true); }});
  suites.push_back({"kiln.adaptive_avg_pool2d", [] { return pool_cases("adaptive", false); }});
  suites.push_back(
      {"kiln.adaptive_avg_pool2d_backward", [] { return pool_cases("adaptive", true); }});
  suites.push_back({"kiln.batch_norm", [] { return batch_norm_cases(false); }});
  suites.push_back({"kiln.batch_norm_backward", [] { return batch_norm_cases(true); }});
  suites.push_back({"kiln.layer_norm", [] { return layer_norm_cases(false); }});
  suites.push_back({"kiln.layer_norm_backward", [] { return layer_norm_cases(true); }});
  suites.push_back({"kiln.softmax", [] { return softmax_cases(false, false); }});
  suites.push_back({"kiln.log_softmax", [] { return softmax_cases(true, false); }});
  suites.push_back({"kiln.softmax_backward", [] { return softmax_cases(false, true); }});
  suites.push_back({"kiln.log_softmax_backward", [] { return softmax_cases(true, true); }});
  suites.push_back({"kiln.dropout", dropout_cases});
  suites.push_back({"kiln.nll_loss", [] { return nll_cases(false); }});
  suites.push_back({"kiln.nll_loss_backward", [] { return nll_cases(true); }});
  suites.push_back({"kiln.sgd_step", [] { return optimizer_cases(false); }});
  suites.push_back({"kiln.adam_step", [] { return optimizer_cases(true); }});
  suites.push_back({"kiln.non_finite_check_and_unscale", unscale_cases});
  suites.push_back({"kiln.scaled_dot_product_attention", [] { return attention_cases(false); }});
  suites.push_back(
      {"kiln.scaled_dot_product_attention_backward", [] { return attention_cases(true); }});
}

}  // namespace kiln::conformance
