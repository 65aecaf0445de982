#!/usr/bin/env python3
"""Trains a step with and without --strata-plan-buffers and compares.

    check_planned.py STEP.mlir WORKDIR [--np N] [--steps K] [--strategies ...]
                     [-- EXTRA strata-run ARGS]

Exports STEP.mlir as is (every buffer its own bytes) and after
--strata-plan-buffers with each strategy, runs every plan for K steps with
the same seed (under `mpirun -np N` when N > 1), and fails unless every
planned run's losses equal the reference's bit for bit and its checkpoint is
byte-identical. Prints one line per strategy with the arena sizes.
"""
import argparse
import filecmp
import os
import sys

import trainutil
from trainutil import run

parser = argparse.ArgumentParser()
parser.add_argument("step")
parser.add_argument("workdir")
parser.add_argument("--np", type=int, default=1)
parser.add_argument("--steps", type=int, default=5)
parser.add_argument("--strategies", nargs="+",
                    default=["fixed-structure", "greedy-size", "best-fit",
                             "exact", "auto"])
args, extra = parser.parse_known_args()
extra = [a for a in extra if a != "--"]
os.makedirs(args.workdir, exist_ok=True)


def train(plan, name):
    return trainutil.train(plan, args.workdir, name, args.steps, args.np,
                           extra)


ref_plan = os.path.join(args.workdir, "ref.json")
run(["strata-translate", "--export-plan", args.step, "-o", ref_plan])
ref_losses, ref_ckpt, ref_arena, bound = train(ref_plan, "ref")
print("reference: arena %d bytes, live lower bound %d" % (ref_arena, bound))
for strategy in args.strategies:
    planned = os.path.join(args.workdir, strategy + ".mlir")
    run(["strata-opt", args.step,
         "--strata-plan-buffers=strategy=%s time-limit=5" % strategy,
         "-o", planned])
    plan = os.path.join(args.workdir, strategy + ".json")
    run(["strata-translate", "--export-plan", planned, "-o", plan])
    losses, ckpt, arena, plan_bound = train(plan, strategy)
    if losses != ref_losses:
        sys.exit("%s: losses differ from the reference:\n%s\n%s" %
                 (strategy, losses, ref_losses))
    if not filecmp.cmp(ckpt, ref_ckpt, shallow=False):
        sys.exit("%s: checkpoint differs from the reference" % strategy)
    if arena > ref_arena or arena < bound or plan_bound != bound:
        sys.exit("%s: arena %d outside [lower bound %d, unplanned %d]" %
                 (strategy, arena, bound, ref_arena))
    print("%s: identical losses and checkpoint, arena %d bytes (%.3f of "
          "unplanned, %.3f of the lower bound)" %
          (strategy, arena, arena / ref_arena, arena / bound))
