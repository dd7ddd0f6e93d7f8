# Tutorial 6 in PyTorch, for comparison (not run by CI).
import torch

x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
y = (x * x).sum()
y.backward(retain_graph=True)  # keep the graph for a second pass
y.backward()                   # gradients accumulate: 2 * 2x
accumulated = x.grad.tolist() == [4, 8, 12]
d = x.detach()                 # the same data, no history
detached = not d.requires_grad and not (d * 2).requires_grad
with torch.no_grad():          # nothing is recorded in this block
    recorded = (x * 2).requires_grad
print(accumulated, detached, not recorded)
assert accumulated and detached and not recorded
