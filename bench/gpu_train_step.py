#!/usr/bin/env python3
"""GPT-2 small training step on one GPU: Strata (strata-run --device=cuda)
beside PyTorch eager on the same model, in the same run.

The PyTorch model mirrors `strata-model gpt --preset gpt2-small` op for op:
pre-LN blocks, separate q/k/v projections with bias, an explicit causal
softmax (no fused attention: eager PyTorch on the same ops), the tanh GELU,
learned positions, tied embeddings, cross-entropy over every position, AdamW.
Both run in FP32 with TF32 off (strata's CUDA kernels are FP32 throughout),
unless --tf32 is given (then cuBLAS may use TF32 tensor cores on both sides).

Model FLOP utilisation uses the standard count 6 N T + 12 L H S T per step
(N parameters, T tokens, L layers, H hidden, S sequence) against the
device's peak (FP32: H100 SXM 67 TFLOP/s, H200 67; TF32 dense 495).

    python3 bench/gpu_train_step.py [--build build] [--batch 8] [--seq 1024]
        [--steps 20] [--warmup 3] [--tf32] [--out bench/gpu-train-step.md]

Needs a CUDA GPU, PyTorch with CUDA, and a build with the CUDA backend.
"""
import argparse
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import sh  # noqa: E402

PEAK_TFLOPS = {  # dense FP32 / TF32 tensor-core peaks
    "H100": (67.0, 494.7),
    "H200": (67.0, 494.7),
    "A100": (19.5, 156.0),
}


def strata_step_ms(args, plan):
    gemm = "--gemm=strata" if args.strata_gemm else ""
    out = sh(f"{args.build}/bin/strata-run {plan} --device=cuda --steps "
             f"{args.steps} --seed 1 --log-every {args.steps} {gemm}")
    # Mean over all steps but the first (strata-run's summary).
    m = re.search(r"mean ms ([0-9.]+)", out)
    loss = re.search(r"final loss ([0-9.eE+-]+)", out)
    return float(m.group(1)), float(loss.group(1)), out


def torch_step_ms(args):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.backends.cudnn.allow_tf32 = args.tf32
    dev = torch.device("cuda")
    L, H, heads, V, P = 12, 768, 12, 50257, 1024
    B, S = args.batch, args.seq

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(H), nn.LayerNorm(H)
            self.q, self.k, self.v = (nn.Linear(H, H) for _ in range(3))
            self.proj = nn.Linear(H, H)
            self.fc, self.fc2 = nn.Linear(H, 4 * H), nn.Linear(4 * H, H)
            mask = torch.ones(S, S, dtype=torch.bool).tril()
            self.register_buffer("mask", mask)

        def forward(self, x):
            n = self.ln1(x)
            split = lambda t: t.view(B, S, heads, H // heads).transpose(1, 2)
            q, k, v = split(self.q(n)), split(self.k(n)), split(self.v(n))
            s = (q @ k.transpose(-1, -2)) * (1.0 / (H // heads) ** 0.5)
            s = s.masked_fill(~self.mask, float("-inf"))
            ctx = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, S, H)
            x = x + self.proj(ctx)
            f = F.gelu(self.fc(self.ln2(x)), approximate="tanh")
            return x + self.fc2(f)

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(V, H)
            self.wpe = nn.Embedding(P, H)
            self.blocks = nn.ModuleList(Block() for _ in range(L))
            self.ln_f = nn.LayerNorm(H)

        def forward(self, tokens, targets):
            x = self.wte(tokens) + self.wpe.weight[:S]
            for blk in self.blocks:
                x = blk(x)
            logits = self.ln_f(x) @ self.wte.weight.t()
            return F.cross_entropy(logits.view(-1, V), targets.view(-1))

    torch.manual_seed(1)
    model = GPT().to(dev)
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01,
                            foreach=True)
    tokens = torch.randint(0, V, (B, S), device=dev)
    targets = torch.randint(0, V, (B, S), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = model(tokens, targets)
        loss.backward()
        opt.step()
        return loss

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return times[len(times) // 2], params, torch.cuda.get_device_name(0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default="build")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--tf32", action="store_true")
    p.add_argument("--strata-gemm", action="store_true",
                   help="Strata's own CUDA GEMM instead of cuBLAS")
    p.add_argument("--out", default="bench/gpu-train-step.md")
    args = p.parse_args()

    plan = f"/tmp/strata-gpt2-small-b{args.batch}-s{args.seq}.json"
    sh(f"{args.build}/bin/strata-model gpt --preset gpt2-small --batch "
       f"{args.batch} --seq {args.seq} | {args.build}/bin/strata-opt "
       f"--strata-autodiff='optimizer=adamw lr=0.0003 weight-decay=0.01' | "
       f"{args.build}/bin/strata-translate --export-plan -o {plan}")
    strata_ms, strata_loss, _ = strata_step_ms(args, plan)
    torch_ms, params, device = torch_step_ms(args)

    L, H, S, T = 12, 768, args.seq, args.batch * args.seq
    flops = 6 * params * T + 12 * L * H * S * T
    peak = next((v for k, v in PEAK_TFLOPS.items() if k in device), None)
    peak_tflops = None if peak is None else peak[1 if args.tf32 else 0]

    def mfu(ms):
        if peak_tflops is None:
            return "n/a"
        return f"{flops / (ms * 1e-3) / (peak_tflops * 1e12):.3f}"

    rows = [
        ("Strata (strata-run --device=cuda" +
         (", --gemm=strata" if args.strata_gemm else "") + ")", strata_ms),
        ("PyTorch eager", torch_ms),
    ]
    command = "python3 bench/gpu_train_step.py " + " ".join(sys.argv[1:])
    lines = [
        "# GPT-2 small training step on one GPU: Strata beside PyTorch eager",
        "",
        f"Device: {device}. Model: gpt2-small ({params:,} parameters), batch "
        f"{args.batch}, sequence {args.seq} ({T} tokens/step), AdamW, "
        f"{'TF32' if args.tf32 else 'FP32 (TF32 off)'}. Median of "
        f"{args.steps} steps after warm-up (Strata: mean excluding the "
        "first step).",
        "",
        "| engine | ms/step | tokens/s | MFU |",
        "| --- | --- | --- | --- |",
    ]
    for name, ms in rows:
        lines.append(f"| {name} | {ms:.1f} | {T / (ms * 1e-3):,.0f} | "
                     f"{mfu(ms)} |")
    lines += [
        "",
        f"Throughput ratio Strata / PyTorch: **{torch_ms / strata_ms:.3f}** "
        "(goal >= 0.9).",
        f"Strata's final loss after {args.steps} steps on synthetic tokens: "
        f"{strata_loss:.4f}.",
        "",
        f"Command: `{command}`",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    with open(args.out, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
