# Tutorial 4 in PyTorch, for comparison (not run by CI).
import torch

other = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
x = torch.arange(0.0, 6.0, 1.0).reshape(2, 3)  # on the CPU
y = x.to(other)                                # a copy on the other device
z = (y * 2).to("cpu")                          # computed there, copied back
print(f"{x.device} -> {y.device} -> {z.device}\n{z}")
if other.type == "cuda":
    try:
        x + y  # operands on two devices: an error
        raise SystemExit(1)
    except RuntimeError as e:
        print(f"expected error: {e}")
assert z.flatten().tolist() == [0, 2, 4, 6, 8, 10]
