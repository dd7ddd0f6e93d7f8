// matmul: torch.matmul's rank rules, batch broadcasting by stride-0 views, one
// batched kernel call.

#include <atomic>
#include <cstdlib>
#include <string_view>

#include "autograd/record.h"
#include "dispatch/autocast.h"
#include "kiln/autograd.h"
#include "kiln/ops.h"
#include "ops/common.h"
#include "ops/complex.h"
#include "runtime/log.h"

namespace kiln {

namespace {

// The three names, as static strings so the attribute can point at them.
constexpr const char* kPrecisions[] = {"highest", "high", "medium"};

int parse_precision(std::string_view name) {
  for (int i = 0; i < 3; ++i)
    if (name == kPrecisions[i]) return i;
  return -1;
}

std::atomic<int>& precision_index() {
  static std::atomic<int> index{[] {
    const char* env = std::getenv("KILN_MATMUL_PRECISION");
    if (env == nullptr || *env == '\0') return 0;
    int i = parse_precision(env);
    if (i < 0) {
      detail::log(KILN_LOG_WARNING, "matmul",
                  detail::concat("KILN_MATMUL_PRECISION='", detail::shorten_for_message(env),
                                 "' is not highest, high or medium; using highest"));
      return 0;
    }
    return i;
  }()};
  return index;
}

}  // namespace

void set_matmul_precision(const std::string& precision) {
  int i = parse_precision(precision);
  KILN_CHECK(i >= 0, "set_matmul_precision: expected \"highest\", \"high\" or \"medium\", got \"",
             precision, "\"");
  precision_index().store(i, std::memory_order_relaxed);
}

std::string get_matmul_precision() {
  return kPrecisions[precision_index().load(std::memory_order_relaxed)];
}

const char* detail::matmul_precision() {
  return kPrecisions[precision_index().load(std::memory_order_relaxed)];
}

namespace {
Tensor matmul_forward(const Tensor& a, const Tensor& b) {
  detail::check_same_device("matmul", {&a, &b});
  KILN_CHECK(a.dim() >= 1 && b.dim() >= 1,
             "matmul: both operands need at least 1 dimension, got "
             "shapes ",
             a.shape(), " and ", b.shape());
  DType dtype = promote_types(a.dtype(), b.dtype());
  KILN_CHECK(is_floating(dtype), "matmul: expected floating-point operands, got ", a.dtype(),
             " and ", b.dtype(), " (convert with .to(kiln::float32))");
  // 1-D operands become matrices and lose that dimension again at the end.
  Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
  Tensor b2 = b.dim() == 1 ? b.unsqueeze(-1) : b;
  int64_t m = a2.size(-2), k = a2.size(-1), k2 = b2.size(-2), n = b2.size(-1);
  KILN_CHECK(k == k2, "matmul: shapes ", a.shape(), " and ", b.shape(), " cannot be multiplied (",
             k, " != ", k2, ")");
  IntArrayRef abatch(a2.shape().data(), a2.shape().size() - 2);
  IntArrayRef bbatch(b2.shape().data(), b2.shape().size() - 2);
  detail::SmallDims batch = detail::broadcast_shapes(abatch, bbatch, "matmul");

  detail::SmallDims ashape = batch, bshape = batch, oshape = batch;
  ashape.insert(ashape.end(), {m, k});
  bshape.insert(bshape.end(), {k, n});
  oshape.insert(oshape.end(), {m, n});
  Tensor ca = detail::expand_to(detail::cast(a2, dtype), ashape);
  Tensor cb = detail::expand_to(detail::cast(b2, dtype), bshape);
  Tensor out = detail::empty_on(a, oshape, dtype);
  detail::dispatch(detail::attrs::matmul{.precision = detail::matmul_precision()},
                   {ca.impl().get(), cb.impl().get()}, {out.impl().get()});

  if (a.dim() == 1 && b.dim() == 1) return out.view({});
  if (a.dim() == 1) return out.squeeze(-2);
  if (b.dim() == 1) return out.squeeze(-1);
  return out;
}
}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  if (detail::any_complex({&a, &b})) [[unlikely]]
    return detail::complex_matmul(a, b);
  if (detail::autocast_on) {
    Tensor ac = a, bc = b;
    if (detail::autocast_inputs(detail::OpId::matmul, {&ac, &bc})) return matmul(ac, bc);
  }
  namespace ag = detail::autograd_impl;
  bool record = ag::needs_grad({&a, &b});
  Tensor out;
  {
    NoGradGuard no_grad;  // the views inside are not recorded one by one
    out = matmul_forward(a, b);
  }
  if (!record) return out;
  bool ga = a.requires_grad(), gb = b.requires_grad();
  ag::record("MatmulBackward", out, {&a, &b}, {gb ? a : Tensor(), ga ? b : Tensor()},
             [ga, gb, sa = a.shape().vec(), sb = b.shape().vec()](const std::vector<Tensor>& s,
                                                                  const Tensor& g) {
               // Work with the matrix forms (1-D operands get their unit dim back),
               // let matmul broadcast the batch dims, then reduce to each shape.
               bool a1 = sa.size() == 1, b1 = sb.size() == 1;
               Tensor g2 = g;
               if (a1 && b1)
                 g2 = g.reshape({1, 1});
               else if (a1)
                 g2 = g.unsqueeze(-2);
               else if (b1)
                 g2 = g.unsqueeze(-1);
               std::vector<Tensor> grads(2);
               if (ga) {
                 Tensor b2 = b1 ? s[1].unsqueeze(-1) : s[1];
                 grads[0] = ag::sum_to(matmul_forward(g2, b2.transpose(-1, -2)),
                                       a1 ? std::vector<int64_t>{1, sa[0]} : sa)
                                .reshape(sa);
               }
               if (gb) {
                 Tensor a2 = a1 ? s[0].unsqueeze(0) : s[0];
                 grads[1] = ag::sum_to(matmul_forward(a2.transpose(-1, -2), g2),
                                       b1 ? std::vector<int64_t>{sb[0], 1} : sb)
                                .reshape(sb);
               }
               return grads;
             });
  return out;
}

Tensor Tensor::matmul(const Tensor& other) const { return kiln::matmul(*this, other); }

}  // namespace kiln
