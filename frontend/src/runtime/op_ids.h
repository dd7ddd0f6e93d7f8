#pragma once
// The catalogue ops the frontend calls, as dense ids so each device caches its kernels
// in an array: one per entry of KILN_OP_CATALOGUE (kiln/op_catalogue.h, generated from
// api/ops.json), in catalogue order. The ABI itself only ever sees the names.

#include <cstddef>
#include <cstdint>

#include "kiln/op_catalogue.h"

namespace kiln::detail {

enum class OpId : uint16_t {
#define KILN_OP_ENUM(name, ...) name,
  KILN_OP_CATALOGUE(KILN_OP_ENUM)
#undef KILN_OP_ENUM
};

#define KILN_OP_COUNT(name, ...) +1
inline constexpr size_t kNumOps = 0 KILN_OP_CATALOGUE(KILN_OP_COUNT);
#undef KILN_OP_COUNT
static_assert(kNumOps == KILN_OP_CATALOGUE_SIZE);

/// "kiln.add" for OpId::add.
const char* op_name(OpId op);
/// The catalogue version of `op` the frontend asks plugins for.
int32_t op_version(OpId op);

}  // namespace kiln::detail
