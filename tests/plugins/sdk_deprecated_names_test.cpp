// The SDK 1.0 names kept through 1.x for out-of-tree plugins (api/README.md,
// "Deprecated names (1.x)"): each still compiles and means what its new name means.
// Using one warns (-Wdeprecated-declarations); this file alone silences that, to use
// them on purpose. The rest of the tree builds with -Werror and so cannot use them.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kiln/c_api.h"
#include "kiln/op_catalogue.h"
#include "kiln/sdk/dtype_dispatch.h"
#include "kiln/sdk/dtype_visit.h"
#include "kiln/sdk/op_args.h"
#include "kiln/sdk/plugin.h"

// Understood by g++ and clang alike.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace {

namespace sdk = kiln::sdk;

static_assert(std::is_same_v<sdk::Tensor, sdk::TensorView>);
static_assert(std::is_same_v<sdk::Device, sdk::BackendDevice>);

// A device class as a plugin written against SDK 1.0 declares it.
class OldStyleDevice : public sdk::Device {
 public:
  void* allocate(size_t, size_t, sdk::Stream*) override { return nullptr; }
  void deallocate(void*, sdk::Stream*) override {}
  void copy(sdk::CopyKind, void*, const void*, size_t, sdk::Stream*) override {}
};
static_assert(std::is_base_of_v<sdk::BackendDevice, OldStyleDevice>);

// What a visit saw: whether it ran, and the dtype and size of the T it ran for.
struct Seen {
  bool handled = false;
  kiln_dtype dtype = KILN_DTYPE_INVALID;
  size_t size = 0;
  bool operator==(const Seen&) const = default;
};

template <class Visit>
Seen see(Visit&& visit) {
  Seen seen;
  seen.handled = visit([&](auto tag) {
    using T = typename decltype(tag)::type;
    seen.dtype = sdk::dtype_of<T>();
    seen.size = sizeof(T);
  });
  return seen;
}

const kiln_dtype kDtypes[] = {KILN_DTYPE_FLOAT32,  KILN_DTYPE_FLOAT64, KILN_DTYPE_FLOAT16,
                              KILN_DTYPE_BFLOAT16, KILN_DTYPE_INT32,   KILN_DTYPE_INT64,
                              KILN_DTYPE_UINT8,    KILN_DTYPE_BOOL,    KILN_DTYPE_COMPLEX64};

TEST(SdkDeprecatedNames, TypesAreTheNewOnes) {
  const int64_t shape[] = {2, 3};
  const int64_t strides[] = {3, 1};
  sdk::Tensor old_view;
  old_view.shape = shape;
  old_view.strides = strides;
  old_view.ndim = 2;
  const sdk::TensorView& view = old_view;
  EXPECT_EQ(view.numel(), 6);
  EXPECT_TRUE(view.is_contiguous());

  OldStyleDevice device;
  sdk::BackendDevice& base = device;
  EXPECT_EQ(base.kernels(), nullptr);
}

TEST(SdkDeprecatedNames, DispatchFunctionsForwardToTheirVisits) {
  for (const kiln_dtype dtype : kDtypes) {
    SCOPED_TRACE(sdk::dtype_name(dtype));
    const Seen visited =
        see([&](auto fn) { return sdk::visit_dtype<sdk::FloatTypes, sdk::IntTypes>(dtype, fn); });
    EXPECT_EQ(visited.handled, dtype != KILN_DTYPE_BOOL && dtype != KILN_DTYPE_COMPLEX64);
    EXPECT_EQ(
        see([&](auto fn) { return sdk::dispatch<sdk::FloatTypes, sdk::IntTypes>(dtype, fn); }),
        visited);
    EXPECT_EQ(see([&](auto fn) { return sdk::dispatch_list(dtype, sdk::AllTypes{}, fn); }),
              see([&](auto fn) { return sdk::visit_dtype_list(dtype, sdk::AllTypes{}, fn); }));
    EXPECT_EQ(see([&](auto fn) { return sdk::dispatch_in<KILN_DTYPES_FLOAT>(dtype, fn); }),
              see([&](auto fn) { return sdk::visit_dtype_in<KILN_DTYPES_FLOAT>(dtype, fn); }));
  }
  EXPECT_EQ(see([](auto fn) { return sdk::visit_dtype<sdk::FloatTypes>(KILN_DTYPE_FLOAT16, fn); }),
            (Seen{true, KILN_DTYPE_FLOAT16, 2}));
}

TEST(SdkDeprecatedNames, DispatchBySizeForwardsToVisitBySize) {
  for (size_t size = 0; size <= 9; ++size) {
    SCOPED_TRACE(size);
    size_t old_size = 0, new_size = 0;
    const bool old_handled = sdk::dispatch_by_size(
        size, [&](auto tag) { old_size = sizeof(typename decltype(tag)::type); });
    const bool new_handled = sdk::visit_by_size(
        size, [&](auto tag) { new_size = sizeof(typename decltype(tag)::type); });
    EXPECT_EQ(old_handled, new_handled);
    EXPECT_EQ(old_size, new_size);
    EXPECT_EQ(new_handled, size == 1 || size == 2 || size == 4 || size == 8);
  }
}

}  // namespace
