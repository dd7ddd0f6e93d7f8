// gradcheck: analytic gradients against central finite differences, in float64. A complex
// input or output counts as its (real, imaginary) pairs: each part of a complex input is
// perturbed on its own, which checks PyTorch's convention grad = dL/d(re) + i·dL/d(im).

#include <cmath>
#include <sstream>

#include "kiln/autograd.h"
#include "kiln/error.h"
#include "kiln/ops.h"
#include "kiln/random.h"

namespace kiln {

namespace {

// A fixed, well-spread projection of the output, so one backward() checks a
// random linear combination of the Jacobian's rows; it does not touch the global
// generator (gradcheck must not change the program's random stream).
Tensor projection_like(const Tensor& out) {
  std::vector<double> w(static_cast<size_t>(out.numel()));
  uint64_t state = 0x9E3779B97F4A7C15ull;
  for (double& v : w) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    v = 0.5 + static_cast<double>(state >> 40) / static_cast<double>(1ull << 24);  // [0.5, 1.5)
  }
  return from_vector<double>(w, out.shape(), TensorOptions(DType::Float64).device(out.device()));
}

// A complex tensor as its real pairs; a real one as it is.
Tensor pairs_of(const Tensor& t) { return is_complex(t.dtype()) ? view_as_real(t) : t; }

double project(const Tensor& out, const Tensor& w) {
  return (pairs_of(out).to(DType::Float64) * w).sum().item<double>();
}

}  // namespace

GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs, double eps, double atol, double rtol) {
  std::vector<Tensor> x;
  std::vector<bool> wants;
  for (const Tensor& t : inputs) {
    bool w = t.requires_grad();
    Tensor c = is_floating(t.dtype())  ? t.detach().to(DType::Float64).clone()
               : is_complex(t.dtype()) ? t.detach().to(DType::Complex128).clone()
                                       : t.detach();
    if (w) c.requires_grad_();
    x.push_back(c);
    wants.push_back(w);
  }
  GradcheckResult result;
  Tensor out = fn(x);
  KILN_CHECK(out.requires_grad(), "gradcheck: the function's output does not require grad");
  Tensor w = projection_like(pairs_of(out));
  (pairs_of(out).to(DType::Float64) * w).sum().backward();

  std::ostringstream msg;
  result.ok = true;
  NoGradGuard no_grad;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!wants[i]) continue;
    Tensor analytic = x[i].grad();
    const Tensor pairs = pairs_of(x[i]);
    std::vector<double> a = analytic.defined() ? pairs_of(analytic).to_vector<double>()
                                               : std::vector<double>(pairs.numel(), 0.0);
    std::vector<double> values = pairs.to_vector<double>();
    for (size_t j = 0; j < values.size(); ++j) {
      auto perturbed = [&](double delta) {
        std::vector<double> v = values;
        v[j] += delta;
        std::vector<Tensor> args = x;
        args[i] = from_vector<double>(v, pairs.shape(),
                                      TensorOptions(DType::Float64).device(x[i].device()));
        if (is_complex(x[i].dtype())) args[i] = view_as_complex(args[i]);
        return project(fn(args), w);
      };
      double numerical = (perturbed(eps) - perturbed(-eps)) / (2 * eps);
      double err = std::fabs(a[j] - numerical);
      result.max_abs_error = std::max(result.max_abs_error, err);
      if (!(err <= atol + rtol * std::fabs(numerical))) {
        if (result.ok)
          msg << "gradcheck: input " << i << " (shape " << x[i].shape() << "), element " << j
              << ": analytic " << a[j] << " vs numerical " << numerical << " (error " << err << ")";
        result.ok = false;
      }
    }
  }
  result.message = result.ok ? "gradcheck passed" : msg.str();
  return result;
}

}  // namespace kiln
