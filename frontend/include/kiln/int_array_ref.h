#pragma once
/// @file int_array_ref.h
/// IntArrayRef: a non-owning view of int64 values (shapes, dims, strides) that
/// accepts a braced list, a std::vector, a std::span or any contiguous container,
/// so `x.reshape({2, 3})` and `x.reshape(other.shape())` both work.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <span>
#include <vector>

namespace kiln {

class IntArrayRef {
 public:
  constexpr IntArrayRef() = default;
  constexpr IntArrayRef(const int64_t* data, size_t size) : data_(data), size_(size) {}
  /// One value, so that x.sum(1) reads as in PyTorch. Like the list below, it views
  /// its argument: fine for a call's argument, not for a variable.
  constexpr IntArrayRef(const int64_t& one) : data_(&one), size_(1) {}  // NOLINT
  /// The list must outlive the view: fine for an argument, not for a variable.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  constexpr IntArrayRef(std::initializer_list<int64_t> list)  // NOLINT
      : data_(list.begin()), size_(list.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  template <typename Container, typename = decltype(std::data(std::declval<const Container&>())),
            typename = std::enable_if_t<
                std::is_same_v<std::remove_cv_t<std::remove_pointer_t<
                                   decltype(std::data(std::declval<const Container&>()))>>,
                               int64_t>>>
  constexpr IntArrayRef(const Container& c)  // NOLINT
      : data_(std::data(c)), size_(std::size(c)) {}

  constexpr const int64_t* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr const int64_t* begin() const { return data_; }
  constexpr const int64_t* end() const { return data_ + size_; }
  constexpr int64_t operator[](size_t i) const { return data_[i]; }
  std::vector<int64_t> vec() const { return {begin(), end()}; }

  friend bool operator==(IntArrayRef a, IntArrayRef b) {
    if (a.size_ != b.size_) return false;
    for (size_t i = 0; i < a.size_; ++i)
      if (a.data_[i] != b.data_[i]) return false;
    return true;
  }

 private:
  const int64_t* data_ = nullptr;
  size_t size_ = 0;
};

/// Writes "[2, 3]".
std::ostream& operator<<(std::ostream& out, IntArrayRef values);

}  // namespace kiln
