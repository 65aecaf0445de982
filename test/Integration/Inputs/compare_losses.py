#!/usr/bin/env python3
"""Compares the per-step losses of two strata-run logs.

    compare_losses.py A.log B.log --rtol R

Fails unless both logs have the same steps and every loss agrees within the
relative tolerance R. Prints the largest relative difference.
"""
import argparse
import re
import sys

parser = argparse.ArgumentParser()
parser.add_argument("a")
parser.add_argument("b")
parser.add_argument("--rtol", type=float, required=True)
parser.add_argument("--subset", action="store_true",
                    help="B may cover only some of A's steps (a resumed run)")
args = parser.parse_args()


def losses(path):
    return {int(m.group(1)): float(m.group(2)) for m in re.finditer(
        r"^step (\d+) loss (\S+)", open(path).read(), re.M)}


a, b = losses(args.a), losses(args.b)
if args.subset:
    a = {s: a[s] for s in b if s in a}
if not a or a.keys() != b.keys():
    sys.exit(f"steps differ: {sorted(a)} vs {sorted(b)}")
worst = max(abs(a[s] - b[s]) / max(abs(a[s]), 1e-30) for s in a)
print(f"{len(a)} steps, largest relative difference {worst:.3g}")
if worst > args.rtol:
    sys.exit(f"losses differ by more than {args.rtol}")
