// kiln.nll_loss and kiln.nll_loss_backward: logp [N, C], target int64 [N].
//
// Targets live in device memory, so an out-of-range one (other than ignore_index) is
// only seen by the kernel: it writes 0 for that sample (and never reads outside
// logp) and raises kDeviceErrorTargetOutOfRange (target, classes, position) through
// the launch's error flag, which the runtime turns into INVALID_ARGUMENT naming the
// op and the target at the next synchronization.
#include "dnn_util.cuh"
#include "kernels/registry.h"

namespace kiln::cuda {

namespace {

using namespace dnn;

template <class T>
__global__ void nll_loss_kernel(const T* __restrict__ logp, const int64_t* __restrict__ target,
                                T* __restrict__ loss, int64_t n, int64_t classes,
                                int64_t ignore_index, ErrorSink errors) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t t = target[i];
    if (t == ignore_index) {
      loss[i] = store<T>(0.0f);
    } else if (t < 0 || t >= classes) {
      errors.raise(kDeviceErrorTargetOutOfRange, t, classes, i);
      loss[i] = store<T>(0.0f);
    } else {
      loss[i] = store<T>(-load(logp[i * classes + t]));
    }
  }
}

// One thread per grad_logp element: −grad_loss[i] at the target, 0 elsewhere.
template <class T>
__global__ void nll_loss_backward_kernel(const T* __restrict__ grad_loss,
                                         const int64_t* __restrict__ target,
                                         T* __restrict__ grad_logp, int64_t n, int64_t classes,
                                         int64_t ignore_index, ErrorSink errors) {
  const int64_t total = n * classes;
  for (int64_t k = first_index(); k < total; k += grid_stride()) {
    const int64_t i = k / classes, c = k - i * classes;
    const int64_t t = target[i];
    const bool valid = t == ignore_index || (t >= 0 && t < classes);
    if (!valid && c == 0) errors.raise(kDeviceErrorTargetOutOfRange, t, classes, i);
    grad_logp[k] =
        (valid && t == c && t != ignore_index) ? store<T>(-load(grad_loss[i])) : store<T>(0.0f);
  }
}

void nll_loss_impl(const OpArgs& args, const Launch& l) {
  args.expect_counts(2, 1);
  const int64_t ignore_index = sdk::attrs::nll_loss::read(args).ignore_index;
  const TensorView logp = args.input(0), target = args.input(1), loss = args.output(0);
  KILN_SDK_CHECK_ARG(logp.ndim == 2, "logp must be [N, C], got ", sdk::shape_string(logp));
  const int64_t n = logp.shape[0], classes = logp.shape[1];
  sdk::expect_shape(target, {n}, "target");
  sdk::expect_shape(loss, {n}, "loss");
  sdk::expect_dtype(target, KILN_DTYPE_INT64, "target");
  sdk::expect_dtype(loss, logp.dtype, "loss");
  for (const TensorView* t : {&logp, &target, &loss}) sdk::expect_contiguous(*t, "operand");
  if (n == 0) return;
  if (!visit_float(logp.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        nll_loss_kernel<T><<<grid_for(n, l), kThreads, 0, l.stream()>>>(
            logp.ptr<const T>(), target.ptr<const int64_t>(), loss.ptr<T>(), n, classes,
            ignore_index, error_sink(l));
      })) {
    sdk::unsupported_dtype(logp.dtype);
  }
  check_launch("nll_loss");
}

void nll_loss_backward_impl(const OpArgs& args, const Launch& l) {
  args.expect_counts(2, 1);
  const int64_t ignore_index = sdk::attrs::nll_loss_backward::read(args).ignore_index;
  const TensorView grad_loss = args.input(0), target = args.input(1), grad_logp = args.output(0);
  KILN_SDK_CHECK_ARG(grad_logp.ndim == 2, "grad_logp must be [N, C], got ",
                     sdk::shape_string(grad_logp));
  const int64_t n = grad_logp.shape[0], classes = grad_logp.shape[1];
  sdk::expect_shape(grad_loss, {n}, "grad_loss");
  sdk::expect_shape(target, {n}, "target");
  sdk::expect_dtype(target, KILN_DTYPE_INT64, "target");
  sdk::expect_dtype(grad_loss, grad_logp.dtype, "grad_loss");
  for (const TensorView* t : {&grad_logp, &target, &grad_loss})
    sdk::expect_contiguous(*t, "operand");
  if (n == 0 || classes == 0) return;
  if (!visit_float(grad_logp.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        nll_loss_backward_kernel<T><<<grid_for(n * classes, l), kThreads, 0, l.stream()>>>(
            grad_loss.ptr<const T>(), target.ptr<const int64_t>(), grad_logp.ptr<T>(), n, classes,
            ignore_index, error_sink(l));
      })) {
    sdk::unsupported_dtype(grad_logp.dtype);
  }
  check_launch("nll_loss_backward");
}

}  // namespace

void add_loss_kernels(KernelList& list) {
  list.push_back(catalogue_entry<op::nll_loss>(&nll_loss_impl, &supports_float_input0, 0));
  list.push_back(
      catalogue_entry<op::nll_loss_backward>(&nll_loss_backward_impl, &supports_float_input0, 0));
}

}  // namespace kiln::cuda
