#!/usr/bin/env python3
"""Writes a copy of a plan with a wrong gradient (for gradient-check tests).

    wrong_gradient.py PLAN.json OUT.json

Drops the transpose of the first backward matmul dX = dY W^T whose weight W
is square (a classic autodiff bug: the shapes still agree), so every
gradient below that layer is wrong while the forward pass is unchanged.
"""
import json
import sys

plan = json.load(open(sys.argv[1]))
shapes = {b["id"]: b["shape"] for b in plan["buffers"]}
params = {p["buffer"] for p in plan["parameters"]}
for inst in plan["ranks"][0]["program"]:
    w = inst["in"][1] if len(inst["in"]) > 1 else None
    if (inst["op"] == "matmul" and inst["phase"] == "backward" and
            inst["attrs"].get("transpose_b") and w in params and
            len(shapes[w]) == 2 and shapes[w][0] == shapes[w][1]):
        del inst["attrs"]["transpose_b"]
        break
else:
    sys.exit("no backward matmul dY W^T with a square weight W")
json.dump(plan, open(sys.argv[2], "w"))
