#!/usr/bin/env python3
"""Writes a labelled-array safetensors file for strata-run --data.

    make_arrays.py OUT.safetensors --samples N --features F --classes C [--seed S]
                   [--shape D1,D2,...]

`inputs` f32 [N, F] (standard normal), `labels` i32 [N]: the class whose
fixed random direction scores the sample highest, so a linear model can learn
it. Pure Python (struct, random), no numpy.
"""
import argparse
import json
import random
import struct

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("--samples", type=int, required=True)
p.add_argument("--features", type=int, required=True)
p.add_argument("--classes", type=int, required=True)
p.add_argument("--seed", type=int, default=0)
p.add_argument("--shape", default="",
               help="the shape of one sample (images: C,H,W), whose product "
                    "is --features; default [F]")
a = p.parse_args()
sample_shape = [int(d) for d in a.shape.split(",")] if a.shape else [a.features]
rng = random.Random(a.seed)
w = [[rng.gauss(0, 1) for _ in range(a.features)] for _ in range(a.classes)]
xs, ys = [], []
for _ in range(a.samples):
    x = [rng.gauss(0, 1) for _ in range(a.features)]
    scores = [sum(wi * xi for wi, xi in zip(row, x)) for row in w]
    xs.extend(x)
    ys.append(max(range(a.classes), key=lambda c: scores[c]))
inputs = struct.pack(f"<{len(xs)}f", *xs)
labels = struct.pack(f"<{len(ys)}i", *ys)
header = {
    "inputs": {"dtype": "F32", "shape": [a.samples] + sample_shape,
               "data_offsets": [0, len(inputs)]},
    "labels": {"dtype": "I32", "shape": [a.samples],
               "data_offsets": [len(inputs), len(inputs) + len(labels)]},
}
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
with open(a.out, "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + inputs + labels)
