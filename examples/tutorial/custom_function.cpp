// Tutorial 5: a differentiable function with a hand-written backward, checked
// against finite differences.
#include <iostream>

#include <kiln/kiln.h>

using namespace kiln;

struct Cube : autograd::Function<Cube> {
  static Tensor forward(autograd::AutogradContext& ctx, const Tensor& x) {
    ctx.save_for_backward({x});
    return x * x * x;
  }
  static std::vector<Tensor> backward(autograd::AutogradContext& ctx, std::vector<Tensor> grads) {
    auto x = ctx.get_saved_variables()[0];
    return {grads[0] * 3.0 * x * x};
  }
};

int main() {
  auto x = from_vector<double>({1, 2, 3}, {3}).requires_grad_();
  auto y = Cube::apply(x);
  y.sum().backward();
  std::cout << y.grad_fn()->name() << ": dy/dx = " << x.grad() << "\n";
  auto check = gradcheck([](const std::vector<Tensor>& in) { return Cube::apply(in[0]); }, {x});
  return check.ok && x.grad().to_vector<double>() == std::vector<double>{3, 12, 27} ? 0 : 1;
}
