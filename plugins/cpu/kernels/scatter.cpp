// kiln.index_add and kiln.scatter_add: the accumulating inverses of index_select and
// gather (their gradients).
//
// Determinism without atomics: work is split over the coordinates *other* than
// `dim`, which source and y share, so two tasks never touch the same y element, and
// each task walks `dim` in order. Contiguous operands; indices are validated before
// anything is written.
#include <algorithm>
#include <vector>

#include "elementwise.h"
#include "index_check.h"
#include "registry.h"

namespace kiln::cpu {

namespace {

using ScatterTypes = TypeList<float, double, float16, bfloat16, int32_t, int64_t, uint8_t>;

template <class T>
inline void accumulate(T& target, T value) {
  if constexpr (std::is_integral_v<T>) {
    // Integers wrap, as kiln.add does.
    using U = std::make_unsigned_t<T>;
    target = static_cast<T>(static_cast<U>(static_cast<U>(target) + static_cast<U>(value)));
  } else {
    target = store<T>(load(target) + load(value));
  }
}

int64_t checked_dim(const OpArgs& args, int32_t ndim) {
  const int64_t dim = sdk::attrs::scatter_add::read(args).dim;  // index_add: the same list
  KILN_SDK_CHECK_ARG(dim >= 0 && dim < ndim, "dim ", dim, " is out of range for ", ndim, "-D y");
  return dim;
}

// y[..., index[i], ...] += source[..., i, ...]
void index_add_impl(const OpArgs& args) {
  args.expect_counts(2, 1);
  const TensorView index = args.input(0), source = args.input(1), y = args.output(0);
  const int64_t dim = checked_dim(args, y.ndim);
  expect_dtype(index, KILN_DTYPE_INT64, "index");
  expect_dtype(source, y.dtype, "source");
  KILN_SDK_CHECK_ARG(index.ndim == 1, "index must be 1-D, got ", shape_string(index));
  KILN_SDK_CHECK_ARG(source.ndim == y.ndim, "source must have y's rank");
  for (int32_t d = 0; d < y.ndim; ++d) {
    const int64_t want = d == dim ? index.shape[0] : y.shape[d];
    KILN_SDK_CHECK_ARG(source.shape[d] == want, "source.shape[", d, "] = ", source.shape[d],
                       ", expected ", want);
  }
  for (const TensorView* t : {&index, &source, &y}) expect_contiguous(*t, "operand");
  if (source.numel() == 0) return;
  check_indices(index, y.shape[dim], dim);

  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= y.shape[d];
  for (int64_t d = dim + 1; d < y.ndim; ++d) inner *= y.shape[d];
  const int64_t length = index.shape[0], y_dim = y.shape[dim];
  constexpr int64_t kBlock = 1024;
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  if (!visit_dtype<ScatterTypes>(y.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const int64_t* idx = index.ptr<const int64_t>();
        pool().parallel_for(
            0, outer * blocks,
            std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, length * kBlock)),
            [&](int64_t begin, int64_t end) {
              for (int64_t item = begin; item < end; ++item) {
                const int64_t o = item / blocks, j0 = item % blocks * kBlock;
                const int64_t width = std::min(kBlock, inner - j0);
                for (int64_t i = 0; i < length; ++i) {
                  const T* src = source.ptr<const T>() + (o * length + i) * inner + j0;
                  T* dst = y.ptr<T>() + (o * y_dim + idx[i]) * inner + j0;
                  for (int64_t j = 0; j < width; ++j) accumulate(dst[j], src[j]);
                }
              }
            });
      })) {
    unsupported_dtype(y.dtype);
  }
}

// y[index[i][j]][j] += source[i][j] for dim 0, and so on: over index's shape.
void scatter_add_impl(const OpArgs& args) {
  args.expect_counts(2, 1);
  const TensorView index = args.input(0), source = args.input(1), y = args.output(0);
  const int64_t dim = checked_dim(args, y.ndim);
  expect_dtype(index, KILN_DTYPE_INT64, "index");
  expect_dtype(source, y.dtype, "source");
  KILN_SDK_CHECK_ARG(index.ndim == y.ndim && source.ndim == y.ndim,
                     "index, source and y must have one rank");
  for (int32_t d = 0; d < y.ndim; ++d) {
    KILN_SDK_CHECK_ARG(
        index.shape[d] <= source.shape[d] && (d == dim || index.shape[d] <= y.shape[d]),
        "index.shape[", d, "] = ", index.shape[d], " exceeds source ", shape_string(source),
        " or y ", shape_string(y));
  }
  for (const TensorView* t : {&index, &source, &y}) expect_contiguous(*t, "operand");
  if (index.numel() == 0) return;
  check_indices(index, y.shape[dim], dim);

  // Items: index positions with the `dim` coordinate removed.
  const int32_t nd = y.ndim;
  const int64_t length = index.shape[dim];
  const int64_t items = index.numel() / length;
  const int64_t index_dim_stride = index.strides[dim];
  const int64_t source_dim_stride = source.strides[dim];
  const int64_t y_dim_stride = y.strides[dim];
  if (!visit_dtype<ScatterTypes>(y.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        pool().parallel_for(0, items, std::max<int64_t>(1, kParallelGrain / length),
                            [&](int64_t begin, int64_t end) {
                              for (int64_t item = begin; item < end; ++item) {
                                int64_t rest = item, index_offset = 0, source_offset = 0,
                                        y_offset = 0;
                                for (int32_t d = nd - 1; d >= 0; --d) {
                                  if (d == dim) continue;
                                  const int64_t coordinate = rest % index.shape[d];
                                  rest /= index.shape[d];
                                  index_offset += coordinate * index.strides[d];
                                  source_offset += coordinate * source.strides[d];
                                  y_offset += coordinate * y.strides[d];
                                }
                                const int64_t* idx = index.ptr<const int64_t>() + index_offset;
                                const T* src = source.ptr<const T>() + source_offset;
                                T* dst = y.ptr<T>() + y_offset;
                                for (int64_t i = 0; i < length; ++i) {
                                  accumulate(dst[idx[i * index_dim_stride] * y_dim_stride],
                                             src[i * source_dim_stride]);
                                }
                              }
                            });
      })) {
    unsupported_dtype(y.dtype);
  }
}

int32_t supports_scatter(void*, const kiln_op_args* args) {
  const kiln_dtype d = output_dtype(args, 0);
  return d != KILN_DTYPE_BOOL && kiln_dtype_size(d) != 0 && input_dtype(args, 1) == d;
}

}  // namespace

void add_scatter_kernels(KernelList& list) {
  list.push_back(catalogue_entry<op::index_add>(&run_kernel<index_add_impl>, &supports_scatter, 0));
  list.push_back(
      catalogue_entry<op::scatter_add>(&run_kernel<scatter_add_impl>, &supports_scatter, 0));
}

}  // namespace kiln::cpu
