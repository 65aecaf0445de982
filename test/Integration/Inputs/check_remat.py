#!/usr/bin/env python3
"""Trains a step with and without --strata-remat and compares.

    check_remat.py STEP.mlir WORKDIR [--steps K] [--np N]
                   [--config BUDGET:SOLVER[:TARGET] ...]
                   [-- EXTRA strata-run ARGS]

The reference is STEP.mlir after --strata-plan-buffers alone. For each
config, --strata-remat="budget=BUDGET solver=SOLVER target=TARGET" runs
first (TARGET: cpu-local by default). Every plan
trains K steps with the same seed (under `mpirun -np N` when N > 1: a
pipelined or data-parallel step); a config fails unless its losses equal the
reference's bit for bit, its checkpoint is byte-identical, and its planned
arena is at most the budget --strata-remat recorded. Prints one line per
config with the arena, the budget and what was swapped and recomputed.
"""
import argparse
import filecmp
import os
import re
import sys

import trainutil
from trainutil import run

parser = argparse.ArgumentParser()
parser.add_argument("step")
parser.add_argument("workdir")
parser.add_argument("--steps", type=int, default=3)
parser.add_argument("--np", type=int, default=1)
parser.add_argument("--config", nargs="+",
                    default=["1.0:sqrt", "0.8:dp", "0.8:milp"])
args, extra = parser.parse_known_args()
extra = [a for a in extra if a != "--"]
os.makedirs(args.workdir, exist_ok=True)


def train(plan, name):
    losses, ckpt, arena, _ = trainutil.train(plan, args.workdir, name,
                                             args.steps, args.np, extra)
    return losses, ckpt, arena


def compile_plan(name, passes):
    mlir = os.path.join(args.workdir, name + ".mlir")
    run(["strata-opt", args.step] + passes + ["-o", mlir])
    plan = os.path.join(args.workdir, name + ".json")
    run(["strata-translate", "--export-plan", mlir, "-o", plan])
    return mlir, plan


_, ref_plan = compile_plan("ref", ["--strata-plan-buffers=strategy=best-fit"])
ref_losses, ref_ckpt, ref_arena = train(ref_plan, "ref")
print("reference: arena %d bytes" % ref_arena)
for config in args.config:
    budget, solver, target = (config.split(":") + ["cpu-local"])[:3]
    name = "%s-%s-%s" % (solver, budget,
                         os.path.basename(target).replace(".json", ""))
    mlir, plan = compile_plan(name, [
        # A short MILP limit keeps the test quick; rounds past it use dp.
        "--strata-remat=budget=%s solver=%s target=%s time-limit=2" % (
            budget, solver, target),
        "--strata-plan-buffers=strategy=best-fit"])
    text = open(mlir).read()
    remat = re.search(r"#strata.remat_plan<budget = (\d+), .*?kept = (\d+), "
                      r"swapped = (\d+), recomputed = (\d+)", text)
    if not remat:
        sys.exit("%s: no strata.remat_plan in %s" % (name, mlir))
    limit, kept, swapped, recomputed = map(int, remat.groups())
    losses, ckpt, arena = train(plan, name)
    if losses != ref_losses:
        sys.exit("%s: losses differ from the reference:\n%s\n%s" %
                 (name, losses, ref_losses))
    if not filecmp.cmp(ckpt, ref_ckpt, shallow=False):
        sys.exit("%s: checkpoint differs from the reference" % name)
    if arena > limit:
        sys.exit("%s: arena %d over the budget %d" % (name, arena, limit))
    print("%s: identical losses and checkpoint, arena %d <= budget %d "
          "(%.3f of the reference); kept %d swapped %d recomputed %d" %
          (name, arena, limit, arena / ref_arena, kept, swapped, recomputed))
