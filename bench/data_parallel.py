#!/usr/bin/env python3
"""Data-parallel step time on this machine: 1, 2 and 4 MPI ranks (one kernel
thread each), with and without link emulation, for a fixed global batch.

    python3 bench/data_parallel.py [--build build] [--steps 8]

Writes bench/data-parallel.md. On a 2-core machine 4 ranks share 2 cores, so
the 4-rank figures measure oversubscription as much as communication.
"""
import argparse
import os
import tempfile

from benchutil import cpu_name, mean_step_ms, sh

MODELS = [
    ("mlp: 4 layers, hidden 1024, global batch 256",
     "mlp --layers 4 --hidden 1024 --inputs 1024 --classes 10 --batch {b}", 256),
    ("gpt-tiny: 4 layers, hidden 256, seq 128, global batch 16",
     "gpt --preset gpt-tiny --batch {b}", 16),
]
LINKS = ["", "bandwidth=10,latency=10", "bandwidth=1,latency=50"]



def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--output", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "data-parallel.md"))
    args = parser.parse_args()
    b = os.path.abspath(os.path.join(args.build, "bin"))
    mpirun = "mpirun --allow-run-as-root --oversubscribe"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, batch in MODELS:
            for ranks in (1, 2, 4):
                plan = os.path.join(tmp, f"p{ranks}.json")
                dp = f"--strata-data-parallel=replicas={ranks}" if ranks > 1 else ""
                sh(f"{b}/strata-model {model.format(b=batch // ranks)} | "
                   f"{b}/strata-opt --strata-autodiff=optimizer=adamw {dp} | "
                   f"{b}/strata-translate --export-plan -o {plan}")
                for link in (LINKS if ranks > 1 else [""]):
                    emulate = f"--emulate-link={link}" if link else ""
                    launch = f"{mpirun} -np {ranks} " if ranks > 1 else ""
                    out = sh(f"{launch}{b}/strata-run {plan} --steps {args.steps} "
                             f"--threads 1 --quiet {emulate}")
                    ms = mean_step_ms(out)
                    rows.append((name, ranks, link or "none", ms))
                    print(rows[-1], flush=True)
    cpu = cpu_name()
    lines = [
        "# Data-parallel step time on the CPU",
        "",
        f"Produced by `python3 bench/data_parallel.py --steps {args.steps}` on "
        f"{os.cpu_count()} cores ({cpu}), OpenMPI, one kernel thread per rank. "
        "The global batch is fixed; each of N ranks runs batch/N "
        "(`--strata-data-parallel=replicas=N`), gradients are averaged by a "
        "synchronous all-reduce at the end of the backward pass. Link emulation "
        "(`strata-run --emulate-link`) delays each all-reduce to latency + "
        "2 (N-1)/N bytes / bandwidth. Step time: strata-run's mean over steps 2..N. "
        "With 2 cores, 4 ranks oversubscribe the machine.",
        "",
        "| model | ranks | emulated link (GB/s, us) | step (ms) |",
        "| --- | ---: | --- | ---: |",
    ]
    for name, ranks, link, ms in rows:
        lines.append(f"| {name} | {ranks} | {link} | {ms:.1f} |")
    with open(args.output, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
