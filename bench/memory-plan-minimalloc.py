#!/usr/bin/env python3
"""Buffer packing on MiniMalloc's eleven "challenging" instances.

Runs strata-pack on every instance of ../shared/data/minimalloc-challenging
(A.csv .. K.csv) with every strategy, each against the benchmark's capacity
(1,048,576 bytes) with the same time limit, and once more with the exact
strategy and no capacity (the least peak it can find in the time limit).
Prints a markdown section: the command, the machine and its load, and one
table row per instance. `s` is the wall time of the whole strata-pack
command (reading the CSV included).

    python3 bench/memory-plan-minimalloc.py [--strata-pack build/bin/strata-pack]
        [--data ../shared/data/minimalloc-challenging] [--time-limit 5]
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import time

from benchutil import cpu_name

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
STRATEGIES = ["fixed-structure", "greedy-size", "best-fit", "exact", "auto"]


def pack(binary, path, strategy, capacity, time_limit):
    """strata-pack's JSON report plus the command's wall time."""
    command = [binary, path, "--strategy", strategy, "--time-limit",
               str(time_limit), "--json"]
    if capacity:
        command += ["--capacity", str(capacity)]
    start = time.perf_counter()
    out = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    # Exit status 1 with a report is "does not fit"; no report is an error.
    if not out.stdout.strip():
        sys.exit(f"{' '.join(command)} failed:\n{out.stderr}")
    report = json.loads(out.stdout)
    report["wall"] = wall
    return report


def ratio(report, capacity):
    return f"{report['peak']:,} ({report['peak'] / capacity:.2f}x)"


def searched(report):
    """Peak, fits and time of a run that may use the exact search."""
    mark = "yes" if report["fits"] else "**no**"
    return f"{report['peak']:,} | {mark} | {report['wall']:.2f}"


def minimum(report):
    if report["optimal"]:
        proof = "optimal"
    elif report["timed_out"]:
        proof = "time limit"
    else:
        proof = "not proven"
    return f"{report['peak']:,} ({proof}, {report['wall']:.2f} s)"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--strata-pack", default=os.path.join(
        ROOT, "build", "bin", "strata-pack"))
    parser.add_argument("--data", default=os.path.join(
        os.path.dirname(ROOT), "shared", "data", "minimalloc-challenging"))
    parser.add_argument("--capacity", type=int, default=1048576)
    parser.add_argument("--time-limit", type=float, default=5)
    args = parser.parse_args()

    instances = sorted(glob.glob(os.path.join(args.data, "*.csv")))
    if not instances:
        sys.exit(f"no instances in {args.data}")
    load_before = subprocess.run(["uptime"], capture_output=True,
                                 text=True).stdout.strip()
    rows = []
    for path in instances:
        reports = {s: pack(args.strata_pack, path, s, args.capacity,
                           args.time_limit) for s in STRATEGIES}
        least = pack(args.strata_pack, path, "exact", 0, args.time_limit)
        first = reports["exact"]
        name = os.path.splitext(os.path.basename(path))[0]
        rows.append(
            f"| {name} | {first['buffers']} | {first['lower_bound']:,} | "
            + " | ".join(ratio(reports[s], args.capacity)
                         for s in STRATEGIES[:3])
            + f" | {searched(reports['exact'])} | {searched(reports['auto'])}"
            + f" | {minimum(least)} |")
    load_after = subprocess.run(["uptime"], capture_output=True,
                                text=True).stdout.strip()

    command = " ".join(["python3", "bench/memory-plan-minimalloc.py"]
                       + sys.argv[1:])
    print("## MiniMalloc challenging instances\n")
    print(f"Produced by `{command}` on {os.cpu_count()} cores "
          f"({cpu_name()}).\n")
    print(f"- `uptime` before: `{load_before}`")
    print(f"- `uptime` after: `{load_after}`\n")
    print(f"Capacity {args.capacity:,} bytes, time limit {args.time_limit:g} "
          "s per run. Heuristic peaks are shown as a multiple of the "
          "capacity; `exact` and `auto` run with `--capacity` (they stop at "
          "the first packing that fits); the last column runs `exact` "
          "without a capacity, minimising the peak within the time limit.\n")
    print("| instance | buffers | lower bound | fixed-structure | greedy-size "
          "| best-fit | exact peak | fits | s | auto peak | fits | s "
          "| exact, no capacity |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: "
          "| ---: | --- | ---: | --- |")
    for row in rows:
        print(row)


if __name__ == "__main__":
    main()
