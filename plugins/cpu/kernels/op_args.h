// kernels/op_args.h — the SDK's kernel-facing types (kiln/sdk/op_args.h), used
// unqualified throughout the CPU kernels.
#ifndef KILN_CPU_KERNELS_OP_ARGS_H
#define KILN_CPU_KERNELS_OP_ARGS_H

#include "kiln/sdk/catalogue.h"
#include "kiln/sdk/op_args.h"

namespace kiln::cpu {

using sdk::dtype_name;
using sdk::expect_contiguous;
using sdk::expect_dtype;
using sdk::expect_same_shape;
using sdk::expect_shape;
using sdk::input_dtype;
using sdk::is_float_dtype;
using sdk::is_int_dtype;
using sdk::OpArgs;
using sdk::output_dtype;
using sdk::shape_string;
using sdk::TensorView;
using sdk::unsupported_dtype;
using sdk::view_dtype;

}  // namespace kiln::cpu

#endif  // KILN_CPU_KERNELS_OP_ARGS_H
