#!/usr/bin/env python3
"""Regenerates the seed corpora in fuzz/corpus/ with the built tools.

    fuzz/make_corpus.py [--bin build-san/bin]

Seeds are small valid inputs (tiny models, their training steps, plans,
checkpoints, profiles, tuning databases and cost tables) plus the lit tests'
IR, split at `// -----`. The IR and profile targets read a selector byte
before the text (see fuzz/FuzzIR.cpp and fuzz/FuzzProfile.cpp).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Indices into kPipelines of fuzz/FuzzIR.cpp.
VERIFY, COSTS_CPU, COSTS_H100, AUTODIFF, AUTODIFF_SGD, AUTODIFF_ADAM = 0, 1, 2, 3, 4, 5
DATA_PARALLEL, SYNC_TARGET, SYNC_BUCKETS, SYNC_HOST, SYNC_STALE = 6, 7, 8, 9, 10
PARTITION, PARTITION_BALANCE = 11, 12
SCHEDULE_1F1B, SCHEDULE_GPIPE, SCHEDULE_ZB, SCHEDULE_INTERLEAVED = 13, 14, 15, 16
TILE_GEMM, PRINT_COSTS, PRINT_SAVED = 17, 18, 19
LOWER, COMPILE, COMPILE_DP, COMPILE_PIPELINE, COMPILE_TILED = 20, 21, 22, 23, 24
COMPRESS, COMPILE_COMPRESSED = 25, 26
COMPILE_CARRY_OVER, SCHEDULE_2BW = 27, 28

FORWARD_PIPELINES = [VERIFY, COSTS_CPU, COSTS_H100, AUTODIFF, AUTODIFF_SGD,
                     AUTODIFF_ADAM, TILE_GEMM, PRINT_COSTS, PRINT_SAVED,
                     COMPILE, COMPILE_DP, COMPILE_PIPELINE, COMPILE_TILED,
                     COMPILE_COMPRESSED, COMPILE_CARRY_OVER]
STEP_PIPELINES = [VERIFY, DATA_PARALLEL, SYNC_TARGET, PARTITION,
                  PARTITION_BALANCE, SCHEDULE_1F1B, SCHEDULE_GPIPE,
                  SCHEDULE_ZB, SCHEDULE_INTERLEAVED, LOWER, COMPRESS,
                  SCHEDULE_2BW]
DP_PIPELINES = [SYNC_TARGET, SYNC_BUCKETS, SYNC_HOST, SYNC_STALE, LOWER]
# lit test file name prefix -> the pipeline its cases exercise.
TEST_PIPELINES = [
    ("strata-annotate-costs", COSTS_CPU), ("strata-autodiff", AUTODIFF),
    ("strata-data-parallel", DATA_PARALLEL),
    ("strata-insert-grad-sync", SYNC_BUCKETS), ("strata-lower-to-plan", LOWER),
    ("strata-partition-pipeline", PARTITION),
    ("strata-schedule-pipeline", SCHEDULE_1F1B),
    ("strata-tile-gemm", TILE_GEMM), ("test-strata-print-costs", PRINT_COSTS),
    ("strata-compress-activations", COMPRESS),
    ("test-strata-print-saved", PRINT_SAVED), ("export-plan", LOWER),
]
MAX_IR_BYTES = 32 * 1024  # FuzzIR's kMaxInputBytes
# Larger modules seed only a few pipelines (the small ones cover the rest).
LARGE_IR_BYTES = 8 * 1024
LARGE_IR_PIPELINES = [VERIFY, AUTODIFF, PARTITION, SCHEDULE_1F1B, SYNC_BUCKETS, COMPILE]

MODELS = {
    "mlp": "mlp --batch 2 --inputs 4 --hidden 4 --layers 2 --classes 3",
    "mlp3": "mlp --batch 4 --inputs 8 --hidden 8 --layers 3 --classes 4",
    "gpt": "gpt --layers 1 --hidden 8 --heads 2 --seq 4 --vocab 16 --positions 4 --batch 2",
    "gpt-untied": "gpt --layers 1 --hidden 8 --heads 2 --seq 4 --vocab 16 --positions 4 "
                  "--batch 1 --untie-embeddings",
    "resnet18": "resnet --depth 18 --batch 1 --image-size 32 --channels 1 --classes 4",
    "vgg16": "vgg16 --batch 1 --image-size 32 --channels 1 --classes 4",
}
# Models whose plans the plan target runs (arena within its limit).
RUN_MODELS = ["mlp", "mlp3", "gpt", "gpt-untied"]


def run(args, stdin=None, env=None):
    result = subprocess.run(args, input=stdin, capture_output=True, env=env)
    if result.returncode != 0:
        sys.exit("make_corpus: %s failed:\n%s" % (" ".join(args),
                                                 result.stderr.decode(errors="replace")))
    return result.stdout


class Corpus:
    def __init__(self, out):
        self.out = out
        self.count = {}

    def add(self, target, name, data):
        d = os.path.join(self.out, target)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
        self.count[target] = self.count.get(target, 0) + 1


def lit_cases(path):
    """The `// -----` cases of a lit test, without full-line comments."""
    text = open(path).read()
    for case in re.split(r"^// -----\s*$", text, flags=re.M):
        lines = [l for l in case.splitlines() if not l.lstrip().startswith("//")]
        body = "\n".join(lines).strip() + "\n"
        if body.strip():
            yield body


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default=os.path.join(ROOT, "build-san", "bin"))
    parser.add_argument("--out", default=os.path.join(ROOT, "fuzz", "corpus"))
    args = parser.parse_args()
    tool = lambda name: os.path.join(args.bin, name)
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = "detect_leaks=0"
    env["STRATA_TARGET_PATH"] = os.path.join(ROOT, "targets")

    # Regenerated seeds go; regression-* seeds (inputs of fixed bugs, kept by
    # hand) stay.
    for target in ["ir", "plan", "safetensors", "profile", "tuning-db", "cost-table"]:
        folder = os.path.join(args.out, target)
        for name in os.listdir(folder) if os.path.isdir(folder) else []:
            if not name.startswith("regression-"):
                os.remove(os.path.join(folder, name))
    corpus = Corpus(args.out)
    opt = lambda text, *passes: run([tool("strata-opt"), "-", *passes], text, env)
    export = lambda text: run([tool("strata-translate"), "--export-plan", "-"], text, env)

    # IR: each model forward, as a training step and data-parallel.
    plans = {}
    for name, spec in MODELS.items():
        forward = run([tool("strata-model"), *spec.split()], env=env)
        step = opt(forward, "--strata-autodiff")
        dp = opt(step, "--strata-data-parallel=replicas=2")
        for text, kind, selectors in [(forward, "forward", FORWARD_PIPELINES),
                                      (step, "step", STEP_PIPELINES),
                                      (dp, "dp", DP_PIPELINES)]:
            if len(text) + 1 > MAX_IR_BYTES:
                continue
            if len(text) > LARGE_IR_BYTES:
                selectors = [s for s in selectors if s in LARGE_IR_PIPELINES]
            for s in selectors:
                corpus.add("ir", "%s-%s.%02d" % (name, kind, s), bytes([s]) + text)
        if name in RUN_MODELS or name == "resnet18":
            lowered = opt(step, "--strata-lower-to-plan")
            plans[name] = export(lowered)
            corpus.add("plan", name + ".plan.json", plans[name])
        if name == "mlp":
            # A pipeline that carries micro-batches over between steps
            # (previous_step instructions, carry states, local copies).
            carry = opt(forward, "--strata-autodiff=optimizer=adam",
                        "--strata-schedule-pipeline=stages=2 micro-batches=2 "
                        "schedule=pipedream", "--strata-plan-buffers")
            corpus.add("plan", "mlp-pipedream-carry.plan.json", export(carry))
            if name in RUN_MODELS:
                corpus.add("plan", name + "-dp.plan.json",
                           export(opt(dp, "--strata-insert-grad-sync=bucket-bytes=256",
                                      "--strata-lower-to-plan")))
                corpus.add("plan", name + "-tiled.plan.json",
                           export(opt(step, "--strata-tile-gemm=fallback=model",
                                      "--strata-lower-to-plan")))
    # A pipeline plan (several ranks) and a lagging-gradient plan.
    step = opt(run([tool("strata-model"), *MODELS["mlp3"].split()], env=env),
               "--strata-autodiff")
    corpus.add("plan", "mlp3-pipeline.plan.json", export(opt(
        step, "--strata-schedule-pipeline=stages=2 micro-batches=2 schedule=1f1b",
        "--strata-lower-to-plan")))
    corpus.add("plan", "mlp3-compressed.plan.json", export(opt(
        step, "--strata-compress-activations=format=auto budget=0.05",
        "--strata-lower-to-plan")))
    corpus.add("plan", "mlp3-stale.plan.json", export(opt(
        step, "--strata-data-parallel=replicas=2",
        "--strata-insert-grad-sync=bucket-bytes=256 staleness=1",
        "--strata-lower-to-plan")))
    for f in sorted(os.listdir(os.path.join(ROOT, "runtime", "test", "driver", "Inputs"))):
        if f.endswith(".json"):
            corpus.add("plan", "driver-" + f,
                       open(os.path.join(ROOT, "runtime", "test", "driver", "Inputs", f), "rb").read())

    # IR: the lit tests' cases.
    for sub in ["Dialect/Strata", "Transforms", "Conversion", "Analysis"]:
        d = os.path.join(ROOT, "test", sub)
        for f in sorted(os.listdir(d)):
            if not f.endswith(".mlir"):
                continue
            selector = next((s for prefix, s in TEST_PIPELINES if f.startswith(prefix)), VERIFY)
            for i, case in enumerate(lit_cases(os.path.join(d, f))):
                data = bytes([selector]) + case.encode()
                if len(data) <= MAX_IR_BYTES:
                    corpus.add("ir", "lit-%s-%d" % (f[:-len(".mlir")], i), data)

    # Checkpoints of the tiny MLP (fuzz/TinyPlan.inc), profiles, databases.
    with tempfile.TemporaryDirectory() as tmp:
        tiny = os.path.join(tmp, "tiny.plan.json")
        with open(tiny, "wb") as f:
            f.write(plans["mlp"])
        ckpt = os.path.join(tmp, "tiny.safetensors")
        prof = os.path.join(tmp, "tiny.profile.json")
        run([tool("strata-run"), tiny, "--steps", "2", "--threads", "1", "--save", ckpt,
             "--profile", prof], env=env)
        corpus.add("safetensors", "tiny-checkpoint.safetensors", open(ckpt, "rb").read())
        corpus.add("profile", "tiny-profile.json", b"\0" + open(prof, "rb").read())
        gpt = os.path.join(tmp, "gpt.plan.json")
        with open(gpt, "wb") as f:
            f.write(plans["gpt"])
        ckpt = os.path.join(tmp, "gpt.safetensors")
        run([tool("strata-run"), gpt, "--steps", "1", "--threads", "1", "--save", ckpt], env=env)
        corpus.add("safetensors", "gpt-checkpoint.safetensors", open(ckpt, "rb").read())

        db = os.path.join(tmp, "db.json")
        table = os.path.join(tmp, "table.txt")
        run([tool("strata-tune"), "16x16x16", "24x8x32:ta", "8x8x8:b3:tb", "--cost", "model",
             "--budget", "8", "--db", db, "--save-cost-table", table, "--quiet"], env=env)
        corpus.add("tuning-db", "model.json", open(db, "rb").read())
        lines = open(table, "rb").read().splitlines(keepends=True)
        corpus.add("cost-table", "model.txt", b"".join(lines[:24]))
        corpus.add("cost-table", "comments.txt",
                   b"# GEMM mc,nc,kc,mr,nr SECONDS\n" + b"".join(lines[:3]) +
                   b"16x16x16 16,16,16,8,16 inf  # cannot run\n")
        gpu = os.path.join(tmp, "gpu.json")
        run([tool("strata-tune"), "64x64x64", "--target", "h100-sxm-8x", "--budget", "4",
             "--db", gpu, "--quiet"], env=env)
        corpus.add("tuning-db", "gpu.json", open(gpu, "rb").read())
    corpus.add("tuning-db", "lit-tuning-db.json",
               open(os.path.join(ROOT, "test", "Transforms", "Inputs", "tuning-db.json"), "rb").read())

    for f in ["partition-profile.json", "partition-profile-partial.json"]:
        corpus.add("profile", f, b"\0" + open(os.path.join(ROOT, "test", "Transforms", "Inputs", f),
                                              "rb").read())
    # A small PipeDream graph.txt (the format of include/strata/Analysis/PipelineProfile.h).
    graph = b"".join([
        b"node1 -- Input0 -- forward_compute_time=0.000, backward_compute_time=0.000, "
        b"activation_size=602112.0, parameter_size=0.000\n",
        b"node2 -- Conv2d(3, 64, kernel_size=(3, 3)) -- forward_compute_time=1.250, "
        b"backward_compute_time=2.500, activation_size=12845056.0, parameter_size=7168.0\n",
        b"node3 -- ReLU(inplace) -- forward_compute_time=0.300, backward_compute_time=0.150, "
        b"activation_size=12845056.0, parameter_size=0.000\n",
        b"node4 -- Linear(in_features=64, out_features=10) -- forward_compute_time=0.050, "
        b"backward_compute_time=0.100, activation_size=1280.0, parameter_size=2600.0\n",
        b"node5 -- Add -- forward_compute_time=0.010, backward_compute_time=0.010, "
        b"activation_size=1280.0, parameter_size=0.000\n",
        b"\tnode1 -- node2\n\tnode2 -- node3\n\tnode3 -- node4\n\tnode2 -- node5\n"
        b"\tnode4 -- node5\n",
    ])
    corpus.add("profile", "graph.txt", b"\1" + graph)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "graph.txt")
        with open(path, "wb") as f:
            f.write(graph)
        corpus.add("profile", "graph-emitted.json",
                   b"\0" + run([tool("strata-partition"), path, "--emit-profile"], env=env))
    for target, n in sorted(corpus.count.items()):
        print("%-12s %3d seeds" % (target, n))


if __name__ == "__main__":
    main()
