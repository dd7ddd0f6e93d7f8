# Tutorial 3 in PyTorch, for comparison (not run by CI).
import time
import torch

for device in ["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]:
    a, b = torch.randn(1000, 1000, device=device), torch.randn(1000, 1000, device=device)
    a @ b  # warm-up
    if device != "cpu": torch.cuda.synchronize(device)
    start = time.perf_counter()
    c = a @ b
    if device != "cpu": torch.cuda.synchronize(device)
    ms = (time.perf_counter() - start) * 1000
    print(f"{device}: {ms} ms, {2e9 / ms / 1e6} GFLOP/s")
    expected = a.cpu().double() @ b.cpu().double()
    assert (c.cpu().double() - expected).abs().max().item() <= 1e-3
