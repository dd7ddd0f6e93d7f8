# Tutorial 1 in PyTorch, for comparison (not run by CI).
import torch

torch.manual_seed(0)
x = torch.randn(200, 1)
y = 3.0 * x + 2.0 + 0.1 * torch.randn(200, 1)
model = torch.nn.Linear(1, 1)
criterion = torch.nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(200):
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
w, b = model.weight.item(), model.bias.item()
print(f"w = {w}, b = {b}")
assert abs(w - 3) < 0.05 and abs(b - 2) < 0.05
