#!/usr/bin/env python3
"""Training-step time of compiled models on this CPU, with the share of the
step spent in GEMM (matmul instructions), taken from strata-run's trace.

    python3 bench/train_step.py [--build build] [--steps 12] [--threads 1 2]
        [--repeat R] [--baseline-run PATH/strata-run] [--baseline-label TEXT]

Writes bench/train-step.md. With --baseline-run, every plan also runs on that
strata-run (for example one built from an earlier commit), alternating with
this build's in the same session, and the table gets its step time and the
ratio; with --repeat R each step time is the median of R runs.
"""
import argparse
import collections
import json
import os
import statistics
import tempfile

from benchutil import cpu_name, mean_step_ms, sh

MODELS = [
    ("mlp: 4 layers, hidden 1024, batch 256",
     "mlp --layers 4 --hidden 1024 --inputs 1024 --classes 10 --batch 256",
     None),
    ("gpt-tiny: 4 layers, hidden 256, 4 heads, seq 128, batch 16 (byte text)",
     "gpt --preset gpt-tiny", "/usr/share/common-licenses/GPL-3"),
]



def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--baseline-run", default=None)
    parser.add_argument("--baseline-label", default="baseline")
    parser.add_argument("--output", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "train-step.md"))
    args = parser.parse_args()
    b = os.path.abspath(os.path.join(args.build, "bin"))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, data in MODELS:
            plan = os.path.join(tmp, "plan.json")
            sh(f"{b}/strata-model {model} | {b}/strata-opt "
                f"--strata-autodiff=optimizer=adamw | {b}/strata-translate "
                f"--export-plan -o {plan}")
            flops = None
            for threads in args.threads:
                trace = os.path.join(tmp, "trace.json")
                extra = f"--data {data}" if data and os.path.exists(data) else ""
                run = (f"{plan} --steps {args.steps} --threads {threads} "
                       f"{extra}")
                ours, theirs = [], []
                for _ in range(args.repeat):
                    out = sh(f"{b}/strata-run {run} --trace {trace}")
                    ours.append(mean_step_ms(out))
                    if args.baseline_run:
                        theirs.append(mean_step_ms(
                            sh(f"{args.baseline_run} {run}")))
                mean_ms = statistics.median(ours)
                base_ms = statistics.median(theirs) if theirs else None
                events = json.load(open(trace))
                events = events["traceEvents"] if isinstance(events, dict) else events
                by_op = collections.Counter()
                steps = set()
                for e in events:
                    if e.get("ph") != "X":
                        continue
                    step = e.get("args", {}).get("step")
                    if step == 1:
                        continue  # warm-up, as in strata-run's mean
                    steps.add(step)
                    by_op[e["name"]] += e["dur"]
                total = sum(by_op.values())
                gemm = by_op["matmul"]
                top = ", ".join(f"{k} {100 * v / total:.0f}%"
                                for k, v in by_op.most_common(4))
                rows.append((name, threads, mean_ms, base_ms,
                             100.0 * gemm / total, top))
                print(rows[-1], flush=True)
    cpu = cpu_name()
    lines = [
        "# Training-step time on the CPU",
        "",
        f"Produced by `python3 bench/train_step.py --steps {args.steps}"
        + (f" --repeat {args.repeat}" if args.repeat > 1 else "")
        + (f" --baseline-run ... --baseline-label '{args.baseline_label}'"
           if args.baseline_run else "") + "` on "
        f"{os.cpu_count()} cores ({cpu}). Each model is compiled with "
        "`strata-opt --strata-autodiff=optimizer=adamw` and run by `strata-run`; "
        "the step time is strata-run's mean over steps 2..N (step 1 is warm-up), "
        "the GEMM share is the time of `matmul` instructions over the time of "
        "all instructions in the same steps, from `--trace`"
        + (f"; each step time is the median of {args.repeat} runs"
           if args.repeat > 1 else "")
        + (f". The {args.baseline_label} column runs the same plans on "
           "another strata-run, alternating with this one"
           if args.baseline_run else "") + ".",
        "",
    ]
    if args.baseline_run:
        lines += [
            f"| model | threads | step (ms) | {args.baseline_label} (ms) "
            "| ratio | GEMM share | largest ops |",
            "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
        ]
    else:
        lines += [
            "| model | threads | step (ms) | GEMM share | largest ops |",
            "| --- | ---: | ---: | ---: | --- |",
        ]
    for name, threads, ms, base, share, top in rows:
        if base is None:
            lines.append(f"| {name} | {threads} | {ms:.1f} | {share:.0f}% "
                         f"| {top} |")
        else:
            lines.append(f"| {name} | {threads} | {ms:.1f} | {base:.1f} "
                         f"| {ms / base:.3f} | {share:.0f}% | {top} |")
    with open(args.output, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
