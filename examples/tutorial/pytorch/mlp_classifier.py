# Tutorial 2 in PyTorch, for comparison (not run by CI).
import torch
from torch import nn
from torchvision import datasets, transforms

torch.manual_seed(0)
model = nn.Sequential(nn.Flatten(), nn.Linear(784, 128),
                      nn.ReLU(), nn.Linear(128, 10))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
to_tensor = transforms.ToTensor()
train = torch.utils.data.DataLoader(datasets.FashionMNIST("data", train=True, transform=to_tensor),
                                    batch_size=64, shuffle=True)
for images, labels in train:
    optimizer.zero_grad()
    loss = criterion(model(images), labels)
    loss.backward()
    optimizer.step()
model.eval()
with torch.no_grad():
    test = torch.utils.data.DataLoader(datasets.FashionMNIST("data", train=False, transform=to_tensor),
                                       batch_size=1000)
    correct, total = 0, 0
    for images, labels in test:
        correct += (model(images).argmax(1) == labels).sum().item()
        total += labels.size(0)
accuracy = correct / total
print(f"test accuracy: {accuracy}")
assert accuracy > 0.8
