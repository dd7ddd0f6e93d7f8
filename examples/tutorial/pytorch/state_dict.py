# Tutorial 7 in PyTorch, for comparison (not run by CI).
import torch

torch.manual_seed(0)
model = torch.nn.Linear(4, 2)
torch.save(model.state_dict(), "model.pt")
restored = torch.nn.Linear(4, 2)  # different random weights
restored.load_state_dict(torch.load("model.pt"))
x = torch.randn(3, 4)
diff = (model(x) - restored(x)).abs().max().item()
print(f"max difference after loading: {diff}")
assert diff == 0
