#!/usr/bin/python3
"""Writes PREFIX.npz (np.savez: float64 inputs [100, 16], int64 labels [100]),
PREFIX.safetensors (the same values as f32 / i32), PREFIX.compressed.npz and
PREFIX.fortran.npz. Needs NumPy (Debian's python3-numpy)."""
import json
import struct
import sys

import numpy as np

prefix = sys.argv[1]
rng = np.random.default_rng(0)
x = rng.standard_normal((100, 16))
y = np.argmax(x @ rng.standard_normal((16, 4)), axis=1)
np.savez(prefix + ".npz", inputs=x, labels=y)
np.savez_compressed(prefix + ".compressed.npz", inputs=x, labels=y)
np.savez(prefix + ".fortran.npz", inputs=np.asfortranarray(x), labels=y)
xs = x.astype("<f4").tobytes()
ys = y.astype("<i4").tobytes()
header = {"inputs": {"dtype": "F32", "shape": list(x.shape),
                     "data_offsets": [0, len(xs)]},
          "labels": {"dtype": "I32", "shape": list(y.shape),
                     "data_offsets": [len(xs), len(xs) + len(ys)]}}
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
with open(prefix + ".safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + xs + ys)
