// The Kiln calls behind each op of make_golden.py's table. Each entry mirrors the
// PyTorch reference of the same name there: same argument order, same defaults.
#include "reference/reference_ops.h"

#include "kiln/fft.h"

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <type_traits>

namespace kiln::test::reference {
namespace {

namespace F = kiln::nn::functional;
using json = nlohmann::json;
using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;

std::vector<int64_t> ints(const json& value) {
  return value.is_null() ? std::vector<int64_t>{} : value.get<std::vector<int64_t>>();
}

nn::Reduction reduction_of(const json& attrs) {
  const std::string r = attrs.at("reduction").get<std::string>();
  if (r == "sum") return nn::Reduction::Sum;
  if (r == "none") return nn::Reduction::None;
  return nn::Reduction::Mean;
}

std::optional<Scalar> bound(const json& value) {
  if (value.is_null()) return std::nullopt;
  return scalar_of(value);
}

Tensor optional_input(const Inputs& in, size_t i) { return i < in.size() ? in[i] : Tensor(); }

// An op with a tensor or a Python scalar as its other operand: attrs "scalar" and
// "side" ("lhs": the scalar comes first).
template <typename TT, typename TS, typename ST>
ReferenceOp scalar_binary(TT tensor_tensor, TS tensor_scalar, ST scalar_tensor) {
  return {[=](const Inputs& in, const json& attrs) -> Outputs {
    if (!attrs.contains("scalar")) return {tensor_tensor(in.at(0), in.at(1))};
    const Scalar s = scalar_of(attrs["scalar"]);
    if (attrs.value("side", "rhs") == "lhs") return {scalar_tensor(s, in.at(0))};
    return {tensor_scalar(in.at(0), s)};
  }};
}

ReferenceOp unary(Tensor (*fn)(const Tensor&), bool zero_sign = false) {
  return {[fn](const Inputs& in, const json&) -> Outputs { return {fn(in.at(0))}; }, zero_sign};
}

ReferenceOp tensors_only(Tensor (*fn)(const Tensor&, const Tensor&)) {
  return {[fn](const Inputs& in, const json&) -> Outputs { return {fn(in.at(0), in.at(1))}; }};
}

// sum, mean, prod, amax, amin, any, all: attrs "dims" (null: every dim) and "keepdim".
ReferenceOp reduction(Tensor (Tensor::*fn)(IntArrayRef, bool) const) {
  return {[fn](const Inputs& in, const json& attrs) -> Outputs {
    return {(in.at(0).*fn)(ints(attrs["dims"]), attrs["keepdim"].get<bool>())};
  }};
}

template <typename Fn>
ReferenceOp in_place(Fn fn) {
  return {[fn](const Inputs& in, const json& attrs) -> Outputs {
    Tensor self = in.at(0);
    if (attrs.contains("scalar"))
      fn(self, scalar_of(attrs["scalar"]));
    else
      fn(self, in.at(1));
    return {self};
  }};
}

std::map<std::string, ReferenceOp> make_table() {
  std::map<std::string, ReferenceOp> t;
  // -- pointwise -----------------------------------------------------------------------
  t["neg"] = unary(kiln::neg, true);
  t["abs"] = unary(kiln::abs, true);
  t["sign"] = unary(kiln::sign);
  t["relu"] = unary(kiln::relu);
  t["exp"] = unary(kiln::exp);
  t["log"] = unary(kiln::log);
  t["log1p"] = unary(kiln::log1p);
  t["sqrt"] = unary(kiln::sqrt);
  t["rsqrt"] = unary(kiln::rsqrt);
  t["sin"] = unary(kiln::sin);
  t["cos"] = unary(kiln::cos);
  t["tanh"] = unary(kiln::tanh);
  t["erf"] = unary(kiln::erf);
  t["sigmoid"] = unary(kiln::sigmoid);
  t["isnan"] = unary(kiln::isnan);
  t["isinf"] = unary(kiln::isinf);
  t["isfinite"] = unary(kiln::isfinite);
  t["logical_not"] = unary(kiln::logical_not);
  t["gelu"] = {[](const Inputs& in, const json& a) -> Outputs {
    return {kiln::gelu(in.at(0), a.at("approximate").get<std::string>())};
  }};
  auto tt = [](Tensor (*fn)(const Tensor&, const Tensor&)) { return fn; };
  t["add"] = scalar_binary(
      tt(kiln::add), [](const Tensor& a, Scalar s) { return a + s; },
      [](Scalar s, const Tensor& b) { return s + b; });
  t["sub"] = scalar_binary(
      tt(kiln::sub), [](const Tensor& a, Scalar s) { return a - s; },
      [](Scalar s, const Tensor& b) { return s - b; });
  t["mul"] = scalar_binary(
      tt(kiln::mul), [](const Tensor& a, Scalar s) { return a * s; },
      [](Scalar s, const Tensor& b) { return s * b; });
  t["div"] = scalar_binary(
      tt(kiln::div), [](const Tensor& a, Scalar s) { return a / s; },
      [](Scalar s, const Tensor& b) { return s / b; });
  t["pow"] = scalar_binary([](const Tensor& a, const Tensor& b) { return kiln::pow(a, b); },
                           [](const Tensor& a, Scalar s) { return kiln::pow(a, s); },
                           [](Scalar s, const Tensor& b) { return kiln::pow(s, b); });
  t["atan2"] = tensors_only([](const Tensor& a, const Tensor& b) { return kiln::atan2(a, b); });
  t["maximum"] = tensors_only(kiln::maximum);
  t["minimum"] = tensors_only(kiln::minimum);
  t["logical_and"] = tensors_only(kiln::logical_and);
  t["logical_or"] = tensors_only(kiln::logical_or);
  auto no_lhs = [](Scalar, const Tensor&) -> Tensor { throw Error("no scalar-first form"); };
  t["eq"] = scalar_binary(
      tt(kiln::eq), [](const Tensor& a, Scalar s) { return a == s; }, no_lhs);
  t["ne"] = scalar_binary(
      tt(kiln::ne), [](const Tensor& a, Scalar s) { return a != s; }, no_lhs);
  t["lt"] = scalar_binary(
      tt(kiln::lt), [](const Tensor& a, Scalar s) { return a < s; }, no_lhs);
  t["le"] = scalar_binary(
      tt(kiln::le), [](const Tensor& a, Scalar s) { return a <= s; }, no_lhs);
  t["gt"] = scalar_binary(
      tt(kiln::gt), [](const Tensor& a, Scalar s) { return a > s; }, no_lhs);
  t["ge"] = scalar_binary(
      tt(kiln::ge), [](const Tensor& a, Scalar s) { return a >= s; }, no_lhs);
  t["add_"] = in_place([](Tensor& x, const auto& o) { x.add_(o); });
  t["sub_"] = in_place([](Tensor& x, const auto& o) { x.sub_(o); });
  t["mul_"] = in_place([](Tensor& x, const auto& o) { x.mul_(o); });
  t["div_"] = in_place([](Tensor& x, const auto& o) { x.div_(o); });
  t["clamp"] = {[](const Inputs& in, const json& a) -> Outputs {
    return {in.at(0).clamp(bound(a["min"]), bound(a["max"]))};
  }};
  t["where"] = {[](const Inputs& in, const json& a) -> Outputs {
                  if (!a.contains("scalar")) return {kiln::where(in.at(0), in.at(1), in.at(2))};
                  const Scalar s = scalar_of(a["scalar"]);
                  if (a["side"] == "lhs") return {kiln::where(in.at(0), s, in.at(1))};
                  return {kiln::where(in.at(0), in.at(1), s)};
                },
                true};
  t["masked_fill"] = {[](const Inputs& in, const json& a) -> Outputs {
                        return {in.at(0).masked_fill(in.at(1), scalar_of(a["scalar"]))};
                      },
                      true};
  // -- reductions and scans --------------------------------------------------------------
  t["sum"] = reduction(&Tensor::sum);
  t["mean"] = reduction(&Tensor::mean);
  t["prod"] = reduction(&Tensor::prod);
  t["amax"] = reduction(&Tensor::amax);
  t["amin"] = reduction(&Tensor::amin);
  t["any"] = reduction(&Tensor::any);
  t["all"] = reduction(&Tensor::all);
  t["var"] = {[](const Inputs& in, const json& a) -> Outputs {
    return {
        in.at(0).var(ints(a["dims"]), a["correction"].get<int64_t>(), a["keepdim"].get<bool>())};
  }};
  t["std"] = {[](const Inputs& in, const json& a) -> Outputs {
    return {
        in.at(0).std(ints(a["dims"]), a["correction"].get<int64_t>(), a["keepdim"].get<bool>())};
  }};
  t["norm"] = {[](const Inputs& in, const json& a) -> Outputs {
    return {in.at(0).norm(number_of(a["p"]), ints(a["dims"]), a["keepdim"].get<bool>())};
  }};
  t["max"] = {[](const Inputs& in, const json&) -> Outputs { return {in.at(0).max()}; }};
  t["min"] = {[](const Inputs& in, const json&) -> Outputs { return {in.at(0).min()}; }};
  t["max_dim"] = {[](const Inputs& in, const json& a) -> Outputs {
    auto [v, i] = in.at(0).max(a["dim"].get<int64_t>(), a["keepdim"].get<bool>());
    return {v, i};
  }};
  t["min_dim"] = {[](const Inputs& in, const json& a) -> Outputs {
    auto [v, i] = in.at(0).min(a["dim"].get<int64_t>(), a["keepdim"].get<bool>());
    return {v, i};
  }};
  auto dim_of = [](const json& a) -> std::optional<int64_t> {
    if (a["dim"].is_null()) return std::nullopt;
    return a["dim"].get<int64_t>();
  };
  t["argmax"] = {[dim_of](const Inputs& in, const json& a) -> Outputs {
    return {in.at(0).argmax(dim_of(a), a["keepdim"].get<bool>())};
  }};
  t["argmin"] = {[dim_of](const Inputs& in, const json& a) -> Outputs {
    return {in.at(0).argmin(dim_of(a), a["keepdim"].get<bool>())};
  }};
  t["cumsum"] = {[](const Inputs& in, const json& a) -> Outputs {
    return {in.at(0).cumsum(a["dim"].get<int64_t>())};
  }};
  t["cumprod"] = {[](const Inputs& in, const json& a) -> Outputs {
    return {in.at(0).cumprod(a["dim"].get<int64_t>())};
  }};
  t["softmax"] = {[](const Inputs& in, const json& a) -> Outputs {
    return {F::softmax(in.at(0), a["dim"].get<int64_t>())};
  }};
  t["log_softmax"] = {[](const Inputs& in, const json& a) -> Outputs {
    return {F::log_softmax(in.at(0), a["dim"].get<int64_t>())};
  }};
  t["sort"] = {[](const Inputs& in, const json& a) -> Outputs {
                 auto [v, i] = in.at(0).sort(a["dim"].get<int64_t>(), a["descending"].get<bool>());
                 return {v, i};
               },
               true};
  t["topk"] = {[](const Inputs& in, const json& a) -> Outputs {
                 auto [v, i] = in.at(0).topk(a["k"].get<int64_t>(), a["dim"].get<int64_t>(),
                                             a["largest"].get<bool>());
                 return {v, i};
               },
               true};
  // -- indexing, joining, shape -----------------------------------------------------------
  t["matmul"] = tensors_only(kiln::matmul);
  t["index_select"] = {[](const Inputs& in, const json& a) -> Outputs {
                         return {kiln::index_select(in.at(0), a["dim"].get<int64_t>(), in.at(1))};
                       },
                       true};
  t["gather"] = {[](const Inputs& in, const json& a) -> Outputs {
                   return {kiln::gather(in.at(0), a["dim"].get<int64_t>(), in.at(1))};
                 },
                 true};
  t["scatter"] = {[](const Inputs& in, const json& a) -> Outputs {
                    return {kiln::scatter(in.at(0), a["dim"].get<int64_t>(), in.at(1), in.at(2))};
                  },
                  true};
  t["scatter_add"] = {
      [](const Inputs& in, const json& a) -> Outputs {
        return {kiln::scatter_add(in.at(0), a["dim"].get<int64_t>(), in.at(1), in.at(2))};
      },
      true};
  t["index_add"] = {
      [](const Inputs& in, const json& a) -> Outputs {
        return {kiln::index_add(in.at(0), a["dim"].get<int64_t>(), in.at(1), in.at(2))};
      },
      true};
  t["masked_scatter"] = {[](const Inputs& in, const json&) -> Outputs {
                           return {kiln::masked_scatter(in.at(0), in.at(1), in.at(2))};
                         },
                         true};
  t["index_put"] = {[](const Inputs& in, const json& a) -> Outputs {
    Tensor y = in.at(0).clone();
    std::vector<indexing::TensorIndex> indices(in.begin() + 1, in.end() - 1);
    y.index_put_(indices, in.back(), a["accumulate"].get<bool>());
    return {y};
  }};
  t["to"] = {[](const Inputs& in, const json& a) -> Outputs {
               return {in.at(0).to(dtype_from_name(a["dtype"].get<std::string>()))};
             },
             true};
  // One-dimensional FFTs: a complex input is a real [..., 2] tensor, a complex output
  // is compared as view_as_real (make_golden.py's r_fft).
  const auto fft_op =
      [](Tensor (*fn)(const Tensor&, std::optional<int64_t>, int64_t, const std::string&),
         bool complex_input) -> ReferenceOp {
    return {[=](const Inputs& in, const json& a) -> Outputs {
      const Tensor x = complex_input ? view_as_complex(in.at(0).contiguous()) : in.at(0);
      const std::optional<int64_t> n =
          a["n"].is_null() ? std::nullopt : std::optional<int64_t>(a["n"].get<int64_t>());
      Tensor y = fn(x, n, a["dim"].get<int64_t>(), a["norm"].get<std::string>());
      return {is_complex(y.dtype()) ? view_as_real(y) : y};
    }};
  };
  t["fft_fft"] = fft_op(kiln::fft::fft, false);
  t["fft_rfft"] = fft_op(kiln::fft::rfft, false);
  t["fft_ifft"] = fft_op(kiln::fft::ifft, true);
  t["fft_irfft"] = fft_op(kiln::fft::irfft, true);
  // Two- and n-dimensional FFTs (make_golden.py's r_fftn): attrs "s" and "dims" (null:
  // the default), "norm".
  const auto fftn_op = [](auto fn, bool complex_input, bool two) -> ReferenceOp {
    return {[=](const Inputs& in, const json& a) -> Outputs {
      const Tensor x = complex_input ? view_as_complex(in.at(0).contiguous()) : in.at(0);
      const fft::Sizes s =
          a["s"].is_null() ? fft::Sizes() : fft::Sizes(a["s"].get<std::vector<int64_t>>());
      fft::Dims dims;
      if (!a["dims"].is_null())
        dims = a["dims"].get<std::vector<int64_t>>();
      else if (two)
        dims = std::vector<int64_t>{-2, -1};
      Tensor y;
      if constexpr (std::is_invocable_v<decltype(fn), const Tensor&, fft::Sizes, fft::Dims,
                                        const std::string&>)
        y = fn(x, s, dims, a["norm"].get<std::string>());
      else
        y = fn(x, s, *dims, a["norm"].get<std::string>());
      return {is_complex(y.dtype()) ? view_as_real(y) : y};
    }};
  };
  t["fft_fft2"] = fftn_op(kiln::fft::fft2, false, true);
  t["fft_ifft2"] = fftn_op(kiln::fft::ifft2, true, true);
  t["fft_rfft2"] = fftn_op(kiln::fft::rfft2, false, true);
  t["fft_irfft2"] = fftn_op(kiln::fft::irfft2, true, true);
  t["fft_fftn"] = fftn_op(kiln::fft::fftn, false, false);
  t["fft_ifftn"] = fftn_op(kiln::fft::ifftn, true, false);
  t["fft_rfftn"] = fftn_op(kiln::fft::rfftn, false, false);
  t["fft_irfftn"] = fftn_op(kiln::fft::irfftn, true, false);
  // -- composite methods ---------------------------------------------------------------
  t["einsum"] = {[](const Inputs& in, const json& a) -> Outputs {
    return {kiln::einsum(a["equation"].get<std::string>(), in)};
  }};
  t["unique"] = {[](const Inputs& in, const json&) -> Outputs {
                   auto [values, inverse, counts] = kiln::unique(in.at(0));
                   return {values, inverse, counts};
                 },
                 true};
  t["dropout"] = {[](const Inputs& in, const json& a) -> Outputs {
    return {F::dropout(in.at(0), a["p"].get<double>(), a["training"].get<bool>())};
  }};
  t["argsort"] = {[](const Inputs& in, const json& a) -> Outputs {
    return {kiln::argsort(in.at(0), a["dim"].get<int64_t>(), a["descending"].get<bool>())};
  }};
  t["nonzero"] = {
      [](const Inputs& in, const json&) -> Outputs { return {kiln::nonzero(in.at(0))}; }};
  t["masked_select"] = {[](const Inputs& in, const json&) -> Outputs {
                          return {kiln::masked_select(in.at(0), in.at(1))};
                        },
                        true};
  t["repeat"] = {
      [](const Inputs& in, const json& a) -> Outputs { return {in.at(0).repeat(ints(a["reps"]))}; },
      true};
  t["diag"] = {[](const Inputs& in, const json& a) -> Outputs {
                 return {kiln::diag(in.at(0), a["diagonal"].get<int64_t>())};
               },
               true};
  t["split"] = {[](const Inputs& in, const json& a) -> Outputs {
                  const std::string kind = a["kind"].get<std::string>();
                  const int64_t dim = a["dim"].get<int64_t>();
                  if (kind == "chunk") return in.at(0).chunk(a["arg"].get<int64_t>(), dim);
                  if (kind == "sizes") return in.at(0).split(ints(a["arg"]), dim);
                  return in.at(0).split(a["arg"].get<int64_t>(), dim);
                },
                true};
  // -- creation: in[0] is a 0-d anchor naming the device; attrs "dtype" (null: inferred).
  const auto creation_options = [](const Tensor& anchor, const json& a) {
    TensorOptions o = TensorOptions().device(anchor.device());
    return a["dtype"].is_null() ? o : o.dtype(dtype_from_name(a["dtype"].get<std::string>()));
  };
  t["full"] = {
      [=](const Inputs& in, const json& a) -> Outputs {
        return {kiln::full(ints(a["shape"]), scalar_of(a["value"]), creation_options(in.at(0), a))};
      },
      true};
  t["arange"] = {[=](const Inputs& in, const json& a) -> Outputs {
    const TensorOptions o = creation_options(in.at(0), a);
    if (a["start"].is_null()) return {kiln::arange(scalar_of(a["end"]), o)};
    const Scalar step = a["step"].is_null() ? Scalar(int64_t{1}) : scalar_of(a["step"]);
    return {kiln::arange(scalar_of(a["start"]), scalar_of(a["end"]), step, o)};
  }};
  t["linspace"] = {[=](const Inputs& in, const json& a) -> Outputs {
    return {kiln::linspace(a["start"].get<double>(), a["end"].get<double>(),
                           a["steps"].get<int64_t>(), creation_options(in.at(0), a))};
  }};
  // -- optimizer steps: two steps on a copy of in[0] with the gradients in[1], in[2].
  const auto two_steps = [](const Inputs& in, auto make_optimizer) -> Outputs {
    Tensor p = in.at(0).clone().detach();
    p.requires_grad_();
    auto opt = make_optimizer(p);
    for (size_t k = 1; k < in.size(); ++k) {
      p.set_grad(in[k].clone());
      opt.step();
    }
    return {p.detach()};
  };
  t["sgd"] = {[=](const Inputs& in, const json& a) -> Outputs {
    return two_steps(in, [&](const Tensor& p) {
      return optim::SGD({p}, optim::SGDOptions(a["lr"].get<double>())
                                 .momentum(a["momentum"].get<double>())
                                 .dampening(a["dampening"].get<double>())
                                 .weight_decay(a["weight_decay"].get<double>())
                                 .nesterov(a["nesterov"].get<bool>()));
    });
  }};
  t["adam"] = {[=](const Inputs& in, const json& a) -> Outputs {
    const auto betas = std::make_pair(a["betas"][0].get<double>(), a["betas"][1].get<double>());
    if (a["decoupled"].get<bool>())
      return two_steps(in, [&](const Tensor& p) {
        return optim::AdamW({p}, optim::AdamWOptions(a["lr"].get<double>())
                                     .betas(betas)
                                     .eps(a["eps"].get<double>())
                                     .weight_decay(a["weight_decay"].get<double>()));
      });
    return two_steps(in, [&](const Tensor& p) {
      return optim::Adam({p}, optim::AdamOptions(a["lr"].get<double>())
                                  .betas(betas)
                                  .eps(a["eps"].get<double>())
                                  .weight_decay(a["weight_decay"].get<double>()));
    });
  }};
  t["cat"] = {[](const Inputs& in, const json& a) -> Outputs {
                return {kiln::cat(in, a["dim"].get<int64_t>())};
              },
              true};
  t["stack"] = {[](const Inputs& in, const json& a) -> Outputs {
                  return {kiln::stack(in, a["dim"].get<int64_t>())};
                },
                true};
  t["flip"] = {
      [](const Inputs& in, const json& a) -> Outputs { return {in.at(0).flip(ints(a["dims"]))}; },
      true};
  t["roll"] = {[](const Inputs& in, const json& a) -> Outputs {
                 return {in.at(0).roll(ints(a["shifts"]), ints(a["dims"]))};
               },
               true};
  t["tril"] = {[](const Inputs& in, const json& a) -> Outputs {
                 return {in.at(0).tril(a["diagonal"].get<int64_t>())};
               },
               true};
  t["triu"] = {[](const Inputs& in, const json& a) -> Outputs {
                 return {in.at(0).triu(a["diagonal"].get<int64_t>())};
               },
               true};
  // -- nn::functional ----------------------------------------------------------------------
  t["mse_loss"] = {[](const Inputs& in, const json& a) -> Outputs {
    return {F::mse_loss(in.at(0), in.at(1), reduction_of(a))};
  }};
  t["l1_loss"] = {[](const Inputs& in, const json& a) -> Outputs {
    return {F::l1_loss(in.at(0), in.at(1), reduction_of(a))};
  }};
  t["binary_cross_entropy_with_logits"] = {[](const Inputs& in, const json& a) -> Outputs {
    return {F::binary_cross_entropy_with_logits(in.at(0), in.at(1), reduction_of(a))};
  }};
  t["cross_entropy"] = {[](const Inputs& in, const json& a) -> Outputs {
    return {F::cross_entropy(in.at(0), in.at(1), reduction_of(a), -100,
                             a.value("label_smoothing", 0.0))};
  }};
  t["nll_loss"] = {[](const Inputs& in, const json& a) -> Outputs {
    return {F::nll_loss(in.at(0), in.at(1), reduction_of(a))};
  }};
  t["linear"] = {[](const Inputs& in, const json&) -> Outputs {
    return {F::linear(in.at(0), in.at(1), optional_input(in, 2))};
  }};
  t["layer_norm"] = {[](const Inputs& in, const json& a) -> Outputs {
    return {F::layer_norm(in.at(0), ints(a["normalized_shape"]), optional_input(in, 1),
                          optional_input(in, 2))};
  }};
  auto size2 = [](const json& v) {
    return nn::Size2(v.at(0).get<int64_t>(), v.at(1).get<int64_t>());
  };
  t["conv2d"] = {[size2](const Inputs& in, const json& a) -> Outputs {
    return {F::conv2d(in.at(0), in.at(1), optional_input(in, 2), size2(a["stride"]),
                      size2(a["padding"]), size2(a["dilation"]), a["groups"].get<int64_t>())};
  }};
  t["max_pool2d"] = {[size2](const Inputs& in, const json& a) -> Outputs {
    return {F::max_pool2d(in.at(0), size2(a["kernel"]), size2(a["stride"]), size2(a["padding"]), 1,
                          a["ceil_mode"].get<bool>())};
  }};
  t["avg_pool2d"] = {[size2](const Inputs& in, const json& a) -> Outputs {
    return {F::avg_pool2d(in.at(0), size2(a["kernel"]), size2(a["stride"]), size2(a["padding"]),
                          a["ceil_mode"].get<bool>(), a["count_include_pad"].get<bool>())};
  }};
  t["adaptive_avg_pool2d"] = {[size2](const Inputs& in, const json& a) -> Outputs {
    return {F::adaptive_avg_pool2d(in.at(0), size2(a["output_size"]))};
  }};
  t["pad"] = {[](const Inputs& in, const json& a) -> Outputs {
                return {F::pad(in.at(0), ints(a["padding"]), a["mode"].get<std::string>(),
                               a.value("value", 0.0))};
              },
              true};
  t["interpolate"] = {[](const Inputs& in, const json& a) -> Outputs {
    return {F::interpolate(in.at(0), ints(a["size"]), a["mode"].get<std::string>(),
                           a.value("align_corners", false))};
  }};
  t["embedding"] = {
      [](const Inputs& in, const json&) -> Outputs { return {F::embedding(in.at(0), in.at(1))}; },
      true};
  t["batch_norm"] = {[](const Inputs& in, const json& a) -> Outputs {
    if (a["training"].get<bool>())
      return {F::batch_norm(in.at(0), Tensor(), Tensor(), in.at(3), in.at(4), true)};
    return {F::batch_norm(in.at(0), in.at(1), in.at(2), in.at(3), in.at(4), false)};
  }};
  t["one_hot"] = {[](const Inputs& in, const json& a) -> Outputs {
    return {F::one_hot(in.at(0), a["num_classes"].get<int64_t>())};
  }};
  return t;
}

}  // namespace

double number_of(const json& value) {
  if (value.is_string()) {
    const std::string s = value.get<std::string>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    if (s == "-0") return -0.0;
    throw std::runtime_error("golden file: unknown number " + s);
  }
  return value.get<double>();
}

Scalar scalar_of(const json& scalar) {
  const std::string kind = scalar.at("kind").get<std::string>();
  const json& v = scalar.at("v");
  if (kind == "bool") return Scalar(v.get<bool>());
  if (kind == "int") return Scalar(v.get<int64_t>());
  return Scalar(number_of(v));
}

const ReferenceOp* find_reference_op(const std::string& name) {
  static const std::map<std::string, ReferenceOp> table = make_table();
  auto it = table.find(name);
  return it == table.end() ? nullptr : &it->second;
}

}  // namespace kiln::test::reference
