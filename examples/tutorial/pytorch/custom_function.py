# Tutorial 5 in PyTorch, for comparison (not run by CI).
import torch


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * 3.0 * x * x


x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
y = Cube.apply(x)
y.sum().backward()
print(f"{y.grad_fn.name()}: dy/dx = {x.grad}")
assert torch.autograd.gradcheck(Cube.apply, (x,))
assert x.grad.tolist() == [3, 12, 27]
