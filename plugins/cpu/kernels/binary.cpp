// Elementwise arithmetic: the catalogue's binary functor ops, KILN_BINARY_POINTWISE_OPS
// (kiln/sdk/pointwise_ops.h, generated from the entries of api/ops.json that name a
// functor).
#include <cmath>

#include "binary_common.h"
#include "kiln/sdk/functors.h"
#include "kiln/sdk/pointwise_ops.h"
#include "registry.h"

namespace kiln::cpu {

namespace {

// y = Op(a, b) for the dtypes of the KILN_DTYPES_* mask `Dtypes`.
template <class Op, uint32_t Dtypes>
void arithmetic_impl(const OpArgs& args) {
  const BinaryOperands o(args);
  expect_dtype(o.y, o.a.dtype, "y");
  if (!sdk::visit_dtype_in<Dtypes>(o.a.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        run_loop(o.plan, BinaryLoop<T, T, Op>{});
      })) {
    unsupported_dtype(o.a.dtype);
  }
}

}  // namespace

void add_binary_kernels(KernelList& list) {
  // The ops, functors, dtypes and layouts are the catalogue's (api/ops.json).
#define KILN_CPU_BINARY(name, Functor, dtypes) \
  list.push_back(catalogue_kernel<op::name>(&run_kernel<arithmetic_impl<sdk::Functor, dtypes>>));
  KILN_BINARY_POINTWISE_OPS(KILN_CPU_BINARY)
#undef KILN_CPU_BINARY
}

}  // namespace kiln::cpu
