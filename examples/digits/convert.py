#!/usr/bin/python3
"""Converts scikit-learn's digits dataset (1,797 labelled 8x8 images, shipped
with Debian's python3-sklearn, no download) into labelled arrays for
strata-run --data / --eval-data.

    /usr/bin/python3 examples/digits/convert.py OUT_DIR [--layout flat|nchw]

Writes OUT_DIR/digits-train.safetensors (1,438 samples) and
OUT_DIR/digits-test.safetensors (359): "inputs" f32 pixels scaled to [0, 1],
[N, 64] (flat, for an MLP) or [N, 1, 8, 8] (nchw, for a CNN), and "labels"
i32 [N]. The split is a fixed shuffle (seed 0), the same on every machine.
"""
import argparse
import json
import os
import random
import struct

from sklearn.datasets import load_digits


def write(path, inputs, shape, labels):
    x = struct.pack(f"<{len(inputs)}f", *inputs)
    y = struct.pack(f"<{len(labels)}i", *labels)
    header = {
        "inputs": {"dtype": "F32", "shape": shape,
                   "data_offsets": [0, len(x)]},
        "labels": {"dtype": "I32", "shape": [len(labels)],
                   "data_offsets": [len(x), len(x) + len(y)]},
    }
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + x + y)
    os.replace(tmp, path)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--layout", choices=["flat", "nchw"], default="flat")
    a = p.parse_args()
    digits = load_digits()
    order = list(range(len(digits.target)))
    random.Random(0).shuffle(order)
    test = len(order) // 5
    os.makedirs(a.out, exist_ok=True)
    for name, part in (("train", order[test:]), ("test", order[:test])):
        pixels = [float(v) / 16.0 for i in part for v in digits.data[i]]
        shape = [len(part), 64] if a.layout == "flat" else [len(part), 1, 8, 8]
        write(os.path.join(a.out, f"digits-{name}.safetensors"), pixels,
              shape, [int(digits.target[i]) for i in part])
        print(f"{name}: {len(part)} samples, inputs {shape}")


if __name__ == "__main__":
    main()
