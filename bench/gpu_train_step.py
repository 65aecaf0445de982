#!/usr/bin/env python3
"""GPT-2 small training step on one GPU: Strata (strata-run --device=cuda)
beside PyTorch eager on the same model, in the same run.

The PyTorch model mirrors `strata-model gpt --preset gpt2-small` op for op:
pre-LN blocks, separate q/k/v projections with bias, an explicit causal
softmax (no fused attention: eager PyTorch on the same ops), the tanh GELU,
learned positions, tied embeddings, cross-entropy over every position, AdamW.
Modes: fp32 (TF32 off on both sides), tf32 (cuBLAS may use TF32 tensor
cores on both sides: strata-run --tf32, torch allow_tf32), bf16 (Strata: the
plan with --strata-mixed-precision, bf16 matmuls with f32 accumulation;
PyTorch: autocast to bfloat16). Device memory: Strata's arena beside
torch.cuda.max_memory_allocated().

Model FLOP utilisation uses the standard count 6 N T + 12 L H S T per step
(N parameters, T tokens, L layers, H hidden, S sequence) against the
device's dense peak (FP32 67, TF32 495, BF16 990 TFLOP/s on H100/H200 SXM).

    python3 bench/gpu_train_step.py [--build build | --strata-run BIN
        --plan P --bf16-plan P] [--batch 8] [--seq 1024] [--steps 20]
        [--modes fp32,tf32,bf16] [--strata-gemm] [--out bench/gpu-train-step.md]

Needs a CUDA GPU, PyTorch with CUDA, and a build with the CUDA backend.
"""
import argparse
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import sh  # noqa: E402

PEAK_TFLOPS = {  # dense FP32 / TF32 / BF16 peaks, most specific name first
    "H100 PCIe": (51.2, 378.0, 756.0),
    "H100": (67.0, 494.7, 989.4),
    "H200": (67.0, 494.7, 989.4),
    "A100": (19.5, 156.0, 312.0),
}
MODES = ("fp32", "tf32", "bf16")


def strata_step_ms(args, plan, mode, strata_gemm=False):
    """(median ms of the steps after the warm-ups, final loss, arena bytes).

    Strata runs warmup + steps steps and the median is taken over the last
    `steps`, as PyTorch's is."""
    flags = " --gemm=strata" if strata_gemm else ""
    flags += " --tf32" if mode == "tf32" else ""
    total = args.warmup + args.steps
    out = sh(f"{args.strata_run} {plan} --device=cuda --steps {total} "
             f"--seed 1 --log-every 1{flags}")
    steps = [(int(m.group(1)), m.group(2), float(m.group(3))) for m in
             re.finditer(r"^step (\d+) loss (\S+) .* ms ([0-9.]+)$", out,
                         re.M)]
    if len(steps) != total:
        sys.exit(f"gpu_train_step: strata-run logged {len(steps)} of {total} "
                 f"steps:\n{out[-2000:]}")
    loss = float(steps[-1][1])
    if loss != loss or loss in (float("inf"), float("-inf")):
        sys.exit(f"gpu_train_step: Strata's loss is {loss} ({mode})")
    times = sorted(ms for _, _, ms in steps[args.warmup:])
    arena = re.search(r"arena (\d+) bytes", out)
    return (times[len(times) // 2], loss,
            int(arena.group(1)) if arena else None)


def torch_step_ms(args, mode):
    """(median ms, parameters, device name, max_memory_allocated bytes)."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
    torch.backends.cudnn.allow_tf32 = mode == "tf32"
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
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
        with torch.autocast("cuda", dtype=torch.bfloat16,
                            enabled=mode == "bf16"):
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
    peak = torch.cuda.max_memory_allocated()
    del model, opt
    return (times[len(times) // 2], params, torch.cuda.get_device_name(0),
            peak)


def plan_for(args, mode):
    """The plan of a mode: given (--plan, --bf16-plan) or compiled here."""
    given = args.bf16_plan if mode == "bf16" else args.plan
    if given:
        return given
    suffix = "-bf16" if mode == "bf16" else ""
    plan = f"/tmp/strata-gpt2-small-b{args.batch}-s{args.seq}{suffix}.json"
    mixed = " --strata-mixed-precision" if mode == "bf16" else ""
    # As scripts/gpu-pack.sh compiles it: fused and buffer-planned.
    sh(f"{args.build}/bin/strata-model gpt --preset gpt2-small --batch "
       f"{args.batch} --seq {args.seq} | {args.build}/bin/strata-opt "
       f"--strata-autodiff='optimizer=adamw lr=0.0003 weight-decay=0.01'"
       f"{mixed} --strata-fuse --strata-plan-buffers 2>/dev/null | "
       f"{args.build}/bin/strata-translate --export-plan -o {plan}")
    return plan


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default="build")
    p.add_argument("--strata-run", default=None,
                   help="the strata-run binary (default BUILD/bin/strata-run)")
    p.add_argument("--plan", default=None,
                   help="a gpt2-small plan compiled elsewhere (FP32)")
    p.add_argument("--bf16-plan", default=None,
                   help="the same with --strata-mixed-precision")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--modes", default="fp32,tf32,bf16",
                   help="fp32 (TF32 off), tf32, bf16 (Strata: a "
                   "--strata-mixed-precision plan; PyTorch: autocast)")
    p.add_argument("--strata-gemm", action="store_true",
                   help="also time Strata's own CUDA GEMM in fp32")
    p.add_argument("--out", default="bench/gpu-train-step.md")
    args = p.parse_args()
    args.strata_run = args.strata_run or f"{args.build}/bin/strata-run"
    for mode in args.modes.split(","):
        if mode not in MODES:
            p.error(f"--modes: unknown mode '{mode}' (fp32, tf32, bf16)")
    if args.steps < 1 or args.warmup < 0:
        p.error("--steps must be at least 1 and --warmup at least 0")

    L, H, S, T = 12, 768, args.seq, args.batch * args.seq
    rows, device, params = [], None, None
    for mode in args.modes.split(","):
        plan = plan_for(args, mode)
        runs = [("Strata", False)]
        if args.strata_gemm and mode == "fp32":
            runs.append(("Strata --gemm=strata", True))
        for name, own in runs:
            ms, loss, arena = strata_step_ms(args, plan, mode, own)
            rows.append((mode, name, ms, loss, arena))
        ms, params, device, peak = torch_step_ms(args, mode)
        rows.append((mode, "PyTorch eager", ms, None, peak))
    flops = 6 * params * T + 12 * L * H * S * T
    peak = next((v for k, v in PEAK_TFLOPS.items() if k in device), None)

    def mfu(mode, ms):
        if peak is None:
            return "n/a"
        tflops = peak[MODES.index(mode)]
        return f"{flops / (ms * 1e-3) / (tflops * 1e12):.3f}"

    command = "python3 bench/gpu_train_step.py " + " ".join(sys.argv[1:])
    lines = [
        "# GPT-2 small training step on one GPU: Strata beside PyTorch eager",
        "",
        f"Device: {device}. Model: gpt2-small ({params:,} parameters), batch "
        f"{args.batch}, sequence {args.seq} ({T} tokens/step), AdamW. "
        f"Median of {args.steps} steps after {args.warmup} warm-ups, both "
        "engines. Memory (not like for like): Strata's device arena (every "
        "buffer of the plan; cuBLAS's workspace and kernel scratch are "
        "outside it), PyTorch's torch.cuda.max_memory_allocated() over the "
        "same steps (everything its allocator handed out). MFU against the "
        "device's dense peaks (H100/H200 SXM: FP32 67, TF32 495, BF16 989 "
        "TFLOP/s).",
        "",
        "| mode | engine | ms/step | tokens/s | MFU | final loss | "
        "device memory MiB (arena / max allocated) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for mode, name, ms, loss, mem in rows:
        loss_text = "" if loss is None else f"{loss:.4f}"
        mem_text = "" if mem is None else f"{mem / 2**20:,.0f}"
        lines.append(f"| {mode} | {name} | {ms:.1f} | {T / (ms * 1e-3):,.0f} "
                     f"| {mfu(mode, ms)} | {loss_text} | {mem_text} |")
    lines.append("")
    for mode in args.modes.split(","):
        strata = next(r[2] for r in rows if r[0] == mode and r[1] == "Strata")
        torch_ms = next(r[2] for r in rows
                        if r[0] == mode and r[1] == "PyTorch eager")
        lines.append(f"- {mode}: throughput Strata / PyTorch eager = "
                     f"**{torch_ms / strata:.3f}** (goal >= 1.0)")
    lines += ["", f"Command: `{command}`", ""]
    text = "\n".join(lines)
    print(text)
    with open(args.out, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
