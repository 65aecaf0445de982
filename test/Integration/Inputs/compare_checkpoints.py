#!/usr/bin/env python3
"""Compares two safetensors checkpoints tensor by tensor.

    compare_checkpoints.py A.safetensors B.safetensors --rtol R

Both must hold the same tensor names, dtypes and shapes. For every f32
tensor, |a - b| <= R * max|a| element-wise (a relative tolerance scaled by
the tensor's magnitude, so near-zero entries do not dominate). Prints the
largest scaled difference.

    compare_checkpoints.py BEFORE.safetensors AFTER.safetensors --update-norm

prints instead the L2 norm of the parameters' change (optimizer states,
named PARAM.velocity/.m/.v, left out). With --only S, both compare only
the tensors whose name contains S (which must exist); with --skip P, both
leave out the tensors whose name starts with P (e.g. pipeline.carry, the
values a pipeline that does not drain between steps carries, which depend on
how the step's ops were fused).
"""
import argparse
import json
import math
import struct
import sys

parser = argparse.ArgumentParser()
parser.add_argument("a")
parser.add_argument("b")
group = parser.add_mutually_exclusive_group(required=True)
group.add_argument("--rtol", type=float)
group.add_argument("--update-norm", action="store_true",
                   help="print the L2 norm of B - A over the parameters "
                        "(optimizer states PARAM.velocity/.m/.v left out)")
parser.add_argument("--only", default="",
                    help="compare only the tensors whose name contains this")
parser.add_argument("--skip", default="",
                    help="leave out the tensors whose name starts with this")
args = parser.parse_args()


def load(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        tensors[name] = (info["dtype"], info["shape"], body[begin:end])
    return tensors


a, b = load(args.a), load(args.b)
if args.skip:
    a = {k: v for k, v in a.items() if not k.startswith(args.skip)}
    b = {k: v for k, v in b.items() if not k.startswith(args.skip)}
if args.only:
    a = {k: v for k, v in a.items() if args.only in k}
    b = {k: v for k, v in b.items() if args.only in k}
    if not a:
        sys.exit("no tensor name contains '%s'" % args.only)
if args.update_norm:
    total = 0.0
    for name, (dtype, _, raw) in a.items():
        if dtype != "F32" or name.endswith((".velocity", ".m", ".v")):
            continue
        n = len(raw) // 4
        xa = struct.unpack("<%df" % n, raw)
        xb = struct.unpack("<%df" % n, b[name][2])
        total += sum((x - y) ** 2 for x, y in zip(xa, xb))
    print("update norm %.6f" % math.sqrt(total))
    sys.exit(0)
if a.keys() != b.keys():
    sys.exit("tensor names differ: %s" % sorted(a.keys() ^ b.keys()))
worst, worst_name = 0.0, ""
for name in sorted(a):
    da, sa, ra = a[name]
    db, sb, rb = b[name]
    if (da, sa) != (db, sb):
        sys.exit("%s: %s%s vs %s%s" % (name, da, sa, db, sb))
    if da != "F32":
        if ra != rb:
            sys.exit("%s: %s contents differ" % (name, da))
        continue
    n = len(ra) // 4
    xa = struct.unpack("<%df" % n, ra)
    xb = struct.unpack("<%df" % n, rb)
    scale = max((abs(x) for x in xa), default=0.0) or 1.0
    diff = max((abs(x - y) for x, y in zip(xa, xb)), default=0.0) / scale
    if diff > worst:
        worst, worst_name = diff, name
    if diff > args.rtol:
        sys.exit("%s: scaled difference %.3g exceeds %g" %
                 (name, diff, args.rtol))
print("%d tensors agree; largest scaled difference %.3g (%s)" %
      (len(a), worst, worst_name))
