#!/usr/bin/env python3
"""Pipeline schedules on CPU ranks: the compiler's predicted step time
(--strata-schedule-pipeline on a calibrated target) beside the measured step
time of the same plan under link emulation, for GPipe, 1F1B, ZB-H1 and
interleaved 1F1B; plus SVG timelines of the predicted and the measured 1F1B
step. Then the asynchronous schedules (pipedream, 2bw) beside 1F1B-flush:
measured step time against the timeline model's and the partitioner's
predictions (medians of alternating rounds), and throughput and loss after N
steps against 1F1B-flush and data parallelism on an MLP and gpt-tiny.

    python3 bench/pipeline.py [--build build] [--steps 12] [--rounds 3]
                              [--train-steps 30]

Writes bench/pipeline.md and bench/pipeline-1f1b-{predicted,measured}.svg.

Calibration: the cost model's roofline times are for the target's nominal
peak, not for this CPU's kernels, so the target's peak and memory bandwidth
are scaled by k = (measured 1-rank step time) / (predicted 1-rank step
time) of the same micro-batched step on one device (no pipeline, one kernel
thread). The links of the target are the emulated link.
"""
import argparse
import json
import math
import os
import re
import tempfile

import subprocess
import sys

from benchutil import cpu_name, mean_step_ms
import statistics


def sh(command):
    """Runs a shell command; on failure prints its output and exits."""
    done = subprocess.run(command, shell=True, text=True, capture_output=True)
    if done.returncode != 0:
        sys.exit(f"pipeline.py: `{command}` failed ({done.returncode}):\n"
                 f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    return done.stdout

MODEL = "mlp --layers 8 --hidden 512 --inputs 512 --classes 10 --batch 16"
MICRO = 8
LINK = (1.0, 50.0)  # GB/s, us
RANKS = 4


def target_file(tmp, k):
    bandwidth, latency = LINK
    link = {"bandwidth_gb_per_s": bandwidth, "latency_us": latency}
    path = os.path.join(tmp, "cpu-calibrated.json")
    with open(path, "w") as f:
        json.dump({
            "name": "cpu-calibrated",
            "description": "this CPU, one kernel thread per rank, calibrated",
            "nodes": 1, "devices_per_node": 8,
            "device": {"kind": "cpu", "name": "one rank",
                       "peak_tflops": {"f32": 0.47 / k},
                       "memory_bandwidth_gb_per_s": 40.0 / k,
                       "memory_capacity_gib": 4},
            "intra_node_link": link, "inter_node_link": link,
            "host_link": {"bandwidth_gb_per_s": 40, "latency_us": 0}}, f)
    return path


def predicted(mlir):
    m = re.search(r"predicted_step_seconds = ([0-9.eE+-]+)", mlir)
    b = re.search(r"predicted_bubble = ([0-9.eE+-]+)", mlir)
    return float(m.group(1)), float(b.group(1))


# SGD with momentum, as PipeDream's experiments.
SGD = "optimizer=sgd lr=0.01 momentum=0.9"
ASYNC = [
    # (row, --strata-partition-pipeline schedule, scheduler options)
    ("1f1b (flush)", "1f1b", "schedule=1f1b"),
    ("pipedream", "pipedream", "schedule=pipedream drain=run"),
    ("2bw (window 8)", "2bw", "schedule=2bw drain=run"),
    ("2bw (window 4)", "2bw", "schedule=2bw window=4 drain=run"),
    # The same, draining the pipeline at every step's end (the weights are
    # the same bit for bit; only the time differs).
    ("pipedream, drain=step", "pipedream", "schedule=pipedream drain=step"),
    ("2bw (window 8), drain=step", "2bw", "schedule=2bw drain=step"),
    ("2bw (window 4), drain=step", "2bw", "schedule=2bw window=4 drain=step"),
]
# Training comparison: model, strata-model arguments for one micro-batch,
# the same model at the data-parallel replica batch, optimizer.
TRAIN_MODELS = [
    ("MLP (4 x 256)",
     "mlp --layers 4 --hidden 256 --inputs 32 --classes 8 --batch 16",
     "mlp --layers 4 --hidden 256 --inputs 32 --classes 8 --batch 32",
     "optimizer=sgd lr=0.05 momentum=0.9", 16),
    ("gpt-tiny (seq 64, untied)",
     "gpt --preset gpt-tiny --untie-embeddings --seq 64 --batch 2",
     "gpt --preset gpt-tiny --untie-embeddings --seq 64 --batch 4",
     "optimizer=sgd lr=0.05 momentum=0.9", 2),
]
TRAIN = [
    ("data parallel, 4 replicas", None),
    ("1f1b (flush), 4 stages", "stages=4 schedule=1f1b"),
    ("pipedream, 4 stages", "stages=4 schedule=pipedream"),
    ("2bw, 4 stages", "stages=4 schedule=2bw"),
]


def partition_prediction(mlir):
    """The partitioner's predicted step seconds (strata.pipeline)."""
    m = re.search(r"pipeline_partition<.*?predicted_step_seconds = "
                  r"([0-9.eE+-]+)", mlir)
    return float(m.group(1))


def schedule_prediction(mlir):
    """The scheduler's predicted step seconds and bubble
    (strata.pipeline_schedule)."""
    m = re.search(r"pipeline_schedule<[^>]*predicted_step_seconds = "
                  r"([0-9.eE+-]+)[^>]*predicted_bubble = ([0-9.eE+-]+)", mlir)
    return float(m.group(1)), float(m.group(2))


def final_loss(output):
    summary = [l for l in output.splitlines() if l.startswith("summary")][0]
    return float(summary.split("final loss ")[1].split()[0])


def profile_predictions(tools, profile, target, part):
    """strata-partition's price of 4 stages x 1 replica (the boundaries its
    model finds best for them) on the measured per-layer profile, under
    Strata's cost terms and under PipeDream's optimizer's terms."""
    partition = f"{os.path.dirname(tools[0])}/strata-partition"
    out = {}
    for terms in ("strata", "pipedream"):
        report = json.loads(sh(
            f"{partition} {profile} --target {target} --devices {RANKS} "
            f"--micro-batches {MICRO} --schedule {part} --cost-model {terms} "
            f"--evaluate {'-'.join(['1'] * RANKS)} --json"))
        out[terms] = report["partition"]["step_seconds"]
    return out


def async_rows(tools, tmp, step, target, profile, emulate, args):
    """pipedream and 2bw beside 1F1B-flush on 4 ranks: the partitioner's and
    the timeline model's predictions and the measured step (median of
    rounds that alternate the schedules)."""
    opt, translate, run, mpirun = tools[:4]
    rows = []
    for name, part, options in ASYNC:
        mlir = sh(f"{opt} {step} --strata-partition-pipeline='target={target} "
                  f"devices={RANKS} stages={RANKS} micro-batches={MICRO} "
                  f"schedule={part}' --strata-schedule-pipeline='"
                  f"micro-batches={MICRO} {options} target={target}'")
        plan = os.path.join(tmp, f"async{len(rows)}.json")
        sh(f"{opt} {step} --strata-partition-pipeline='target={target} "
           f"devices={RANKS} stages={RANKS} micro-batches={MICRO} "
           f"schedule={part}' --strata-schedule-pipeline='"
           f"micro-batches={MICRO} {options}' | {translate} --export-plan "
           f"-o {plan}")
        pred, bubble = schedule_prediction(mlir)
        updates = json.load(open(plan)).get("updates_per_step", 1)
        rows.append({"name": name, "partitioner": partition_prediction(mlir),
                     "timeline": pred, "bubble": bubble, "updates": updates,
                     "plan": plan, "measured": [],
                     "profile": profile_predictions(tools, profile, target,
                                                    part)})
    for _ in range(args.rounds):
        for row in rows:
            out = sh(f"{mpirun} -np {RANKS} {run} {row['plan']} --steps "
                     f"{args.steps} --threads 1 {emulate}")
            row["measured"].append(mean_step_ms(out) / 1e3)
    return rows


# The models compared with the measured step: key, description.
MODELS = [
    ("timeline", "scheduler's timeline model (replays the plan's order)"),
    ("partitioner", "partitioner, Strata's terms, op cost model"),
    ("profile-strata", "strata-partition, Strata's terms, measured profile"),
    ("profile-pipedream",
     "strata-partition, PipeDream's terms, measured profile"),
]


def model_prediction(row, key):
    if key.startswith("profile-"):
        return row["profile"][key[len("profile-"):]]
    return row[key]


def model_errors(arows):
    """Per model: the mean |log(measured / predicted)| over the schedules
    (absolute), and the mean |log| of (measured ratio to 1F1B) / (predicted
    ratio to 1F1B) over the asynchronous schedules (relative: the
    calibration and the oversubscription scale every schedule alike and
    cancel)."""
    flush = arows[0]
    meas = {r["name"]: statistics.median(r["measured"]) for r in arows}
    errors = {}
    for key, _ in MODELS:
        absolute = [abs(math.log(meas[r["name"]] / model_prediction(r, key)))
                    for r in arows]
        relative = [abs(math.log(
            (meas[r["name"]] / meas[flush["name"]]) /
            (model_prediction(r, key) / model_prediction(flush, key))))
            for r in arows[1:]]
        errors[key] = (statistics.mean(absolute), statistics.mean(relative))
    return errors


def train_rows(tools, tmp, emulate, args):
    """Throughput and loss after --train-steps steps on 4 ranks, the same
    global batch and data for every layout (median step time of rounds
    that alternate the layouts; the loss is the same every round)."""
    opt, translate, run, mpirun = tools[:4]
    model_bin = tools[4]
    results = []
    for model, micro, replica, optimizer, batch in TRAIN_MODELS:
        rows = []
        for name, options in TRAIN:
            plan = os.path.join(tmp, f"train{len(results)}-{len(rows)}.json")
            if options is None:
                sh(f"{model_bin} {replica} | {opt} --strata-autodiff="
                   f"'{optimizer}' --strata-data-parallel=replicas={RANKS} | "
                   f"{translate} --export-plan -o {plan}")
            else:
                sh(f"{model_bin} {micro} | {opt} --strata-autodiff="
                   f"'{optimizer}' --strata-schedule-pipeline='micro-batches="
                   f"{MICRO} {options}' | {translate} --export-plan -o {plan}")
            updates = json.load(open(plan)).get("updates_per_step", 1)
            rows.append([name, plan, [], None, updates])
        log = os.path.join(tmp, "train.jsonl")
        for _ in range(args.rounds):
            for row in rows:
                out = sh(f"{mpirun} -np {RANKS} {run} {row[1]} --steps "
                         f"{args.train_steps} --threads 1 --seed 1 {emulate} "
                         f"--log-json {log}")
                row[2].append(mean_step_ms(out) / 1e3)
                losses = [json.loads(l)["loss"] for l in open(log)]
                last = losses[-5:]
                row[3] = (losses[0], sum(last) / len(last), final_loss(out))
        results.append((model, MICRO * batch, optimizer, rows))
    return results


ASYNC_MARKER = "## Asynchronous schedules"


def async_lines(arows, train, args, load_before, load_after):
    command = (f"flock /work/notes/cpu.lock python3 bench/pipeline.py"
               f"{' --async-only' if args.async_only else ''}"
               f" --steps {args.steps} --rounds {args.rounds} --train-steps "
               f"{args.train_steps}")
    lines = [
        f"{ASYNC_MARKER}: pipedream and 2bw beside 1F1B-flush",
        "",
        f"`{command}` (on {cpu_name()}, {os.cpu_count()} cores shared with "
        "other users' jobs; the lock keeps builds and benchmarks apart).",
        "",
        f"Same model and link, SGD (`{SGD}`) for every schedule, "
        f"{RANKS} stages on {RANKS} ranks ({RANKS} single-threaded ranks on "
        f"{os.cpu_count()} cores: oversubscribed), {MICRO} micro-batches "
        "per step, each schedule on the stages the partitioner "
        "(`--strata-partition-pipeline` on the calibrated target) chooses "
        f"for it. Measured: the median over {args.rounds} rounds that "
        f"alternate the schedules, {args.steps} steps each (load average "
        f"{load_before:.2f} before, {load_after:.2f} after). Predictions: "
        "`timeline`, the scheduler's timeline model replaying the plan's "
        "own order (for pipedream and 2bw, which with `drain=run` "
        "carry micro-batches over from one step to the next, the steady "
        "state: three steps in a row less two; `drain=step` drains the "
        "pipeline at every step's end); "
        "`partitioner`, the partitioner pass's closed form with Strata's "
        "cost terms on the op cost model (PipeDream's steady state for "
        "pipedream and 2bw: no bubble); `profile strata` and `profile "
        "pipedream`, `strata-partition --evaluate 1-1-1-1` on the per-layer "
        "profile a 1-rank run measured (`strata-run --profile`), with "
        "Strata's and with PipeDream's optimizer's cost terms "
        "(`--cost-model`).",
        "",
        "| schedule | updates/step | timeline ms (bubble) | partitioner ms | "
        "profile strata ms | profile pipedream ms | measured ms (median) | "
        "runs |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in arows:
        med = statistics.median(r["measured"])
        runs = ", ".join(f"{m * 1e3:.1f}" for m in r["measured"])
        lines.append(
            f"| {r['name']} | {r['updates']} | {r['timeline'] * 1e3:.2f} "
            f"({r['bubble']:.2f}) | {r['partitioner'] * 1e3:.2f} | "
            f"{r['profile']['strata'] * 1e3:.2f} | "
            f"{r['profile']['pipedream'] * 1e3:.2f} | {med * 1e3:.2f} | "
            f"{runs} |")
    errors = model_errors(arows)
    flush = arows[0]
    meas = {r["name"]: statistics.median(r["measured"]) for r in arows}
    lines += [
        "",
        "Each model against the measurements: measured / predicted per "
        "schedule, and each asynchronous schedule's step relative to "
        "1F1B's (measured ratio, then the model's). `abs err` and `rel err` "
        "are the mean |ln(measured / predicted)| over the schedules and "
        "over the relative steps (0 is exact; the relative error cancels "
        "the calibration and the oversubscription, which scale every "
        "schedule alike).",
        "",
        "| model | " + " | ".join(f"{r['name']}: meas/pred" for r in arows)
        + " | " + " | ".join(f"{r['name']} / 1f1b" for r in arows[1:])
        + " | abs err | rel err |",
        "| --- |" + " ---: |" * (2 * len(arows) - 1 + 2),
        "| measured | " + " | ".join("1" for _ in arows) + " | "
        + " | ".join(f"{meas[r['name']] / meas[flush['name']]:.2f}"
                     for r in arows[1:]) + " | | |",
    ]
    for key, description in MODELS:
        pred = {r["name"]: model_prediction(r, key) for r in arows}
        lines.append(
            f"| {description} | "
            + " | ".join(f"{meas[n] / p:.2f}" for n, p in pred.items())
            + " | " + " | ".join(f"{pred[r['name']] / pred[flush['name']]:.2f}"
                                 for r in arows[1:])
            + f" | {errors[key][0]:.2f} | {errors[key][1]:.2f} |")
    same_terms = all(r["profile"]["strata"] == r["profile"]["pipedream"]
                     for r in arows)
    if same_terms:
        lines += [
            "",
            "Strata's and PipeDream's terms price these partitions alike: "
            "they differ only for replicated stages (all-reduce volume, "
            "per-replica transfers and shares, replica counts), and here "
            "every stage has one replica.",
        ]
    best_rel = min(errors, key=lambda k: errors[k][1])
    best_abs = min(errors, key=lambda k: errors[k][0])
    names = dict(MODELS)
    lines += [
        "",
        f"**Which model predicts the measurements.** Relative to 1F1B (the "
        f"question the schedule choice asks): the {names[best_rel]} "
        f"(rel err {errors[best_rel][1]:.2f}). In absolute time: the "
        f"{names[best_abs]} (abs err {errors[best_abs][0]:.2f}). "
        "Strata runs pipedream and 2bw with PipeDream's weight versions; "
        "with `drain=run` (the default for pipedream and whole-step 2bw) their steps run the previous step's last "
        "backward passes between their own warm-up forwards, so the "
        "pipeline drains at the run's end, as PipeDream's, and a step is its "
        "steady state, which the partitioner's pipedream and 2bw terms "
        "price (no bubble); with `drain=step` (the same weights bit for "
        "bit) each step keeps 1F1B's warm-up and drain and adds the "
        "updates of every window and the copies into the kept versions. "
        "Noise: 4 single-threaded ranks share 2 cores (a rank computes up to "
        "2x slower whenever the others compute too) with other users' jobs "
        "outside the lock possible; the runs column shows the spread "
        "between rounds, and differences smaller than it mean nothing.",
    ]
    lines += train_lines(train, args)
    return lines


def train_lines(train, args):
    lines = [
        "",
        "### Throughput and loss after "
        f"{args.train_steps} steps on {RANKS} ranks",
        "",
        "Every layout trains on the same global batch and the same data "
        f"(seed 1): {MICRO} micro-batches per step for the pipelines, "
        f"{RANKS} replicas of a {MICRO // RANKS}x larger batch for data "
        f"parallelism (`--strata-data-parallel`). Same link emulation; step "
        f"time is the median over {args.rounds} alternating rounds; the "
        "losses (strata-run's, rank 0's report) are those of the last "
        "round. Optimizers: "
        + "; ".join(f"{m[0]} `{m[3]}`" for m in TRAIN_MODELS) + ".",
        "",
        "| model | layout | samples/step | updates/step | median ms | runs | "
        "samples/s | loss, step 1 | mean loss, last 5 steps | loss after "
        f"{args.train_steps} steps |",
        "| --- | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for model, samples, optimizer, rows in train:
        for name, plan, times, loss, updates in rows:
            med = statistics.median(times)
            runs = ", ".join(f"{t * 1e3:.0f}" for t in times)
            lines.append(f"| {model} | {name} | {samples} | {updates} | "
                         f"{med * 1e3:.1f} | {runs} | {samples / med:.1f} | "
                         f"{loss[0]:.4f} | {loss[1]:.4f} | {loss[2]:.4f} |")
    lines += [
        "",
        "In loss per step, pipedream makes one update per micro-batch "
        f"({MICRO} per step, each on weights up to {RANKS - 1} updates "
        "stale) where 1F1B and data parallelism make one of the whole "
        "batch (the same arithmetic in another order), and 2bw one per "
        "window on weights one update old. The hyperparameters are the same "
        "for every layout and tuned for none: pipedream applies the same lr "
        "and momentum to every micro-batch's gradient (8 times per step), "
        "2bw to gradients one update stale, so the losses show what these "
        "settings do, not each schedule at its best. Step times on 4 ranks "
        "sharing 2 cores: differences within the runs column's spread are "
        "noise.",
    ]
    return lines


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--train-steps", type=int, default=30)
    parser.add_argument("--async-only", action="store_true",
                        help="only the asynchronous schedules' sections "
                        "(they replace those of bench/pipeline.md; the rest "
                        "of the file is kept)")
    args = parser.parse_args()
    bin_dir = os.path.abspath(os.path.join(args.build, "bin"))
    here = os.path.dirname(os.path.abspath(__file__))
    opt, run = f"{bin_dir}/strata-opt", f"{bin_dir}/strata-run"
    mpirun = "mpirun --allow-run-as-root --oversubscribe"
    bw, lat = LINK
    emulate = f"--emulate-link=bandwidth={bw:g},latency={lat:g}"
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        step = os.path.join(tmp, "step.mlir")
        sh(f"{bin_dir}/strata-model {MODEL} | {opt} --strata-autodiff "
           f"-o {step}")
        # Calibrate on one device: the whole step, M micro-batches.
        one = sh(f"{opt} {step} --strata-schedule-pipeline='stages=1 "
                 f"micro-batches={MICRO} target=cpu-local'")
        p1, _ = predicted(one)
        plan = os.path.join(tmp, "one.json")
        sh(f"{opt} {step} --strata-schedule-pipeline='stages=1 "
           f"micro-batches={MICRO}' | {bin_dir}/strata-translate "
           f"--export-plan -o {plan}")
        # The median of --rounds runs: one run on a loaded machine can be
        # far off.
        t1 = statistics.median(
            mean_step_ms(sh(f"{run} {plan} --steps {args.steps} "
                            f"--threads 1")) / 1e3
            for _ in range(args.rounds))
        k = t1 / p1
        target = target_file(tmp, k)
        configs = [
            ("gpipe, 2 stages", "stages=2 schedule=gpipe", 2),
            ("1f1b, 2 stages", "stages=2 schedule=1f1b", 2),
            ("zb-h1, 2 stages", "stages=2 schedule=zb-h1", 2),
            ("gpipe", f"stages={RANKS} schedule=gpipe", RANKS),
            ("1f1b", f"stages={RANKS} schedule=1f1b", RANKS),
            ("zb-h1", f"stages={RANKS} schedule=zb-h1", RANKS),
            ("interleaved (2 chunks/device)",
             f"stages={2 * RANKS} virtual=2 schedule=interleaved", RANKS),
            ("1f1b, 2 stages x 2 replicas",
             "stages=2 replicas=2 schedule=1f1b", RANKS),
            ("1f1b, 2 stages x 2 replicas, grad-sync buckets",
             "stages=2 replicas=2 schedule=1f1b", RANKS),
        ]
        if args.async_only:
            configs = []
        rows = []
        for name, options, ranks in configs:
            common = f"micro-batches={MICRO} {options} target={target}"
            trace = os.path.join(tmp, "pred.json")
            mlir = sh(f"{opt} {step} --strata-schedule-pipeline='{common} "
                      f"trace={trace}'")
            pred, bubble = predicted(mlir)
            plan = os.path.join(tmp, "plan.json")
            sync = ("--strata-insert-grad-sync=bucket-bytes=1048576"
                    if "buckets" in name else "")
            sh(f"{opt} {step} --strata-schedule-pipeline='{common}' {sync} | "
               f"{bin_dir}/strata-translate --export-plan -o {plan}")
            run_trace = os.path.join(tmp, "run.json")
            out = sh(f"{mpirun} -np {ranks} {run} {plan} --steps {args.steps} "
                     f"--threads 1 {emulate} --trace {run_trace}")
            measured = mean_step_ms(out) / 1e3
            replicas = 2 if "replicas" in name else 1
            rows.append((name, ranks, replicas * MICRO * 16, pred, bubble,
                         measured))
            if name == "1f1b":
                svg = os.path.join(here, "pipeline-1f1b-predicted.svg")
                sh(f"python3 {here}/../scripts/pipeline-svg.py {trace} "
                   f"-o {svg} --title '1F1B, 4 stages, 8 micro-batches: "
                   f"predicted'")
                traces = " ".join([run_trace] + [
                    f"{run_trace}.rank{r}.json" for r in range(1, ranks)])
                svg = os.path.join(here, "pipeline-1f1b-measured.svg")
                sh(f"python3 {here}/../scripts/pipeline-svg.py {traces} "
                   f"-o {svg} --title '1F1B, 4 stages, 8 micro-batches: "
                   f"measured (strata-run --trace, last step)'")
        sgd_step = os.path.join(tmp, "sgd.mlir")
        sh(f"{bin_dir}/strata-model {MODEL} | {opt} --strata-autodiff="
           f"'{SGD}' -o {sgd_step}")
        tools = (opt, f"{bin_dir}/strata-translate", run, mpirun,
                 f"{bin_dir}/strata-model")
        # The per-layer profile of one micro-batch's SGD step on one rank,
        # for strata-partition's models (one kernel thread, as the ranks
        # run).
        profile = os.path.join(tmp, "profile.json")
        one_sgd = os.path.join(tmp, "one-sgd.json")
        sh(f"{bin_dir}/strata-translate {sgd_step} --export-plan "
           f"-o {one_sgd}")
        sh(f"{run} {one_sgd} --steps {args.steps} --threads 1 "
           f"--profile {profile}")
        load_before = os.getloadavg()[0]
        async_table = async_rows(tools, tmp, sgd_step, target, profile,
                                 emulate, args)
        train_table = train_rows(tools, tmp, emulate, args)
        load_after = os.getloadavg()[0]
    extra = async_lines(async_table, train_table, args, load_before,
                        load_after)
    if args.async_only:
        # Replace this file's asynchronous sections, keep the rest (made by
        # an earlier full run, which states its own load).
        path = os.path.join(here, "pipeline.md")
        with open(path) as f:
            text = f.read()
        keep = text.split(ASYNC_MARKER)[0].rstrip("\n")
        with open(path, "w") as f:
            f.write(keep + "\n\n" + "\n".join(extra) + "\n")
        print("\n".join(extra))
        return
    lines = [
        "# Pipeline schedules: predicted vs measured step time",
        "",
        f"`python3 bench/pipeline.py --steps {args.steps} --rounds "
        f"{args.rounds} --train-steps {args.train_steps}` (this file's "
        f"generator). Machine: {cpu_name()}, {os.cpu_count()} cores, load "
        f"average {load:.2f} at the start. Model: `strata-model {MODEL}` "
        f"(the step computes one micro-batch of 16 samples), "
        f"{MICRO} micro-batches per step, AdamW. Every rank runs one kernel "
        f"thread; {RANKS} ranks share the cores (oversubscribed). Link "
        f"emulation `{emulate}` on every run.",
        "",
        f"Calibration: 1 device, {MICRO} micro-batches, no pipeline "
        f"(median of {args.rounds} runs): "
        f"predicted {p1 * 1e3:.3f} ms at the nominal `cpu-local` peak, "
        f"measured {t1 * 1e3:.3f} ms, so k = {k:.2f} (the target's peak and "
        f"bandwidth divided by k).",
        "",
        "| schedule | ranks | samples/step | predicted ms | predicted bubble "
        "| measured ms | measured / predicted |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, ranks, samples, pred, bubble, measured in rows:
        lines.append(f"| {name} | {ranks} | {samples} | {pred * 1e3:.3f} | "
                     f"{bubble:.2f} | {measured * 1e3:.3f} | "
                     f"{measured / pred:.2f} |")
    lines += [
        "",
        f"1 rank without a pipeline: {t1 * 1e3:.3f} ms per step for "
        f"{MICRO * 16} samples.",
        "",
        "**Reading.** The prediction models each rank as owning one core "
        "(the calibration is a 1-rank run on an otherwise idle core). With 2 "
        "ranks on the 2 cores that holds, so measured / predicted tests the "
        f"model directly. With {RANKS} ranks on {os.cpu_count()} cores a rank "
        f"computes up to {RANKS / os.cpu_count():.0f}x slower than predicted "
        "whenever the other ranks compute too; measured / predicted near that "
        "factor "
        "means the schedule's structure (bubble, transfers) is predicted "
        "right and the gap is the oversubscription; the order of the "
        "schedules (ZB-H1 < 1F1B <= GPipe, by bubble) is the thing to "
        "compare. The 2 x 2 rows process twice the samples per step.",
        "",
        "Timelines of one 1F1B step (4 stages, 8 micro-batches): "
        "[predicted](pipeline-1f1b-predicted.svg), "
        "[measured](pipeline-1f1b-measured.svg) (each rank's row starts at "
        "its first instruction of the step; red: recv waits and "
        "collectives).",
        "",
    ] + extra + [""]
    with open(os.path.join(here, "pipeline.md"), "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
