#!/usr/bin/env python3
"""Benchmarks --strata-remat and writes bench/remat.md.

    python3 bench/remat.py [--build build] [--steps 30] [--out bench/remat.md]

For each model and budget fraction (of the unconstrained planned arena) and
each solver: the planned arena, the predicted added time (the remat model on
the cpu-local target), the measured step time against the reference's (same
plan without remat, same seed, this machine), and the planning time. Then the
largest gpt-tiny batch whose arena fits 256 MiB with and without remat, and
the planning time of gpt2-small.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

parser = argparse.ArgumentParser()
parser.add_argument("--build", default="build")
parser.add_argument("--steps", type=int, default=30)
parser.add_argument("--out", default="bench/remat.md")
args = parser.parse_args()
BIN = os.path.join(args.build, "bin")
TMP = tempfile.mkdtemp(prefix="remat-bench-")
DATA = "/usr/share/common-licenses/GPL-3"


def sh(cmd, check=True):
    r = subprocess.run(cmd, shell=True, capture_output=True, text=True)
    if check and r.returncode != 0:
        sys.exit("failed: %s\n%s" % (cmd, r.stderr[-2000:]))
    return r


MODELS = {
    "gpt-tiny b16": ("gpt --preset gpt-tiny --hidden 128 --seq 64 "
                     "--positions 64 --batch 16", "adamw lr=0.003", DATA),
    "main-job GPT (gpt-tiny b32)": ("gpt --preset gpt-tiny --hidden 128 "
                                    "--seq 64 --positions 64 --batch 32",
                                    "adamw lr=0.003", DATA),
    "resnet18 b32 64px": ("resnet18 --batch 32 --image-size 64 "
                          "--classes 10", "sgd lr=0.01", None),
}
BUDGETS = ["1.0", "0.7", "0.5", "0.3", "0.2"]
SOLVERS = ["milp", "dp", "sqrt", "layer"]


def step(name, model, optimizer):
    path = os.path.join(TMP, name + ".mlir")
    sh("%s/strata-model %s 2>/dev/null | %s/strata-opt "
       "--strata-autodiff='optimizer=%s' -o %s" % (BIN, model, BIN,
                                                   optimizer, path))
    return path


def train(mlir, data):
    plan = mlir + ".json"
    sh("%s/strata-translate --export-plan %s -o %s" % (BIN, mlir, plan))
    cmd = "%s/strata-run %s --steps %d --seed 1" % (BIN, plan, args.steps)
    if data:
        cmd += " --data " + data
    out = sh(cmd).stdout
    mean = float(re.search(r"mean ms ([0-9.]+)", out).group(1))
    arena = int(re.search(r"^memory: arena (\d+)", out, re.M).group(1))
    return mean, arena


def remat(src, budget, solver, tag):
    out = os.path.join(TMP, tag + ".mlir")
    t0 = time.time()
    r = sh("%s/strata-opt %s --strata-remat='budget=%s solver=%s "
           "target=cpu-local time-limit=10' --strata-plan-buffers=strategy="
           "best-fit -o %s" % (BIN, src, budget, solver, out), check=False)
    seconds = time.time() - t0
    if r.returncode != 0:
        m = re.search(r"(cannot fit.*?bytes \(|plans an arena of \d+ bytes)",
                      r.stderr)
        return None, seconds, (m.group(1).rstrip(" (") if m else
                               r.stderr.splitlines()[0][:200])
    text = open(out).read()
    dp = re.search(r"dp on the same limit: (\S+) s", r.stderr)
    m = re.search(r"#strata.remat_plan<budget = (\d+), peak_before = (\d+), "
                  r"peak_after = (\d+), solver = \"(\w+)\", kept = (\d+), "
                  r"swapped = (\d+), recomputed = (\d+), swapped_bytes = "
                  r"(\d+), recompute_seconds = ([^,]+), copy_seconds = "
                  r"([^,]+), exposed_copy_seconds = ([^,]+), gap = ([^>]+)>",
                  text)
    return (out, m.groups() + (dp.group(1) if dp else "",)), seconds, None


lines = ["# Checkpoint / swap / recompute (`--strata-remat`)", "",
         "Command: `python3 bench/remat.py --steps %d` on the 2-core build "
         "machine (cpu-local target: 0.47 TFLOP/s nominal, host link 10 GB/s "
         "measured memcpy, copies exposed because the copy thread shares the "
         "two cores). Budgets are fractions of each model's unconstrained "
         "planned arena (best-fit). *Predicted* is the remat model's added "
         "time per step (recompute + exposed copy) from the target's nominal "
         "numbers; *measured* is the mean step time minus the reference's "
         "(same plan without remat), %d steps after the first. Every run "
         "below trained with losses bit-identical to the reference "
         "(`test/Integration/remat.test` checks that on four models)." %
         (args.steps, args.steps), ""]
for name, (model, opt, data) in MODELS.items():
    src = step(name.split()[0].replace("(", ""), model, opt)
    ref_mlir = os.path.join(TMP, "ref.mlir")
    sh("%s/strata-opt %s --strata-plan-buffers=strategy=best-fit -o %s" %
       (BIN, src, ref_mlir))
    ref_ms, ref_arena = train(ref_mlir, data)
    lines += ["## %s: `strata-model %s`, %s" % (name, model, opt), "",
              "Reference: arena %d bytes (%.1f MiB), %.2f ms per step." %
              (ref_arena, ref_arena / 2**20, ref_ms), "",
              "| budget | solver | arena (MiB) | kept / swapped / recomputed "
              "| swapped MiB | predicted added ms | measured added ms | "
              "planning s | dp at the MILP's limit, predicted ms |",
              "|---|---|---|---|---|---|---|---|---|"]
    for budget in BUDGETS:
        for solver in SOLVERS:
            if budget == "1.0" and solver == "dp":
                continue  # the same "nothing to do" as milp
            res, secs, err = remat(src, budget, solver,
                                   "%s-%s" % (solver, budget))
            if res is None:
                lines.append("| %s | %s | %s | | | | | %.2f | |" %
                             (budget, solver, err, secs))
                continue
            out, g = res
            ms, arena = train(out, data)
            predicted = (float(g[8]) + float(g[10])) * 1e3
            lines.append("| %s | %s | %.2f | %s / %s / %s | %.2f | %.3f | "
                         "%.3f | %.2f | %s |" %
                         (budget, g[3], arena / 2**20, g[4], g[5], g[6],
                          int(g[7]) / 2**20, predicted, ms - ref_ms, secs,
                          "%.3f" % (float(g[12]) * 1e3) if g[12] else ""))
    lines.append("")

# Largest gpt-tiny batch within a 256 MiB arena.
lines += ["## Largest gpt-tiny batch in a 256 MiB arena", "",
          "`strata-model gpt --preset gpt-tiny --hidden 128 --seq 64 "
          "--positions 64 --batch B`, AdamW; without remat the planned "
          "arena must fit 256 MiB, with remat `--strata-remat='budget=256M "
          "solver=auto'` must succeed (its arena is checked against the "
          "budget).", "", "| B | arena without remat (MiB) | with remat |",
          "|---|---|---|"]
best = {"plain": 0, "remat": 0}
for batch in [16, 32, 64, 96, 128, 192, 256, 384, 512, 768]:
    src = step("b%d" % batch, "gpt --preset gpt-tiny --hidden 128 --seq 64 "
               "--positions 64 --batch %d" % batch, "adamw")
    ref = os.path.join(TMP, "b.mlir")
    sh("%s/strata-opt %s --strata-plan-buffers=strategy=best-fit -o %s" %
       (BIN, src, ref))
    arena = int(re.search(r"memory_plan<arena_bytes = (\d+)",
                          open(ref).read()).group(1))
    res, secs, err = remat(src, "256M", "auto", "b%d" % batch)
    if arena <= 256 * 2**20:
        best["plain"] = batch
    if res is not None:
        best["remat"] = batch
    lines.append("| %d | %.1f | %s |" % (
        batch, arena / 2**20, "fits: arena %.1f MiB (%s swapped, %s "
        "recomputed)" % (int(res[1][2]) / 2**20, res[1][5], res[1][6])
        if res else "no: " + (err or "")))
lines += ["", "Largest batch: %d without remat, %d with remat (%.1fx)." %
          (best["plain"], best["remat"],
           best["remat"] / max(best["plain"], 1)), ""]

# Planning time on gpt2-small.
src = step("gpt2", "gpt --preset gpt2-small --batch 4 --seq 256", "adamw")
nops = int(sh("grep -c ' = strata\\.' %s" % src).stdout.strip())
lines += ["## Planning time", "", "gpt2-small (`--preset gpt2-small --batch "
          "4 --seq 256`, %d ops after autodiff):" % nops, "",
          "| budget | solver | planning s | result |", "|---|---|---|---|"]
for budget, solver in [("0.9", "dp"), ("0.9", "milp"), ("0.9", "auto"),
                       ("0.85", "dp"), ("0.85", "milp")]:
    res, secs, err = remat(src, budget, solver, "g2-%s" % solver)
    lines.append("| %s | %s | %.2f | %s |" % (
        budget, solver, secs, "solver %s, gap %s" % (res[1][3], res[1][11])
        if res else err))
lines.append("")
open(args.out, "w").write("\n".join(lines))
print("\n".join(lines))
