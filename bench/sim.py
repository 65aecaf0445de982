#!/usr/bin/env python3
"""strata-sim validated on real runs: predicted vs measured step time of
CPU-rank configurations (one rank, data-parallel with and without overlap,
GPipe, 1F1B and interleaved pipelines) under emulated links
(strata-run --emulate-link) and slowed compute (--emulate-compute), plus a
what-if check and the arena of every plan.

    python3 bench/sim.py [--build build] [--steps 30] [--repeats 20]

Writes bench/sim.md.

Method (seed 001's ratio method): in each of --repeats rounds the links are
calibrated on this machine (strata-sim --calibrate: the blocking
all-reduces of the data-parallel plan give the link, the bucket transfers of
the overlapped plan the asynchronous link), then every configuration runs
once (the slowed-compute ones twice; in an order shuffled per round), each
right after a calibration of its own plan (its kernel times, gaps and
cores; the data-parallel and overlapped plans also their own blocking or
asynchronous link), and is predicted from that calibration with the
emulated link (the slower bandwidth, the emulated latency) and slowed
compute as what-ifs (--what-if
link=...GB/s,latency=...us,async-link=...,compute=0.5x). A row's prediction
is the median over the rounds of its predictions, its measured time the
median over the rounds of each run's median step (strata-run --log-json,
first two steps left out; with slowed compute the first six, which
strata-run --emulate-compute runs unslowed to measure each kernel; a slowed
row's value in a round is the median of its two runs). Calibrating right
before the run keeps both on the machine's state of the moment (it is
shared: its speed drifts). Nothing is fitted to the measured runs.
"""
import argparse
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile

from benchutil import cpu_name

MODEL = "mlp --layers 8 --hidden 512 --inputs 512 --classes 10 --batch 16"
MICRO = 8
LATENCY_US = 20
MPIRUN = "mpirun --allow-run-as-root --oversubscribe"


def sh(command):
    done = subprocess.run(command, shell=True, text=True, capture_output=True)
    if done.returncode != 0:
        sys.exit(f"sim.py: `{command}` failed ({done.returncode}):\n"
                 f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    return done.stdout


# (name, compile options, ranks, emulated GB/s or None, compute slow-down)
CONFIGS = [
    ("1 rank", "", 1, None, 1),
    ("DP 2, overlapped buckets, this machine's link", "sync", 2, None, 1),
    ("1 rank, compute 2x", "", 1, None, 2),
    ("DP 2, blocking all-reduce, 1 GB/s", "dp", 2, 1.0, 1),
    ("DP 2, blocking all-reduce, 0.25 GB/s", "dp", 2, 0.25, 1),
    ("DP 2, overlapped buckets, 1 GB/s", "sync", 2, 1.0, 1),
    ("DP 2, overlapped buckets, 0.25 GB/s", "sync", 2, 0.25, 1),
    ("DP 2, overlapped buckets, 10 GB/s", "sync", 2, 10.0, 1),
    ("DP 2, overlapped buckets, 1 GB/s, compute 2x", "sync", 2, 1.0, 2),
    ("GPipe 2 stages, 1 GB/s", "stages=2 schedule=gpipe", 2, 1.0, 1),
    ("GPipe 2 stages, 10 GB/s", "stages=2 schedule=gpipe", 2, 10.0, 1),
    ("1F1B 2 stages, 1 GB/s", "stages=2 schedule=1f1b", 2, 1.0, 1),
    ("1F1B 2 stages, 0.25 GB/s", "stages=2 schedule=1f1b", 2, 0.25, 1),
    ("1F1B 2 stages, 1 GB/s, compute 2x", "stages=2 schedule=1f1b", 2, 1.0,
     2),
    ("interleaved 2 devices x 2 chunks, 1 GB/s",
     "stages=4 virtual=2 schedule=interleaved", 2, 1.0, 1),
    ("1F1B 2 stages x 2 replicas, 1 GB/s (4 ranks on 2 cores)",
     "stages=2 replicas=2 schedule=1f1b", 4, 1.0, 1),
]
WHAT_IF = "DP 2, overlapped buckets, this machine's link"
# Runs per round of a slowed-compute configuration (the median of two is
# their mean).
SLOWED_RUNS = 2


def compile_plan(b, step, options, tmp, index):
    plan = os.path.join(tmp, f"plan{index}.json")
    if options == "":
        sh(f"{b}/strata-translate {step} --export-plan -o {plan}")
    elif options == "dp":
        sh(f"{b}/strata-opt {step} --strata-data-parallel=replicas=2 | "
           f"{b}/strata-translate --export-plan -o {plan}")
    elif options == "sync":
        sh(f"{b}/strata-opt {step} --strata-insert-grad-sync='replicas=2 "
           f"bucket-bytes=1048576' | {b}/strata-translate --export-plan "
           f"-o {plan}")
    else:
        sh(f"{b}/strata-opt {step} --strata-schedule-pipeline='"
           f"micro-batches={MICRO} {options}' | {b}/strata-translate "
           f"--export-plan -o {plan}")
    return plan


def measure_flags(b, plan, ranks, flags, steps, tmp, first=3):
    """The median step time (s) of one run from step `first` on (the log
    counts from 1), and rank 0's arena."""
    log = os.path.join(tmp, "log.json")
    launcher = f"{MPIRUN} -np {ranks} " if ranks > 1 else ""
    out = sh(f"{launcher}{b}/strata-run {plan} --steps {steps} --threads 1 "
             f"{flags} --log-json {log}")
    arena = int(re.search(r"arena (\d+) bytes", out).group(1))
    records = [json.loads(line) for line in open(log) if line.strip()]
    ms = sorted(r["ms"] for r in records if r["step"] >= first)
    return ms[len(ms) // 2] / 1e3, arena


def measure(b, plan, ranks, gbps, slow, steps, repeats, tmp):
    """The median per-run median step time (s) and rank 0's arena."""
    flags = ""
    if gbps is not None:
        flags += f" --emulate-link=bandwidth={gbps:g},latency={LATENCY_US}"
    if slow != 1:
        flags += f" --emulate-compute={slow:g}"
    # strata-run --emulate-compute measures each kernel unslowed in the first
    # six steps (kEmulateUnslowedRuns in Executor.h) and pads the later ones.
    first = 7 if slow != 1 else 3
    runs = [measure_flags(b, plan, ranks, flags, steps, tmp, first)
            for _ in range(repeats)]
    return statistics.median(r[0] for r in runs), runs[-1][1]


def predict(b, plan, cal, gbps, slow, extra=""):
    """strata-sim's step (s) and rank 0's arena. `cal`: the calibration file
    and its fitted links (GB/s, us) or None. An emulated transfer ends no
    sooner than the real one and no sooner than the emulated time, so its
    bandwidth is the slower of the two. Its latency is the emulated one:
    the calibrated latency of blocking transfers also holds the waiting
    thread's wake-up once the transfer completed (18-149 us over six
    calibrations of the data-parallel plan in a row, session 13, its
    kernels within 5%), which an emulated transfer hides (its waiting
    thread spins through the transfer's last 50 us, kEmulationSpin in
    runtime/src/comm/Mpi.cpp); the machine's own latency without it is
    about the emulated 20 us (the lowest fits, 16-22 us)."""
    path, link, async_link = cal
    what_if = []
    if gbps is not None:
        bw = min(gbps, link[0]) if link else gbps
        what_if.append(f"link={bw:g}GB/s,latency={LATENCY_US:g}us")
        if async_link:
            bw = min(gbps, async_link[0])
            what_if.append(f"async-link={bw:g}GB/s,"
                           f"async-latency={LATENCY_US:g}us")
    if slow != 1:
        what_if.append(f"compute={1 / slow:g}x")
    if extra:
        what_if.append(extra)
    flag = f"--what-if '{','.join(what_if)}'" if what_if else ""
    out = json.loads(sh(f"{b}/strata-sim {plan} --target cpu-local "
                        f"--profile {path} {flag} --json"))
    return out["step_seconds"], out["ranks"][0]["arena_bytes"]


def calibrate_once(b, plan, tmp, name, steps):
    """strata-sim --calibrate once; returns the calibration file."""
    path = os.path.join(tmp, name)
    sh(f"{b}/strata-sim {plan} --target cpu-local --calibrate {path} "
       f"--calibrate-steps {steps}")
    return path


def merge_calibrations(kernels_and_link, async_from, path):
    """The kernels and blocking link of one calibration with the
    asynchronous link of another; returns (path, link, async link)."""
    merged = json.load(open(kernels_and_link))
    other = json.load(open(async_from))
    if "async_link" in other:
        merged["async_link"] = other["async_link"]
    with open(path, "w") as f:
        json.dump(merged, f)
    return calibration(path)


def paired_calibration(b, plan, tmp, name, steps, options, round_links):
    """A fresh calibration of `plan` with the round's links, except the link
    its own run measures (the blocking link of the data-parallel plan, the
    asynchronous link of the overlapped one), which it keeps; returns
    (path, link, async link)."""
    fresh = calibrate_once(b, plan, tmp, f"{name}.json", steps)
    merged = json.load(open(fresh))
    own = {"dp": "link", "sync": "async_link"}.get(options)
    other = json.load(open(round_links))
    for key in ("link", "async_link"):
        if key == own and key in merged:
            continue
        merged.pop(key, None)
        if key in other:
            merged[key] = other[key]
    path = os.path.join(tmp, f"{name}-l.json")
    with open(path, "w") as f:
        json.dump(merged, f)
    return calibration(path)


def calibration(path):
    data = json.load(open(path))
    def link(key):
        l = data.get(key)
        return (l["bandwidth_gb_per_s"], l["latency_us"]) if l else None
    return path, link("link"), link("async_link")


def kendall_tau(xs, ys):
    concordant = discordant = 0
    for i in range(len(xs)):
        for j in range(i + 1, len(xs)):
            s = (xs[i] - xs[j]) * (ys[i] - ys[j])
            concordant += s > 0
            discordant += s < 0
    pairs = len(xs) * (len(xs) - 1) / 2
    return (concordant - discordant) / pairs


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--steps", type=int, default=30)
    # 20 rounds: one configuration's runs vary by up to 21% (coefficient of
    # variation) over the rounds on the 2-core AMD machine of session 12, so
    # the median of 5-7 rounds moved rows by +-10% from one run to the next.
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--report", action="store_true",
                        help="only write bench/sim.md again from "
                        "bench/sim-rounds.json (a run's saved rounds)")
    args = parser.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    if args.report:
        with open(os.path.join(here, "sim-rounds.json")) as f:
            write_report(here, json.load(f))
        return
    if args.repeats < 1 or args.steps < 10:
        # Slowed runs are measured from step 7 (the first six are unslowed).
        parser.error("--repeats must be at least 1 and --steps at least 10")
    b = os.path.abspath(os.path.join(args.build, "bin"))
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        step = os.path.join(tmp, "step.mlir")
        sh(f"{b}/strata-model {MODEL} | {b}/strata-opt --strata-autodiff "
           f"-o {step}")
        # Rounds: each calibrates the links, then measures every
        # configuration once, each right after a calibration of its plan
        # (strata-sim --calibrate: the plan run as it is, this machine's
        # link, compute 1x, no emulation), and predicts it from that
        # calibration, so that the two share the machine's state (a long
        # run drifts: calibrating everything first put whole runs 5-10% off
        # in one direction; one calibration per plan at a round's start
        # left rounds -4..+19% off on average, session 12). Links: the
        # blocking all-reduces of the data-parallel plan give the link
        # (sends and receives use it too), the bucket transfers of the
        # overlapped plan the asynchronous link.
        plans = [compile_plan(b, step, options, tmp, index)
                 for index, (_, options, *_) in enumerate(CONFIGS)]
        link_plans = {"dp": compile_plan(b, step, "dp", tmp, "cal"),
                      "sync": compile_plan(b, step, "sync", tmp, "cal-sync")}
        predicted = [[] for _ in CONFIGS]
        measured = [[] for _ in CONFIGS]
        arenas = [None] * len(CONFIGS)
        pred_arenas = [None] * len(CONFIGS)
        what_ifs = []  # (predicted, predicted at half, measured at half, GB/s)
        fitted = []
        for r in range(args.repeats):
            blocking = calibrate_once(b, link_plans["dp"], tmp,
                                      f"{r}-cal-dp.json", 20)
            overlapped = calibrate_once(b, link_plans["sync"], tmp,
                                        f"{r}-cal-sync.json", 20)
            links = merge_calibrations(blocking, overlapped,
                                       os.path.join(tmp, f"{r}-links.json"))
            fitted.append(links)
            # Each round runs the configurations in its own order (seeded by
            # the round, so every run of sim.py uses the same 20 orders),
            # so that no row follows the same configuration in every round.
            # Most configurations are MPI runs, so this changes little of
            # what kind of run a row follows (docs/strata-sim.md).
            order = list(range(len(CONFIGS)))
            random.Random(r).shuffle(order)
            for index in order:
                name, options, ranks, gbps, slow = CONFIGS[index]
                # A slowed run's padding is fixed by its steps 2-6 (the
                # first 40 ms of the process), so the whole run is one
                # sample of that moment's speed: those rows run twice a
                # round (SLOWED_RUNS).
                # The configuration's plan is calibrated right before its
                # run (paired in time: one configuration's runs vary over
                # the rounds by up to 21%, coefficient of variation, and
                # back to back a calibration's prediction and a run differ
                # by 5-10%: bench/sim_probes.py pairs).
                cal = paired_calibration(
                    b, plans[index], tmp, f"{r}-cal-{index}",
                    30 if ranks == 1 else 20, options, links[0])
                meas, arenas[index] = measure(
                    b, plans[index], ranks, gbps, slow, args.steps,
                    SLOWED_RUNS if slow != 1 else 1, tmp)
                measured[index].append(meas)
                pred, pred_arenas[index] = predict(b, plans[index], cal, gbps,
                                                   slow)
                predicted[index].append(pred)
                if name == WHAT_IF:
                    half, _ = predict(b, plans[index], cal, gbps, slow,
                                      "link=0.5x")
                    bw, lat = cal[2] or cal[1]
                    flags = (f" --emulate-link=bandwidth={bw / 2:g},"
                             f"latency={lat:g}")
                    at_half = measure_flags(b, plans[index], ranks, flags,
                                            args.steps, tmp)[0]
                    what_ifs.append((pred, half, at_half, bw))
        asyncs = [f[2] for f in fitted if f[2]] or [(0, 0)]
        links = [statistics.median(f[1][i] for f in fitted)
                 for i in range(2)] + \
            [statistics.median(a[i] for a in asyncs) for i in range(2)]
    rounds = {"steps": args.steps, "repeats": args.repeats,
              "machine": f"{cpu_name()}, {os.cpu_count()} cores",
              "load_start": load_start, "load_end": os.getloadavg(),
              "links": links,
              "rows": [{"name": c[0], "predicted": predicted[i],
                        "measured": measured[i],
                        "predicted_arena": pred_arenas[i],
                        "runtime_arena": arenas[i]}
                       for i, c in enumerate(CONFIGS)],
              "what_if": what_ifs}
    with open(os.path.join(here, "sim-rounds.json"), "w") as f:
        # Every round's prediction and measurement (s): the report's data
        # (--report renders it again) and the run-to-run spread behind it.
        json.dump(rounds, f, indent=1)
    write_report(here, rounds)


def resolved_tau(rounds):
    """Kendall tau over the pairs of configurations whose measured order the
    rounds resolve (a two-sided sign test at 5% over the rounds, rounds
    where the two measured the same left out; the order is the one most
    rounds show), those pairs' count, the unresolved pairs and the
    discordant resolved ones (row numbers from 1)."""
    rows = rounds["rows"]
    pred = [statistics.median(r["predicted"]) for r in rows]

    def p_value(k, n):
        k = max(k, n - k)
        return min(1, 2 * sum(math.comb(n, i) for i in range(k, n + 1))
                   / 2 ** n)

    concordant = discordant = 0
    unresolved, wrong = [], []
    for i in range(len(rows)):
        for j in range(i + 1, len(rows)):
            pairs = list(zip(rows[i]["measured"], rows[j]["measured"]))
            i_faster = sum(a < b for a, b in pairs)
            j_faster = sum(a > b for a, b in pairs)
            n = i_faster + j_faster
            if n == 0 or p_value(i_faster, n) > 0.05:
                unresolved.append((i + 1, j + 1))
                continue
            # Measured: i faster (+1) or j faster (-1); predicted likewise.
            measured = 1 if i_faster > j_faster else -1
            predicted = (pred[i] < pred[j]) - (pred[i] > pred[j])
            concordant += predicted == measured
            discordant += predicted == -measured
            if predicted == -measured:
                wrong.append((i + 1, j + 1))
    resolved = len(rows) * (len(rows) - 1) // 2 - len(unresolved)
    return ((concordant - discordant) / max(1, resolved), resolved,
            unresolved, wrong)


def write_report(here, rounds):
    if [r["name"] for r in rounds["rows"]] != [c[0] for c in CONFIGS]:
        sys.exit("sim.py: the saved rounds' rows are not this script's "
                 "configurations (an older sim-rounds.json?)")
    rows = [(r["name"], c[2], statistics.median(r["predicted"]),
             statistics.median(r["measured"]), r["predicted_arena"],
             r["runtime_arena"]) for r, c in zip(rounds["rows"], CONFIGS)]
    paired = [statistics.median(p / m - 1 for p, m in zip(r["predicted"],
                                                          r["measured"]))
              for r in rounds["rows"]]
    what_if = rounds["what_if"]
    links = rounds["links"]
    load_start, load_end = rounds["load_start"], rounds["load_end"]
    steps, repeats = rounds["steps"], rounds["repeats"]
    for name, _, pred, meas, *_ in rows:
        print(f"{name}: predicted {pred * 1e3:.3f} ms, measured "
              f"{meas * 1e3:.3f} ms", file=sys.stderr)
    errors = [abs(p - m) / m for _, _, p, m, _, _ in rows]
    two = [(p, m) for _, r, p, m, _, _ in rows if r <= 2]
    errors2 = [abs(p - m) / m for p, m in two]
    tau = kendall_tau([r[2] for r in rows], [r[3] for r in rows])
    tau2 = kendall_tau([p for p, _ in two], [m for _, m in two])
    tau_resolved, resolved, unresolved, wrong = resolved_tau(rounds)
    moved = [abs(p - m) / m for name, _, p, m, _, _ in rows
             if any(c[0] == name and (c[3] is not None or c[4] != 1)
                    for c in CONFIGS)]
    lines = [
        "# strata-sim: predicted vs measured step time",
        "",
        f"`python3 bench/sim.py --steps {steps} --repeats "
        f"{repeats}` (this file's generator; `--report` writes it again from "
        "`bench/sim-rounds.json`, the run's every round). Machine: "
        f"{rounds['machine']} (the load averages say how busy they were "
        "beside this run; the run itself keeps two ranks busy): "
        f"load average {load_start[0]:.2f} / {load_start[1]:.2f} / "
        f"{load_start[2]:.2f} (1 / 5 / 15 min) at the start, "
        f"{load_end[0]:.2f} / {load_end[1]:.2f} / {load_end[2]:.2f} at the "
        "end. Model: `strata-model " + MODEL + "`, AdamW; pipelines run "
        f"{MICRO} micro-batches of 16. One kernel thread per rank. Emulated "
        f"links: `strata-run --emulate-link=bandwidth=B,latency={LATENCY_US}`; "
        "slowed compute: `--emulate-compute=2`.",
        "",
        f"Rounds ({repeats}): each runs every configuration once, "
        "in its own order (shuffled, seeded by the round, so that no row "
        "always follows the same run), and calibrates each configuration's "
        "plan right before its run (`strata-sim PLAN --target cpu-local "
        "--calibrate P`: the plan run as it is, this machine's link, no "
        "emulation, compute 1x; 30 steps for one rank, 20 for several), so "
        "that a calibration and the run it predicts are seconds apart on "
        "the machine (its speed drifts: in session 12 one configuration's "
        "runs varied over the rounds by up to 21%, coefficient of "
        "variation; back to back, a calibration's prediction and the run "
        "differ by 5-10%, standard deviation: `bench/sim-probes.md`). "
        "A calibration gives the plan's kernel times, "
        "its gaps between kernels and around them within a step, the "
        "copies around bucket transfers and this machine's cores (more "
        "ranks than cores time-share them: the kernels stretch by the "
        "ranks' demand for cores, kernels and collectives, over the cores, "
        "a fixed point of the replay); ranks that share the 2 cores with "
        "each other's communication threads run their kernels slower than "
        "one rank alone, by an amount that depends on the communication "
        "pattern, so each plan is predicted from its own. Links, calibrated "
        "at the start of each round: the blocking all-reduces of the "
        "data-parallel plan give this "
        f"machine's link (median over the rounds **{links[0]:.3f} GB/s, "
        f"{links[1]:.1f} us**: MPI over shared memory; sends and receives "
        "use it too), the bucket transfers of the overlapped plan the link "
        f"of asynchronous all-reduces (**{links[2]:.3f} GB/s, "
        f"{links[3]:.1f} us**: the runtime's background progress thread); "
        "the data-parallel rows take the blocking link, the overlapped "
        "rows the asynchronous one, from their own calibration instead. "
        "Predicted: `strata-sim PLAN --target cpu-local --profile P "
        "--what-if 'link=BGB/s,latency=Lus,async-link=...,async-latency=..."
        "[,compute=0.5x]'`, with each link's bandwidth the slower of the "
        "emulated one and the machine's (an emulated transfer ends no "
        "sooner than the real one) and its latency the emulated "
        f"{LATENCY_US} us (since run 27: a calibrated blocking latency "
        "also holds the waiting thread's wake-up after the transfer, 18-149 "
        "us over six calibrations in a row, which an emulated transfer "
        "hides by spinning through its last 50 us). Rows marked *replay* "
        "run under the calibration's own conditions (the timeline replays "
        "the measured kernels: dPRO's "
        "validation); every other row changes the link or the compute speed "
        "(a prediction from the calibration). A row's predicted time is the "
        "median of its rounds' predictions, its measured time the median of "
        "its rounds' runs (each run's median step, steps 3 on; with slowed "
        "compute steps 7 on, the padded ones: `--emulate-compute` measures "
        "each kernel unslowed in the first six steps and pads it to R times "
        "that in the later ones, so a slowed run's padded steps keep the "
        "speed of its first 40 ms: those rows run " + str(SLOWED_RUNS) +
        " times a round, and a round's value is their median). The error "
        "column compares those medians; *paired* is the median over the "
        "rounds of each round's error (its prediction against its own "
        "run). Nothing is fitted to the measured rows.",
        "",
        "| configuration | ranks | predicted ms | measured ms | error | "
        "paired | predicted arena | runtime arena |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for (name, ranks, pred, meas, pa, ra), err, pair in zip(rows, errors,
                                                            paired):
        config = next(c for c in CONFIGS if c[0] == name)
        if config[3] is None and config[4] == 1:
            name += " (*replay*)"
        lines.append(f"| {name} | {ranks} | {pred * 1e3:.3f} | "
                     f"{meas * 1e3:.3f} | {100 * (pred - meas) / meas:+.1f}% | "
                     f"{100 * pair:+.1f}% | {pa} | {ra} |")
    arenas_equal = all(pa == ra for *_, pa, ra in rows)
    lines += [
        "",
        f"**All {len(rows)} configurations:** mean absolute error "
        f"{100 * sum(errors) / len(errors):.1f}%, max "
        f"{100 * max(errors):.1f}%, Kendall tau {tau:.3f}.",
        f"**The {len(two)} configurations on at most 2 ranks** (one core "
        f"each): mean absolute error {100 * sum(errors2) / len(errors2):.1f}%, "
        f"max {100 * max(errors2):.1f}%, Kendall tau {tau2:.3f}.",
        f"**The {len(moved)} predictions** (rows that change the link or the "
        f"compute speed): mean absolute error "
        f"{100 * sum(moved) / max(1, len(moved)):.1f}%, max "
        f"{100 * max(moved, default=0):.1f}%.",
        f"**Paired** (each round's prediction against its own run, the "
        f"median over the rounds): mean absolute error "
        f"{100 * sum(map(abs, paired)) / len(paired):.1f}%, max "
        f"{100 * max(map(abs, paired)):.1f}%.",
        f"**Ranking over the resolved pairs:** Kendall tau "
        f"{tau_resolved:.3f} over the {resolved} of "
        f"{len(rows) * (len(rows) - 1) // 2} pairs whose measured order the "
        f"{repeats} rounds resolve (a two-sided sign test at 5%: one "
        "configuration faster in so many rounds that a fair coin gives that "
        "at most 5% of the time; rounds where the two measured the same "
        "left out); ordered wrong: "
        + (", ".join(f"({i},{j})" for i, j in wrong) or "none")
        + ". Not resolved in these rounds (their measured order changes "
        "from round to round): "
        + (", ".join(f"({i},{j})" for i, j in unresolved) or "none") + ".",
        "Targets (issue 17): mean <= 5%, max <= 10%, tau >= 0.9 (on the "
        "error column and over all pairs).",
        "",
        "Arena: predicted (strata-sim, rank 0) "
        + ("equals" if arenas_equal else "**differs from**")
        + " the runtime's (strata-run's `arena N bytes`) for every plan.",
    ]
    if what_if:
        errors_half = [(half - at) / at for _, half, at, _ in what_if]
        what_if_median = statistics.median(errors_half)

        def med(i):
            return statistics.median(w[i] for w in what_if)

        bws = [w[3] for w in what_if]
        lines += [
            "",
            f"**What-if** ({WHAT_IF}): each round predicts the step at half "
            "the asynchronous link of the row's own calibration (`--what-if "
            "link=0.5x`) and runs it with `--emulate-link=bandwidth=` that "
            f"half ({min(bws) / 2:.3f}-{max(bws) / 2:.3f} GB/s over the "
            f"rounds). Medians over the rounds: predicted at the machine's "
            f"link {med(0) * 1e3:.3f} ms, at half {med(1) * 1e3:.3f} ms, "
            f"measured at half {med(2) * 1e3:.3f} ms; the rounds' errors "
            + ", ".join(f"{100 * e:+.1f}%" for e in errors_half)
            + f", median **{100 * what_if_median:+.1f}%** "
            "(target: within 10%).",
        ]
    what_if_met = not what_if or abs(what_if_median) <= 0.10
    missed = [label for label, ok in (
        ("mean", sum(errors) / len(errors) <= 0.05),
        ("max", max(errors) <= 0.10), ("tau", tau >= 0.9)) if not ok]
    if not arenas_equal:
        missed.append("arena")
    if not what_if_met:
        missed.append("what-if")
    paired_met = (sum(map(abs, paired)) / len(paired) <= 0.05 and
                  max(map(abs, paired)) <= 0.10 and tau_resolved >= 0.9 and
                  arenas_equal and what_if_met)
    lines += [
        "",
        ("**Every target of issue 17 is met in this run**" if not missed
         else "**Not every target of issue 17 is met in this run** (missed: "
         + ", ".join(missed) + ")")
        + " on the error column and all pairs; on the paired errors and the "
        "resolved pairs "
        + ("every target is met." if paired_met else "not every target is met.")
        + " Reading (the runs before this one, and what moves the rows): "
        "docs/strata-sim.md, \"Validation status\"."]
    with open(os.path.join(here, "sim.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
