"""The same-run references of kiln-bench-fft: NumPy on the CPU, torch.fft on a GPU.

    python3 bench/fft_reference.py cpu:0|cuda:0 [REPEAT]

Prints lines in kiln-bench-fft's format (fft_bench, workload, implementation, median
seconds of 7 timed runs after 2 warm-up runs). NumPy 1.24's pocketfft computes complex64
and float32 inputs in double precision and returns complex128 (its cost is counted).
"""
import sys
import time

import numpy as np


REPEAT = int(sys.argv[2]) if len(sys.argv) > 2 else 7


def median(run, repeat=None):
    repeat = repeat or REPEAT
    run()
    run()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def report(workload, implementation, seconds):
    print(f"fft_bench\t{workload}\t{implementation}\t{seconds:.6e}", flush=True)


def main():
    device = sys.argv[1] if len(sys.argv) > 1 else "cpu:0"
    rng = np.random.default_rng(1)
    signal = (rng.standard_normal(1 << 20) + 1j * rng.standard_normal(1 << 20)).astype(np.complex64)
    images = rng.standard_normal((64, 256, 256)).astype(np.float32)
    if device.startswith("cpu"):
        report("fft_1d_2^20_complex64", "numpy", median(lambda: np.fft.fft(signal)))
        report("rfft2_64x256x256_float32", "numpy", median(lambda: np.fft.rfft2(images)))
        return
    import torch

    x = torch.from_numpy(signal).to("cuda")
    im = torch.from_numpy(images).to("cuda")

    def timed(fn):
        def run():
            fn()
            torch.cuda.synchronize()

        return median(run)

    report("fft_1d_2^20_complex64", "torch.fft", timed(lambda: torch.fft.fft(x)))
    report("rfft2_64x256x256_float32", "torch.fft", timed(lambda: torch.fft.rfft2(im)))


if __name__ == "__main__":
    main()
