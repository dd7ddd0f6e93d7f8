# Tutorial 9 in PyTorch, for comparison (not run by CI).
import torch

x = torch.arange(12.0).reshape(3, 4)
row = x[1]                        # a view
block = x[0:2, 1:3]               # a view
last = x[..., -1]                 # a view
picked = x[torch.tensor([2, 0])]  # rows 2 and 0, a copy
positive = x[x > 8]               # by a boolean mask, 1-D
x[x < 2] = -1                     # write through a mask
top, where = x.flatten().topk(3)
print(row, block, last, picked, positive, x, top, where, sep="\n")
assert positive.tolist() == [9, 10, 11] and x[0].tolist() == [-1, -1, 2, 3]
assert where.tolist() == [11, 10, 9]
