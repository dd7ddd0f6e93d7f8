// Elementwise arithmetic: the catalogue's binary functor ops, KILN_BINARY_POINTWISE_OPS
// (kiln/sdk/pointwise_ops.h, generated from the entries of api/ops.json that name a
// functor). What each element computes, NaN and wrap-around rules included, is the
// functor's (kiln/sdk/functors.h).
#include <string_view>

#include "kernels/elementwise.cuh"
#include "kernels/registry.h"
#include "kiln/sdk/functors.h"
#include "kiln/sdk/pointwise_ops.h"
#include "staged.h"

namespace kiln::cuda {

namespace {

// y = Op(a, b) for the dtypes of the KILN_DTYPES_* mask `Dtypes`.
template <class Op, uint32_t Dtypes>
void arithmetic_impl(const OpArgs& args, const Launch& launch) {
  args.expect_counts(2, 1);
  const TensorView a = args.input(0), b = args.input(1), y = args.output(0);
  expect_same_shape(a, y, "a");
  expect_same_shape(b, y, "b");
  expect_dtype(b, a.dtype, "b");
  expect_dtype(y, a.dtype, "y");
  const TensorView* ops[3] = {&y, &a, &b};
  if (!sdk::visit_dtype_in<Dtypes>(a.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        run_elementwise<T, T, T>(launch, ops, Op{});
      })) {
    unsupported_dtype(a.dtype);
  }
}

// Integer pow (exact, by squaring: sdk::integer_pow) is staged (staged.h): declined, so
// it takes the counted CPU fallback, unless KILN_CUDA_STAGED turns it on.
int32_t supports_pow(void* context, const kiln_op_args* args) noexcept {
  if (!sdk::supports_catalogue_dtypes<op::pow>(context, args)) return 0;
  if (sdk::is_float_dtype(sdk::input_dtype(args, 0))) return 1;
  static const bool integer_on = staged_on(kStagedIntegerPow);
  return integer_on ? 1 : 0;
}

}  // namespace

void add_binary_kernels(KernelList& list) {
  // The ops, functors, dtypes and layouts are the catalogue's (api/ops.json).
#define KILN_CUDA_BINARY(name, Functor, dtypes) \
  list.push_back(catalogue_kernel<op::name>(&arithmetic_impl<sdk::Functor, dtypes>));
  KILN_BINARY_POINTWISE_OPS(KILN_CUDA_BINARY)
#undef KILN_CUDA_BINARY
  for (KernelEntry& entry : list)
    if (std::string_view(entry.name) == op::pow.name) entry.supports = &supports_pow;
}

}  // namespace kiln::cuda
