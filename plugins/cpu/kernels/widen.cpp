// Half-precision operands through float32 kernels (widen.h).
#include "widen.h"

#include <array>
#include <vector>

#include "elementwise.h"

namespace kiln::cpu {

namespace {

bool is_half(int32_t dtype) { return dtype == KILN_DTYPE_FLOAT16 || dtype == KILN_DTYPE_BFLOAT16; }

// Up to 8 inputs and 8 outputs (the ABI's limit), each view copied at this ABI's size
// (the frontend may have written larger ones) with its half dtype read as float32.
struct Float32Args {
  std::array<kiln_tensor_view, 8> inputs{}, outputs{};
  kiln_op_args args{};

  // False when the argument list is beyond the ABI's limits (the kernel reports it).
  bool init(const kiln_op_args* a) noexcept {
    if (a == nullptr || a->num_inputs > 8 || a->num_outputs > 8) return false;
    if ((a->num_inputs > 0 && a->inputs == nullptr) ||
        (a->num_outputs > 0 && a->outputs == nullptr))
      return false;
    args = *a;
    args.struct_size = sizeof args;
    return copy(a->inputs, a->num_inputs, inputs, args.inputs) &&
           copy(a->outputs, a->num_outputs, outputs, args.outputs);
  }

 private:
  static bool copy(const kiln_tensor_view* views, size_t count,
                   std::array<kiln_tensor_view, 8>& out, const kiln_tensor_view*& ptr) noexcept {
    if (count == 0) return true;
    const size_t stride = views[0].struct_size;
    if (stride < KILN_TENSOR_VIEW_SIZE_1_0) return false;
    for (size_t i = 0; i < count; ++i) {
      out[i] = *reinterpret_cast<const kiln_tensor_view*>(reinterpret_cast<const char*>(views) +
                                                          i * stride);
      out[i].struct_size = sizeof(kiln_tensor_view);
      if (is_half(out[i].dtype)) out[i].dtype = KILN_DTYPE_FLOAT32;
    }
    ptr = out.data();
    return true;
  }
};

// A contiguous float32 copy of one half-precision operand.
struct Widened {
  std::vector<float> data;
  std::vector<int64_t> strides;
};

TensorView float32_tensor(const TensorView& like, Widened& w) {
  const int32_t ndim = like.ndim;
  w.strides.assign(static_cast<size_t>(ndim), 1);
  for (int32_t d = ndim - 2; d >= 0; --d) w.strides[d] = w.strides[d + 1] * like.shape[d + 1];
  w.data.resize(static_cast<size_t>(like.numel()));
  TensorView t;
  t.data = reinterpret_cast<char*>(w.data.data());
  t.shape = like.shape;
  t.strides = w.strides.data();
  t.ndim = ndim;
  t.dtype = KILN_DTYPE_FLOAT32;
  t.itemsize = sizeof(float);
  return t;
}

}  // namespace

bool has_half_operand(const kiln_op_args* args) noexcept {
  for (size_t i = 0; i < args->num_inputs; ++i)
    if (is_half(input_dtype(args, i))) return true;
  for (size_t i = 0; i < args->num_outputs; ++i)
    if (is_half(output_dtype(args, i))) return true;
  return false;
}

int32_t supports_as_float32(void* context, const kiln_op_args* args,
                            int32_t (*supports)(void*, const kiln_op_args*)) noexcept {
  // float32/float64 calls, the common case, ask the kernel's own rule unchanged.
  if (args == nullptr || !has_half_operand(args)) return supports(context, args);
  Float32Args f;
  if (!f.init(args)) return 0;
  return supports(context, &f.args);
}

void run_widened(const OpArgs& args, void (*impl)(const OpArgs&)) {
  const kiln_op_args& raw = args.raw();
  Float32Args f;
  KILN_SDK_CHECK_ARG(f.init(&raw), "more than 8 inputs or outputs, or malformed views");
  std::array<Widened, 16> copies;
  std::vector<std::pair<TensorView, TensorView>> narrow;  // (half output, its float32 copy)
  auto widen = [&](kiln_tensor_view& view, const TensorView& half, Widened& w, bool output) {
    const TensorView wide = float32_tensor(half, w);
    copy_tensor(wide, half);  // outputs too: some kernels update them in place
    view.data = wide.data;
    view.byte_offset = 0;
    view.strides = w.strides.data();
    if (output) narrow.emplace_back(half, wide);
  };
  for (size_t i = 0; i < raw.num_inputs; ++i) {
    const TensorView t = args.input(i);
    if (is_half(t.dtype)) widen(f.inputs[i], t, copies[i], false);
  }
  for (size_t i = 0; i < raw.num_outputs; ++i) {
    const TensorView t = args.output(i);
    if (is_half(t.dtype)) widen(f.outputs[i], t, copies[8 + i], true);
  }
  impl(OpArgs(&f.args));
  for (const auto& [half, wide] : narrow) copy_tensor(half, wide);
}

}  // namespace kiln::cpu
