#!/usr/bin/env python3
"""Data-parallel steps on 2 MPI ranks, run by several strata-run binaries in
turn: how a runtime change to the communicator's waits moves the blocking
and the overlapped (bucketed) data-parallel step. Writes bench/comm-wait.md.

  python3 bench/comm_wait.py --runs OLD/strata-run,build/bin/strata-run \
      [--rounds 8] [--steps 30]

Each round runs every binary on both plans (30 steps, one kernel thread per
rank); a run's step is its median over steps 3..N, a binary's the median
over the rounds (the shared machine's load moves single runs by 5-15%).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from benchutil import cpu_name

MODEL = "mlp --layers 8 --hidden 512 --inputs 512 --classes 10 --batch 16"
MPIRUN = "mpirun --allow-run-as-root --oversubscribe -np 2"
NOTES = "<!-- notes: kept when comm_wait.py rewrites this file -->"


def sh(command):
    done = subprocess.run(command, shell=True, text=True,
                          capture_output=True)
    if done.returncode != 0:
        sys.exit(f"{command}: exit {done.returncode}\n{done.stderr}")
    return done.stdout


def median_step(run, plan, steps, log):
    sh(f"{MPIRUN} {run} {plan} --steps {steps} --threads 1 --log-json {log}")
    ms = [json.loads(line)["ms"] for line in open(log) if line.strip()]
    return statistics.median(ms[2:])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--runs", required=True,
                        help="comma-separated strata-run binaries")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--output", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "comm-wait.md"))
    args = parser.parse_args()
    b = os.path.abspath(os.path.join(args.build, "bin"))
    runs = args.runs.split(",")
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        step = os.path.join(tmp, "step.mlir")
        sh(f"{b}/strata-model {MODEL} | {b}/strata-opt --strata-autodiff "
           f"-o {step}")
        plans = {
            "blocking all-reduce (--strata-data-parallel=replicas=2)":
                "--strata-data-parallel=replicas=2",
            "overlapped buckets (--strata-insert-grad-sync, 1 MiB)":
                "--strata-insert-grad-sync='replicas=2 "
                "bucket-bytes=1048576'",
        }
        paths = {}
        for name, options in plans.items():
            paths[name] = os.path.join(tmp, f"{len(paths)}.json")
            sh(f"{b}/strata-opt {step} {options} | {b}/strata-translate "
               f"--export-plan -o {paths[name]}")
        log = os.path.join(tmp, "log.json")
        times = {(r, p): [] for r in runs for p in plans}
        for _ in range(args.rounds):
            for run in runs:
                for name in plans:
                    times[(run, name)].append(
                        median_step(run, paths[name], args.steps, log))
    end = os.getloadavg()
    notes = ""
    if os.path.exists(args.output):
        text = open(args.output).read()
        if NOTES in text:
            notes = "\n" + text[text.index(NOTES):]
    with open(args.output, "w") as f:
        f.write("# Communicator waits: data-parallel steps on 2 ranks\n\n")
        f.write(f"Produced by `python3 bench/comm_wait.py --runs "
                f"{args.runs} --rounds {args.rounds} --steps {args.steps}` "
                f"on {cpu_name()}, {os.cpu_count()} cores ({args.rounds} "
                f"rounds, each running every "
                f"binary on both plans in turn; load average "
                f"{load[0]:.2f} at the start, {end[0]:.2f} at the end). "
                f"Model: `strata-model {MODEL}`, autodiff (SGD), 2 ranks "
                f"with one kernel thread each over MPI (`mpirun`) on one "
                f"machine, "
                f"no link emulation. Step: the median over a run's steps "
                f"3..{args.steps}; the table gives the median over the "
                f"rounds and the spread (max - min over median).\n\n")
        f.write("| binary | plan | step (ms) | min | max | spread |\n")
        f.write("| --- | --- | ---: | ---: | ---: | ---: |\n")
        for name in plans:
            for run in runs:
                v = times[(run, name)]
                med = statistics.median(v)
                f.write(f"| `{run}` | {name} | {med:.2f} | {min(v):.2f} | "
                        f"{max(v):.2f} | {(max(v) - min(v)) / med:.0%} |\n")
        f.write(notes)
    print(open(args.output).read())


if __name__ == "__main__":
    sys.exit(main())
