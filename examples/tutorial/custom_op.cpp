// Tutorial 8: your own kernel. The plugin in myops_plugin/ defines the op
// "myops.softplus" on its device myops:0; this program loads it, calls the op by name,
// and makes it differentiable with a Function (PyTorch: a C++ extension's op from
// torch.ops.load_library in a torch.autograd.Function).
#include <iostream>

#include <kiln/kiln.h>

using namespace kiln;

struct Softplus : autograd::Function<Softplus> {
  static Tensor forward(autograd::AutogradContext& ctx, const Tensor& x) {
    ctx.save_for_backward({x});
    auto y = empty_like(x);
    call_op("myops.softplus", {x}, {y}, {{"beta", 1.0}});
    return y;
  }
  static std::vector<Tensor> backward(autograd::AutogradContext& ctx, std::vector<Tensor> grads) {
    return {grads[0] * sigmoid(ctx.get_saved_variables()[0])};
  }
};

int main(int argc, char** argv) {
  load_plugins(argc > 1 ? argv[1] : "myops_plugin");
  auto x = linspace(-30, 30, 1001, float64).to("myops:0").requires_grad_();
  auto y = Softplus::apply(x);
  y.sum().backward();
  auto expected = where(x > 30, x, log(1 + exp(x)));
  std::cout << y.grad_fn()->name() << " on " << y.device() << ": " << y.slice(0, 995, 1001) << "\n";
  bool ok = allclose(y, expected, 1e-10, 1e-12) && allclose(x.grad(), sigmoid(x));
  auto f = [](const std::vector<Tensor>& in) { return Softplus::apply(in[0]); };
  return ok && gradcheck(f, {x.slice(0, 0, 5).detach().requires_grad_()}).ok ? 0 : 1;
}
