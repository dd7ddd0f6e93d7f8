#pragma once
/// @file indexing.h
/// libtorch's indexing spelling: `x.index({0, Slice(1, 3)})` is Python's `x[0, 1:3]`,
/// and `x.index_put_({mask}, 0)` is `x[mask] = 0`.
///
/// @code
///   using namespace kiln::indexing;
///   auto row = x.index({0});                          // x[0]            (a view)
///   auto block = x.index({Slice(1, 3), Slice()});     // x[1:3, :]       (a view)
///   auto last = x.index({Ellipsis, -1});              // x[..., -1]      (a view)
///   auto grown = x.index({None, Slice()});            // x[None, :]      (a view)
///   auto picked = x.index({kiln::from_vector<int64_t>({2, 0})});  // x[[2, 0]] (a copy)
///   auto positive = x.index({x > 0});                 // x[x > 0]        (a copy, 1-D)
///   x.index_put_({x < 0}, 0.0);                       // x[x < 0] = 0
/// @endcode
///
/// Integers, slices, None and Ellipsis are basic indexing: the result is a view, as
/// in PyTorch. Integer tensors (int64 or int32) and bool tensors are advanced
/// indexing: the result is a copy. Several index tensors broadcast together; their
/// dimensions replace the indexed ones in place when those are next to each other,
/// and go first otherwise (NumPy's and PyTorch's rule). An integer is applied first,
/// as a select, even next to index tensors (PyTorch, not NumPy). A bool tensor stands
/// for its nonzero() coordinates over as many dimensions as it has, which reads its
/// count back to the host (one synchronisation). Everything is differentiable and
/// made of catalogue ops.

#include <cstdint>
#include <optional>
#include <variant>

#include "kiln/scalar.h"
#include "kiln/tensor.h"

namespace kiln::indexing {

/// Python's None: a new dimension of size 1 (and a missing bound in a Slice).
struct NoneIndex {};
inline constexpr NoneIndex None{};

/// A bound of a Slice: an integer, or None for "from the start" / "to the end".
class SliceBound {
 public:
  SliceBound(bool) = delete;                              // a bool is not a bound
  SliceBound(NoneIndex) {}                                // NOLINT: implicit, as Python's
  SliceBound(int64_t v) : value_(v) {}                    // NOLINT
  SliceBound(int v) : value_(static_cast<int64_t>(v)) {}  // NOLINT
  SliceBound(std::optional<int64_t> v) : value_(v) {}     // NOLINT
  const std::optional<int64_t>& value() const { return value_; }

 private:
  std::optional<int64_t> value_;
};

/// Python's start:stop:step: Slice(1, 3), Slice(None, None, 2), Slice(-2). A missing
/// bound is the start or end of the dimension; negative bounds count from the end;
/// out-of-range bounds are clamped; step > 0.
struct Slice {
  Slice(SliceBound start = None, SliceBound stop = None, SliceBound step = None)
      : start(start.value()), stop(stop.value()), step(step.value()) {}
  std::optional<int64_t> start, stop, step;
};

/// Python's `...`: as many full slices as the other indices leave.
struct EllipsisIndex {};
inline constexpr EllipsisIndex Ellipsis{};

/// One entry of an index list: an integer, a Slice, None, Ellipsis or a tensor.
class TensorIndex {
 public:
  TensorIndex(bool) = delete;            // x[True] (a new dimension) is not supported
  TensorIndex(int64_t i) : value_(i) {}  // NOLINT: implicit, as libtorch's
  TensorIndex(int i) : value_(static_cast<int64_t>(i)) {}  // NOLINT
  TensorIndex(Slice s) : value_(s) {}                      // NOLINT
  TensorIndex(NoneIndex n) : value_(n) {}                  // NOLINT
  TensorIndex(EllipsisIndex e) : value_(e) {}              // NOLINT
  TensorIndex(Tensor t) : value_(std::move(t)) {}          // NOLINT

  const std::variant<int64_t, Slice, NoneIndex, EllipsisIndex, Tensor>& value() const {
    return value_;
  }

 private:
  std::variant<int64_t, Slice, NoneIndex, EllipsisIndex, Tensor> value_;
};

}  // namespace kiln::indexing
