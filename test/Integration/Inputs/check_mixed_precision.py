#!/usr/bin/env python3
"""Trains a step in f32 and with --strata-mixed-precision and compares.

    check_mixed_precision.py STEP.mlir WORKDIR --grad-bound G --loss-bound L
                             [--steps K]

STEP.mlir should update with plain SGD (no momentum), so that one step's
parameter change is -lr times the gradient. The reference is STEP.mlir after
--strata-plan-buffers alone; every plan trains with the same seed on one
thread, and with STRATA_GEMM_BF16_ISA=I in the environment on the bf16 path
I (amx, avx512bf16, fallback) when the CPU has it.

* compute=f32 (the pass removing marks it set) gives identical losses and a
  byte-identical checkpoint after K steps.
* compute=bf16: one step's gradient differs from f32's by a relative error
  ||g_bf16 - g|| / ||g|| that is above 0 (the arithmetic changed) and at
  most G; after K steps the loss is within a relative L of f32's.
"""
import argparse
import filecmp
import os
import re
import sys

import trainutil
from trainutil import run, parameters, gradient, norm

parser = argparse.ArgumentParser()
parser.add_argument("step")
parser.add_argument("workdir")
parser.add_argument("--steps", type=int, default=3)
parser.add_argument("--grad-bound", type=float, required=True)
parser.add_argument("--loss-bound", type=float, required=True)
args = parser.parse_args()
os.makedirs(args.workdir, exist_ok=True)


def compile_plan(name, passes):
    mlir = os.path.join(args.workdir, name + ".mlir")
    run(["strata-opt", args.step] + passes + ["-o", mlir])
    plan = os.path.join(args.workdir, name + ".json")
    run(["strata-translate", "--export-plan", mlir, "-o", plan])
    return plan, open(mlir).read().count(" bf16 ")


ref_plan, _ = compile_plan("ref", ["--strata-plan-buffers"])
p0 = os.path.join(args.workdir, "p0.safetensors")
run(["strata-run", ref_plan, "--steps", "0", "--seed", "3", "--save", p0])
before = parameters(p0)
ref_losses, ref_ckpt, _, _ = trainutil.train(ref_plan, args.workdir, "ref",
                                             args.steps)
_, ref1, _, _ = trainutil.train(ref_plan, args.workdir, "ref1", 1)
ref_grad = gradient(parameters(ref1), before)
failed = False

f32_plan, marked = compile_plan("f32", [
    "--strata-mixed-precision", "--strata-mixed-precision=compute=f32",
    "--strata-plan-buffers"])
losses, ckpt, _, _ = trainutil.train(f32_plan, args.workdir, "f32", args.steps)
same = marked == 0 and losses == ref_losses and \
    filecmp.cmp(ckpt, ref_ckpt, shallow=False)
print("compute=f32: %s" % ("identical losses and checkpoint" if same
                           else "NOT identical to the reference  FAILED"))
failed |= not same

bf16_plan, marked = compile_plan("bf16", ["--strata-mixed-precision",
                                          "--strata-plan-buffers"])
_, ckpt1, _, _ = trainutil.train(bf16_plan, args.workdir, "bf16-1", 1)
error = norm([a - b for a, b in zip(gradient(parameters(ckpt1), before),
                                    ref_grad)]) / norm(ref_grad)
losses, _, _, _ = trainutil.train(bf16_plan, args.workdir, "bf16", args.steps)
loss, ref_loss = float(losses[-1][1]), float(ref_losses[-1][1])
loss_error = abs(loss - ref_loss) / abs(ref_loss)
ok = marked > 0 and 0 < error <= args.grad_bound and \
    loss_error <= args.loss_bound
print("compute=bf16: %d bf16 matmuls, gradient error %.3g (bound %.3g), "
      "loss after %d steps %.6f vs f32 %.6f (relative %.3g, bound %.3g)%s" % (
          marked, error, args.grad_bound, args.steps, loss, ref_loss,
          loss_error, args.loss_bound, "" if ok else "  FAILED"))
failed |= not ok
sys.exit(1 if failed else 0)
