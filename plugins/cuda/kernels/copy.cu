// kiln.copy (with dtype conversion) and kiln.fill.
#include <cstring>

#include "kernels/elementwise.cuh"
#include "kernels/registry.h"

namespace kiln::cuda {

namespace {

// The conversion itself is run_elementwise's final convert<Out>(load(x)).
struct Identity {
  template <class T>
  __device__ T operator()(T x) const {
    return x;
  }
};

template <class Bits>
struct Constant {
  Bits value;
  __device__ Bits operator()() const { return value; }
};

void copy_impl(const OpArgs& args, const Launch& launch) {
  args.expect_counts(1, 1);
  const TensorView x = args.input(0);
  const TensorView y = args.output(0);
  expect_same_shape(x, y, "x");
  const TensorView* ops[2] = {&y, &x};
  if (x.dtype == y.dtype) {
    // Same layout on both sides: the copy engine, not a kernel.
    if (x.is_contiguous() && y.is_contiguous()) {
      const int64_t n = y.numel();
      if (n > 0 && x.data != y.data) {
        check(cudaMemcpyAsync(y.data, x.data, static_cast<size_t>(n) * y.itemsize,
                              cudaMemcpyDeviceToDevice, launch.stream()),
              "cudaMemcpyAsync");
      }
      return;
    }
    visit_by_size(x.itemsize, [&](auto tag) {
      using Bits = typename decltype(tag)::type;
      run_elementwise<Bits, Bits>(launch, ops, Identity{});
    });
    return;
  }
  visit_dtype<AllTypes>(y.dtype, [&](auto out_tag) {
    using Out = typename decltype(out_tag)::type;
    visit_dtype<AllTypes>(x.dtype, [&](auto in_tag) {
      using In = typename decltype(in_tag)::type;
      if constexpr (!std::is_same_v<Out, In>) run_elementwise<Out, In>(launch, ops, Identity{});
    });
  });
}

void fill_impl(const OpArgs& args, const Launch& launch) {
  args.expect_counts(0, 1);
  const double value = sdk::attrs::fill::read(args).value;
  const TensorView y = args.output(0);
  const TensorView* ops[1] = {&y};
  visit_dtype<AllTypes>(y.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Bits = bits_t<sizeof(T)>;
    const T typed = convert<T>(value);
    Bits bits;
    std::memcpy(&bits, &typed, sizeof bits);
    // A value whose bytes are all equal (zero above all: gradients are zero-filled
    // every step) is a memset.
    const auto byte = static_cast<uint8_t>(bits & 0xff);
    bool uniform = true;
    for (size_t i = 1; i < sizeof bits; ++i) {
      uniform = uniform && static_cast<uint8_t>((bits >> (8 * i)) & 0xff) == byte;
    }
    const int64_t n = y.numel();
    if (uniform && y.is_contiguous()) {
      if (n > 0) {
        check(cudaMemsetAsync(y.data, byte, static_cast<size_t>(n) * sizeof(T), launch.stream()),
              "cudaMemsetAsync");
      }
      return;
    }
    run_elementwise<Bits>(launch, ops, Constant<Bits>{bits});
  });
}

}  // namespace

void add_copy_kernels(KernelList& list) {
  list.push_back(catalogue_entry<op::copy>(&copy_impl, nullptr, kStridedInOut));
  list.push_back(catalogue_entry<op::fill>(&fill_impl, nullptr, KILN_KERNEL_STRIDED_OUTPUTS));
}

}  // namespace kiln::cuda
