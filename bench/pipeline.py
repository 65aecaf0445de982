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
    ("pipedream", "pipedream", "schedule=pipedream"),
    ("2bw (window 8)", "2bw", "schedule=2bw"),
    ("2bw (window 4)", "2bw", "schedule=2bw window=4"),
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


def async_rows(tools, tmp, step, target, emulate, args):
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
        rows.append([name, partition_prediction(mlir), pred, bubble, updates,
                     plan, []])
    for _ in range(args.rounds):
        for row in rows:
            out = sh(f"{mpirun} -np {RANKS} {run} {row[5]} --steps "
                     f"{args.steps} --threads 1 {emulate}")
            row[6].append(mean_step_ms(out) / 1e3)
    return rows


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
                row[3] = (losses[0], sum(losses[-5:]) / 5, final_loss(out))
        results.append((model, MICRO * batch, optimizer, rows))
    return results


ASYNC_MARKER = "## Asynchronous schedules"


def async_lines(arows, train, args, load_before, load_after):
    command = (f"python3 bench/pipeline.py{' --async-only' if args.async_only else ''}"
               f" --steps {args.steps} --rounds {args.rounds} --train-steps "
               f"{args.train_steps}")
    lines = [
        f"{ASYNC_MARKER}: pipedream and 2bw beside 1F1B-flush",
        "",
        f"`{command}` (on {cpu_name()}, {os.cpu_count()} cores, shared).",
        "",
        f"Same model and link, SGD (`{SGD}`) for every schedule, "
        f"{RANKS} stages on {RANKS} ranks, {MICRO} micro-batches "
        "per step, each schedule on the stages the partitioner "
        "(`--strata-partition-pipeline` on the calibrated target) chooses "
        f"for it. Measured: the median over {args.rounds} rounds that "
        f"alternate the schedules, {args.steps} steps each (load average "
        f"{load_before:.2f} before, {load_after:.2f} after). "
        "`partitioner ms`: the partitioner's model of the step (PipeDream's "
        "steady state: no bubble for pipedream and 2bw); `timeline ms`: the "
        "scheduler's timeline model replaying the plan's own order, which "
        "drains the pipeline at every step's end.",
        "",
        "| schedule | updates/step | partitioner ms | timeline ms | timeline "
        "bubble | measured ms (median) | runs | measured / timeline | "
        "measured / partitioner |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |",
    ]
    for name, part, pred, bubble, updates, _, measured in arows:
        med = statistics.median(measured)
        runs = ", ".join(f"{m * 1e3:.1f}" for m in measured)
        lines.append(f"| {name} | {updates} | {part * 1e3:.3f} | "
                     f"{pred * 1e3:.3f} | {bubble:.2f} | {med * 1e3:.3f} | "
                     f"{runs} | {med / pred:.2f} | {med / part:.2f} |")
    lines += [
        "",
        "### Throughput and loss after "
        f"{args.train_steps} steps on {RANKS} ranks",
        "",
        "Every layout trains on the same global batch and the same data "
        f"(seed 1): {MICRO} micro-batches per step for the pipelines, "
        f"{RANKS} replicas of a {MICRO // RANKS}x larger batch for data "
        f"parallelism (`--strata-data-parallel`). Same link emulation; step "
        f"time is the median over {args.rounds} alternating rounds; the "
        "losses (strata-run's, rank 0's report) are the same every round. "
        "Optimizers: "
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
    by_name = {row[0]: row for row in arows}
    flush, pd = by_name["1f1b (flush)"], by_name["pipedream"]
    med = {name: statistics.median(row[6]) for name, row in by_name.items()}
    lines += [
        "",
        "**Reading.** Strata runs pipedream and 2bw with PipeDream's weight "
        "versions across steps but drains the pipeline at the end of every "
        "plan step, so their steps keep 1F1B's warm-up and drain (idle "
        f"time per device in the timeline model: {pd[3] * pd[2] * 1e3:.1f} "
        f"ms for pipedream, {flush[3] * flush[2] * 1e3:.1f} ms for 1F1B; "
        "pipedream's bubble fraction is lower only because its updates add "
        "busy time) and add "
        "the updates of every window and the copies into the kept versions "
        f"({pd[4]} updates and as many copies of each stage's weights per "
        "step for pipedream, memory-bound on this CPU). Pipedream's step "
        "against 1F1B's: the partitioner predicts "
        f"{pd[1] / flush[1]:.2f}x (its pipedream and 2bw terms price "
        "PipeDream's steady state without a flush: no bubble, one update's "
        "time per step, which these plans cannot reach), the timeline "
        f"model {pd[2] / flush[2]:.2f}x, measured "
        f"{med['pipedream'] / med['1f1b (flush)']:.2f}x: for the plans Strata "
        "runs, the timeline model, which replays each device's own order, "
        "is the one to keep. Absolute ratios (measured / predicted) mix the "
        "calibration with oversubscription (4 ranks on 2 shared cores, up "
        "to 2x) and the machine's load. In loss per "
        "step, pipedream makes 8 updates of one micro-batch each where "
        "1F1B and data parallelism make one of the whole batch (the two "
        "agree to float rounding: same arithmetic in another order), and "
        "2bw one per window on weights one update old.",
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
                        "(printed, pipeline.md left alone)")
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
        load_before = os.getloadavg()[0]
        async_table = async_rows(tools, tmp, sgd_step, target, emulate, args)
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
