// kiln/sdk/dtype_dispatch.h — the 1.0 name of kiln/sdk/dtype_visit.h, kept for
// out-of-tree plugins through 1.x. It includes that header (the dtype types are the
// same) and defines the old function names as deprecated forwarders, each of which
// warns when used:
//
//   dispatch<Lists...>(dtype, fn)   is now visit_dtype<Lists...>(dtype, fn)
//   dispatch_list(dtype, list, fn)  is now visit_dtype_list(dtype, list, fn)
//   dispatch_in<Mask>(dtype, fn)    is now visit_dtype_in<Mask>(dtype, fn)
//   dispatch_by_size(size, fn)      is now visit_by_size(size, fn)
//
// New code includes kiln/sdk/dtype_visit.h. ("Dispatch" in Kiln now means only the
// frontend's routing of an op to a device's kernel.)
#ifndef KILN_SDK_DTYPE_DISPATCH_H
#define KILN_SDK_DTYPE_DISPATCH_H

#include <cstddef>
#include <cstdint>
#include <utility>

#include "kiln/c_api.h"
#include "kiln/sdk/dtype_visit.h"

namespace kiln::sdk {
inline namespace dtypes {

template <class... Ts, class F>
[[deprecated("use visit_dtype_list")]] inline bool dispatch_list(kiln_dtype dtype,
                                                                 TypeList<Ts...> list, F&& fn) {
  return visit_dtype_list(dtype, list, std::forward<F>(fn));
}

template <class... Lists, class F>
[[deprecated("use visit_dtype")]] inline bool dispatch(kiln_dtype dtype, F&& fn) {
  return visit_dtype<Lists...>(dtype, std::forward<F>(fn));
}

template <uint32_t Mask, class F>
[[deprecated("use visit_dtype_in")]] inline bool dispatch_in(kiln_dtype dtype, F&& fn) {
  return visit_dtype_in<Mask>(dtype, std::forward<F>(fn));
}

template <class F>
[[deprecated("use visit_by_size")]] inline bool dispatch_by_size(size_t size, F&& fn) {
  return visit_by_size(size, std::forward<F>(fn));
}

}  // namespace dtypes
}  // namespace kiln::sdk

#endif  // KILN_SDK_DTYPE_DISPATCH_H
