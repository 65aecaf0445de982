#!/usr/bin/env python3
"""PyTorch eager training-step time of the models bench/train_step.py runs,
for comparison in the same session (needs torch: a virtual environment with
the PyPI wheel; never a dependency of Strata).

    PYTHON bench/torch_step.py MODEL --threads T --steps N [--bf16]

MODEL: `mlp` (4 linear layers 1024-1024-1024-1024-10 with ReLU, batch 256)
or `gpt-tiny` (4 pre-LN blocks, hidden 256, 4 heads, sequence 128, byte
vocabulary, tied output embedding, GELU (tanh), batch 16), trained with
AdamW (lr 1e-3) on random data, as strata-model's models of the same names.
--bf16 runs forward and loss under torch.autocast("cpu", dtype=bfloat16).
Prints `mean_ms X` (wall time) and `cpu_ms Y` (this process's CPU time, all
threads) per step over steps 2..N.
"""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, h, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(h), nn.LayerNorm(h)
        self.q, self.k, self.v = nn.Linear(h, h), nn.Linear(h, h), \
            nn.Linear(h, h)
        self.proj = nn.Linear(h, h)
        self.fc, self.out = nn.Linear(h, 4 * h), nn.Linear(4 * h, h)

    def forward(self, x):
        b, s, h = x.shape
        d = h // self.heads
        n = self.ln1(x)

        def split(t):
            return t.view(b, s, self.heads, d).transpose(1, 2)
        q, k, v = split(self.q(n)), split(self.k(n)), split(self.v(n))
        scores = q @ k.transpose(-1, -2) * (d ** -0.5)
        mask = torch.ones(s, s, dtype=torch.bool).triu(1)
        probs = scores.masked_fill(mask, float("-inf")).softmax(-1)
        ctx = (probs @ v).transpose(1, 2).reshape(b, s, h)
        x = x + self.proj(ctx)
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, layers=4, h=256, heads=4, seq=128, vocab=256):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, h), nn.Embedding(seq, h)
        self.blocks = nn.ModuleList(Block(h, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(h)
        for p in self.parameters():  # GPT-2's initialisation scale
            if p.dim() == 2:
                nn.init.normal_(p, std=0.02)

    def forward(self, tokens, targets):
        x = self.wte(tokens) + self.wpe.weight[:tokens.shape[1]]
        for block in self.blocks:
            x = block(x)
        logits = self.ln(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(),
                               targets.reshape(-1))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(),
                                 nn.Linear(1024, 1024), nn.ReLU(),
                                 nn.Linear(1024, 1024), nn.ReLU(),
                                 nn.Linear(1024, 10))

    def forward(self, x, y):
        return F.cross_entropy(self.net(x).float(), y)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model", choices=["mlp", "gpt-tiny"])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--bf16", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    if args.model == "mlp":
        model = MLP()
        batch = (torch.randn(256, 1024), torch.randint(0, 10, (256,)))
    else:
        model = GPT()
        batch = (torch.randint(0, 256, (16, 128)),
                 torch.randint(0, 256, (16, 128)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    times, cpu = [], []
    for _ in range(args.steps):
        start = time.perf_counter()
        cpu_start = time.process_time()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16,
                            enabled=args.bf16):
            loss = model(*batch)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - cpu_start)
    steady = times[1:] if len(times) > 1 else times
    steady_cpu = cpu[1:] if len(cpu) > 1 else cpu
    print("mean_ms %.3f cpu_ms %.3f loss %.6f" % (
        1e3 * sum(steady) / len(steady), 1e3 * sum(steady_cpu) /
        len(steady_cpu), loss.item()))


if __name__ == "__main__":
    main()
