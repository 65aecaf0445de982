#!/usr/bin/env python3
"""Lagging gradients under a straggler: 4 CPU ranks, one of them made 2x
slower by `strata-run --straggler` (it sleeps, before every backward pass,
as long as a synchronous step takes without it). Synchronous training
(--strata-insert-grad-sync, staleness 0) vs lagging gradients (staleness=1,
and 2): steps per second, samples per second (the gradient sets actually
applied), stale sets, and the loss after N steps.

    python3 bench/staleness.py [--build build] [--steps 30]

Writes bench/staleness.md. 4 ranks share the machine's cores (one kernel
thread each, oversubscribed on 2 cores).
"""
import argparse
import os
import re
import tempfile

from benchutil import cpu_name, mean_step_ms, sh

RANKS = 4
STRAGGLER = 3
MODELS = [
    ("mlp: 4 layers, hidden 1024, batch 32/rank",
     "mlp --layers 4 --hidden 1024 --inputs 1024 --classes 10 --batch 32",
     "optimizer=adamw lr=0.001"),
    ("gpt-tiny: 4 layers, hidden 256, seq 128, batch 2/rank",
     "gpt --preset gpt-tiny --batch 2", "optimizer=adamw lr=0.001"),
]
# (GB/s, us) of the emulated link; None: no emulation. gpt-tiny runs without.
LINKS = [None, (1.0, 50.0)]


def parse(output):
    """(mean step ms, samples/s, losses by step, stale sets) of a run."""
    summary = [l for l in output.splitlines() if l.startswith("summary")][0]
    samples = float(summary.split("samples/s ")[1].split()[0])
    losses = [float(m.group(1)) for m in
              re.finditer(r"^step \d+ loss (\S+)", output, re.M)]
    stale = re.search(r"\((\d+) stale, largest staleness (\d+)\)", output)
    return (mean_step_ms(output), samples, losses,
            (int(stale.group(1)), int(stale.group(2))) if stale else (0, 0))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--output", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "staleness.md"))
    args = parser.parse_args()
    b = os.path.abspath(os.path.join(args.build, "bin"))
    mpirun = f"mpirun --allow-run-as-root --oversubscribe -np {RANKS}"
    rows = []

    def run(plan, link, straggler_ms):
        extra = ""
        if link:
            extra += f" --emulate-link=bandwidth={link[0]},latency={link[1]}"
        if straggler_ms:
            extra += (f" --straggler=rank={STRAGGLER},"
                      f"delay-ms={straggler_ms:.1f}")
        return parse(sh(f"{mpirun} {b}/strata-run {plan} --steps "
                        f"{args.steps} --threads 1 --seed 1{extra}"))

    with tempfile.TemporaryDirectory() as tmp:
        for name, model, optimizer in MODELS:
            step = os.path.join(tmp, "step.mlir")
            sh(f"{b}/strata-model {model} | {b}/strata-opt "
               f"--strata-autodiff=\"{optimizer}\" "
               f"--strata-data-parallel=replicas={RANKS} -o {step}")
            plans = {}
            for s in (0, 1, 2):
                plans[s] = os.path.join(tmp, f"s{s}.json")
                sh(f"{b}/strata-opt {step} --strata-insert-grad-sync="
                   f"\"bucket-bytes=1048576 staleness={s}\" | "
                   f"{b}/strata-translate --export-plan -o {plans[s]}")
            for link in LINKS if model.startswith("mlp") else LINKS[:1]:
                base = run(plans[0], link, 0)
                # The straggler sleeps as long as a step takes: 2x slower.
                delay = base[0]
                cases = [("sync, no straggler", base),
                         ("s=1, no straggler", run(plans[1], link, 0)),
                         ("sync, straggler", run(plans[0], link, delay)),
                         ("s=1, straggler", run(plans[1], link, delay)),
                         ("s=2, straggler", run(plans[2], link, delay))]
                for label, result in cases:
                    rows.append((name, link, delay, label) + result)
                    print(name, link, f"{delay:.1f}", label, result[0],
                          result[1], result[2][-1], result[3], flush=True)

    def tail_mean(losses, k=5):
        return sum(losses[-k:]) / min(k, len(losses))

    lines = [
        "# Lagging gradients under a straggler (4 CPU ranks)",
        "",
        f"Produced by `python3 bench/staleness.py --steps {args.steps}` on "
        f"{os.cpu_count()} cores ({cpu_name()}), OpenMPI, {RANKS} ranks with "
        "one kernel thread each (oversubscribed), AdamW lr 0.001, seed 1, "
        "buckets of 1 MiB. `sync`: `--strata-insert-grad-sync` (staleness "
        "0, overlapped buckets); `s=1`, `s=2`: `staleness=1`, `2` "
        f"(`strata-run --lag-grace 0.25`, the default). `straggler`: rank "
        f"{STRAGGLER} sleeps before every backward pass as long as a "
        "synchronous step takes without it (`--straggler=rank=3,"
        "delay-ms=D`, D in the table), i.e. it is about 2x slower. "
        "`step ms`: strata-run's mean step time over steps 2..N (the time "
        "between two aggregates); `samples/s`: samples of the gradient sets "
        "applied per second (a step of s=1 may hold 3 sets instead of 4); "
        f"`stale`: sets applied one or more steps late; `loss`: mean of the "
        f"last 5 steps' loss (each step's mean over the sets it applied) "
        f"after {args.steps} steps.",
        "",
        "| model | link (GB/s, us) | D (ms) | run | step ms | steps/s | "
        "samples/s | stale sets (max staleness) | loss |",
        "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, link, delay, label, ms, samples, losses, stale in rows:
        link_text = f"{link[0]}, {link[1]:g}" if link else "none"
        lines.append(
            f"| {name} | {link_text} | {delay:.0f} | {label} | {ms:.1f} | "
            f"{1000.0 / ms:.2f} | {samples:.0f} | {stale[0]} ({stale[1]}) | "
            f"{tail_mean(losses):.4f} |")
    with open(args.output, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
