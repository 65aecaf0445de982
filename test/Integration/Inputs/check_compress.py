#!/usr/bin/env python3
"""Trains a step with and without --strata-compress-activations and compares.

    check_compress.py STEP.mlir WORKDIR --formats F[@TOL] ... [--steps K]
        [--before PASS ...]

STEP.mlir should update with plain SGD (no momentum), so that one step's
parameter change is -lr times the gradient. The reference is STEP.mlir after
--strata-plan-buffers alone; every plan trains with the same seed on one
thread.

For each format F, --strata-compress-activations="format=F" runs first, and
one step's gradient (the parameter change) is compared with the
reference's: the relative error ||g_F - g|| / ||g|| over all parameters
must be at most TOL (the format's bound; default 0 for `none`, which must
also give identical losses and a byte-identical checkpoint after K steps).
Prints one line per format with the saved-activation bytes, the arena and
the gradient error. --before passes run ahead of the compression in every
plan but the reference (e.g. --strata-remat, whose recomputation is
bit-identical, so `none` must still match the reference exactly). Every
lossy format must err (a zero error means nothing was compressed), and each
--increasing group of formats, widest first, must err more and more.
"""
import argparse
import filecmp
import json
import math
import os
import re
import struct
import sys

import trainutil
from trainutil import run

parser = argparse.ArgumentParser()
parser.add_argument("step")
parser.add_argument("workdir")
parser.add_argument("--steps", type=int, default=3)
parser.add_argument("--formats", nargs="+", required=True)
parser.add_argument("--before", action="append", default=[],
                    help="a strata-opt pass option to run before the "
                         "compression (repeatable)")
parser.add_argument("--increasing", nargs="*", default=[],
                    help="formats separated by / whose gradient errors must "
                         "grow in that order (narrower formats err more)")
args = parser.parse_args()
os.makedirs(args.workdir, exist_ok=True)


def compile_plan(name, passes):
    mlir = os.path.join(args.workdir, name + ".mlir")
    run(["strata-opt", args.step] + passes + ["-o", mlir])
    plan = os.path.join(args.workdir, name + ".json")
    run(["strata-translate", "--export-plan", mlir, "-o", plan])
    return plan


parameters, gradient, norm = (trainutil.parameters, trainutil.gradient,
                              trainutil.norm)


ref_plan = compile_plan("ref", ["--strata-plan-buffers"])
p0 = os.path.join(args.workdir, "p0.safetensors")
run(["strata-run", ref_plan, "--steps", "0", "--seed", "3", "--save", p0])
before = parameters(p0)
ref_losses, ref_ckpt, ref_arena, _ = trainutil.train(
    ref_plan, args.workdir, "ref", args.steps)
_, ref1, _, _ = trainutil.train(ref_plan, args.workdir, "ref1", 1)
ref_grad = gradient(parameters(ref1), before)
print("reference: arena %d bytes, gradient norm %.6g" %
      (ref_arena, norm(ref_grad)))
failed = False
errors = {}
for spec in args.formats:
    fmt, _, tol = spec.partition("@")
    tol = float(tol) if tol else 0.0
    name = re.sub(r"[^A-Za-z0-9]+", "-", fmt)
    plan = compile_plan(name, args.before + [
        "--strata-compress-activations=format=" + fmt, "--strata-plan-buffers"])
    saved = re.search(r"remark: compressed (\d+) saved activations from "
                      r"(\d+) to (\d+) bytes",
                      run(["strata-opt", args.step] + args.before +
                          ["--strata-compress-activations=format=" + fmt,
                           "-o", os.devnull]).stderr)
    tensors, f32_bytes, packed = (saved.groups() if saved else (0, 0, 0))
    _, ckpt1, _, _ = trainutil.train(plan, args.workdir, name + "-1", 1)
    grad = gradient(parameters(ckpt1), before)
    error = norm([a - b for a, b in zip(grad, ref_grad)]) / norm(ref_grad)
    losses, ckpt, arena, _ = trainutil.train(plan, args.workdir, name,
                                             args.steps)
    line = "%s: %s tensors %s -> %s bytes, arena %d (reference %d), " \
           "gradient error %.3g (bound %.3g)" % (
               fmt, tensors, f32_bytes, packed, arena, ref_arena, error, tol)
    errors[fmt] = error
    ok = error <= tol and (fmt == "none" or error > 0)
    if fmt == "none":
        ok = ok and losses == ref_losses and \
            filecmp.cmp(ckpt, ref_ckpt, shallow=False)
        line += ", identical losses and checkpoint" if ok else \
            ", NOT identical to the reference"
    print(line + ("" if ok else "  FAILED"))
    failed |= not ok
for group in args.increasing:
    names = group.split("/")
    ordered = all(errors[a] < errors[b] for a, b in zip(names, names[1:]))
    print("%s: gradient errors %s" % (
        " < ".join(names), "increase" if ordered else "do NOT increase"))
    failed |= not ordered
sys.exit(1 if failed else 0)
