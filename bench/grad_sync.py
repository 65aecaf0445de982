#!/usr/bin/env python3
"""Gradient synchronisation overlapped with the backward pass: step time of 4
CPU ranks under link emulation, synchronous (--strata-data-parallel: one
all-reduce per gradient at the end of the backward pass) vs bucketed and
overlapped (--strata-insert-grad-sync), beside the lower bound
max(compute, communication); and a bucket-size sweep beside the cost model's
choice.

    python3 bench/grad_sync.py [--build build] [--steps 6]

Writes bench/grad-sync.md. 4 ranks share the machine's cores (one kernel
thread each, oversubscribed on 2 cores).
"""
import argparse
import json
import os
import tempfile

from benchutil import cpu_name, mean_step_ms, sh

RANKS = 4
MODELS = [
    ("mlp: 4 layers, hidden 1024, batch 32/rank",
     "mlp --layers 4 --hidden 1024 --inputs 1024 --classes 10 --batch 32"),
    ("gpt-tiny: 4 layers, hidden 256, seq 128, batch 2/rank",
     "gpt --preset gpt-tiny --batch 2"),
]
# (GB/s, us) of the emulated link.
LINKS = [(4.0, 20.0), (1.0, 50.0), (0.25, 100.0)]
SWEEP = [64 << 10, 1 << 20, 4 << 20, 1 << 30]


def target_file(tmp, bandwidth, latency, tflops):
    """A target of 4 CPU ranks joined by the emulated link."""
    name = f"cpu-{RANKS}-ranks-{bandwidth:g}gbps-{latency:g}us"
    path = os.path.join(tmp, f"{name}.json")
    link = {"bandwidth_gb_per_s": bandwidth, "latency_us": latency}
    with open(path, "w") as f:
        json.dump({
            "name": name, "description": "bench",
            "nodes": 1, "devices_per_node": RANKS,
            "device": {"kind": "cpu", "name": "one rank",
                       "peak_tflops": {"f32": tflops},
                       "memory_bandwidth_gb_per_s": 10,
                       "memory_capacity_gib": 4},
            "intra_node_link": link, "inter_node_link": link,
            "host_link": {"bandwidth_gb_per_s": 10, "latency_us": 0}}, f)
    return path


def buckets(plan_path):
    """Bytes of each bucket (all_reduce_start) of a plan, or of each
    synchronous gradient all_reduce."""
    plan = json.load(open(plan_path))
    size = {b["id"]: b["bytes"] for b in plan["buffers"]}
    program = plan["ranks"][0]["program"]
    start = [sum(size[i] for i in inst["in"]) for inst in program
             if inst["op"] == "all_reduce_start"]
    if start:
        return start
    return [size[inst["in"][0]] for inst in program
            if inst["op"] == "all_reduce" and inst["phase"] == "backward"]


def comm_ms(sizes, bandwidth, latency):
    """Emulated link time of the all-reduces, one after another."""
    p = RANKS
    return sum(latency * 1e-3 + 2 * (p - 1) / p * b / (bandwidth * 1e6)
               for b in sizes)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--tflops", type=float, default=0.02,
                        help="f32 rate of one oversubscribed rank, for the "
                             "cost model")
    parser.add_argument("--output", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "grad-sync.md"))
    args = parser.parse_args()
    b = os.path.abspath(os.path.join(args.build, "bin"))
    mpirun = f"mpirun --allow-run-as-root --oversubscribe -np {RANKS}"
    rows, sweep = [], []

    def run(plan, link=None):
        emulate = (f"--emulate-link=bandwidth={link[0]},latency={link[1]}"
                   if link else "")
        return mean_step_ms(sh(f"{mpirun} {b}/strata-run {plan} --steps "
                               f"{args.steps} --threads 1 --quiet {emulate}"))

    with tempfile.TemporaryDirectory() as tmp:
        for name, model in MODELS:
            step = os.path.join(tmp, "step.mlir")
            sh(f"{b}/strata-model {model} | {b}/strata-opt "
               f"--strata-autodiff=optimizer=adamw "
               f"--strata-data-parallel=replicas={RANKS} -o {step}")
            sync = os.path.join(tmp, "sync.json")
            sh(f"{b}/strata-translate --export-plan {step} -o {sync}")
            # Compute: the step with no link emulation.
            compute = run(sync)
            for link in LINKS:
                target = target_file(tmp, *link, args.tflops)
                over = os.path.join(tmp, "over.json")
                sh(f"{b}/strata-opt {step} --strata-insert-grad-sync="
                   f"target={target} | {b}/strata-translate --export-plan "
                   f"-o {over}")
                sizes = buckets(over)
                comm = comm_ms(sizes, *link)
                t_sync, t_over = run(sync, link), run(over, link)
                rows.append((name, link, compute, comm, t_sync, t_over,
                             len(sizes), max(sizes)))
                print(rows[-1], flush=True)
                if link != LINKS[1]:
                    continue
                for size in SWEEP:
                    plan = os.path.join(tmp, f"sweep{size}.json")
                    sh(f"{b}/strata-opt {step} --strata-insert-grad-sync="
                       f"bucket-bytes={size} | {b}/strata-translate "
                       f"--export-plan -o {plan}")
                    n = len(buckets(plan))
                    sweep.append((name, f"{size >> 10} KiB", n,
                                  run(plan, link)))
                    print(sweep[-1], flush=True)
                sweep.append((name, f"cost model ({max(sizes) >> 10} KiB "
                              "largest)", len(sizes), t_over))
    lines = [
        "# Overlapped gradient synchronisation on CPU ranks",
        "",
        f"Produced by `python3 bench/grad_sync.py --steps {args.steps}` on "
        f"{os.cpu_count()} cores ({cpu_name()}), OpenMPI, {RANKS} ranks with "
        "one kernel thread each (oversubscribed), AdamW. `sync`: "
        "`--strata-data-parallel`, one synchronous all-reduce per gradient at "
        "the end of the backward pass. `overlap`: `--strata-insert-grad-sync` "
        "with the cost model's bucket size (target: the emulated link, "
        f"{args.tflops} TFLOP/s per rank). Link emulation "
        "(`strata-run --emulate-link`) holds the link for latency + "
        "2 (p-1)/p bytes / bandwidth per all-reduce, one at a time. "
        "`compute`: the synchronous step without emulation; `comm`: the "
        "emulated link time of the overlapped plan's buckets; lower bound = "
        "max(compute, comm). Step times are strata-run's mean over steps "
        "2..N, in ms.",
        "",
        "| model | link (GB/s, us) | compute | comm | lower bound | sync | "
        "overlap | overlap / bound | buckets (largest KiB) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, link, compute, comm, t_sync, t_over, n, big in rows:
        bound = max(compute, comm)
        lines.append(f"| {name} | {link[0]}, {link[1]:g} | {compute:.1f} | "
                     f"{comm:.1f} | {bound:.1f} | {t_sync:.1f} | {t_over:.1f} "
                     f"| {t_over / bound:.2f} | {n} ({big >> 10}) |")
    lines += [
        "",
        f"Bucket-size sweep at {LINKS[1][0]} GB/s, {LINKS[1][1]:g} us "
        "(`bucket-bytes=N`), beside the cost model's choice:",
        "",
        "| model | bucket bytes | buckets | step (ms) |",
        "| --- | --- | ---: | ---: |",
    ]
    for name, size, n, ms in sweep:
        lines.append(f"| {name} | {size} | {n} | {ms:.1f} |")
    with open(args.output, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
