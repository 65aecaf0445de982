#!/usr/bin/env python3
"""Where MPI sends and receives start and complete: on the calling thread
(the default under MPI_THREAD_MULTIPLE) or on the communicator's progress
thread (STRATA_MPI_SERIAL=1), on 2 MPI ranks of this machine; with
--baseline, an older strata-run binary as a third mode (e.g. one whose sends
and receives start on the calling thread but complete on the progress
thread).

    python3 bench/p2p_start.py [--build build] [--steps 20] [--rounds 3]
        [--baseline BIN --baseline-name NAME]

Plans: the 8-layer MLP of bench/sim.py (hidden 512, batch 16, AdamW) as a
2-stage GPipe and 1F1B pipeline and an interleaved one (8 micro-batches),
and as data parallelism with overlapped 1 MiB buckets and with blocking
all-reduces (no point-to-point operations: the controls; the blocking
all-reduce is also what the out-of-place all-reduce changed).
Each round runs every plan in both modes one after the other; a cell is the
median over rounds of strata-run's mean step (steps 2..N). Writes
bench/p2p-start.md.
"""
import argparse
import os
import re
import statistics
import tempfile

from benchutil import cpu_name, sh

MODEL = "mlp --layers 8 --hidden 512 --inputs 512 --classes 10 --batch 16"
MPIRUN = "mpirun --allow-run-as-root --oversubscribe -np 2"
PLANS = [
    ("GPipe, 2 stages", "--strata-schedule-pipeline='micro-batches=8 "
     "stages=2 schedule=gpipe'"),
    ("1F1B, 2 stages", "--strata-schedule-pipeline='micro-batches=8 "
     "stages=2 schedule=1f1b'"),
    ("interleaved, 2 devices x 2 chunks",
     "--strata-schedule-pipeline='micro-batches=8 stages=4 virtual=2 "
     "schedule=interleaved'"),
    ("data parallel, overlapped buckets (no sends)",
     "--strata-insert-grad-sync='replicas=2 bucket-bytes=1048576'"),
    ("data parallel, blocking all-reduces (no sends)",
     "--strata-data-parallel=replicas=2"),
]
MODES = [("progress thread (STRATA_MPI_SERIAL=1)", "-x STRATA_MPI_SERIAL=1"),
         ("calling thread (default)", "")]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", help="an older strata-run binary")
    parser.add_argument("--baseline-name", default="baseline binary")
    args = parser.parse_args()
    b = os.path.abspath(os.path.join(args.build, "bin"))
    modes = [(m, flag, f"{b}/strata-run") for m, flag in MODES]
    if args.baseline:
        modes.insert(1, (args.baseline_name, "",
                         os.path.abspath(args.baseline)))
    load = os.getloadavg()
    times = {}
    losses = {}
    with tempfile.TemporaryDirectory() as tmp:
        step = os.path.join(tmp, "step.mlir")
        sh(f"{b}/strata-model {MODEL} | {b}/strata-opt "
           f"--strata-autodiff=optimizer=adamw -o {step}")
        plans = []
        for i, (name, options) in enumerate(PLANS):
            plan = os.path.join(tmp, f"plan{i}.json")
            sh(f"{b}/strata-opt {step} {options} | {b}/strata-translate "
               f"--export-plan -o {plan}")
            plans.append((name, plan))
        for _ in range(args.rounds):
            for name, plan in plans:
                for mode, flag, run in modes:
                    out = sh(f"{MPIRUN} {flag} {run} {plan} "
                             f"--steps {args.steps} --threads 1")
                    ms = float(re.search(r"mean ms ([0-9.]+)", out).group(1))
                    times.setdefault((name, mode), []).append(ms)
                    losses.setdefault(name, set()).add(
                        re.search(r"final loss (\S+)", out).group(1))
    lines = [
        "# Where MPI sends and receives start",
        "",
        f"`python3 bench/p2p_start.py --steps {args.steps} --rounds "
        f"{args.rounds}` on {os.cpu_count()} cores ({cpu_name()}; load "
        f"average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} at the "
        "start), 2 MPI ranks, one kernel thread each. Model: "
        f"`strata-model {MODEL}`, AdamW. A cell is the median over "
        f"{args.rounds} rounds of strata-run's mean step (steps 2..N); each "
        "round runs every plan in every mode one after the other. "
        "\"progress thread\": every MPI call on the communicator's progress "
        "thread (`STRATA_MPI_SERIAL=1`); \"calling thread\": sends and "
        "receives start on the executor's thread under MPI_THREAD_MULTIPLE, "
        "which also tests them for completion (the default)"
        + (f"; \"{args.baseline_name}\": `{args.baseline}`"
           if args.baseline else "") + ". Ratios: to the first column.",
        "",
        "| plan | " + " | ".join(m for m, _, _ in modes) + " | "
        + " | ".join(f"ratio {i + 1}" for i in range(1, len(modes)))
        + " | final loss equal |",
        "| --- | " + "---: | " * (2 * len(modes) - 1) + "--- |",
    ]
    for name, _ in plans:
        cells = [statistics.median(times[(name, m)]) for m, _, _ in modes]
        lines.append(f"| {name} | "
                     + " | ".join(f"{c:.2f} ms" for c in cells) + " | "
                     + " | ".join(f"{c / cells[0]:.2f}" for c in cells[1:])
                     + f" | {'yes' if len(losses[name]) == 1 else 'NO'} |")
    text = "\n".join(lines) + "\n"
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "p2p-start.md")
    notes = ""
    mark = "<!-- notes -->"
    if os.path.exists(path) and mark in open(path).read():
        notes = "\n" + open(path).read().split(mark, 1)[1]
        notes = mark + notes
    with open(path, "w") as f:
        f.write(text + ("\n" + notes if notes else ""))
    print(text)


if __name__ == "__main__":
    main()
