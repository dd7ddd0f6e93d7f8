// kiln/sdk/catalogue.h — the op catalogue (share/doc/kiln/ops.json) for kernels: each
// op's dtype rule and layout flags, and a `supports` predicate that applies the rule.
//
// kiln/op_catalogue.h, generated from the catalogue, lists every op once; this header
// turns that list into constexpr entries, kiln::sdk::catalogue::<op> (catalogue::add
// for "kiln.add"), so that a kernel table states only what is its own:
// @code
//   {"kiln.add", &kiln::sdk::run_kernel<add>,
//    &kiln::sdk::supports_catalogue_dtypes<kiln::sdk::catalogue::add>, kiln::sdk::kStridedInOut},
// @endcode
#ifndef KILN_SDK_CATALOGUE_H
#define KILN_SDK_CATALOGUE_H

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kiln/c_api.h"
#include "kiln/op_catalogue.h"
#include "kiln/sdk/kernel_table.h"
#include "kiln/sdk/op_args.h"

namespace kiln::sdk {

/// One catalogue op, as share/doc/kiln/ops.json describes it (see kiln/op_catalogue.h).
struct CatalogueOp {
  const char* name;  ///< "kiln.add"
  int32_t version;
  uint32_t dtypes;        ///< KILN_DTYPES_* mask for the deciding operand
  bool dtype_of_output;   ///< the deciding operand is an output (else an input)
  int32_t dtype_operand;  ///< its index
  bool one_dtype;         ///< every other operand has its dtype
  uint32_t kernel_flags;  ///< the KILN_KERNEL_* layout flags a kernel may set
  bool differentiable;    ///< the frontend records a gradient for it
  int32_t num_inputs;
  int32_t num_outputs;  ///< the least: kiln.non_finite_check_and_unscale takes 2 to 8
};

/// Whether `dtype` is in the KILN_DTYPES_* mask `mask`.
constexpr bool dtype_in(uint32_t mask, int32_t dtype) noexcept {
  return dtype > 0 && dtype < 32 && (mask >> dtype & 1u) != 0;
}
constexpr bool is_float_dtype(int32_t dtype) noexcept { return dtype_in(KILN_DTYPES_FLOAT, dtype); }
/// int32, int64, uint8.
constexpr bool is_int_dtype(int32_t dtype) noexcept {
  return dtype_in(KILN_DTYPES_NON_BOOL & ~KILN_DTYPES_FLOAT, dtype);
}

namespace catalogue {
#define KILN_SDK_CATALOGUE_ENTRY(op, version, dtypes, of_output, operand, one, flags, grad, \
                                 inputs, outputs)                                           \
  inline constexpr CatalogueOp op{"kiln." #op, version, dtypes,    of_output != 0, operand, \
                                  one != 0,    flags,   grad != 0, inputs,         outputs};
KILN_OP_CATALOGUE(KILN_SDK_CATALOGUE_ENTRY)
#undef KILN_SDK_CATALOGUE_ENTRY

#define KILN_SDK_CATALOGUE_POINTER(op, ...) &op,
/// Every op, in catalogue order.
inline constexpr const CatalogueOp* all[] = {KILN_OP_CATALOGUE(KILN_SDK_CATALOGUE_POINTER)};
#undef KILN_SDK_CATALOGUE_POINTER
}  // namespace catalogue

/// The catalogue entry of op `name` ("kiln.add"), or nullptr.
inline const CatalogueOp* find_catalogue_op(const char* name) noexcept {
  if (name == nullptr) return nullptr;
  for (const CatalogueOp* op : catalogue::all)
    if (std::strcmp(op->name, name) == 0) return op;
  return nullptr;
}

/// Whether `args` satisfy `op`'s dtype rule: the deciding operand's dtype is in the
/// op's class and, for a one-dtype op, every operand has that dtype. Never throws.
inline bool catalogue_dtypes_ok(const CatalogueOp& op, const kiln_op_args* args) noexcept {
  if (args == nullptr) return false;
  const kiln_dtype d = op.dtype_of_output
                           ? output_dtype(args, static_cast<size_t>(op.dtype_operand))
                           : input_dtype(args, static_cast<size_t>(op.dtype_operand));
  if (!dtype_in(op.dtypes, d)) return false;
  if (!op.one_dtype) return true;
  for (size_t i = 0; i < args->num_inputs; ++i)
    if (input_dtype(args, i) != d) return false;
  for (size_t i = 0; i < args->num_outputs; ++i)
    if (output_dtype(args, i) != d) return false;
  return true;
}

/// A `supports` predicate for a KernelEntry (kiln/sdk/kernel_table.h) that applies the
/// catalogue's dtype rule for op `Op`: exactly the catalogue's dtypes for a one-dtype
/// op; for an op whose operands differ (comparisons, indices, masks) only the deciding
/// operand is checked, so such a kernel adds its own checks of the others. A kernel
/// that covers fewer dtypes writes its own predicate.
template <const CatalogueOp& Op>
int32_t supports_catalogue_dtypes(void*, const kiln_op_args* args) noexcept {
  return catalogue_dtypes_ok(Op, args) ? 1 : 0;
}

/// The kernel table entry of catalogue op `Op` for a kernel that takes exactly the
/// catalogue's dtypes: the name and `supports` come from the catalogue, so a table
/// states only its kernel and layout flags.
template <const CatalogueOp& Op>
KernelEntry catalogue_kernel(kiln_kernel_fn run, uint32_t flags) {
  return {Op.name, run, &supports_catalogue_dtypes<Op>, flags};
}

/// The same, with the layout flags the catalogue allows (the op's `layout`): for a
/// kernel that takes every layout the catalogue lets a kernel take.
template <const CatalogueOp& Op>
KernelEntry catalogue_kernel(kiln_kernel_fn run) {
  return catalogue_kernel<Op>(run, Op.kernel_flags);
}

/// The kernel table entry of catalogue op `Op` with a `supports` of the kernel's own
/// (nullptr: every valid argument list): only the name comes from the catalogue, so a
/// misspelt op is a compile error rather than a kernel nobody looks up.
template <const CatalogueOp& Op>
KernelEntry catalogue_entry(kiln_kernel_fn run, SupportsFn supports, uint32_t flags) {
  return {Op.name, run, supports, flags};
}

}  // namespace kiln::sdk

#endif  // KILN_SDK_CATALOGUE_H
