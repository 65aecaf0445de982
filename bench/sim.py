#!/usr/bin/env python3
"""strata-sim validated on real runs: predicted vs measured step time of
CPU-rank configurations (one rank, data-parallel with and without overlap,
GPipe, 1F1B and interleaved pipelines) under emulated links
(strata-run --emulate-link) and slowed compute (--emulate-compute), plus a
what-if check and the arena of every plan.

    python3 bench/sim.py [--build build] [--steps 14] [--repeats 2]

Writes bench/sim.md.

Method (seed 001's ratio method): the kernel times come from one profile of
the one-rank step on this machine (strata-run --profile, the same kernels as
every configuration's micro-batches and replicas); the links are the emulated
ones (--what-if link=...GB/s,latency=...us), slowed compute is
--what-if compute=0.5x. Nothing is fitted to the measured multi-rank runs.
Measured: per run, the median of the per-step times (strata-run --log-json,
first two steps left out); the smallest median of --repeats runs (the machine
is shared: other processes only ever add time).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

from benchutil import cpu_name

MODEL = "mlp --layers 8 --hidden 512 --inputs 512 --classes 10 --batch 16"
MICRO = 8
LATENCY_US = 20
MPIRUN = "mpirun --allow-run-as-root --oversubscribe"


def sh(command):
    done = subprocess.run(command, shell=True, text=True, capture_output=True)
    if done.returncode != 0:
        sys.exit(f"sim.py: `{command}` failed ({done.returncode}):\n"
                 f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    return done.stdout


# (name, compile options, ranks, emulated GB/s or None, compute slow-down)
CONFIGS = [
    ("1 rank", "", 1, None, 1),
    ("1 rank, compute 2x", "", 1, None, 2),
    ("DP 2, blocking all-reduce, 1 GB/s", "dp", 2, 1.0, 1),
    ("DP 2, blocking all-reduce, 0.25 GB/s", "dp", 2, 0.25, 1),
    ("DP 2, overlapped buckets, 1 GB/s", "sync", 2, 1.0, 1),
    ("DP 2, overlapped buckets, 0.25 GB/s", "sync", 2, 0.25, 1),
    ("DP 2, overlapped buckets, 10 GB/s", "sync", 2, 10.0, 1),
    ("DP 2, overlapped buckets, 1 GB/s, compute 2x", "sync", 2, 1.0, 2),
    ("GPipe 2 stages, 1 GB/s", "stages=2 schedule=gpipe", 2, 1.0, 1),
    ("GPipe 2 stages, 10 GB/s", "stages=2 schedule=gpipe", 2, 10.0, 1),
    ("1F1B 2 stages, 1 GB/s", "stages=2 schedule=1f1b", 2, 1.0, 1),
    ("1F1B 2 stages, 0.25 GB/s", "stages=2 schedule=1f1b", 2, 0.25, 1),
    ("1F1B 2 stages, 1 GB/s, compute 2x", "stages=2 schedule=1f1b", 2, 1.0,
     2),
    ("interleaved 2 devices x 2 chunks, 1 GB/s",
     "stages=4 virtual=2 schedule=interleaved", 2, 1.0, 1),
    ("1F1B 2 stages x 2 replicas, 1 GB/s (4 ranks on 2 cores)",
     "stages=2 replicas=2 schedule=1f1b", 4, 1.0, 1),
]
WHAT_IF = "DP 2, overlapped buckets, 1 GB/s"


def compile_plan(b, step, options, tmp, index):
    plan = os.path.join(tmp, f"plan{index}.json")
    if options == "":
        sh(f"{b}/strata-translate {step} --export-plan -o {plan}")
    elif options == "dp":
        sh(f"{b}/strata-opt {step} --strata-data-parallel=replicas=2 | "
           f"{b}/strata-translate --export-plan -o {plan}")
    elif options == "sync":
        sh(f"{b}/strata-opt {step} --strata-insert-grad-sync='replicas=2 "
           f"bucket-bytes=1048576' | {b}/strata-translate --export-plan "
           f"-o {plan}")
    else:
        sh(f"{b}/strata-opt {step} --strata-schedule-pipeline='"
           f"micro-batches={MICRO} {options}' | {b}/strata-translate "
           f"--export-plan -o {plan}")
    return plan


def measure(b, plan, ranks, gbps, slow, steps, repeats, tmp):
    """The smallest per-run median step time (s) and rank 0's arena."""
    flags = f"--steps {steps} --threads 1"
    if gbps is not None:
        flags += f" --emulate-link=bandwidth={gbps:g},latency={LATENCY_US}"
    if slow != 1:
        flags += f" --emulate-compute={slow:g}"
    log = os.path.join(tmp, "log.json")
    best, arena = None, None
    for _ in range(repeats):
        launcher = f"{MPIRUN} -np {ranks} " if ranks > 1 else ""
        out = sh(f"{launcher}{b}/strata-run {plan} {flags} --log-json {log}")
        arena = int(re.search(r"arena (\d+) bytes", out).group(1))
        records = [json.loads(line) for line in open(log) if line.strip()]
        ms = sorted(r["ms"] for r in records if r["step"] > 2)
        median = ms[len(ms) // 2] / 1e3
        best = median if best is None else min(best, median)
    return best, arena


def predict(b, plan, profile, gbps, slow, extra=""):
    what_if = []
    if gbps is not None:
        what_if.append(f"link={gbps:g}GB/s,latency={LATENCY_US}us")
    if slow != 1:
        what_if.append(f"compute={1 / slow:g}x")
    if extra:
        what_if.append(extra)
    flag = f"--what-if '{','.join(what_if)}'" if what_if else ""
    out = json.loads(sh(f"{b}/strata-sim {plan} --target cpu-local "
                        f"--profile {profile} {flag} --json"))
    return out["step_seconds"], out["ranks"][0]["arena_bytes"]


def kendall_tau(xs, ys):
    concordant = discordant = 0
    for i in range(len(xs)):
        for j in range(i + 1, len(xs)):
            s = (xs[i] - xs[j]) * (ys[i] - ys[j])
            concordant += s > 0
            discordant += s < 0
    pairs = len(xs) * (len(xs) - 1) / 2
    return (concordant - discordant) / pairs


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--steps", type=int, default=14)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    b = os.path.abspath(os.path.join(args.build, "bin"))
    here = os.path.dirname(os.path.abspath(__file__))
    load_start = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        step = os.path.join(tmp, "step.mlir")
        sh(f"{b}/strata-model {MODEL} | {b}/strata-opt --strata-autodiff "
           f"-o {step}")
        one = compile_plan(b, step, "", tmp, "one")
        profile = os.path.join(tmp, "profile.json")
        sh(f"{b}/strata-run {one} --steps 30 --threads 1 --profile {profile}")
        what_if = None
        for index, (name, options, ranks, gbps, slow) in enumerate(CONFIGS):
            plan = compile_plan(b, step, options, tmp, index)
            pred, pred_arena = predict(b, plan, profile, gbps, slow)
            meas, arena = measure(b, plan, ranks, gbps, slow, args.steps,
                                  args.repeats, tmp)
            rows.append((name, ranks, pred, meas, pred_arena, arena))
            print(f"{name}: predicted {pred * 1e3:.3f} ms, measured "
                  f"{meas * 1e3:.3f} ms", file=sys.stderr)
            if name == WHAT_IF:
                half, _ = predict(b, plan, profile, gbps, slow, "link=0.5x")
                at_half, _ = measure(b, plan, ranks, gbps / 2, slow,
                                     args.steps, args.repeats, tmp)
                what_if = (pred, half, at_half)
    load_end = os.getloadavg()
    write_report(here, args, rows, what_if, load_start, load_end)


def write_report(here, args, rows, what_if, load_start, load_end):
    errors = [abs(p - m) / m for _, _, p, m, _, _ in rows]
    two = [(p, m) for _, r, p, m, _, _ in rows if r <= 2]
    errors2 = [abs(p - m) / m for p, m in two]
    tau = kendall_tau([r[2] for r in rows], [r[3] for r in rows])
    tau2 = kendall_tau([p for p, _ in two], [m for _, m in two])
    lines = [
        "# strata-sim: predicted vs measured step time",
        "",
        f"`python3 bench/sim.py --steps {args.steps} --repeats "
        f"{args.repeats}` (this file's generator). Machine: {cpu_name()}, "
        f"{os.cpu_count()} cores, **shared with other engineers' builds**: "
        f"load average {load_start[0]:.2f} / {load_start[1]:.2f} / "
        f"{load_start[2]:.2f} (1 / 5 / 15 min) at the start, "
        f"{load_end[0]:.2f} / {load_end[1]:.2f} / {load_end[2]:.2f} at the "
        "end. Model: `strata-model " + MODEL + "`, AdamW; pipelines run "
        f"{MICRO} micro-batches of 16. One kernel thread per rank. Emulated "
        f"links: `strata-run --emulate-link=bandwidth=B,latency={LATENCY_US}`; "
        "slowed compute: `--emulate-compute=2`.",
        "",
        "Predicted: `strata-sim PLAN --target cpu-local --profile P "
        "--what-if 'link=BGB/s,latency=" + str(LATENCY_US) + "us[,compute=0.5x]'` "
        "with P from one `strata-run` of the one-rank step (`--profile`, 30 "
        "steps). Measured: the median step of a run (steps 3 on), the "
        f"smallest of {args.repeats} runs. Nothing is fitted to the "
        "multi-rank runs.",
        "",
        "| configuration | ranks | predicted ms | measured ms | error | "
        "predicted arena | runtime arena |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for (name, ranks, pred, meas, pa, ra), err in zip(rows, errors):
        lines.append(f"| {name} | {ranks} | {pred * 1e3:.3f} | "
                     f"{meas * 1e3:.3f} | {100 * (pred - meas) / meas:+.1f}% | "
                     f"{pa} | {ra} |")
    arenas_equal = all(pa == ra for *_, pa, ra in rows)
    lines += [
        "",
        f"**All {len(rows)} configurations:** mean absolute error "
        f"{100 * sum(errors) / len(errors):.1f}%, max "
        f"{100 * max(errors):.1f}%, Kendall tau {tau:.3f}.",
        f"**The {len(two)} configurations on at most 2 ranks** (one core "
        f"each): mean absolute error {100 * sum(errors2) / len(errors2):.1f}%, "
        f"max {100 * max(errors2):.1f}%, Kendall tau {tau2:.3f}.",
        "Targets (issue 17): mean <= 5%, max <= 10%, tau >= 0.9.",
        "",
        "Arena: predicted (strata-sim, rank 0) "
        + ("equals" if arenas_equal else "**differs from**")
        + " the runtime's (strata-run's `arena N bytes`) for every plan.",
    ]
    if what_if:
        base, half, at_half = what_if
        lines += [
            "",
            f"**What-if** ({WHAT_IF}): predicted {base * 1e3:.3f} ms; "
            f"`--what-if link=0.5x` predicts {half * 1e3:.3f} ms; measured "
            f"at 0.5 GB/s {at_half * 1e3:.3f} ms: "
            f"{100 * (half - at_half) / at_half:+.1f}% (target: within 10%).",
        ]
    with open(os.path.join(here, "sim.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
