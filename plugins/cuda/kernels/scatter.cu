// kiln.index_add and kiln.scatter_add: the accumulating inverses of index_select and
// gather (their gradients).
//
// Determinism without atomics: every y element is updated by exactly one thread, which
// adds its contributions in increasing source order — the CPU plugin's order, so the
// results match it bit for bit (half types round after every addition there and here;
// integers wrap).
//
// scatter_add: one thread per "item", a position of `index` with the `dim` coordinate
// removed. An item's destinations all lie on one line of y along `dim`, and no other
// item touches that line, so the thread walks `dim` in order.
//
// index_add: y[o, index[i], j] += source[o, i, j] over [outer, len, inner] views.
//  - Many (o, j) columns: one thread per column walks i in order (each column of y
//    belongs to one thread).
//  - Few columns and a long index (an embedding's gradient): the index is sorted
//    stably (CUB radix sort of (index, position) pairs), and one thread per (o, run of
//    equal indices, j) adds the run's rows in position order. Same order, far more
//    threads.
//
// Indices outside [0, y.shape[dim]) are skipped (nothing outside y is written) and
// raise kDeviceErrorIndexOutOfRange (index, size, dim) through the launch's error
// flag, which the runtime reports as INVALID_ARGUMENT naming the op and the index.
#include <cub/device/device_radix_sort.cuh>

#include "dnn_util.cuh"
#include "kernels/registry.h"

namespace kiln::cuda {

namespace {

using namespace dnn;

template <class T>
__device__ __forceinline__ T accumulate(T target, T value) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(target) + static_cast<U>(value)));
  } else {
    return store<T>(load(target) + load(value));
  }
}

// Every dtype but bool: floats, int32, int64, uint8.
template <class Fn>
bool visit_scatter(kiln_dtype dtype, Fn&& fn) {
  switch (dtype) {
    case KILN_DTYPE_INT32:
      fn(Tag<int32_t>{});
      return true;
    case KILN_DTYPE_INT64:
      fn(Tag<int64_t>{});
      return true;
    case KILN_DTYPE_UINT8:
      fn(Tag<uint8_t>{});
      return true;
    default:
      return visit_float(dtype, fn);
  }
}

int64_t checked_dim(const OpArgs& args, int32_t ndim) {
  const int64_t dim = sdk::attrs::scatter_add::read(args).dim;  // index_add: the same list
  KILN_SDK_CHECK_ARG(dim >= 0 && dim < ndim, "dim ", dim, " is out of range for ", ndim, "-D y");
  return dim;
}

// ---- index_add -----------------------------------------------------------------------------

// One thread per (o, j) column: y[o, index[i], j] += source[o, i, j] for i in order.
template <class T>
__global__ void index_add_columns_kernel(const int64_t* __restrict__ index,
                                         const T* __restrict__ source, T* __restrict__ y,
                                         int64_t outer, int64_t inner, int64_t length,
                                         int64_t y_dim, int64_t dim, ErrorSink errors) {
  const int64_t columns = outer * inner;
  for (int64_t t = first_index(); t < columns; t += grid_stride()) {
    const int64_t o = t / inner, j = t - o * inner;
    const T* src = source + o * length * inner + j;
    T* dst = y + o * y_dim * inner + j;
    for (int64_t i = 0; i < length; ++i) {
      const int64_t k = index[i];
      if (k < 0 || k >= y_dim) {
        if (t == 0) errors.raise(kDeviceErrorIndexOutOfRange, k, y_dim, dim);
        continue;
      }
      dst[k * inner] = accumulate(dst[k * inner], src[i * inner]);
    }
  }
}

// Sort keys: the index, or y_dim (past every valid one) for an invalid index.
__global__ void index_keys_kernel(const int64_t* __restrict__ index, uint32_t* __restrict__ keys,
                                  int32_t* __restrict__ positions, int64_t length, int64_t y_dim,
                                  int64_t dim, ErrorSink errors) {
  for (int64_t i = first_index(); i < length; i += grid_stride()) {
    const int64_t k = index[i];
    const bool valid = k >= 0 && k < y_dim;
    if (!valid) errors.raise(kDeviceErrorIndexOutOfRange, k, y_dim, dim);
    keys[i] = static_cast<uint32_t>(valid ? k : y_dim);
    positions[i] = static_cast<int32_t>(i);
  }
}

// One thread per (o, p, j) with p a sorted position; the first position of each run
// of equal keys adds the whole run, in (stable, so increasing) position order.
template <class T>
__global__ void index_add_runs_kernel(const uint32_t* __restrict__ keys,
                                      const int32_t* __restrict__ positions,
                                      const T* __restrict__ source, T* __restrict__ y,
                                      int64_t outer, int64_t inner, int64_t length, int64_t y_dim) {
  const int64_t total = outer * length * inner;
  for (int64_t t = first_index(); t < total; t += grid_stride()) {
    const int64_t j = t % inner, p = t / inner % length, o = t / (inner * length);
    const uint32_t key = keys[p];
    if (key >= static_cast<uint64_t>(y_dim) || (p > 0 && keys[p - 1] == key)) continue;
    T* dst = y + (o * y_dim + key) * inner + j;
    const T* src = source + o * length * inner + j;
    T acc = *dst;
    for (int64_t q = p; q < length && keys[q] == key; ++q) {
      acc = accumulate(acc, src[static_cast<int64_t>(positions[q]) * inner]);
    }
    *dst = acc;
  }
}

// Columns below this count leave the GPU mostly idle in the column kernel; the sorted
// path then pays for its sort (when the index is long enough to matter).
constexpr int64_t kMinColumns = 1 << 16;
constexpr int64_t kMinSortedLength = 64;

template <class T>
void index_add_sorted(const TensorView& index, const TensorView& source, const TensorView& y,
                      int64_t outer, int64_t inner, int64_t length, int64_t y_dim, int64_t dim,
                      const Launch& l) {
  auto* keys_in = static_cast<uint32_t*>(l.scratch(static_cast<size_t>(length) * 4));
  auto* keys_out = static_cast<uint32_t*>(l.scratch(static_cast<size_t>(length) * 4));
  auto* pos_in = static_cast<int32_t*>(l.scratch(static_cast<size_t>(length) * 4));
  auto* pos_out = static_cast<int32_t*>(l.scratch(static_cast<size_t>(length) * 4));
  index_keys_kernel<<<grid_for(length, l), kThreads, 0, l.stream()>>>(
      index.ptr<const int64_t>(), keys_in, pos_in, length, y_dim, dim, error_sink(l));
  check_launch("index_add: sort keys");
  // Keys are at most y_dim: sort only the bits that can be set.
  int end_bit = 1;
  while (end_bit < 32 && (static_cast<uint64_t>(y_dim) >> end_bit) != 0) ++end_bit;
  const int n = static_cast<int>(length);
  size_t temp_bytes = 0;
  check(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys_in, keys_out, pos_in, pos_out, n,
                                        0, end_bit, l.stream()),
        "index_add: cub::DeviceRadixSort::SortPairs (size query)");
  void* temp = l.scratch(std::max<size_t>(temp_bytes, 1));
  check(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, pos_in, pos_out, n, 0,
                                        end_bit, l.stream()),
        "index_add: cub::DeviceRadixSort::SortPairs");
  const int64_t total = outer * length * inner;
  index_add_runs_kernel<T><<<grid_for(total, l), kThreads, 0, l.stream()>>>(
      keys_out, pos_out, source.ptr<const T>(), y.ptr<T>(), outer, inner, length, y_dim);
  check_launch("index_add: runs");
}

void index_add_impl(const OpArgs& args, const Launch& l) {
  args.expect_counts(2, 1);
  const TensorView index = args.input(0), source = args.input(1), y = args.output(0);
  const int64_t dim = checked_dim(args, y.ndim);
  sdk::expect_dtype(index, KILN_DTYPE_INT64, "index");
  sdk::expect_dtype(source, y.dtype, "source");
  KILN_SDK_CHECK_ARG(index.ndim == 1, "index must be 1-D, got ", sdk::shape_string(index));
  KILN_SDK_CHECK_ARG(source.ndim == y.ndim, "source must have y's rank");
  for (int32_t d = 0; d < y.ndim; ++d) {
    const int64_t want = d == dim ? index.shape[0] : y.shape[d];
    KILN_SDK_CHECK_ARG(source.shape[d] == want, "source.shape[", d, "] = ", source.shape[d],
                       ", expected ", want);
  }
  for (const TensorView* t : {&index, &source, &y}) sdk::expect_contiguous(*t, "operand");
  if (source.numel() == 0) return;

  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= y.shape[d];
  for (int64_t d = dim + 1; d < y.ndim; ++d) inner *= y.shape[d];
  const int64_t length = index.shape[0], y_dim = y.shape[dim];
  const bool sorted = outer * inner < kMinColumns && length >= kMinSortedLength &&
                      length <= INT32_MAX && y_dim < UINT32_MAX;
  if (!visit_scatter(y.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (sorted) {
          index_add_sorted<T>(index, source, y, outer, inner, length, y_dim, dim, l);
        } else {
          index_add_columns_kernel<T><<<grid_for(outer * inner, l), kThreads, 0, l.stream()>>>(
              index.ptr<const int64_t>(), source.ptr<const T>(), y.ptr<T>(), outer, inner, length,
              y_dim, dim, error_sink(l));
          check_launch("index_add");
        }
      })) {
    sdk::unsupported_dtype(y.dtype);
  }
}

// ---- scatter_add ---------------------------------------------------------------------------

struct ScatterGeometry {
  int32_t ndim, dim;
  int64_t index_shape[kMaxDims];
  int64_t index_strides[kMaxDims], source_strides[kMaxDims], y_strides[kMaxDims];
  int64_t length, y_dim;
};

template <class T>
__global__ void scatter_add_kernel(const int64_t* __restrict__ index, const T* __restrict__ source,
                                   T* __restrict__ y, ScatterGeometry g, int64_t items,
                                   ErrorSink errors) {
  for (int64_t item = first_index(); item < items; item += grid_stride()) {
    int64_t rest = item, index_offset = 0, source_offset = 0, y_offset = 0;
    for (int32_t d = g.ndim - 1; d >= 0; --d) {
      if (d == g.dim) continue;
      const int64_t coordinate = rest % g.index_shape[d];
      rest /= g.index_shape[d];
      index_offset += coordinate * g.index_strides[d];
      source_offset += coordinate * g.source_strides[d];
      y_offset += coordinate * g.y_strides[d];
    }
    const int64_t* idx = index + index_offset;
    const T* src = source + source_offset;
    T* dst = y + y_offset;
    const int64_t is = g.index_strides[g.dim], ss = g.source_strides[g.dim],
                  ys = g.y_strides[g.dim];
    for (int64_t i = 0; i < g.length; ++i) {
      const int64_t k = idx[i * is];
      if (k < 0 || k >= g.y_dim) {
        errors.raise(kDeviceErrorIndexOutOfRange, k, g.y_dim, g.dim);
        continue;
      }
      dst[k * ys] = accumulate(dst[k * ys], src[i * ss]);
    }
  }
}

void scatter_add_impl(const OpArgs& args, const Launch& l) {
  args.expect_counts(2, 1);
  const TensorView index = args.input(0), source = args.input(1), y = args.output(0);
  const int64_t dim = checked_dim(args, y.ndim);
  sdk::expect_dtype(index, KILN_DTYPE_INT64, "index");
  sdk::expect_dtype(source, y.dtype, "source");
  KILN_SDK_CHECK_ARG(index.ndim == y.ndim && source.ndim == y.ndim,
                     "index, source and y must have one rank");
  for (int32_t d = 0; d < y.ndim; ++d) {
    KILN_SDK_CHECK_ARG(
        index.shape[d] <= source.shape[d] && (d == dim || index.shape[d] <= y.shape[d]),
        "index.shape[", d, "] = ", index.shape[d], " exceeds source ", sdk::shape_string(source),
        " or y ", sdk::shape_string(y));
  }
  for (const TensorView* t : {&index, &source, &y}) sdk::expect_contiguous(*t, "operand");
  if (index.numel() == 0) return;
  KILN_SDK_CHECK(y.ndim <= kMaxDims, KILN_STATUS_UNSUPPORTED, "rank ", y.ndim, " above ", kMaxDims);

  // Row-major strides of the three contiguous operands (their own shapes).
  ScatterGeometry g{};
  g.ndim = y.ndim;
  g.dim = static_cast<int32_t>(dim);
  int64_t is = 1, ss = 1, ys = 1;
  for (int32_t d = y.ndim - 1; d >= 0; --d) {
    g.index_shape[d] = index.shape[d];
    g.index_strides[d] = is;
    g.source_strides[d] = ss;
    g.y_strides[d] = ys;
    is *= index.shape[d];
    ss *= source.shape[d];
    ys *= y.shape[d];
  }
  g.length = index.shape[dim];
  g.y_dim = y.shape[dim];
  const int64_t items = index.numel() / g.length;
  if (!visit_scatter(y.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        scatter_add_kernel<T><<<grid_for(items, l), kThreads, 0, l.stream()>>>(
            index.ptr<const int64_t>(), source.ptr<const T>(), y.ptr<T>(), g, items, error_sink(l));
      })) {
    sdk::unsupported_dtype(y.dtype);
  }
  check_launch("scatter_add");
}

// y's dtype but bool, source of the same dtype, and a rank the kernels index.
int32_t supports_scatter(void*, const kiln_op_args* args) {
  const kiln_dtype d = sdk::output_dtype(args, 0);
  if (d == KILN_DTYPE_BOOL || kiln_dtype_size(d) == 0 || sdk::input_dtype(args, 1) != d) return 0;
  return view_ndim(args->outputs, args->num_outputs, 0) <= kMaxDims ? 1 : 0;
}

}  // namespace

void add_scatter_kernels(KernelList& list) {
  list.push_back(catalogue_entry<op::index_add>(&index_add_impl, &supports_scatter, 0));
  list.push_back(catalogue_entry<op::scatter_add>(&scatter_add_impl, &supports_scatter, 0));
}

}  // namespace kiln::cuda
