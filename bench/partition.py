#!/usr/bin/env python3
"""Pipeline partitioning: partition time on gpt3-175b and predicted speedups
on PipeDream's published profiles.

1. gpt3-175b (`strata-model gpt --preset gpt3-175b | strata-opt
   --strata-autodiff`), partitioned by --strata-partition-pipeline on 8, 64
   and 1024 devices of bench/targets/h100-sxm-8x-128node.json (128 nodes of
   8 H100). Reports the pass's own wall time (--mlir-timing; it includes
   building the layer graph from the IR and the cost model) and the whole
   command's, median of REPEAT runs.
2. VGG-16, ResNet-50 and GNMT from ../shared/data/pipedream-profiles on 4
   (v100-pcie-4x) and 16 (v100-pcie-4x-4node) V100s, with strata-partition:
   predicted step time of the partition, of uniform partitioning (equal layer
   counts, same stage count) and of pure data parallelism, for M = devices
   and M = 4 x devices micro-batches per step.

    python3 bench/partition.py [--build build] [--repeat 3]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from benchutil import cpu_name

HERE = os.path.dirname(os.path.abspath(__file__))
BIG_TARGET = os.path.join(HERE, "targets", "h100-sxm-8x-128node.json")


def run(command):
    return subprocess.run(command, shell=True, text=True, capture_output=True)


def gpt3(bin_dir, repeat, tmp):
    ir = os.path.join(tmp, "gpt3-step.mlir")
    subprocess.run(f"{bin_dir}/strata-model gpt --preset gpt3-175b | "
                   f"{bin_dir}/strata-opt --strata-autodiff -o {ir}",
                   shell=True, check=True)
    rows = []
    for devices in (8, 64, 1024):
        for micro in (0, 64):
            options = (f"target={BIG_TARGET} devices={devices}"
                       + (f" micro-batches={micro}" if micro else ""))
            command = (f"{bin_dir}/strata-opt {ir} --mlir-timing "
                       f"--strata-partition-pipeline=\"{options}\" -o /dev/null")
            passes, walls, outcome = [], [], ""
            for _ in range(repeat):
                t = time.perf_counter()
                out = run(command)
                walls.append(time.perf_counter() - t)
                m = re.search(r"([0-9.]+) \([ 0-9.]+%\)\s+PartitionPipelinePass",
                              out.stderr)
                if m:
                    passes.append(float(m.group(1)))
                err = re.search(r"cannot be partitioned: (.*)", out.stderr)
                outcome = err.group(1) if err else "partitioned"
            if outcome == "partitioned":
                report = os.path.join(tmp, "report.json")
                run(f"{bin_dir}/strata-opt {ir} --strata-partition-pipeline="
                    f"\"{options} report={report}\" -o /dev/null")
                with open(report) as f:
                    r = json.load(f)
                p = r["partition"]
                reps = [s["replicas"] for s in p["stages"]]
                outcome = (f"{len(reps)} stages, replicas {min(reps)}..{max(reps)}, "
                           f"step {p['step_seconds']:.2f} s, "
                           f"{r['speedup_over_data_parallel']:.2f}x data parallelism"
                           + ("" if r["data_parallel"]["fits_memory"]
                              else " (which does not fit)"))
            rows.append((devices, micro or 4 * devices,
                         statistics.median(passes) if passes else float("nan"),
                         statistics.median(walls), outcome, command))
    return rows


def shape(stages):
    return "-".join(str(s["replicas"]) for s in stages)


def pipedream(bin_dir, profiles):
    rows = []
    for model in ("vgg16", "resnet50", "gnmt"):
        graph = os.path.join(profiles, model, "graph.txt")
        for target, devices in (("v100-pcie-4x", 4), ("v100-pcie-4x-4node", 16)):
            for micro in (devices, 4 * devices):
                command = (f"{bin_dir}/strata-partition {graph} --target {target} "
                           f"--micro-batches {micro} --json")
                out = run(command)
                if out.returncode:
                    rows.append((model, devices, micro, out.stderr.strip()))
                    continue
                r = json.loads(out.stdout)
                p, u, d = r["partition"], r["uniform"], r["data_parallel"]
                rows.append((model, devices, micro, r["layers"], shape(p["stages"]),
                             p["step_seconds"], r["speedup_over_data_parallel"],
                             shape(u["stages"]), u["fits_memory"],
                             r["uniform_speedup_over_data_parallel"],
                             d["step_seconds"], d["fits_memory"]))
    return rows


def pipedream_table(small):
    lines = []
    for row in small:
        if len(row) == 4:
            lines.append(f"| {row[0]} | {row[1]} | {row[2]} | | {row[3]} | | | | | |")
            continue
        (model, devices, micro, layers, p_shape, p_step, speedup, u_shape,
         u_fits, u_speedup, d_step, d_fits) = row
        lines.append(
            f"| {model} | {devices} | {micro} | {layers} | {p_shape} | "
            f"{p_step * 1e3:.1f} | {speedup:.2f}x | {u_shape}"
            f"{'' if u_fits else ' (no fit)'} | {u_speedup:.2f}x | "
            f"{d_step * 1e3:.1f}{'' if d_fits else ' (no fit)'} |")
    return lines


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profiles", default=os.path.join(
        HERE, "..", "..", "shared", "data", "pipedream-profiles"))
    parser.add_argument("--output", default=os.path.join(HERE, "partition.md"))
    parser.add_argument("--pipedream-only", action="store_true",
                        help="print only the PipeDream profiles' table rows")
    args = parser.parse_args()
    bin_dir = os.path.abspath(os.path.join(args.build, "bin"))
    profiles = os.path.abspath(args.profiles)
    if not os.path.isdir(profiles):
        profiles = "/work/shared/data/pipedream-profiles"

    if args.pipedream_only:
        print("\n".join(pipedream_table(pipedream(bin_dir, profiles))))
        return 0
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        big = gpt3(bin_dir, args.repeat, tmp)
        big = [row[:5] + (row[5].replace(tmp, "$TMP"),) for row in big]
    small = pipedream(bin_dir, profiles)

    lines = [
        "# Pipeline partitioning",
        "",
        f"Produced by `python3 bench/partition.py --repeat {args.repeat}` on "
        f"{os.cpu_count()} cores ({cpu_name()}; load average {load:.1f} "
        "when it started: the machine was shared, so times are upper "
        "bounds). The cost model and the "
        "formulas are in `include/strata/Analysis/PipelinePartition.h`; "
        "speedups are predictions of that model, not measurements.",
        "",
        "## Partition time: gpt3-175b",
        "",
        "`strata-model gpt --preset gpt3-175b | strata-opt --strata-autodiff`"
        " (98 layers: embedding, 96 blocks, head; fp32 weights, AdamW), "
        "partitioned on `bench/targets/h100-sxm-8x-128node.json` (128 nodes "
        "of 8 H100 80 GiB). `pass s` is the wall time of "
        "--strata-partition-pipeline itself (from --mlir-timing: layer graph "
        "from the IR, cost model, the dynamic program, and when nothing fits "
        "the search for the smallest feasible memory); `command s` adds "
        "parsing the 2.5 MiB step and printing. Median of "
        f"{args.repeat} runs. Goal: under 1 s at 1024 devices.",
        "",
        "| devices | micro-batches | pass s | command s | outcome |",
        "| ---: | ---: | ---: | ---: | --- |",
    ]
    for devices, micro, pass_s, wall, outcome, _ in big:
        lines.append(f"| {devices} | {micro} | {pass_s:.3f} | {wall:.3f} | "
                     f"{outcome} |")
    lines += [
        "",
        "Without tensor parallelism, recomputation or lower precision the "
        "fp32 + Adam state of gpt3-175b (16 bytes per parameter, 2.8 TB) "
        "plus its stashed activations does not fit 8 or 64 devices of "
        "80 GiB; the pass then says how much memory per device would be "
        "needed. On 1024 devices the default 4096 micro-batches keep too "
        "many activations in flight on the replicated stages "
        "(in-flight = min(stages after, micro-batches per replica)); with 64 "
        "it fits.",
        "",
        "Commands:",
        "",
    ]
    for devices, micro, _, _, _, command in big:
        lines.append(f"- `{command.replace(bin_dir + '/', 'bin/')}`")
    lines += [
        "",
        "## PipeDream profiles: predicted speedup over data parallelism",
        "",
        "`strata-partition ../shared/data/pipedream-profiles/MODEL/graph.txt "
        "--target TARGET --micro-batches M --json`. Shapes list the replicas "
        "per stage (`15-1`: two stages, 15 and 1 replicas). `uniform` is equal "
        "layer counts with the same number of stages and the devices spread "
        "evenly. Speedup = data-parallel step / step; `(no fit)` marks a "
        "configuration over 16 GiB per device (the profiles' activation "
        "sizes are for PipeDream's per-GPU batch, stashed per micro-batch in "
        "flight). Data parallelism all-reduces every weight once per step "
        "over PCIe (4 devices) or 10 GbE (16 devices); with M = devices each "
        "device runs one micro-batch per step, as PipeDream's comparison "
        "did.",
        "",
        "| model | devices | M | layers | partition | step ms | speedup | "
        "uniform | uniform speedup | DP step ms |",
        "| --- | ---: | ---: | ---: | --- | ---: | ---: | --- | ---: | ---: |",
    ]
    lines += pipedream_table(small)
    lines += [
        "",
        "Reading: VGG-16's layers stash about 14 GiB of activations per "
        "micro-batch in these profiles (every layer's output, in-place ReLUs "
        "included), so any stage holding the convolutions with two "
        "micro-batches in flight exceeds 16 GiB and data parallelism (one in "
        "flight) is the only fit; PipeDream's 15-1 would also need 15 "
        "replicas, which the candidate factors (1-4, then whole nodes: 8, "
        "12, 16) do not include. ResNet-50's data parallelism does not fit "
        "16 GiB at all under this memory model, so the partitioner's "
        "feasible pipelines are slower than an infeasible baseline (speedup "
        "below 1). GNMT, with large LSTM weights and small activations, is "
        "where pipelining pays: 6.5x over data parallelism on 16 devices "
        "with one micro-batch per device, against 3.2x for uniform "
        "partitioning with the same stage count. The profile reader drops "
        "the `Input` sources and the `__getitem__` sinks nothing reads, as "
        "PipeDream's optimizer does.",
        "",
    ]
    with open(args.output, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
