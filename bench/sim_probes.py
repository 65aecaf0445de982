#!/usr/bin/env python3
"""The small experiments behind bench/sim.py's protocol (docs/strata-sim.md,
"Validation status", session 13), on the same model and plans:

    python3 bench/sim_probes.py pairs    [--build build] [--trials 10]
    python3 bench/sim_probes.py lengths  [--build build] [--trials 12]
    python3 bench/sim_probes.py latency  [--build build] [--trials 6]

pairs: calibrate, predict and run the one-rank and the overlapped
data-parallel plans back to back, --trials times each; prints each trial's
error and the errors' median and standard deviation (how far a prediction
is from a run seconds later).
lengths: --trials runs of the same two plans at 30 and at 120 steps; prints
the coefficient of variation of their median steps (whether longer runs
steady them).
latency: the blocking data-parallel plan and GPipe (2 stages) at an
emulated 1 GB/s, each calibrated right before its run and predicted with
the link's latency the larger of the emulated 20 us and the calibrated fit
(sim.py before run 27) and the emulated 20 us (since); prints each trial's
fitted latency and both errors, and their medians.

Prints only; writes nothing in bench/.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

import sim


def plans(b, tmp):
    step = os.path.join(tmp, "step.mlir")
    sim.sh(f"{b}/strata-model {sim.MODEL} | {b}/strata-opt "
           f"--strata-autodiff -o {step}")
    return {name: sim.compile_plan(b, step, options, tmp, name)
            for name, options in (("one", ""), ("sync", "sync"),
                                  ("dp", "dp"),
                                  ("gpipe", "stages=2 schedule=gpipe"))}


def pairs(b, tmp, p, trials):
    for name, ranks, steps in (("one", 1, 30), ("sync", 2, 20)):
        errors = []
        for i in range(trials):
            cal = sim.calibration(sim.calibrate_once(
                b, p[name], tmp, f"pair-{name}-{i}.json", steps))
            pred, _ = sim.predict(b, p[name], cal, None, 1)
            meas, _ = sim.measure(b, p[name], ranks, None, 1, 30, 1, tmp)
            errors.append(pred / meas - 1)
            print(f"{name} {i}: predicted {pred * 1e3:.2f} ms, measured "
                  f"{meas * 1e3:.2f} ms, {100 * errors[-1]:+.1f}%")
        print(f"{name}: median error {100 * statistics.median(errors):+.1f}%"
              f", standard deviation {100 * statistics.pstdev(errors):.1f}%")


def lengths(b, tmp, p, trials):
    for name, ranks in (("one", 1), ("sync", 2)):
        for steps in (30, 120):
            ms = [sim.measure(b, p[name], ranks, None, 1, steps, 1, tmp)[0]
                  for _ in range(trials)]
            print(f"{name}, {steps} steps: coefficient of variation "
                  f"{100 * statistics.pstdev(ms) / statistics.mean(ms):.1f}%")


def latency(b, tmp, p, trials):
    errors = {"dp": [], "gpipe": []}
    for i in range(trials):
        for name in errors:
            cal = sim.calibrate_once(b, p[name], tmp, f"lat-{name}-{i}.json",
                                     20)
            # A pipeline's sends take the blocking link: the data-parallel
            # plan's, calibrated now (as sim.py's round links).
            links = sim.calibrate_once(b, p["dp"], tmp, f"lat-link-{i}.json",
                                       20)
            data = json.load(open(cal))
            data["link"] = json.load(open(links))["link"]
            with open(cal, "w") as f:
                json.dump(data, f)
            path, link, _ = sim.calibration(cal)
            steps = []
            for lat in (max(sim.LATENCY_US, link[1]), sim.LATENCY_US):
                what_if = f"link={min(1, link[0]):g}GB/s,latency={lat:g}us"
                out = json.loads(sim.sh(
                    f"{b}/strata-sim {p[name]} --target cpu-local --profile "
                    f"{path} --what-if '{what_if}' --json"))
                steps.append(out["step_seconds"])
            meas, _ = sim.measure(b, p[name], 2, 1.0, 1, 30, 1, tmp)
            errors[name].append([s / meas - 1 for s in steps])
            print(f"{name} {i}: fitted latency {link[1]:.0f} us; error with "
                  f"the larger latency {100 * errors[name][-1][0]:+.1f}%, "
                  f"with {sim.LATENCY_US} us {100 * errors[name][-1][1]:+.1f}%")
    for name, values in errors.items():
        print(f"{name}: median error with the larger latency "
              f"{100 * statistics.median(v[0] for v in values):+.1f}%, with "
              f"{sim.LATENCY_US} us "
              f"{100 * statistics.median(v[1] for v in values):+.1f}%")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("probe", choices=("pairs", "lengths", "latency"))
    parser.add_argument("--build", default="build")
    parser.add_argument("--trials", type=int)
    args = parser.parse_args()
    trials = args.trials or {"pairs": 10, "lengths": 12, "latency": 6}[
        args.probe]
    if trials < 1:
        parser.error("--trials must be at least 1")
    b = os.path.abspath(os.path.join(args.build, "bin"))
    with tempfile.TemporaryDirectory() as tmp:
        p = plans(b, tmp)
        {"pairs": pairs, "lengths": lengths, "latency": latency}[args.probe](
            b, tmp, p, trials)


if __name__ == "__main__":
    sys.exit(main())
