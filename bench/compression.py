#!/usr/bin/env python3
"""Benchmarks --strata-compress-activations; writes bench/compression.md and
bench/compression-loss.svg.

    python3 bench/compression.py [--build build] [--steps 1000]
        [--small-steps 200] [--threads 2] [--out bench/compression.md]

For each model and format: the saved-activation bytes (f32 and packed, as
strata-run reports them; for auto, after the runtime's choice), the planned
arena, the final loss (mean of the last 50 logged steps) against f32's, and
the median step time against f32's. Every plan trains from the same seed on
the same data. The main job (the README's GPT on the GPL-3 text) runs
--steps steps; the MLP and ResNet-18 run --small-steps. The SVG plots the
main job's loss curves (moving mean over 25 steps).
"""
import argparse
import json
import os
import re
import statistics
import tempfile

from benchutil import cpu_name, loss_svg, sh

parser = argparse.ArgumentParser()
parser.add_argument("--build", default="build")
parser.add_argument("--steps", type=int, default=1000)
parser.add_argument("--small-steps", type=int, default=200)
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--out", default="bench/compression.md")
parser.add_argument("--svg", default="bench/compression-loss.svg")
parser.add_argument("--cache", default="",
                    help="keep each run's results in this folder and reuse "
                         "them (runs named by --rerun are run again)")
parser.add_argument("--rerun", nargs="*", default=[],
                    help="formats to run again despite the cache")
args = parser.parse_args()
BIN = os.path.join(args.build, "bin")
TMP = tempfile.mkdtemp(prefix="compress-bench-")
DATA = "/usr/share/common-licenses/GPL-3"

MODELS = [
    ("main-job GPT (gpt-tiny, hidden 128, seq 64, batch 32; AdamW)",
     "gpt --preset gpt-tiny --hidden 128 --seq 64 --positions 64 --batch 32",
     "adamw lr=0.003", DATA, "main"),
    ("MLP 4x1024 batch 256 (SGD)",
     "mlp --batch 256 --inputs 256 --hidden 1024 --layers 4 --classes 10",
     "sgd lr=0.05 momentum=0.9", None, "small"),
    ("ResNet-18 32x32 batch 16 (SGD)",
     "resnet18 --batch 16 --image-size 32 --classes 10",
     "sgd lr=0.005 momentum=0.9", None, "small"),
]
FORMATS = ["none", "mxfp8", "mxfp6", "mxfp4", "mxint8", "bfp:m=4",
           "bfp-outlier:m=4,outliers=1", "bfp-nu:m=3", "auto"]
MAIN_FORMATS = ["none", "mxfp8", "mxfp6", "mxfp4", "bfp:m=4", "bfp-nu:m=3",
                "auto"]
AUTO = "format=auto budget=0.05"


def compile_step(tag, model, optimizer, fmt):
    base = os.path.join(TMP, tag)
    if not os.path.exists(base + ".mlir"):
        sh("%s/strata-model %s | %s/strata-opt --strata-autodiff='optimizer=%s'"
           " -o %s.mlir" % (BIN, model, BIN, optimizer, base))
    option = AUTO if fmt == "auto" else "format=" + fmt
    name = "%s-%s" % (tag, re.sub(r"[^A-Za-z0-9]+", "-", fmt))
    plan = os.path.join(TMP, name + ".json")
    sh("%s/strata-opt %s.mlir --strata-compress-activations='%s' "
       "--strata-plan-buffers 2>/dev/null | %s/strata-translate --export-plan "
       "-o %s" % (BIN, base, option, BIN, plan))
    return plan, name


def train(plan, name, data, steps):
    log = os.path.join(TMP, name + ".jsonl")
    cmd = "%s/strata-run %s --steps %d --seed 3 --threads %d --log-json %s" % (
        BIN, plan, steps, args.threads, log)
    if data:
        cmd += " --data " + data
    out = sh(cmd)
    records = [json.loads(line) for line in open(log)]
    losses = [r["loss"] for r in records]
    ms = [r["ms"] for r in records]
    arena = int(re.search(r"^memory: arena (\d+)", out, re.M).group(1))
    saved = re.search(r"^compressed activations: (\d+) tensors, (\d+) bytes "
                      r"\((\d+) as f32", out, re.M)
    tensors, packed, f32 = (map(int, saved.groups()) if saved else (0, 0, 0))
    chosen = re.findall(r"^compress step \d+: \d+ changes; \d+ tensors take "
                        r"(\d+) bytes", out, re.M)
    if chosen:
        packed = int(chosen[-1])
    changes = len(re.findall(r"^compress step \d+: tensor ", out, re.M))
    return {"losses": losses, "ms": statistics.median(ms[5:] or ms),
            "arena": arena, "tensors": tensors, "packed": packed, "f32": f32,
            "changes": changes}


def final(losses):
    tail = losses[-50:]
    return sum(tail) / len(tail)


def main():
    cpu = cpu_name()
    lines = ["# Activation compression", "",
             "`python3 bench/compression.py --steps %d --small-steps %d "
             "--threads %d` on this machine (%s, 2 cores; other engineers "
             "were building and benchmarking on the same cores, so step times "
             "are noisy upper bounds). Every plan trains from seed 3; the main "
             "job reads the GPL-3 text, the others synthetic data. `auto` is "
             "`%s` with the default candidates (mxfp8, mxfp6, bfp m=4, mxfp4) "
             "and `--compress-every 100`. Saved bytes: the activations the "
             "step saves for backward, as f32 and packed (auto: after the "
             "runtime's last choice); final loss: mean of the last 50 steps."
             % (args.steps, args.small_steps, args.threads, cpu, AUTO), ""]
    curves = {}
    for title, model, optimizer, data, kind in MODELS:
        steps = args.steps if kind == "main" else args.small_steps
        tag = re.sub(r"[^a-z0-9]+", "-", title.lower())[:20]
        formats = MAIN_FORMATS if kind == "main" else FORMATS
        lines += ["## %s, %d steps" % (title, steps), "",
                  "| format | saved bytes f32 -> packed | ratio | arena bytes |"
                  " final loss | vs f32 | step ms | vs f32 |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        ref = None
        for fmt in formats:
            plan, name = compile_step(tag, model, optimizer, fmt)
            cached = os.path.join(args.cache, name + "-%d.json" % steps) \
                if args.cache else ""
            if cached and os.path.exists(cached) and fmt not in args.rerun:
                r = json.load(open(cached))
            else:
                r = train(plan, name, data, steps)
                if cached:
                    os.makedirs(args.cache, exist_ok=True)
                    json.dump(r, open(cached, "w"))
            print(title, fmt, r["packed"], final(r["losses"]), r["ms"],
                  flush=True)
            if fmt == "none":
                ref = r
            if kind == "main":
                curves["f32" if fmt == "none" else fmt] = r["losses"]
            ratio = "%.2fx" % (r["f32"] / r["packed"]) if r["packed"] else "1x"
            lines.append("| %s | %s | %s | %d | %.4f | %+.2f%% | %.1f | %+.0f%% |"
                         % ("f32" if fmt == "none" else fmt,
                            "%d -> %d" % (r["f32"], r["packed"])
                            if r["packed"] else "-",
                            ratio, r["arena"], final(r["losses"]),
                            100 * (final(r["losses"]) / final(ref["losses"])
                                   - 1),
                            r["ms"], 100 * (r["ms"] / ref["ms"] - 1)))
        lines.append("")
    loss_svg(curves, args.svg, "main-job GPT loss, %d steps (mean of 25)" %
        args.steps)
    open(args.out, "w").write("\n".join(lines) + "\n")


main()
