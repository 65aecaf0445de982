#!/usr/bin/env python3
"""Per-tensor formats by gradient sensitivity on the main-job GPT:
--strata-compress-activations="format=F sensitive=S" keeps the saved values
whose backward rule amplifies their error (layer-norm inputs, attention
probabilities: AutodiffOpInterface::amplifiesSavedError) in S and packs the
rest in F. Trains each variant for --steps steps on the GPL-3 text from
each seed, beside f32 from the same seeds, and writes a table of saved
bytes, compression ratio and final loss (mean of the last 50 steps).

    python3 bench/compression_mixed.py [--build build] [--steps 1000]
        [--seeds 3 4] [--threads 2] [--variants NAME ...]
        [--cache bench/compression-mixed.json] [--report [--at STEP]
        [--svg FILE]] [--rerun] [--compress-every K]
        [--time-steps N [--time-repeats R]]

Each (variant, seed) result is kept in --cache, so the runs can be made one
at a time (e.g. each under a lock on a shared machine) and --report prints
the table from the cache. Variant names: f32, or FORMAT+SENSITIVE (e.g.
mxfp4+mxfp8; SENSITIVE may be none: those values stay f32, or same: they
follow FORMAT; FORMAT auto:E is format=auto budget=E, the runtime's choice
by each tensor's error with --compress-every 100; autog:E is format=auto
budget=E candidates=bf16;mxfp8;mxfp6;mxfp4 chosen by gradient calibration,
strata-run --compress-calibrate gradient, every --compress-every steps;
autog:E:C1,C2,... names the candidates; autogn:E[:C1,...] is the same with
the budget E times the gradient's batch-to-batch noise,
--compress-calibrate gradient-noise),
optionally with @B (e.g. mxfp6+none@0.5): --strata-remat="budget=B
solver=dp" first, so that the values it recomputes (bit-identical kernels
on their saved inputs) are not saved at all and the rest is compressed.

The ratio is the step's compressible saved activations as f32 without
recomputation over what the variant stores of them: the packed bytes plus
the saved values it leaves f32 (the pass's remark counts both). Integer
tensors and the loss's inputs are neither compressed nor counted.
"""
import argparse
import functools
import json
import os
import re
import statistics
import subprocess
import tempfile

from benchutil import cpu_name, loss_svg, mean_step_ms, sh

parser = argparse.ArgumentParser()
parser.add_argument("--build", default="build")
parser.add_argument("--steps", type=int, default=1000)
parser.add_argument("--seeds", type=int, nargs="+", default=[3, 4])
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--variants", nargs="*",
                    default=["f32", "mxfp6+mxfp8", "mxfp4+mxfp8",
                             "bfp-nu:m=3+mxfp8"])
parser.add_argument("--cache", default="bench/compression-mixed.json")
parser.add_argument("--report", action="store_true")
parser.add_argument("--compress-every", type=int, default=100)
parser.add_argument("--time-steps", type=int, default=0,
                    help="only time the variants' steps (see time_variants)")
parser.add_argument("--time-repeats", type=int, default=3)
parser.add_argument("--svg", help="with --report: the loss curves (the "
                    "seeds' mean of each 50-step window) as an SVG")
parser.add_argument("--rerun", action="store_true",
                    help="run again what the cache holds (e.g. for the loss "
                    "windows that older entries lack)")
parser.add_argument("--at", type=int, default=0,
                    help="report the mean loss of the 50 steps up to this "
                    "step (a multiple of 50) instead of the last 50")
args = parser.parse_args()
if args.at and (args.at < 50 or args.at % 50):
    parser.error("--at: a positive multiple of 50, got %d" % args.at)
BIN = os.path.join(args.build, "bin")
TMP = tempfile.mkdtemp(prefix="compress-mixed-")
DATA = "/usr/share/common-licenses/GPL-3"
MODEL = "gpt --preset gpt-tiny --hidden 128 --seq 64 --positions 64 --batch 32"


def load():
    return json.load(open(args.cache)) if os.path.exists(args.cache) else {}


SAVED = re.compile(r"of (\d+) compressible saved activations, (\d+) bytes "
                   r"as f32")


@functools.lru_cache(maxsize=None)
def saved_bytes(step, options):
    """The compressible saved activations' f32 bytes after `options`."""
    err = subprocess.run(
        "%s/strata-opt %s %s --strata-compress-activations=format=mxfp8 "
        "-o /dev/null" % (BIN, step, options), shell=True, check=True,
        text=True, capture_output=True).stderr
    return int(SAVED.search(err).group(2))


def plan_of(variant):
    """The plan of `variant` (built once) and its strata-run options."""
    step = os.path.join(TMP, "step.mlir")
    if not os.path.exists(step):
        sh("%s/strata-model %s | %s/strata-opt --strata-autodiff='optimizer="
           "adamw lr=0.003' -o %s" % (BIN, MODEL, BIN, step))
    compression, _, remat = variant.partition("@")
    remat_option = ("--strata-remat='budget=%s target=cpu-local solver=dp'" %
                    remat if remat else "")
    compress_option = run_option = ""
    if compression != "f32":
        fmt, sensitive = compression.rsplit("+", 1)
        if fmt.startswith("auto:"):  # auto:E -> format=auto budget=E
            fmt = "auto budget=" + fmt[len("auto:"):]
        # autog:E or autog:E:C1,C2,...; autogn: the budget relative to the
        # gradient's noise (--compress-calibrate gradient-noise).
        calibrate = {"autog:": "gradient", "autogn:": "gradient-noise"}
        kind = next((k for k in calibrate if fmt.startswith(k)), None)
        if kind:
            budget, _, candidates = fmt[len(kind):].partition(":")
            fmt = ("auto budget=%s candidates=%s" % (
                budget, (candidates or "bf16,mxfp8,mxfp6,mxfp4")
                .replace(",", ";")))
            run_option = ("--compress-calibrate %s --compress-every %d"
                          % (calibrate[kind], args.compress_every))
        compress_option = "--strata-compress-activations='format=%s" % fmt
        if sensitive != "same":
            compress_option += " sensitive=%s" % sensitive
        compress_option += "'"
    plan = os.path.join(TMP, re.sub(r"[^\w]+", "-", variant) + ".json")
    if not os.path.exists(plan):  # one plan for every seed
        sh("%s/strata-opt %s %s %s --strata-plan-buffers 2>/dev/null | "
           "%s/strata-translate --export-plan -o %s" % (
               BIN, step, remat_option, compress_option, BIN, plan))
    return step, plan, remat_option, run_option


def run(variant, seed):
    step, plan, remat_option, run_option = plan_of(variant)
    log = plan + ".%d.jsonl" % seed
    out = sh("%s/strata-run %s --data %s --steps %d --threads %d --seed %d "
             "--log-json %s %s" % (BIN, plan, DATA, args.steps, args.threads,
                                   seed, log, run_option))
    open(plan + ".%d.log" % seed, "w").write(out)  # what the runtime chose
    losses = [json.loads(line)["loss"] for line in open(log)]
    saved = re.search(r"^compressed activations: (\d+) tensors, (\d+) bytes "
                      r"\((\d+) as f32", out, re.M)
    arena = int(re.search(r"^memory: arena (\d+)", out, re.M).group(1))
    # auto: the bytes of the runtime's last choice (the arena holds the
    # widest candidate's).
    chosen = re.findall(r"^compress step \d+: \d+ changes; \d+ tensors take "
                        r"(\d+) bytes", out, re.M)
    packed = int(saved.group(2)) if saved else 0
    if chosen:
        packed = int(chosen[-1])
    windows = [sum(losses[i:i + 50]) / 50
               for i in range(0, len(losses) - 49, 50)]
    calibrations = re.findall(r"gradient calibration: \d+ forward-backward "
                              r"passes in ([\d.]+) s", out)
    return {"final": sum(losses[-50:]) / len(losses[-50:]),
            "windows": windows,
            "calibration_s": sum(float(t) for t in calibrations),
            "tensors": int(saved.group(1)) if saved else 0,
            "packed": packed,
            "f32": int(saved.group(3)) if saved else 0,
            "saved_step": saved_bytes(step, ""),
            "saved_variant": saved_bytes(step, remat_option),
            "arena": arena, "steps": args.steps}


def final(r):
    """The mean loss of the last 50 steps, or of those up to --at."""
    return r["windows"][args.at // 50 - 1] if args.at else r["final"]


def report(results):
    f32_saved = max((r["f32"] for r in results.values()), default=0)
    step_saved = max((r.get("saved_step", r["f32"]) for r in results.values()),
                     default=0)
    print("| variant | tensors | packed bytes | ratio (saved f32 / stored) | "
          "arena bytes | " +
          " | ".join("loss seed %d" % s for s in args.seeds) +
          " | mean loss | vs f32 mean |")
    print("| --- | ---: | ---: | ---: | ---: | " +
          " | ".join("---:" for _ in args.seeds) + " | ---: | ---: |")
    base = None
    skipped = []
    for variant in args.variants:
        rows = [results.get("%s/%d" % (variant, s)) for s in args.seeds]
        if None in rows:
            continue
        if args.at and any(len(r.get("windows", [])) < args.at // 50
                           for r in rows):
            skipped.append(variant)
            continue
        mean = sum(final(r) for r in rows) / len(rows)
        if variant == "f32":
            base = mean
        first = rows[0]
        # Saved values left f32 (sensitive=none) still take their bytes;
        # those a remat variant recomputes take none.
        whole = first.get("saved_step", f32_saved)
        stored = first["packed"] + (first.get("saved_variant", f32_saved) -
                                    first["f32"])
        ratio = ("%.2fx" % (whole / stored) if stored < whole else "1x")
        print("| %s | %d | %s | %s | %d | %s | %.4f | %s |" % (
            variant, first["tensors"], first["packed"] or "-", ratio,
            first["arena"],
            " | ".join("%.4f" % final(r) for r in rows), mean,
            "%+.2f%%" % (100 * (mean - base) / base) if base else "-"))
    if skipped:
        print("\nNo loss windows up to step %d (runs made before they were "
              "kept): %s." % (args.at, ", ".join(skipped)))
    print("\nCompressible saved activations as f32: %d bytes; %d steps, %d "
          "threads; loss: mean of steps %d-%d." % (
              step_saved, args.steps, args.threads,
              (args.at or args.steps) - 49, args.at or args.steps))


def curves_svg(results):
    curves = {}
    for variant in args.variants:
        rows = [results.get("%s/%d" % (variant, s)) for s in args.seeds]
        if None in rows or any("windows" not in r for r in rows):
            continue
        n = min(len(r["windows"]) for r in rows)
        curves[variant] = [sum(r["windows"][i] for r in rows) / len(rows)
                           for i in range(n)]
    if not curves:
        raise SystemExit("--svg: no variant has loss windows for every seed")
    loss_svg(curves, args.svg, "main-job GPT loss, mean of seeds %s, "
             "each point 50 steps" % " ".join(map(str, args.seeds)),
             smooth_over=1, every=50)


def time_variants():
    """Step times: each variant's plan runs --time-steps steps, the
    variants in turn, --time-repeats rounds; strata-run's mean step (steps
    2 on) per run, the median over the rounds."""
    times = {v: [] for v in args.variants}
    for _ in range(args.time_repeats):
        for variant in args.variants:
            _, plan, _, run_option = plan_of(variant)
            out = sh("%s/strata-run %s --data %s --steps %d --threads %d "
                     "--seed 3 %s" % (BIN, plan, DATA, args.time_steps,
                                      args.threads, run_option))
            times[variant].append(mean_step_ms(out))
    base = statistics.median(times[args.variants[0]])
    print("| variant | step ms (median of %d) | runs | vs %s |" % (
        args.time_repeats, args.variants[0]))
    print("| --- | ---: | --- | ---: |")
    for variant in args.variants:
        ms = statistics.median(times[variant])
        print("| %s | %.1f | %s | %+.1f%% |" % (
            variant, ms, " ".join("%.1f" % t for t in times[variant]),
            100 * (ms / base - 1)))
    print("\n%d steps a run, %d threads, %s." % (
        args.time_steps, args.threads, cpu_name()))


results = load()
if args.time_steps:
    time_variants()
    raise SystemExit(0)
if not args.report:
    for variant in args.variants:
        for seed in args.seeds:
            key = "%s/%d" % (variant, seed)
            if (key in results and results[key]["steps"] == args.steps and
                    not args.rerun):
                continue
            results[key] = run(variant, seed)
            print(key, results[key], flush=True)
            os.makedirs(os.path.dirname(args.cache) or ".", exist_ok=True)
            results.update({k: v for k, v in load().items()
                            if k not in results})
            json.dump(results, open(args.cache, "w"), indent=1)
report(results)
if args.svg:
    curves_svg(results)
