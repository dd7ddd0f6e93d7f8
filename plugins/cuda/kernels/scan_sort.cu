// kiln.cumsum, kiln.cumprod and kiln.sort, with CUB (part of the CUDA toolkit).
//
// Both work on the lines along `dim` of a contiguous tensor: [outer, D, inner] is
// outer·inner lines of D elements at stride `inner`. CUB sees the elements in line order
// (item k is position k % D of line k / D; Lines::offset says where it is in the tensor).
//
// cumsum and cumprod: one DeviceScan::InclusiveScanByKey over every item, keyed by its
// line, reading x through an iterator that widens to the accumulator of OPS.md (float64
// for float32/float64, float32 for half types, uint64 for integers and bool, so that
// overflow wraps) and writing through one that rounds once to the output: x is read and y
// written once. A parallel scan combines in a tree, not from 0 in order: integers are
// exact; float32 and half outputs are the CPU's unless a result falls within one
// accumulator rounding of a tie; float64 outputs may differ from the CPU's, and from one
// run to the next (CUB's decoupled look-back), in the last bits.
//
// sort: a kernel maps each value to an unsigned key whose order is the catalogue's (every
// NaN one key above every number, so NaNs keep their input order; -0.0 the key of 0.0;
// all bits inverted for descending) and pairs it with its item number; DeviceRadixSort
// sorts the pairs by key and, for several lines, then stably by line; a kernel writes the
// values and positions out. Only three key types (8, 32 and 64 bits) reach CUB, which keeps the
// build short.
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/tabulate_output_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>

#include "kernels/common.cuh"
#include "kernels/registry.h"
#include "kiln/sdk/lines.h"

namespace kiln::cuda {

namespace {

using sdk::Lines;
using sdk::lines_of;

/// CUB's two-call protocol: ask for the temporary storage, take it from the caching
/// allocator (stream-ordered scratch), run.
template <class Call>
void run_cub(const Launch& launch, const char* what, const Call& call) {
  size_t bytes = 0;
  check(call(nullptr, bytes), what);
  check(call(launch.scratch(std::max<size_t>(bytes, 1)), bytes), what);
}

template <class T>
T* scratch_of(const Launch& launch, int64_t n) {
  return static_cast<T*>(launch.scratch(static_cast<size_t>(n) * sizeof(T)));
}

struct LineOf {
  int64_t d;
  KILN_HOST_DEVICE int64_t operator()(int64_t k) const { return k / d; }
};

// -- cumsum, cumprod ---------------------------------------------------------------------

template <class T>
using scan_acc_t =
    std::conditional_t<is_floating_v<T>, std::conditional_t<is_half_v<T>, float, double>, uint64_t>;

struct Add {
  template <class A>
  KILN_HOST_DEVICE A operator()(A a, A b) const {
    return a + b;  // uint64: wraps, as an int64 sum would
  }
};
struct Mul {
  template <class A>
  KILN_HOST_DEVICE A operator()(A a, A b) const {
    return a * b;  // uint64: the low 64 bits, as an int64 product would have
  }
};

/// Item k of x, widened to the accumulator.
template <class T, class Acc>
struct Widen {
  const T* x;
  Lines l;
  KILN_HOST_DEVICE Acc operator()(int64_t k) const {
    const T v = x[l.offset(k)];
    if constexpr (std::is_same_v<Acc, uint64_t>)
      return static_cast<uint64_t>(static_cast<int64_t>(v));
    else
      return static_cast<Acc>(load(v));
  }
};

/// Running sum k, rounded once to the output and stored where item k is.
template <class Out>
struct StoreAt {
  Out* y;
  Lines l;
  template <class Acc>
  KILN_HOST_DEVICE void operator()(int64_t k, Acc sum) const {
    if constexpr (std::is_same_v<Acc, uint64_t>)
      y[l.offset(k)] = static_cast<int64_t>(sum);
    else
      y[l.offset(k)] = convert<Out>(sum);
  }
};

template <class Op, class Attrs>
void scan_impl(const OpArgs& args, const Launch& launch) {
  args.expect_counts(1, 1);
  const TensorView x = args.input(0), y = args.output(0);
  const Lines l = lines_of(x, Attrs::read(args).dim);
  expect_same_shape(y, x, "y");
  expect_contiguous(y, "y");
  if (!visit_dtype<AllTypes>(x.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        using Acc = scan_acc_t<T>;
        using Out = std::conditional_t<is_floating_v<T>, T, int64_t>;
        expect_dtype(y, dtype_of<Out>(), "y");
        if (l.items() == 0) return;
        // One pass: x is read and y written once; the sums stay in registers.
        const thrust::counting_iterator<int64_t> items(0);
        const auto keys = thrust::make_transform_iterator(items, LineOf{l.d});
        const auto in = thrust::make_transform_iterator(items, Widen<T, Acc>{x.ptr<const T>(), l});
        const auto out = thrust::make_tabulate_output_iterator(StoreAt<Out>{y.ptr<Out>(), l});
        run_cub(launch, "cub::DeviceScan::InclusiveScanByKey", [&](void* temp, size_t& bytes) {
          return cub::DeviceScan::InclusiveScanByKey(temp, bytes, keys, in, out, Op{}, l.items(),
                                                     ::cuda::std::equal_to<>{}, launch.stream());
        });
      })) {
    unsupported_dtype(x.dtype);
  }
}

// Beyond the catalogue's rule: the output is int64 for integer and bool inputs.
int32_t supports_scan(void*, const kiln_op_args* args) {
  const kiln_dtype in = input_dtype(args, 0), out = output_dtype(args, 0);
  return is_float_dtype(in) ? out == in : out == KILN_DTYPE_INT64;
}

// -- sort -----------------------------------------------------------------------------------

template <class T>
using sort_key_t = std::conditional_t<sizeof(T) == 8, uint64_t,
                                      std::conditional_t<sizeof(T) == 1, uint8_t, uint32_t>>;

/// An unsigned key whose order is the catalogue's order of T's values.
template <class T>
__device__ sort_key_t<T> sort_key(T v) {
  using U = sort_key_t<T>;
  constexpr U kTop = U{1} << (sizeof(U) * 8 - 1);
  if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, uint8_t>) {
    return static_cast<U>(v);
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<U>(v) ^ kTop;  // two's complement: flipping the sign bit orders it
  } else {
    const compute_t<T> f = load(v);  // half types widen exactly to float
    if (f != f) return static_cast<U>(~U{0});
    if (f == 0) return kTop;  // -0.0 and 0.0
    U u;
    memcpy(&u, &f, sizeof u);
    return (u & kTop) ? static_cast<U>(~u) : static_cast<U>(u | kTop);
  }
}

template <class T>
__global__ void sort_prepare(const T* x, sort_key_t<T>* keys, int64_t* items, Lines l, int64_t n,
                             bool descending) {
  for (int64_t k = global_thread(); k < n; k += grid_threads()) {
    const sort_key_t<T> key = sort_key(x[l.offset(k)]);
    keys[k] = descending ? static_cast<sort_key_t<T>>(~key) : key;
    items[k] = k;
  }
}

template <class U>
__global__ void line_keys(const int64_t* items, U* lines, int64_t d, int64_t n) {
  for (int64_t k = global_thread(); k < n; k += grid_threads())
    lines[k] = static_cast<U>(items[k] / d);
}

/// Output slot k takes item order[k] (of the same line).
template <class T>
__global__ void sort_finish(const T* x, const int64_t* order, T* values, int64_t* indices, Lines l,
                            int64_t n) {
  for (int64_t k = global_thread(); k < n; k += grid_threads()) {
    const int64_t item = order[k];
    const int64_t out = l.offset(k);
    values[out] = x[l.offset(item)];
    indices[out] = item % l.d;
  }
}

int bit_width(uint64_t v) {
  int bits = 0;
  for (; v != 0; v >>= 1) ++bits;
  return bits;
}

/// A stable radix sort of (key, item) pairs over all n items, on the key's low `bits`.
template <class U>
int64_t* radix_sort(const Launch& launch, const U* keys, const int64_t* items, int64_t n,
                    int bits) {
  U* keys_out = scratch_of<U>(launch, n);
  int64_t* items_out = scratch_of<int64_t>(launch, n);
  run_cub(launch, "cub::DeviceRadixSort::SortPairs", [&](void* temp, size_t& bytes) {
    return cub::DeviceRadixSort::SortPairs(temp, bytes, keys, keys_out, items, items_out, n, 0,
                                           bits, launch.stream());
  });
  return items_out;
}

/// Sorts (key, item) pairs within each line, stably; returns the items in sorted order.
/// Several lines: every item by key, then stably by line (a radix sort is stable), so each
/// line ends up in key order. (DeviceSegmentedSort, one warp or block per line, took 4.8 ms
/// for [65536, 256] float32 and 1.8 ms for [4096, 4096] on an H200, where two radix sorts
/// of all items take 1.4 ms for the latter.)
template <class U>
const int64_t* sort_lines(const Launch& launch, const U* keys, const int64_t* items,
                          const Lines& l) {
  const int64_t n = l.items();
  int64_t* by_key = radix_sort(launch, keys, items, n, sizeof(U) * 8);
  if (l.count() == 1) return by_key;
  const int line_bits = bit_width(static_cast<uint64_t>(l.count() - 1));
  const auto by_line = [&](auto tag) {
    using L = decltype(tag);
    L* lines = scratch_of<L>(launch, n);
    line_keys<<<grid_for(n, launch), kThreads, 0, launch.stream()>>>(by_key, lines, l.d, n);
    check(cudaGetLastError(), "sort: line keys");
    return radix_sort(launch, lines, by_key, n, line_bits);
  };
  return line_bits <= 32 ? by_line(uint32_t{}) : by_line(uint64_t{});
}

void sort_impl(const OpArgs& args, const Launch& launch) {
  args.expect_counts(1, 2);
  const auto attrs = sdk::attrs::sort::read(args);
  const TensorView x = args.input(0), values = args.output(0), indices = args.output(1);
  const Lines l = lines_of(x, attrs.dim);
  KILN_SDK_CHECK_ARG(attrs.descending == 0 || attrs.descending == 1,
                     "descending must be 0 or 1, got ", attrs.descending);
  for (const TensorView* t : {&values, &indices}) {
    expect_same_shape(*t, x, "output");
    expect_contiguous(*t, "output");
  }
  expect_dtype(values, x.dtype, "values");
  expect_dtype(indices, KILN_DTYPE_INT64, "indices");
  const int64_t n = l.items();
  if (n == 0) return;
  if (!visit_dtype<AllTypes>(x.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        using U = sort_key_t<T>;
        U* keys = scratch_of<U>(launch, n);
        int64_t* items = scratch_of<int64_t>(launch, n);
        sort_prepare<<<grid_for(n, launch), kThreads, 0, launch.stream()>>>(
            x.ptr<const T>(), keys, items, l, n, attrs.descending != 0);
        check(cudaGetLastError(), "sort: keys");
        const int64_t* order = sort_lines(launch, keys, items, l);
        sort_finish<<<grid_for(n, launch), kThreads, 0, launch.stream()>>>(
            x.ptr<const T>(), order, values.ptr<T>(), indices.ptr<int64_t>(), l, n);
        check(cudaGetLastError(), "sort: write");
      })) {
    unsupported_dtype(x.dtype);
  }
}

int32_t supports_sort(void*, const kiln_op_args* args) {
  return output_dtype(args, 0) == input_dtype(args, 0) && output_dtype(args, 1) == KILN_DTYPE_INT64;
}

}  // namespace

void add_scan_sort_kernels(KernelList& list) {
  list.push_back(
      catalogue_entry<op::cumsum>(&scan_impl<Add, sdk::attrs::cumsum>, &supports_scan, 0));
  list.push_back(
      catalogue_entry<op::cumprod>(&scan_impl<Mul, sdk::attrs::cumprod>, &supports_scan, 0));
  list.push_back(catalogue_entry<op::sort>(&sort_impl, &supports_sort, 0));
}

}  // namespace kiln::cuda
