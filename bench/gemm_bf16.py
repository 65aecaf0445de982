#!/usr/bin/env python3
"""bf16 GEMM: Strata beside PyTorch, in one run (see bench/gemm.md).

For every shape and thread count, alternates rounds of
  1. strata-gemm-bf16-bench (a subprocess): gemmBf16 on each path this
     machine runs (amx, avx512bf16, fallback) and Strata's f32 gemm;
  2. PyTorch in this process: torch.mm in bf16 and in f32 (preallocated out,
     torch.set_num_threads(t)).
Strata's GFLOP/s are the median of its per-round medians and the best of its
per-round bests; PyTorch's the median and best of all its calls.

Run it with the Python that has the PyPI torch wheel:
  /work/venv-torch/bin/python bench/gemm_bf16.py \\
      --bench build/bin/strata-gemm-bf16-bench --markdown table.md
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import cpu_name  # noqa: E402

SQUARE = ["256", "512", "1024", "2048", "4096"]
# MLP (batch 256, hidden 1024): forward, dX = dY W^T, dW = X^T dY.
# gpt-tiny (16 x 128 tokens, hidden 256): QKV, MLP up, MLP down, dW of up.
TRAINING = [
    ("mlp fwd", "256x1024x1024:nn"),
    ("mlp dX", "256x1024x1024:nt"),
    ("mlp dW", "1024x1024x256:tn"),
    ("gpt qkv", "2048x768x256:nn"),
    ("gpt mlp up", "2048x1024x256:nn"),
    ("gpt mlp down", "2048x256x1024:nn"),
    ("gpt dW up", "256x1024x2048:tn"),
]
# Paths too slow to time at the largest sizes.
SLOW_PATHS = ("avx512bf16", "fallback")


def parse_shape(text):
    dims, _, trans = text.partition(":")
    parts = [int(d) for d in dims.split("x")]
    m, n, k = parts if len(parts) == 3 else parts * 3
    trans = trans or "nn"
    return m, n, k, trans[0] == "t", trans[1] == "t"


def run_strata(bench, shape, threads, min_time, paths):
    """{path: (median, best)} from one run of the binary."""
    cmd = [bench, "--shapes", shape, "--threads", str(threads), "--min-time",
           str(min_time), "--rounds", "1"]
    if paths:
        cmd += ["--paths", ",".join(paths)]
    out = subprocess.run(cmd, check=True, text=True,
                         capture_output=True).stdout
    result = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 9 and f[0] == "gemm" and f[1].isdigit():
            result[f[6]] = (float(f[7]), float(f[8]))
    return result


def time_torch(shape, dtype, threads, min_time, times):
    m, n, k, ta, tb = parse_shape(shape)
    torch.set_num_threads(threads)
    g = torch.Generator().manual_seed(42)
    a = (torch.rand(k, m, generator=g) if ta else
         torch.rand(m, k, generator=g)).mul(2).sub(1).to(dtype)
    b = (torch.rand(n, k, generator=g) if tb else
         torch.rand(k, n, generator=g)).mul(2).sub(1).to(dtype)
    a = a.t() if ta else a
    b = b.t() if tb else b
    c = torch.empty(m, n, dtype=dtype)
    torch.mm(a, b, out=c)
    start = time.perf_counter()
    calls = 0
    while calls < 3 or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        torch.mm(a, b, out=c)
        times.append(time.perf_counter() - t0)
        calls += 1


def measure(args, shape, threads):
    m, n, k, _, _ = parse_shape(shape)
    flops = 2.0 * m * n * k
    paths = None
    if flops > 2.0 * 2048 ** 3:
        paths = ["amx", "f32"] if args.has_amx else ["f32"]
    strata = {}
    torch_times = {"bf16": [], "f32": []}
    per_round = args.min_time / args.rounds
    for _ in range(args.rounds):
        for path, mb in run_strata(args.bench, shape, threads, per_round,
                                   paths).items():
            strata.setdefault(path, []).append(mb)
        time.sleep(0.2)
        time_torch(shape, torch.bfloat16, threads, per_round / 2,
                   torch_times["bf16"])
        time_torch(shape, torch.float32, threads, per_round / 2,
                   torch_times["f32"])
        time.sleep(0.2)
    row = {}
    for path, values in strata.items():
        row["strata " + path] = (statistics.median(v[0] for v in values),
                                 max(v[1] for v in values))
    for dtype, times in torch_times.items():
        row["torch " + dtype] = (flops / statistics.median(times) * 1e-9,
                                 flops / min(times) * 1e-9)
    return row


COLUMNS = ["strata amx", "strata avx512bf16", "strata fallback",
           "strata f32", "torch bf16", "torch f32"]


def format_row(name, shape, threads, row):
    cells = []
    for col in COLUMNS:
        if col in row:
            cells.append("%.0f / %.0f" % row[col])
        else:
            cells.append("-")
    amx = row.get("strata amx")
    ratio = "%.2f" % (amx[0] / row["torch bf16"][0]) if amx else "-"
    return "| %s | %s | %d | %s | %s |" % (name, shape, threads,
                                          " | ".join(cells), ratio)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", default="build/bin/strata-gemm-bf16-bench")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--min-time", type=float, default=1.5,
                        help="seconds per library and problem, all rounds")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--shapes", default=None,
                        help="comma-separated shapes (default: the squares "
                        "and the training shapes)")
    parser.add_argument("--markdown", default=None)
    args = parser.parse_args()

    peaks = subprocess.run([args.bench, "--peak"], check=True, text=True,
                           capture_output=True).stdout
    args.has_amx = "AMX" in peaks
    header = ["CPU: %s" % cpu_name(),
              "torch %s, %s" % (torch.__version__,
                                torch.backends.mkldnn.is_available() and
                                "oneDNN available" or "no oneDNN"),
              "load average at start: %s" % " ".join(
                  open("/proc/loadavg").read().split()[:3])]
    header += [l for l in peaks.splitlines() if l.startswith(("peak",
                                                             "default"))]
    for line in header:
        print(line, flush=True)
    shapes = ([(s, s) for s in args.shapes.split(",")] if args.shapes else
              [("square", s) for s in SQUARE] + TRAINING)
    lines = ["| problem | MxNxK:op | threads | " + " | ".join(COLUMNS) +
             " | AMX / torch bf16 (median) |",
             "| --- | --- | ---: |" + " ---: |" * (len(COLUMNS) + 1)]
    print(lines[0], flush=True)
    print(lines[1], flush=True)
    for name, shape in shapes:
        for threads in (int(t) for t in args.threads.split(",")):
            line = format_row(name, shape, threads,
                              measure(args, shape, threads))
            print(line, flush=True)
            lines.append(line)
    footer = "load average at end: %s" % " ".join(
        open("/proc/loadavg").read().split()[:3])
    print(footer)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n".join(["- " + h for h in header] + ["- " + footer, ""]
                              + lines) + "\n")


if __name__ == "__main__":
    main()
