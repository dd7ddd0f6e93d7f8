// operator<< for tensors, in PyTorch's layout:
//   tensor([[ 1.5000, -2.0000],
//           [ 3.0000,  4.2500]], device='cuda:0', dtype=float64)
// Tensors over 1000 elements show the first and last three entries of each long
// dimension, reading only those from the device.

#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>

#include "kiln/autograd.h"
#include "kiln/ops.h"
#include "ops/common.h"

namespace kiln {

namespace {

constexpr int64_t kSummarizeAbove = 1000;
constexpr int64_t kEdgeItems = 3;

struct Formatter {
  enum class Style { Integer, FloatIntegral, Fixed, Scientific, Bool } style;

  std::string format(double v) const {
    char buf[64];
    switch (style) {
      case Style::Bool:
        return v != 0 ? "True" : "False";
      case Style::Integer:
        std::snprintf(buf, sizeof buf, "%.0f", v);
        break;
      case Style::FloatIntegral:
        if (std::isfinite(v))
          std::snprintf(buf, sizeof buf, "%.0f.", v);
        else
          std::snprintf(buf, sizeof buf, "%s", std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
        break;
      case Style::Fixed:
      case Style::Scientific:
        if (std::isfinite(v))
          std::snprintf(buf, sizeof buf, style == Style::Fixed ? "%.4f" : "%.4e", v);
        else
          std::snprintf(buf, sizeof buf, "%s", std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
        break;
    }
    return buf;
  }
};

Formatter make_formatter(DType dtype, const std::vector<double>& values) {
  Formatter f;
  if (dtype == DType::Bool)
    f.style = Formatter::Style::Bool;
  else if (!is_floating(dtype))
    f.style = Formatter::Style::Integer;
  else {
    bool integral = true;
    double max_abs = 0, min_abs = INFINITY;
    for (double v : values) {
      if (!std::isfinite(v)) continue;
      integral &= v == std::floor(v);
      max_abs = std::max(max_abs, std::fabs(v));
      if (v != 0) min_abs = std::min(min_abs, std::fabs(v));
    }
    if (integral && max_abs < 1e8)
      f.style = Formatter::Style::FloatIntegral;
    else if (max_abs >= 1e8 || min_abs < 1e-4 || max_abs / min_abs > 1e6)
      f.style = Formatter::Style::Scientific;
    else
      f.style = Formatter::Style::Fixed;
  }
  return f;
}

// Prints the (possibly summarized) contiguous `cells` with `shape`, right-aligned to
// `width`; `cut[d]` says whether dimension d was cut to its first and last kEdgeItems
// entries.
void print_dims(std::ostream& out, const std::vector<std::string>& cells, IntArrayRef shape,
                const std::vector<bool>& cut, size_t width, size_t dim, int64_t base,
                int64_t stride, size_t indent) {
  out << '[';
  int64_t n = shape[dim];
  int64_t inner = stride / std::max<int64_t>(n, 1);
  bool last = dim + 1 == shape.size();
  for (int64_t i = 0; i < n; ++i) {
    if (i > 0) {
      out << ',';
      if (last)
        out << ' ';
      else
        out << std::string(shape.size() - dim - 1, '\n') << std::string(indent + dim + 1, ' ');
    }
    if (cut[dim] && i == kEdgeItems) {
      out << "...,";
      if (last)
        out << ' ';
      else
        out << std::string(shape.size() - dim - 1, '\n') << std::string(indent + dim + 1, ' ');
    }
    if (last) {
      const std::string& s = cells[static_cast<size_t>(base + i)];
      out << std::string(width - s.size(), ' ') << s;
    } else {
      print_dims(out, cells, shape, cut, width, dim + 1, base + i * inner, inner, indent);
    }
  }
  out << ']';
}

}  // namespace

std::ostream& operator<<(std::ostream& out, const Tensor& t) {
  if (!t.defined()) return out << "tensor(undefined)";
  NoGradGuard no_grad;
  Tensor shown = t;
  std::vector<bool> cut(static_cast<size_t>(t.dim()), false);
  if (t.numel() > kSummarizeAbove) {
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (shown.size(d) <= 2 * kEdgeItems) continue;
      shown = cat({shown.narrow(d, 0, kEdgeItems), shown.narrow(d, -kEdgeItems, kEdgeItems)}, d);
      cut[static_cast<size_t>(d)] = true;
    }
  }
  // A complex element prints as PyTorch's "1.5000-2.0000j", both parts in one format.
  const bool complex_values = is_complex(t.dtype());
  std::vector<double> values = (complex_values ? view_as_real(shown) : shown).to_vector<double>();
  Formatter f = make_formatter(real_dtype(t.dtype()), values);
  std::vector<std::string> cells;
  size_t width = 0;
  for (size_t i = 0; i < values.size(); i += complex_values ? 2 : 1) {
    if (!complex_values) {
      cells.push_back(f.format(values[i]));
    } else {
      const double im = values[i + 1];
      const bool minus = std::signbit(im) && !std::isnan(im);
      cells.push_back(f.format(values[i]) + (minus ? "-" : "+") + f.format(std::fabs(im)) + "j");
    }
    width = std::max(width, cells.back().size());
  }
  out << "tensor(";
  if (t.dim() == 0)
    out << cells[0];
  else if (t.numel() == 0)
    out << "[]";
  else
    print_dims(out, cells, shown.shape(), cut, width, 0, 0, shown.numel(), 7);
  if (t.numel() == 0 && t.dim() > 1) out << ", size=" << t.shape();
  Device d = t.device();
  if (d.backend() != "cpu" || d.index() != 0) out << ", device='" << d.str() << "'";
  DType dt = t.dtype();
  if (dt != DType::Float32 && dt != DType::Int64 && dt != DType::Bool && dt != DType::Complex64)
    out << ", dtype=" << dt;
  if (auto fn = t.grad_fn())
    out << ", grad_fn=<" << fn->name() << ">";
  else if (t.requires_grad())
    out << ", requires_grad=True";
  return out << ')';
}

}  // namespace kiln
