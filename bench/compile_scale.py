#!/usr/bin/env python3
"""Wall time and peak memory of compiling the gpt3-175b preset.

Runs each command REPEAT times in a fresh process, reports the median wall
time and the largest peak RSS (of any process in the command), and writes the
table to bench/compile-scale.md.

    python3 bench/compile_scale.py [--build build] [--repeat 5]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

from benchutil import cpu_name

MEASURE = r"""
import resource, subprocess, sys, time
t = time.perf_counter()
subprocess.run(["/bin/sh", "-c", sys.argv[1]], check=True, stdout=subprocess.DEVNULL)
wall = time.perf_counter() - t
print(wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def measure(command, repeat):
    walls, rss = [], 0
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", MEASURE, command],
                             check=True, capture_output=True, text=True).stdout
        wall, kib = out.split()
        walls.append(float(wall))
        rss = max(rss, int(kib))
    return statistics.median(walls), rss / 1024.0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--target", default="h100-sxm-8x-4node")
    parser.add_argument("--output", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "compile-scale.md"))
    args = parser.parse_args()
    bin_dir = os.path.abspath(os.path.join(args.build, "bin"))
    model = f"{bin_dir}/strata-model gpt --preset gpt3-175b"
    opt = f"{bin_dir}/strata-opt"

    with tempfile.TemporaryDirectory() as tmp:
        ir = os.path.join(tmp, "gpt3.mlir")
        subprocess.run(f"{model} -o {ir}", shell=True, check=True)
        size_mib = os.path.getsize(ir) / 2**20
        rows = [
            ("generate (strata-model)", f"{model} -o {tmp}/g.mlir"),
            ("parse + verify (strata-opt FILE)", f"{opt} {ir} -o /dev/null"),
            ("parse + verify + annotate costs",
             f"{opt} {ir} --strata-annotate-costs=target={args.target} -o /dev/null"),
            ("generate, pipe into strata-opt, annotate costs",
             f"{model} | {opt} --strata-annotate-costs=target={args.target} -o /dev/null"),
            ("the same, printing the annotated IR and the cost table",
             f"{model} | {opt} --strata-annotate-costs=target={args.target} "
             f"--test-strata-print-costs -o {tmp}/out.mlir"),
        ]
        results = [(name, cmd, *measure(cmd, args.repeat)) for name, cmd in rows]

    cpu = cpu_name()
    lines = [
        "# Compile-time scale: gpt3-175b",
        "",
        f"Produced by `python3 bench/compile_scale.py --repeat {args.repeat}` on "
        f"{os.cpu_count()} cores ({cpu}). The preset has 96 decoder layers, hidden "
        f"12288, 174.6 B parameters, 2693 ops; its IR is {size_mib:.2f} MiB of text. "
        f"Median wall time of {args.repeat} runs; peak RSS is the largest of any "
        "process of the command. Goal (issue 2): under 2 s and under 1 GiB.",
        "",
        "| command | median wall (s) | peak RSS (MiB) |",
        "| --- | ---: | ---: |",
    ]
    for name, cmd, wall, rss in results:
        lines.append(f"| {name} | {wall:.3f} | {rss:.1f} |")
    lines.append("")
    lines.append("Commands (paths relative to the build directory):")
    lines.append("")
    for name, cmd, _, _ in results:
        lines.append(f"- {name}: `{cmd.replace(bin_dir + '/', 'bin/').replace(tmp, '$TMP')}`")
    text = "\n".join(lines) + "\n"
    with open(args.output, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
