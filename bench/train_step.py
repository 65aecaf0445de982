#!/usr/bin/env python3
"""Training-step time of compiled models on this CPU, in f32 and with
--strata-mixed-precision (bf16), with the share of the step spent in GEMM
(matmul instructions), taken from strata-run's trace, beside PyTorch eager
(f32, and torch.autocast bf16) on the same models in the same session.

    python3 bench/train_step.py [--build build] [--steps 12] [--threads 1 2]
        [--precisions f32 bf16] [--repeat R] [--torch PYTHON]
        [--baseline-run PATH/strata-run] [--baseline-label TEXT]

Writes bench/train-step.md. --torch names a Python with torch (default
/work/venv-torch/bin/python when it exists; "" for none); bench/torch_step.py
runs the PyTorch side, alternating with strata-run. With --baseline-run,
every plan also runs on that strata-run (for example one built from an
earlier commit), alternating with this build's in the same session, and the
table gets its step time and the ratio; with --repeat R each step time is
the median of R runs.
"""
import argparse
import collections
import json
import os
import re
import statistics
import tempfile

from benchutil import cpu_name, mean_step_ms, sh

MODELS = [
    ("mlp: 4 layers, hidden 1024, batch 256",
     "mlp --layers 4 --hidden 1024 --inputs 1024 --classes 10 --batch 256",
     None, "mlp"),
    ("gpt-tiny: 4 layers, hidden 256, 4 heads, seq 128, batch 16 (byte text)",
     "gpt --preset gpt-tiny", "/usr/share/common-licenses/GPL-3", "gpt-tiny"),
]
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TORCH = "/work/venv-torch/bin/python"


def torch_ms(python, model, threads, steps, bf16):
    out = sh(f"{python} {HERE}/torch_step.py {model} --threads {threads} "
             f"--steps {steps}" + (" --bf16" if bf16 else ""))
    return float(re.search(r"mean_ms (\S+)", out).group(1))



def op_shares(trace):
    """Per-op time over steps 2..N of a --trace file."""
    events = json.load(open(trace))
    events = events["traceEvents"] if isinstance(events, dict) else events
    by_op = collections.Counter()
    for e in events:
        if e.get("ph") != "X" or e.get("args", {}).get("step") == 1:
            continue  # warm-up, as in strata-run's mean
        by_op[e["name"]] += e["dur"]
    total = sum(by_op.values())
    top = ", ".join(f"{k} {100 * v / total:.0f}%"
                    for k, v in by_op.most_common(4))
    return 100.0 * by_op["matmul"] / total, top


def measure(args, b, tmp, name, model, data, torch_model, precision):
    plan = os.path.join(tmp, "plan.json")
    mixed = " --strata-mixed-precision" if precision == "bf16" else ""
    sh(f"{b}/strata-model {model} | {b}/strata-opt "
       f"--strata-autodiff=optimizer=adamw{mixed} | {b}/strata-translate "
       f"--export-plan -o {plan}")
    rows = []
    for threads in args.threads:
        trace = os.path.join(tmp, "trace.json")
        extra = f"--data {data}" if data and os.path.exists(data) else ""
        run = f"{plan} --steps {args.steps} --threads {threads} {extra}"
        ours, theirs, torch = [], [], []
        for _ in range(args.repeat):
            ours.append(mean_step_ms(sh(f"{b}/strata-run {run} "
                                        f"--trace {trace}")))
            if args.torch:
                torch.append(torch_ms(args.torch, torch_model, threads,
                                      args.steps, precision == "bf16"))
            if args.baseline_run:
                theirs.append(mean_step_ms(sh(f"{args.baseline_run} {run}")))
        share, top = op_shares(trace)
        rows.append({"name": name, "precision": precision, "threads": threads,
                     "ms": statistics.median(ours),
                     "torch": statistics.median(torch) if torch else None,
                     "base": statistics.median(theirs) if theirs else None,
                     "share": share, "top": top})
        print(rows[-1], flush=True)
    return rows


def header(args):
    load = os.getloadavg()
    lines = [
        "# Training-step time on the CPU",
        "",
        f"Produced by `python3 bench/train_step.py --steps {args.steps}"
        + (f" --repeat {args.repeat}" if args.repeat > 1 else "")
        + (f" --baseline-run ... --baseline-label '{args.baseline_label}'"
           if args.baseline_run else "") + "` on "
        f"{os.cpu_count()} cores ({cpu_name()}; load average "
        f"{load[0]:.1f} at the end of the run). Each model is compiled with "
        "`strata-opt --strata-autodiff=optimizer=adamw` (and "
        "`--strata-mixed-precision` for bf16) and run by `strata-run`; "
        "the step time is strata-run's mean over steps 2..N (step 1 is "
        "warm-up), the GEMM share is the time of `matmul` instructions over "
        "the time of all instructions in the same steps, from `--trace`"
        + (f"; each step time is the median of {args.repeat} runs"
           if args.repeat > 1 else "")
        + (". PyTorch: `bench/torch_step.py` (the same model, AdamW, eager; "
           "bf16 is `torch.autocast(\"cpu\", dtype=torch.bfloat16)`), "
           "alternating with strata-run, its mean over steps 2..N"
           if args.torch else "")
        + (f". The {args.baseline_label} column runs the same plans on "
           "another strata-run, alternating with this one"
           if args.baseline_run else "") + ".",
        "",
    ]
    cols = ["model", "precision", "threads", "step (ms)"]
    if args.torch:
        cols += ["PyTorch (ms)", "Strata / PyTorch"]
    if args.baseline_run:
        cols += [f"{args.baseline_label} (ms)", "ratio"]
    cols += ["GEMM share", "largest ops"]
    lines.append("| " + " | ".join(cols) + " |")
    lines.append("| " + " | ".join("---" if c in ("model", "precision",
                                                  "largest ops") else "---:"
                                   for c in cols) + " |")
    return lines


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--precisions", nargs="+", default=["f32", "bf16"],
                        choices=["f32", "bf16"])
    parser.add_argument("--torch", default=DEFAULT_TORCH
                        if os.path.exists(DEFAULT_TORCH) else "")
    parser.add_argument("--baseline-run", default=None)
    parser.add_argument("--baseline-label", default="baseline")
    parser.add_argument("--output", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "train-step.md"))
    args = parser.parse_args()
    b = os.path.abspath(os.path.join(args.build, "bin"))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, data, torch_model in MODELS:
            for precision in args.precisions:
                rows += measure(args, b, tmp, name, model, data, torch_model,
                                precision)
    lines = header(args)
    for r in rows:
        cells = [r["name"], r["precision"], str(r["threads"]),
                 f"{r['ms']:.1f}"]
        if args.torch:
            cells += [f"{r['torch']:.1f}", f"{r['ms'] / r['torch']:.2f}"]
        if args.baseline_run:
            cells += [f"{r['base']:.1f}", f"{r['ms'] / r['base']:.3f}"]
        cells += [f"{r['share']:.0f}%", r["top"]]
        lines.append("| " + " | ".join(cells) + " |")
    with open(args.output, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
