// kiln.nll_loss and kiln.nll_loss_backward: logp [N, C], target int64 [N].
#include <algorithm>

#include "elementwise.h"
#include "registry.h"

namespace kiln::cpu {

namespace {

// Throws INVALID_ARGUMENT for the first target outside [0, classes) that is not
// ignore_index.
void check_targets(const int64_t* target, int64_t n, int64_t classes, int64_t ignore_index) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = target[i];
    KILN_SDK_CHECK_ARG(t == ignore_index || (t >= 0 && t < classes), "target ", t, " at position ",
                       i, " is out of range for ", classes, " classes");
  }
}

void nll_loss_impl(const OpArgs& args) {
  args.expect_counts(2, 1);
  const int64_t ignore_index = sdk::attrs::nll_loss::read(args).ignore_index;
  const TensorView logp = args.input(0), target = args.input(1), loss = args.output(0);
  KILN_SDK_CHECK_ARG(logp.ndim == 2, "logp must be [N, C], got ", shape_string(logp));
  const int64_t n = logp.shape[0], classes = logp.shape[1];
  expect_shape(target, {n}, "target");
  expect_shape(loss, {n}, "loss");
  expect_dtype(target, KILN_DTYPE_INT64, "target");
  expect_dtype(loss, logp.dtype, "loss");
  for (const TensorView* t : {&logp, &target, &loss}) expect_contiguous(*t, "operand");
  const int64_t* tgt = target.ptr<const int64_t>();
  check_targets(tgt, n, classes, ignore_index);
  if (!visit_dtype<FloatTypes>(logp.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* lp = logp.ptr<const T>();
        T* out = loss.ptr<T>();
        for (int64_t i = 0; i < n; ++i) {
          out[i] = tgt[i] == ignore_index ? T(0.0f) : store<T>(-load(lp[i * classes + tgt[i]]));
        }
      })) {
    unsupported_dtype(logp.dtype);
  }
}

void nll_loss_backward_impl(const OpArgs& args) {
  args.expect_counts(2, 1);
  const int64_t ignore_index = sdk::attrs::nll_loss_backward::read(args).ignore_index;
  const TensorView grad_loss = args.input(0), target = args.input(1), grad_logp = args.output(0);
  KILN_SDK_CHECK_ARG(grad_logp.ndim == 2, "grad_logp must be [N, C], got ",
                     shape_string(grad_logp));
  const int64_t n = grad_logp.shape[0], classes = grad_logp.shape[1];
  expect_shape(grad_loss, {n}, "grad_loss");
  expect_shape(target, {n}, "target");
  expect_dtype(target, KILN_DTYPE_INT64, "target");
  expect_dtype(grad_loss, grad_logp.dtype, "grad_loss");
  for (const TensorView* t : {&grad_logp, &target, &grad_loss}) expect_contiguous(*t, "operand");
  const int64_t* tgt = target.ptr<const int64_t>();
  check_targets(tgt, n, classes, ignore_index);
  if (!visit_dtype<FloatTypes>(grad_logp.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* g = grad_loss.ptr<const T>();
        T* out = grad_logp.ptr<T>();
        std::fill(out, out + n * classes, T(0.0f));
        for (int64_t i = 0; i < n; ++i) {
          if (tgt[i] != ignore_index) out[i * classes + tgt[i]] = store<T>(-load(g[i]));
        }
      })) {
    unsupported_dtype(grad_logp.dtype);
  }
}

int32_t supports_float_first(void*, const kiln_op_args* args) {
  const kiln_dtype d = input_dtype(args, 0);
  return d == KILN_DTYPE_FLOAT32 || d == KILN_DTYPE_FLOAT64 || d == KILN_DTYPE_FLOAT16 ||
         d == KILN_DTYPE_BFLOAT16;
}

}  // namespace

void add_loss_kernels(KernelList& list) {
  list.push_back(
      catalogue_entry<op::nll_loss>(&run_kernel<nll_loss_impl>, &supports_float_first, 0));
  list.push_back(catalogue_entry<op::nll_loss_backward>(&run_kernel<nll_loss_backward_impl>,
                                                        &supports_float_first, 0));
}

}  // namespace kiln::cpu
