#!/usr/bin/env python3
"""Training-step time of compiled models on this CPU, with the share of the
step spent in GEMM (matmul instructions), taken from strata-run's trace.

    python3 bench/train_step.py [--build build] [--steps 12] [--threads 1 2]

Writes bench/train-step.md.
"""
import argparse
import collections
import json
import os
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
                out = sh(f"{b}/strata-run {plan} --steps {args.steps} "
                          f"--threads {threads} --trace {trace} {extra}")
                mean_ms = mean_step_ms(out)
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
                rows.append((name, threads, mean_ms, 100.0 * gemm / total, top))
                print(rows[-1], flush=True)
    cpu = cpu_name()
    lines = [
        "# Training-step time on the CPU",
        "",
        f"Produced by `python3 bench/train_step.py --steps {args.steps}` on "
        f"{os.cpu_count()} cores ({cpu}). Each model is compiled with "
        "`strata-opt --strata-autodiff=optimizer=adamw` and run by `strata-run`; "
        "the step time is strata-run's mean over steps 2..N (step 1 is warm-up), "
        "the GEMM share is the time of `matmul` instructions over the time of "
        "all instructions in the same steps, from `--trace`.",
        "",
        "| model | threads | step (ms) | GEMM share | largest ops |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for name, threads, ms, share, top in rows:
        lines.append(f"| {name} | {threads} | {ms:.1f} | {share:.0f}% | {top} |")
    with open(args.output, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
