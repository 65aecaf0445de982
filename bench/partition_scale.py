#!/usr/bin/env python3
"""Pipeline partitioning at scale: the partitioner's search (the threshold
search for a free stage count) against the exhaustive DP (strata-partition
--reference) on synthetic GPT-like layer graphs.

L layers: an embedding, L - 2 equal blocks and a head (the blocks of
PipelinePartitionTest's LargeModelIsFast: 0.11 s forward, 0.22 s backward,
7.2 GB of parameters, twice that of optimizer state, 0.2 GB stash, 100 MB
between layers), on h100-sxm-8x-128node.json (1024 H100) and the same node
scaled to 2048 nodes (16384 devices), with memory raised so that it does
not bind (1e6 GiB per device; --keep-memory keeps the 80 GiB) and 64
micro-batches per step. Each run is
`strata-partition PROFILE --target TARGET --micro-batches 64 --json --time`
(+ --reference for the exhaustive DP); a run past --timeout seconds is
reported as "> N s". The reference is not started where its choice tables,
(L + 1)^2 (D + 1) x 4 bytes, exceed --max-ref-gib.

With --before DIR it instead compares the search of this build with that of
DIR/bin/strata-partition (e.g. a build from before a change) on the same
graphs, alternating the two --repeat times per row: the least CPU seconds of
each process (user + system, which a loaded machine disturbs less than the
wall clock) and the least partition time it printed, and whether the two
found the same objective.

    python3 bench/partition_scale.py [--build build] [--timeout 120]
    python3 bench/partition_scale.py --before DIR [--repeat 3] [--keep-memory]
"""
import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

from benchutil import cpu_name

HERE = os.path.dirname(os.path.abspath(__file__))
BASE_TARGET = os.path.join(HERE, "targets", "h100-sxm-8x-128node.json")


def write_profile(path, layers):
    rows = []
    for l in range(layers):
        block = 0 < l < layers - 1
        f = 0.11 if block else 0.02
        p = 7.2e9 if block else 2.5e9
        rows.append({"layer": l, "name": f"l{l}", "forward_seconds": f,
                     "backward_seconds": 2 * f, "activation_bytes": 1e8,
                     "stash_bytes": 0.2e9, "parameter_bytes": p,
                     "optimizer_bytes": 2 * p})
    edges = [{"from": l, "to": l + 1, "bytes": 1e8} for l in range(layers - 1)]
    with open(path, "w") as f:
        json.dump({"format": "strata-profile", "version": 1, "layers": rows,
                   "edges": edges}, f)


def write_target(tmp, nodes, keep_memory=False):
    with open(BASE_TARGET) as f:
        target = json.load(f)
    name = f"h100-sxm-8x-{nodes}node" + ("" if keep_memory else "-nomem")
    target["name"] = name
    target["nodes"] = nodes
    if not keep_memory:
        target["device"]["memory_capacity_gib"] = 1e6
    path = os.path.join(tmp, name + ".json")
    with open(path, "w") as f:
        json.dump(target, f)
    return path


def run(command, timeout):
    start = time.perf_counter()
    try:
        # exec: the timeout kills the tool itself, not just its shell (which
        # left the killed reference runs loading the machine).
        out = subprocess.run("exec " + command, shell=True, text=True,
                             capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, None, None
    wall = time.perf_counter() - start
    m = re.search(r"partition time: ([0-9.]+) s", out.stderr)
    if out.returncode != 0 or not m:
        sys.exit(f"failed: {command}\n{out.stderr}")
    report = json.loads(out.stdout)
    p = report["partition"]
    return float(m.group(1)), p["objective"], len(p["stages"])


def cpu_run(command):
    """CPU seconds of the process, its partition time and objective."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run("exec " + command, shell=True, text=True,
                         capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    m = re.search(r"partition time: ([0-9.]+) s", out.stderr)
    if out.returncode != 0 or not m:
        sys.exit(f"failed: {command}\n{out.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime -
                                                 before.ru_stime)
    return cpu, float(m.group(1)), json.loads(out.stdout)["partition"][
        "objective"]


def compare(args, tool, before):
    print("| layers | devices | before CPU s | after CPU s | before partition "
          "s | after partition s | same objective |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for nodes in map(int, args.nodes.split(",")):
            target = write_target(tmp, nodes, args.keep_memory)
            for layers in map(int, args.layers.split(",")):
                profile = os.path.join(tmp, f"gpt-{layers}.json")
                write_profile(profile, layers)
                runs = {before: [], tool: []}
                for _ in range(args.repeat):
                    for binary in (before, tool):
                        runs[binary].append(cpu_run(
                            f"{binary} {profile} --target {target} "
                            "--micro-batches 64 --json --time"))
                objectives = {r[2] for rs in runs.values() for r in rs}
                cells = []
                for k in (0, 1):
                    for binary in (before, tool):
                        cells.append(f"{min(r[k] for r in runs[binary]):.3f}")
                print(f"| {layers} | {8 * nodes} | {cells[0]} | {cells[1]} | "
                      f"{cells[2]} | {cells[3]} | "
                      f"{'yes' if len(objectives) == 1 else 'NO'} |",
                      flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--max-ref-gib", type=float, default=16)
    parser.add_argument("--layers", default="96,200,400,1000")
    parser.add_argument("--nodes", default="128,2048")
    parser.add_argument("--keep-memory", action="store_true",
                        help="keep the target's 80 GiB per device (memory "
                        "binds: stages hold few layers)")
    parser.add_argument("--before", help="compare with this build "
                        "directory's strata-partition instead")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    tool = os.path.join(args.build, "bin", "strata-partition")
    print(f"CPU: {cpu_name()}; load average {os.getloadavg()[0]:.1f}")
    if args.before:
        compare(args, tool,
                os.path.join(args.before, "bin", "strata-partition"))
        print(f"load average at the end {os.getloadavg()[0]:.1f}")
        return
    print("| layers | devices | reference s | reference objective | "
          "search s | search objective | stages | same optimum |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for nodes in map(int, args.nodes.split(",")):
            target = write_target(tmp, nodes, args.keep_memory)
            devices = 8 * nodes
            for layers in map(int, args.layers.split(",")):
                profile = os.path.join(tmp, f"gpt-{layers}.json")
                write_profile(profile, layers)
                command = (f"{tool} {profile} --target {target} "
                           f"--micro-batches 64 --json --time")
                ref_gib = (layers + 1) ** 2 * (devices + 1) * 4 / 2**30
                if ref_gib > args.max_ref_gib:
                    ref = (None, None, None)
                    ref_s = f"not run ({ref_gib:.0f} GiB of tables)"
                else:
                    ref = run(command + " --reference", args.timeout)
                    ref_s = (f"{ref[0]:.3f}" if ref[0] is not None
                             else f"not done, > {args.timeout:.0f}")
                new = run(command, args.timeout)
                new_s = (f"{new[0]:.3f}" if new[0] is not None
                         else f"not done, > {args.timeout:.0f}")
                same = ("yes" if ref[1] is not None and ref[1] == new[1]
                        else "NO" if ref[1] is not None and new[1] is not None
                        else "-")
                fmt = lambda v: "-" if v is None else f"{v:.9g}"
                print(f"| {layers} | {devices} | {ref_s} | {fmt(ref[1])} | "
                      f"{new_s} | {fmt(new[1])} | "
                      f"{new[2] if new[2] else '-'} | {same} |", flush=True)


if __name__ == "__main__":
    main()
