#!/usr/bin/env python3
"""Prints what a plan's rank program runs (the first's by default), for
FileCheck.

    plan_ops.py PLAN.json [RANK]

One line with the number of fused_matmul instructions and of multi-tensor
groups (distinct non-zero multi_tensor ids), then every other op name with
its count, one per line.
"""
import collections
import json
import sys

rank = int(sys.argv[2]) if len(sys.argv) > 2 else 0
program = json.load(open(sys.argv[1]))["ranks"][rank]["program"]
ops = collections.Counter(i["op"] for i in program)
groups = {i["attrs"].get("multi_tensor", 0) for i in program} - {0}
print("fused_matmul %d, multi-tensor groups %d" % (ops.pop("fused_matmul", 0),
                                                  len(groups)))
for op, count in sorted(ops.items()):
    print(op, count)
