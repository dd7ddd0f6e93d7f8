#!/usr/bin/python3
"""PyTorch's side of the train-gpt comparison: kiln-gpt's model (examples/gpt/model.h,
which is nanoGPT's) written in PyTorch, one training step (zero_grad, forward,
cross-entropy, backward, AdamW at learning rate 0) timed on random tokens, for the
sizes of `kiln-bench compare --workloads train-gpt` (bench/compare/workloads.cpp).

Run in the same sitting as Kiln's side, on the CPU with Debian's python3-torch
(PyTorch 1.13, whose attention is written out: it has no fused SDPA on the CPU), or
on a GPU with PyTorch 2.x (F.scaled_dot_product_attention):

    /usr/bin/python3 bench/gpt_reference.py [--size small|medium] [--threads 1,2]
    build/bin/kiln-bench compare --workloads train-gpt --size small --devices cpu:0

Prints one line per thread count: the median ms per step over --reps steps after
--warmup steps.
"""

import argparse
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

SIZES = {  # layers, heads, width, context, batch: as prepare_train_gpt
    "tiny": (1, 2, 16, 8, 2),
    "small": (4, 4, 128, 64, 16),
    "medium": (6, 6, 384, 256, 8),
}
VOCAB = 65


class Block(nn.Module):
    def __init__(self, heads, width):
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.c_attn, self.attn_proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.c_fc, self.c_proj = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def attention(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (y.view(b, t, self.heads, c // self.heads).transpose(1, 2) for y in (q, k, v))
        if hasattr(F, "scaled_dot_product_attention"):
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
            mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
            y = F.softmax(scores.masked_fill(mask, float("-inf")), dim=-1) @ v
        return self.attn_proj(y.transpose(1, 2).reshape(b, t, c))

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x))))


class GPT(nn.Module):
    def __init__(self, layers, heads, width, context):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(VOCAB, width), nn.Embedding(context, width)
        self.h = nn.ModuleList(Block(heads, width) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)
        self.lm_head = nn.Linear(width, VOCAB, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.size(1), device=idx.device))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def time_step(size, device, warmup, reps):
    layers, heads, width, context, batch = SIZES[size]
    model = GPT(layers, heads, width, context).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=0.0)
    x = torch.randint(0, VOCAB, (batch, context), device=device)
    y = torch.randint(0, VOCAB, (batch, context), device=device)
    times = []
    for i in range(warmup + reps):
        start = time.perf_counter()
        opt.zero_grad()
        F.cross_entropy(model(x).view(-1, VOCAB), y.view(-1)).backward()
        opt.step()
        if device != "cpu":
            torch.cuda.synchronize()
        if i >= warmup:
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", default="small", choices=sorted(SIZES))
    p.add_argument("--threads", default="1,2", help="CPU thread counts to try")
    p.add_argument("--device", default="cpu")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--reps", type=int, default=30)
    a = p.parse_args()
    torch.manual_seed(0)
    print(f"PyTorch {torch.__version__}, train-gpt {a.size} {SIZES[a.size]}, {a.device}")
    for threads in [int(t) for t in a.threads.split(",")]:
        torch.set_num_threads(threads)
        ms = time_step(a.size, a.device, a.warmup, a.reps)
        print(f"threads {threads}: {ms:.2f} ms/step")


if __name__ == "__main__":
    main()
