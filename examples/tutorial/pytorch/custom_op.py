# Tutorial 8 in PyTorch: a kernel of your own, built as a C++ extension that registers
# the op myops::softplus (TORCH_LIBRARY), loaded and made differentiable here.
import torch

torch.ops.load_library("build/libmyops.so")


class Softplus(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.ops.myops.softplus(x, 1.0)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.sigmoid(x)


x = torch.linspace(-30, 30, 1001, dtype=torch.float64).requires_grad_()
y = Softplus.apply(x)
y.sum().backward()
expected = torch.where(x > 30, x, torch.log(1 + torch.exp(x)))
print(y.grad_fn.name(), "on", y.device, ":", y[995:1001])
ok = torch.allclose(y, expected, 1e-10, 1e-12) and torch.allclose(x.grad, torch.sigmoid(x))
check = torch.autograd.gradcheck(Softplus.apply, (x[0:5].detach().requires_grad_(),))
assert ok and check
