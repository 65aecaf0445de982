#!/usr/bin/env python3
"""pipedream and 2bw with and without a flush between steps.

    flock /work/notes/cpu.lock python3 bench/pipeline_drain.py [--steps 30]
        [--rounds 5] [--build build]

Writes bench/pipeline-drain.md. Each schedule runs on 2 pipeline stages (2
ranks, one core each on this 2-core machine, so a rank's idle time in the
bubble is idle time of its core), once with `drain=run` (a
step runs the previous step's last backward pass first, so the pipeline
fills once per run) and once with `drain=step` (the pipeline drains at
every step's end). Measured: strata-run's mean step (steps 2 on), the
median over rounds that alternate the plans. The losses of every step of
the two drains must be equal (the same weights bit for bit); the script
stops otherwise. Predicted: the scheduler's timeline model on the
`cpu-local` target (`predicted_step_seconds`, `predicted_bubble`).
"""
import argparse
import os
import re
import statistics
import sys
import tempfile

from benchutil import cpu_name, mean_step_ms, sh

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = "mlp --layers 8 --hidden 512 --inputs 512 --classes 10 --batch 16"
OPTIMIZER = "optimizer=sgd lr=0.01 momentum=0.9"
# (row, scheduler options); every row runs with drain=run and drain=step.
SCHEDULES = [
    ("pipedream, 2 stages, 4 micro-batches",
     "stages=2 micro-batches=4 schedule=pipedream"),
    ("pipedream, 2 stages, 8 micro-batches",
     "stages=2 micro-batches=8 schedule=pipedream"),
    ("2bw (window 4), 2 stages, 8 micro-batches",
     "stages=2 micro-batches=8 schedule=2bw window=4"),
    ("2bw (window 8), 2 stages, 8 micro-batches",
     "stages=2 micro-batches=8 schedule=2bw"),
]
DRAINS = ["run", "step"]


def predicted(mlir):
    m = re.search(r"predicted_step_seconds = ([0-9.eE+-]+)", mlir)
    b = re.search(r"predicted_bubble = ([0-9.eE+-]+)", mlir)
    return float(m.group(1)), float(b.group(1))


def losses(output):
    return [l.split()[3] for l in output.splitlines() if l.startswith("step ")]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    bin_dir = os.path.join(ROOT, args.build, "bin")
    tool = lambda name: os.path.join(bin_dir, name)
    load_before = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        step = os.path.join(tmp, "step.mlir")
        sh(f"{tool('strata-model')} {MODEL} | {tool('strata-opt')} "
           f"--strata-autodiff='{OPTIMIZER}' -o {step}")
        for name, options in SCHEDULES:
            for drain in DRAINS:
                sched = f"{options} drain={drain}"
                mlir = sh(f"{tool('strata-opt')} {step} "
                          f"--strata-schedule-pipeline='{sched} "
                          f"target=cpu-local'")
                plan = os.path.join(tmp, f"plan{len(rows)}.json")
                sh(f"{tool('strata-opt')} {step} --strata-schedule-pipeline="
                   f"'{sched}' | {tool('strata-translate')} --export-plan "
                   f"-o {plan}")
                pred, bubble = predicted(mlir)
                rows.append({"name": name, "drain": drain, "plan": plan,
                             "pred": pred, "bubble": bubble, "ms": [],
                             "losses": None})
        for _ in range(args.rounds):
            for row in rows:
                out = sh(f"mpirun --allow-run-as-root --oversubscribe -np 2 "
                         f"{tool('strata-run')} {row['plan']} --steps "
                         f"{args.steps} --threads 1 --seed 1")
                row["ms"].append(mean_step_ms(out))
                row["losses"] = losses(out)
    for run, step in zip(rows[0::2], rows[1::2]):
        if run["losses"] != step["losses"]:
            sys.exit(f"{run['name']}: the losses of drain=run and drain=step "
                     f"differ: {run['losses']} vs {step['losses']}")
    load_after = os.getloadavg()[0]
    lines = [
        "# pipedream and 2bw: no flush between steps (drain=run) vs a flush "
        "every step (drain=step)",
        "",
        f"`flock /work/notes/cpu.lock python3 bench/pipeline_drain.py "
        f"--steps {args.steps} --rounds {args.rounds}` (this file's "
        f"generator) on {cpu_name()}, {os.cpu_count()} cores (load average "
        f"{load_before:.2f} before, {load_after:.2f} after). Model: "
        f"`strata-model {MODEL}` (one micro-batch), `{OPTIMIZER}`; 2 "
        "pipeline stages on 2 ranks (one core each: a rank idle in the "
        "bubble leaves its core idle), one kernel thread per rank, this "
        "machine's link. Measured: strata-run's mean step (steps 2 on), the "
        f"median of {args.rounds} rounds that alternate the plans. "
        "Predicted: the scheduler's timeline model on `cpu-local` (for "
        "drain=run the steady state, three steps less two). The losses of "
        f"all {args.steps} steps are equal between the two drains in every "
        "row (checked by the script: the weights are the same bit for bit, "
        "`test/Integration/pipeline-carry-over.test`).",
        "",
        "| schedule | drain | predicted ms (bubble) | measured ms (median) "
        "| runs | run / step measured | run / step predicted |",
        "| --- | --- | ---: | ---: | --- | ---: | ---: |",
    ]
    for run, step in zip(rows[0::2], rows[1::2]):
        ratio = statistics.median(run["ms"]) / statistics.median(step["ms"])
        for row in (run, step):
            runs = ", ".join(f"{m:.2f}" for m in row["ms"])
            extra = (f"{ratio:.3f} | {run['pred'] / step['pred']:.3f}"
                     if row is run else " | ")
            lines.append(
                f"| {row['name']} | {row['drain']} | {row['pred'] * 1e3:.2f} "
                f"({row['bubble']:.2f}) | "
                f"{statistics.median(row['ms']):.2f} | {runs} | {extra} |")
    lines += [
        "",
        "Reading: with drain=step each step pays 1F1B's warm-up and drain "
        "(stage 0 waits for stage 1's first backward pass, stage 1 for "
        "stage 0's first forward pass); with drain=run a step begins with "
        "the previous step's last backward pass on stage 0 while stage 1 "
        "starts the step's first forward pass, so only the run's first "
        "step and its final drain have the bubble. The saving is about "
        "the bubble the timeline model predicts; the run-to-run spread "
        "(runs column) bounds what the difference can show. 2bw with a "
        "window shorter than the step gains nothing: the previous step's "
        "window update must come before the next window's first forward "
        "pass, where it holds up stage 1, and the window's partial "
        "gradient sum is copied into its carried state every step (the "
        "model predicts this too); drain=step is then the better choice.",
    ]
    with open(os.path.join(ROOT, "bench", "pipeline-drain.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
