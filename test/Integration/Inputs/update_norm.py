#!/usr/bin/env python3
"""Prints the L2 norm of the parameter change between two checkpoints
(optimizer states, named PARAM.velocity/.m/.v, are left out).

    update_norm.py BEFORE.safetensors AFTER.safetensors
"""
import json
import math
import struct
import sys


def load(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        lo, hi = info["data_offsets"]
        out[name] = struct.unpack(f"<{(hi - lo) // 4}f", body[lo:hi])
    return out


a, b = load(sys.argv[1]), load(sys.argv[2])
states = (".velocity", ".m", ".v")
total = sum((x - y) ** 2 for k in a if not k.endswith(states)
            for x, y in zip(a[k], b[k]))
print(f"update norm {math.sqrt(total):.6f}")
