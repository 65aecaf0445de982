#!/usr/bin/env python3
"""Which saved tensors make the main-job GPT sensitive to MXFP6?

    python3 bench/compression_sensitivity.py [--build build] [--steps 1000]

Compiles the main-job GPT with --strata-compress-activations=format=mxfp6,
then takes compressions back out of the IR for some tensors (`ln`: the
inputs of the forward layer_norm ops, i.e. the residual stream; `softmax`:
the attention probabilities; `both`), and trains each variant, f32 with
seeds 3 and 4 (the run-to-run spread), and mxfp6 on everything, for
--steps steps on the GPL-3 text with one thread. Prints the final loss
(mean of the last 50 steps) and the saved-activation bytes of each.
"""
import argparse
import json
import os
import re
import tempfile

from benchutil import sh

parser = argparse.ArgumentParser()
parser.add_argument("--build", default="build")
parser.add_argument("--steps", type=int, default=1000)
args = parser.parse_args()
BIN = os.path.join(args.build, "bin")
TMP = tempfile.mkdtemp(prefix="compress-sens-")
DATA = "/usr/share/common-licenses/GPL-3"
MODEL = "gpt --preset gpt-tiny --hidden 128 --seq 64 --positions 64 --batch 32"


def keep_f32(src, dst, kind):
    """Rewrites the compressed step `src` so that the tensors of `kind`
    are not compressed (their decompressed uses read the f32 value)."""
    lines = open(src).read().split("\n")
    producer, forward_users = {}, {}
    for line in lines:
        m = re.match(r"\s*(%[\w#]+)(?::\d+)? = (strata\.\w+)(.*)", line)
        if not m:
            continue
        producer[m.group(1)] = m.group(2)
        if "strata.phase" not in line:
            for operand in re.findall(r"%[\w#]+", m.group(3)):
                forward_users.setdefault(operand, []).append(m.group(2))
    kept = {}
    for line in lines:
        m = re.match(r"\s*(%\S+) = strata\.compress (%\S+) ", line)
        if not m:
            continue
        packed, value = m.groups()
        ln = "strata.layer_norm" in forward_users.get(value, [])
        softmax = producer.get(value) == "strata.softmax"
        if (kind == "ln" and ln) or (kind == "softmax" and softmax) or \
                (kind == "both" and (ln or softmax)):
            kept[packed] = value
    rename, out = {}, []
    for line in lines:
        m = re.match(r"\s*(%\S+) = strata\.compress ", line)
        if m and m.group(1) in kept:
            continue
        m = re.match(r"\s*(%\S+) = strata\.decompress (%\S+) ", line)
        if m and m.group(2) in kept:
            rename[m.group(1)] = kept[m.group(2)]
            continue
        out.append(line)
    text = "\n".join(out)
    for old, new in rename.items():
        text = re.sub(re.escape(old) + r"(?![\w#])", new, text)
    open(dst, "w").write(text)
    return len(kept)


def train(mlir, seed):
    plan = mlir + ".json"
    sh("%s/strata-opt %s --strata-plan-buffers 2>/dev/null | "
       "%s/strata-translate --export-plan -o %s" % (BIN, mlir, BIN, plan))
    log = mlir + ".%d.jsonl" % seed
    out = sh("%s/strata-run %s --data %s --steps %d --threads 1 --seed %d "
             "--log-json %s" % (BIN, plan, DATA, args.steps, seed, log))
    losses = [json.loads(line)["loss"] for line in open(log)]
    saved = re.search(r"^compressed activations: (\d+) tensors, (\d+) bytes "
                      r"\((\d+) as f32", out, re.M)
    return sum(losses[-50:]) / len(losses[-50:]), saved


step = os.path.join(TMP, "step.mlir")
sh("%s/strata-model %s | %s/strata-opt --strata-autodiff='optimizer=adamw "
   "lr=0.003' -o %s" % (BIN, MODEL, BIN, step))
mx6 = os.path.join(TMP, "mx6.mlir")
sh("%s/strata-opt %s --strata-compress-activations=format=mxfp6 -o %s "
   "2>/dev/null" % (BIN, step, mx6))
print("| variant | compressed tensors | packed bytes | final loss |")
print("| --- | ---: | ---: | ---: |")
for seed in (3, 4):
    loss, _ = train(step, seed)
    print("| f32, seed %d | 0 | - | %.4f |" % (seed, loss))
for kind in ("all", "softmax", "ln", "both"):
    path = mx6
    if kind != "all":
        path = os.path.join(TMP, "mx6-%s.mlir" % kind)
        keep_f32(mx6, path, kind)
    loss, saved = train(path, 3)
    what = {"all": "mxfp6 everywhere",
            "softmax": "mxfp6, attention probabilities f32",
            "ln": "mxfp6, layer-norm inputs f32",
            "both": "mxfp6, both f32"}[kind]
    print("| %s | %s | %s (of %s as f32) | %.4f |" % (
        what, saved.group(1), saved.group(2), saved.group(3), loss),
        flush=True)
