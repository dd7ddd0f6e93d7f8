# Tutorial 10: a convolution through the FFT, checked against conv1d; a low-pass filter.
import math

import torch

torch.manual_seed(0)
signal, kernel = torch.randn(4, 1, 1000), torch.randn(1, 1, 31)
k, n = kernel.shape[-1], signal.shape[-1] + kernel.shape[-1] - 1  # long enough: no wrap-around
spectrum = torch.fft.rfft(signal, n) * torch.fft.rfft(kernel.flip(-1), n)
via_fft = torch.fft.irfft(spectrum, n)[..., k - 1 : signal.shape[-1]]
direct = torch.nn.functional.conv1d(signal, kernel)  # a cross-correlation
err = (via_fft - direct).abs().max().item()
t = torch.linspace(0, 1, 1000)
tone = torch.sin(2 * math.pi * 5 * t)
noisy = tone + 0.3 * torch.randn(1000)
keep = torch.fft.rfftfreq(1000, 1 / 1000) < 20  # the frequencies below 20 Hz
clean = torch.fft.irfft(torch.fft.rfft(noisy) * keep, 1000)
before = (noisy - tone).abs().mean().item()
after = (clean - tone).abs().mean().item()
print(f"conv via FFT vs conv1d: {err}\nnoise {before} -> {after}")
assert err < 1e-4 and after < before / 3
