#!/usr/bin/env python3
"""Feeds mutated copies of ONNX files to strata-translate --import-onnx:
every run must exit 0 (the mutation left a valid model) or 1 (a reported
error), never crash or hang.

    mutate_onnx.py STRATA_TRANSLATE OUT_DIR FILE... [--runs N] [--seed S]

Mutations: truncation, a flipped byte, a run of random bytes, a duplicated
slice. Standard library only.
"""
import argparse
import os
import random
import subprocess
import sys

parser = argparse.ArgumentParser()
parser.add_argument("tool")
parser.add_argument("out")
parser.add_argument("files", nargs="+")
parser.add_argument("--runs", type=int, default=100)
parser.add_argument("--seed", type=int, default=1)
args = parser.parse_args()
rng = random.Random(args.seed)
os.makedirs(args.out, exist_ok=True)


def mutate(data):
    kind = rng.randrange(4)
    i = rng.randrange(len(data))
    if kind == 0:
        return data[:i]
    if kind == 1:
        return data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1:]
    if kind == 2:
        n = rng.randrange(1, 16)
        return data[:i] + bytes(rng.randrange(256) for _ in range(n)) + data[i + n:]
    j = min(len(data), i + rng.randrange(1, 64))
    return data[:j] + data[i:j] + data[j:]


sources = [open(f, "rb").read() for f in args.files]
counts = {0: 0, 1: 0}
for run in range(args.runs):
    data = mutate(sources[run % len(sources)])
    path = os.path.join(args.out, "m%d.onnx" % run)
    with open(path, "wb") as f:
        f.write(data)
    try:
        r = subprocess.run([args.tool, "--import-onnx", path, "-o", os.devnull,
                            "--weights", path + ".safetensors"],
                           capture_output=True, timeout=60)
    except subprocess.TimeoutExpired:
        sys.exit("run %d (%s): timed out" % (run, path))
    if r.returncode not in counts:
        sys.exit("run %d (%s): exit %d\n%s" % (run, path, r.returncode,
                                                r.stderr.decode(errors="replace")[-2000:]))
    if r.returncode == 1 and os.path.exists(path + ".safetensors"):
        sys.exit("run %d (%s): failed but wrote the weights file" % (run, path))
    counts[r.returncode] += 1
print("%d runs: %d imported, %d rejected, no crash" % (args.runs, counts[0], counts[1]))
