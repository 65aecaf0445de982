#!/usr/bin/env python3
"""Mixed-precision training of the main job tracks fp32; writes
bench/mixed-precision.md.

    python3 bench/mixed_precision.py [--build build] [--steps 500]
        [--seeds 3,4,5] [--window 50] [--threads 2] [--tolerance 0.02]
        [--cache DIR] [--out bench/mixed-precision.md]

The main job (scripts/main.sh: gpt-tiny, hidden 128, seq 64, batch 32, AdamW
lr 3e-3, on the GNU GPL 3 text) trains --steps steps on the same data, for
every seed of --seeds, as

  f32          strata-opt --strata-autodiff --strata-plan-buffers
  bf16 (pass)  the same with --strata-mixed-precision after autodiff: every
               matmul (forward and gradient) rounds its operands to bf16

and, for the first seed, as

  bf16 (model) strata-model --dtype bf16, autodiff, and --export-plan, which
               widens the bf16 tensors to f32 master copies with the bf16
               products marked (the path a user of --dtype bf16 takes).

It reports each run's final loss (the mean of its last --window losses), the
mean over the seeds per precision and its relative difference, f32's own
spread over the seeds, the loss curves (means over --window-step windows)
and the median step times. The check (exit 1 when it fails): the mean bf16
final loss is within --tolerance (2%, the issue's bound) of the mean f32 one,
and the two bf16 routes give identical losses (the same arithmetic reached
two ways). With one seed the check compares that seed's runs. The lit test
test/Integration/mixed-precision-main.test runs it for a few steps.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

from benchutil import cpu_name, sh

parser = argparse.ArgumentParser()
parser.add_argument("--build", default="build")
parser.add_argument("--steps", type=int, default=500)
parser.add_argument("--seeds", default="3")
parser.add_argument("--window", type=int, default=50)
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--tolerance", type=float, default=0.02)
parser.add_argument("--cache", default="",
                    help="keep each run's losses (JSON lines) in this folder "
                         "and reuse them")
parser.add_argument("--out", default="bench/mixed-precision.md")
args = parser.parse_args()
BIN = os.path.join(args.build, "bin")
W = args.window
SEEDS = [int(s) for s in args.seeds.split(",")]
TMP = tempfile.mkdtemp(prefix="mixed-precision-bench-")
CACHE = args.cache or TMP
os.makedirs(CACHE, exist_ok=True)
DATA = "/usr/share/common-licenses/GPL-3"
if not os.path.exists(DATA):
    DATA = "README.md"
MODEL = "gpt --preset gpt-tiny --hidden 128 --seq 64 --positions 64 --batch 32"
OPTIMIZER = "optimizer=adamw lr=0.003"

# (name, tag, strata-model flags, strata-opt passes after autodiff)
ROUTES = [
    ("f32", "f32", "", "--strata-plan-buffers"),
    ("bf16 (pass)", "bf16-pass", "",
     "--strata-mixed-precision --strata-plan-buffers"),
    ("bf16 (model)", "bf16-model", "--dtype bf16", ""),
]


def compile_plan(tag, dtype, passes):
    plan = os.path.join(TMP, tag + ".json")
    sh("%s/strata-model %s %s | %s/strata-opt --strata-autodiff='%s' %s | "
       "%s/strata-translate --export-plan -o %s" %
       (BIN, MODEL, dtype, BIN, OPTIMIZER, passes, BIN, plan))
    return plan


def train(tag, plan, seed):
    log = os.path.join(CACHE, "%s-seed%d-steps%d.jsonl" % (tag, seed,
                                                         args.steps))
    if not (args.cache and os.path.exists(log)):
        sh("%s/strata-run %s --data %s --steps %d --seed %d --threads %d "
           "--log-json %s.tmp --quiet" % (BIN, plan, DATA, args.steps, seed,
                                          args.threads, log))
        os.replace(log + ".tmp", log)
    records = [json.loads(line) for line in open(log)]
    return [r["loss"] for r in records], [r["ms"] for r in records]


def mean(values):
    return sum(values) / len(values)


runs = []  # dicts: name, seed, losses, ms, bf16
for name, tag, dtype, passes in ROUTES:
    plan = compile_plan(tag, dtype, passes)
    bf16 = open(plan).read().count('"bf16":1')
    for seed in SEEDS[:1] if tag == "bf16-model" else SEEDS:
        losses, ms = train(tag, plan, seed)
        runs.append({"name": name, "seed": seed, "losses": losses,
                     "bf16": bf16, "final": mean(losses[-W:]),
                     "ms": statistics.median(ms[5:] or ms)})
        print("%-13s seed %d: %d bf16 instructions, last-%d mean %.4f, "
              "median %.1f ms" % (name, seed, bf16, W, runs[-1]["final"],
                                  runs[-1]["ms"]), flush=True)


def pick(name, seed=None):
    return [r for r in runs if r["name"] == name and
            (seed is None or r["seed"] == seed)]


f32_mean = mean([r["final"] for r in pick("f32")])
bf16_mean = mean([r["final"] for r in pick("bf16 (pass)")])
delta = (bf16_mean - f32_mean) / f32_mean
f32_finals = [r["final"] for r in pick("f32")]
spread = (max(f32_finals) - min(f32_finals)) / f32_mean
failures = []
if not abs(delta) <= args.tolerance:
    failures.append("the mean bf16 final loss is %+.2f%% from f32's (bound "
                    "%.0f%%)" % (100 * delta, 100 * args.tolerance))
if pick("bf16 (model)")[0]["losses"] != pick("bf16 (pass)",
                                            SEEDS[0])[0]["losses"]:
    failures.append("the two bf16 routes differ")

lines = [
    "# Mixed-precision training of the main job",
    "",
    "Written by `python3 bench/mixed_precision.py --steps %d --seeds %s "
    "--window %d --threads %d` on %s (2 cores shared with other engineers' "
    "builds and benchmarks, so step times are noisy upper bounds). The main "
    "job (`scripts/main.sh`: gpt-tiny, hidden 128, seq 64, batch 32, AdamW "
    "lr 3e-3 on the GNU GPL 3 text) trains %d steps in f32 and in mixed "
    "precision, reached two ways: `--strata-mixed-precision` after "
    "`--strata-autodiff`, and `strata-model --dtype bf16` exported as it is "
    "(`--export-plan` widens the bf16 tensors to f32 master copies and marks "
    "the products that multiplied them; first seed only). In both, every "
    "matmul and its gradient products round their operands to bf16 and sum "
    "in f32; everything else is f32. Final loss: the mean of the last %d "
    "losses." % (args.steps, args.seeds, W, args.threads, cpu_name(),
                  args.steps, W),
    "",
    "| run | seed | bf16 instructions | final loss | vs f32, same seed | "
    "median step ms |",
    "| --- | ---: | ---: | ---: | ---: | ---: |",
]
for r in runs:
    ref = pick("f32", r["seed"])[0]["final"]
    lines.append("| %s | %d | %d | %.4f | %s | %.1f |" % (
        r["name"], r["seed"], r["bf16"], r["final"],
        "%+.2f%%" % (100 * (r["final"] - ref) / ref)
        if r["name"] != "f32" else "", r["ms"]))
lines += [
    "",
    "Mean final loss over seeds %s: f32 %.4f, bf16 %.4f (%+.2f%%). f32's own "
    "final losses span %.1f%% of their mean across those seeds." % (
        args.seeds, f32_mean, bf16_mean, 100 * delta, 100 * spread),
    "",
    "Check: the mean bf16 final loss within %.0f%% of the mean f32 one (the "
    "issue's bound; bf16 keeps f32's exponent, so no loss scaling is "
    "involved), and the two bf16 routes identical: %s." % (
        100 * args.tolerance,
        "**passed**" if not failures else "**FAILED** (" +
        "; ".join(failures) + ")"),
    "",
    "Loss curves (mean loss of each %d-step window; `mean` over the seeds):"
    % W,
    "",
]
columns = [r for r in runs if r["seed"] == SEEDS[0]]
header = ["%s, seed %d" % (r["name"], r["seed"]) for r in columns]
if len(SEEDS) > 1:
    header += ["f32, mean", "bf16, mean"]
lines.append("| steps | " + " | ".join(header) + " |")
lines.append("| --- | " + " | ".join("---:" for _ in header) + " |")
for start in range(0, args.steps, W):
    row = ["%d-%d" % (start + 1, min(start + W, args.steps))]
    for r in columns:
        row.append("%.4f" % mean(r["losses"][start:start + W]))
    if len(SEEDS) > 1:
        for name in ("f32", "bf16 (pass)"):
            row.append("%.4f" % mean([mean(r["losses"][start:start + W])
                                      for r in pick(name)]))
    lines.append("| " + " | ".join(row) + " |")
lines.append("")
with open(args.out, "w") as f:
    f.write("\n".join(lines))
print("wrote", args.out)
if failures:
    print("FAILED: " + "; ".join(failures))
    sys.exit(1)
