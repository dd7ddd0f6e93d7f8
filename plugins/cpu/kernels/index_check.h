// kernels/index_check.h — validation shared by the ops that take int64 indices.
#ifndef KILN_CPU_KERNELS_INDEX_CHECK_H
#define KILN_CPU_KERNELS_INDEX_CHECK_H

#include <cstdint>

#include "op_args.h"

namespace kiln::cpu {

/// Throws KILN_STATUS_INVALID_ARGUMENT naming the first index (in row-major order)
/// outside [0, bound), its position, the dimension `dim` and the bound. `index` is an
/// int64 tensor of any strides. Cheap (one parallel pass) when every index is valid.
void check_indices(const TensorView& index, int64_t bound, int64_t dim);

}  // namespace kiln::cpu

#endif  // KILN_CPU_KERNELS_INDEX_CHECK_H
