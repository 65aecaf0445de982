#!/usr/bin/env python3
"""Strata's partitioner against PipeDream's optimizer, under PipeDream's own
cost terms, on PipeDream's published profiles.

For every profile in ../shared/data/pipedream-profiles, machine count and
bandwidth:

* PipeDream: the predicted speedup over data parallelism that PipeDream's
  optimizer (msr-fiddle/pipedream, optimizer/optimizer_graph_hierarchical.py,
  flat: `-n N -b B`, memory constraint off, its defaults) printed, read from
  bench/pipedream-optimizer-reference.json (how it was produced is recorded
  there; the optimizer's source is not part of this repository).
* Strata, PipeDream's terms: `strata-partition graph.txt --target
  bench/targets/pipedream-flat-{1,10}gbps.json --devices N --micro-batches N
  --schedule pipedream --cost-model pipedream --memory-bytes 1e18` (no
  bubble, 4 (m - 1) / m all-reduce volume after every minibatch, even shares,
  no transfer charge, every replica count, no memory limit), and the same
  with `--cost-model pipedream,transfers=per-replica` against the optimizer
  run with `--activation_compression_ratio 1` (transfers counted).
* Strata, its own model: the same target with `--schedule 1f1b --cost-model
  allreduce=2` (ring, whole micro-batches, per-cut transfers, 16 GiB).

Then a brute force on prefixes: the first K layers of each profile, every
contiguous partition and every replica vector over N = 4 machines, priced
with PipeDream's formulas in Python (independently of the C++), against
strata-partition's optimum on the same prefix.

    python3 bench/partition_pipedream.py [--build build] [--out bench/partition-pipedream.md]
"""
import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ["alexnet", "vgg16", "resnet18", "resnet50", "inception_v3",
          "densenet121", "gnmt", "gnmt_large"]
MACHINES = [2, 4, 8, 16]
BANDWIDTHS = [1, 10]  # GB/s


def profiles_dir():
    for d in (os.path.join(HERE, "..", "..", "shared", "data",
                           "pipedream-profiles"),
              "/work/shared/data/pipedream-profiles"):
        if os.path.isdir(d):
            return os.path.normpath(d)
    sys.exit("partition_pipedream: no pipedream-profiles directory")


def partition(bin_dir, graph, bandwidth, machines, extra):
    target = os.path.join(HERE, "targets", f"pipedream-flat-{bandwidth}gbps.json")
    command = [f"{bin_dir}/strata-partition", graph, "--target", target,
               "--devices", str(machines), "--micro-batches", str(machines),
               "--json"] + extra
    out = subprocess.run(command, text=True, capture_output=True)
    if out.returncode != 0:
        return None, out.stderr.strip()
    return json.loads(out.stdout), ""


def shape(report):
    return "-".join(str(s["replicas"]) for s in report["partition"]["stages"])


def speedup(report):
    return (report["data_parallel"]["step_seconds"] /
            report["partition"]["step_seconds"])


PIPEDREAM_TERMS = ["--schedule", "pipedream", "--cost-model", "pipedream",
                   "--memory-bytes", "1e18"]
STRATA_TERMS = ["--schedule", "1f1b", "--cost-model", "allreduce=2"]


def brute_force(layers, machines, bandwidth):
    """PipeDream's flat formulas: a stage of compute W (forward + backward)
    and parameters P on m replicas takes (W + 4 (m - 1) P / (B m)) / m per
    minibatch; the pipeline's time is its slowest stage."""
    work = [l["forward_seconds"] + l["backward_seconds"] for l in layers]
    params = [l["parameter_bytes"] for l in layers]
    n = len(layers)
    best = float("inf")
    for stages in range(1, min(n, machines) + 1):
        for cuts in itertools.combinations(range(1, n), stages - 1):
            bounds = [0, *cuts, n]
            for reps in itertools.product(range(1, machines + 1),
                                          repeat=stages):
                if sum(reps) != machines:
                    continue
                slowest = 0.0
                for s in range(stages):
                    w = sum(work[bounds[s]:bounds[s + 1]])
                    p = sum(params[bounds[s]:bounds[s + 1]])
                    m = reps[s]
                    t = (w + 4 * (m - 1) * p / (bandwidth * 1e9 * m)) / m
                    slowest = max(slowest, t)
                best = min(best, slowest)
    return best


def prefix_checks(bin_dir, profiles, tmp):
    rows = []
    for model in MODELS:
        graph = os.path.join(profiles, model, "graph.txt")
        if not os.path.exists(graph):
            continue
        profile = json.loads(subprocess.run(
            [f"{bin_dir}/strata-partition", graph, "--emit-profile"],
            check=True, text=True, capture_output=True).stdout)
        for k in (5, 8):
            layers = profile["layers"][:k]
            cut = {"format": profile["format"], "version": profile["version"],
                   "layers": layers,
                   "edges": [e for e in profile["edges"] if e["to"] < k]}
            path = os.path.join(tmp, f"{model}-{k}.json")
            with open(path, "w") as f:
                json.dump(cut, f)
            for bandwidth in BANDWIDTHS:
                report, err = partition(bin_dir, path, bandwidth, 4,
                                        PIPEDREAM_TERMS)
                if report is None:
                    sys.exit(f"prefix {model}/{k}: {err}")
                strata = report["partition"]["slowest_stage_seconds"]
                brute = brute_force(layers, 4, bandwidth)
                rel = abs(strata - brute) / brute if brute else abs(strata)
                rows.append((model, k, bandwidth, strata, brute, rel))
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    parser.add_argument("--out", default=os.path.join(HERE,
                                                      "partition-pipedream.md"))
    args = parser.parse_args()
    bin_dir = os.path.join(args.build, "bin")
    profiles = profiles_dir()
    with open(os.path.join(HERE, "pipedream-optimizer-reference.json")) as f:
        reference = json.load(f)
    ref = {(r["model"], r["machines"], round(r["bandwidth"] / 1e9)): r
           for r in reference["results"]}

    lines = [
        "# Strata's partitioner vs PipeDream's optimizer, under PipeDream's "
        "cost terms",
        "",
        "Produced by `python3 bench/partition_pipedream.py` (its docstring "
        "has every command). `PipeDream`: the speedup over N-machine data "
        "parallelism that PipeDream's published optimizer printed "
        "(`bench/pipedream-optimizer-reference.json` records how it was run; "
        "its source is not in this repository), with its default flags "
        "(activation transfers not counted) and, in the `+ transfers` "
        "columns, with `--activation_compression_ratio 1` (transfers "
        "counted, 2 C / (B r) on each side of a stage: the setting of the "
        "published 2.84x / 3.04x / 9.71x). `Strata`: `strata-partition "
        "--schedule pipedream --cost-model pipedream` (and "
        "`pipedream,transfers=per-replica`) on a flat target of N machines at "
        "B GB/s, M = N. `Strata (own model)`: `--schedule 1f1b --cost-model "
        "allreduce=2` on the same target (ring all-reduce once per step, "
        "whole micro-batches, transfers charged, 16 GiB per device, bubble). "
        "Shapes list the replicas per stage.",
        "",
        "| model | N | GB/s | PipeDream | Strata | shape | PipeDream + "
        "transfers | Strata + transfers | shape | Strata (own model) | shape |",
        "| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | --- | ---: "
        "| --- |",
    ]
    worse = []
    compared = 0
    for model in MODELS:
        graph = os.path.join(profiles, model, "graph.txt")
        if not os.path.exists(graph):
            continue
        for machines in MACHINES:
            for bandwidth in BANDWIDTHS:
                r = ref.get((model, machines, bandwidth)) or {}
                cells = [model, str(machines), str(bandwidth)]
                for terms, key in (("pipedream", None),
                                   ("pipedream,transfers=per-replica",
                                    "with_transfers")):
                    extra = ["--schedule", "pipedream", "--cost-model", terms,
                             "--memory-bytes", "1e18"]
                    report, err = partition(bin_dir, graph, bandwidth,
                                            machines, extra)
                    if report is None:
                        sys.exit(f"{model} N={machines}: {err}")
                    s = speedup(report)
                    pd = (r.get(key) or {}) if key else r
                    pd_speedup = pd.get("speedup_over_dp")
                    if pd_speedup:
                        compared += 1
                        if s < pd_speedup * (1 - 1e-6):
                            worse.append((model, machines, bandwidth, terms,
                                          s, pd_speedup))
                    cells += [f"{pd_speedup:.2f}x" if pd_speedup else
                              (r.get("note", "n/a")[:24] if r else "n/a"),
                              f"{s:.2f}x", shape(report)]
                own, own_err = partition(bin_dir, graph, bandwidth, machines,
                                         STRATA_TERMS)
                cells += ([f"{speedup(own):.2f}x", shape(own)] if own else
                          [own_err.split("error: ")[-1][:40], ""])
                lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"Compared: {compared} (configuration, terms) pairs with a "
              f"PipeDream figure; Strata below PipeDream in {len(worse)}."]
    for w in worse:
        lines.append(f"- {w[0]} N={w[1]} {w[2]} GB/s ({w[3]}): Strata "
                     f"{w[4]:.4f}x, PipeDream {w[5]:.4f}x")
    lines += [
        "",
        "Where Strata falls below PipeDream it is on the DAG-shaped profiles "
        "(ResNet, DenseNet): Strata's stages are contiguous ranges of one "
        "topological order of the layers (the profile reader's), while "
        "PipeDream's optimizer splits at any antichain of its state DAG, "
        "which admits cuts (down-closed sets) that no single order has as a "
        "prefix. On the chains (AlexNet, VGG-16, whose states are the node "
        "prefixes) the two agree to the printed digits, with and without "
        "transfers; GNMT agrees too. Partitioning over antichains is not "
        "implemented.",
    ]

    with tempfile.TemporaryDirectory() as tmp:
        prefixes = prefix_checks(bin_dir, profiles, tmp)
    lines += [
        "",
        "## Brute force on prefixes",
        "",
        "The first K layers of each profile on N = 4 machines: every "
        "contiguous partition and replica vector priced with PipeDream's "
        "formulas in Python, against strata-partition's slowest stage "
        "(PipeDream's terms) on the same prefix.",
        "",
        "| model | K | GB/s | strata-partition (s) | brute force (s) | "
        "relative difference |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for model, k, bw, strata, brute, rel in prefixes:
        lines.append(f"| {model} | {k} | {bw} | {strata:.6f} | {brute:.6f} "
                     f"| {rel:.1e} |")
    bad = [p for p in prefixes if p[5] > 1e-9]
    lines += ["", f"{len(prefixes)} prefixes, {len(bad)} disagree beyond "
              "1e-9."]
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
