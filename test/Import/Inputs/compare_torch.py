#!/usr/bin/env python3
"""Compares strata-run's results with PyTorch's (make_onnx_models.py).

    compare_torch.py REF.safetensors grads INIT.safetensors AFTER.safetensors
        --lr LR --rtol R [--key grad64]
      the gradients of the first step, from a run of one SGD step at LR
      without momentum: (INIT - AFTER) / LR against "grad/P" (PyTorch's
      float32 gradients; with --key grad64, its float64 ones)
    compare_torch.py REF.safetensors params KEY AFTER.safetensors --rtol R
        [--exclude REGEX]
      the parameters after the run against "KEY/P" (sgd10, adamw10), but
      those whose name matches REGEX
    compare_torch.py REF.safetensors losses KEY LOG --rtol R
      the "step N loss L" lines of a strata-run log against the losses in
      REF's metadata (KEY: sgd_losses, adamw_losses)

Tensors: |strata - torch| <= R * max|torch| element-wise (relative to the
tensor's magnitude); losses: |strata - torch| <= R * |torch|. Prints the
largest scaled difference and fails above R. Standard library only.
"""
import argparse
import json
import re
import struct
import sys


def load(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        count = (end - begin) // 4
        tensors[name] = struct.unpack("<%df" % count, body[begin:end])
    return tensors, header.get("__metadata__", {})


def compare_tensors(expected, actual, rtol):
    worst, worst_name = 0.0, None
    for name, ref in sorted(expected.items()):
        if name not in actual:
            sys.exit("missing tensor %s in strata's results" % name)
        got = actual[name]
        if len(got) != len(ref):
            sys.exit("%s: %d elements, PyTorch has %d" % (name, len(got), len(ref)))
        scale = max(max(abs(v) for v in ref), 1e-30)
        diff = max(abs(a - b) for a, b in zip(got, ref)) / scale
        if diff >= worst:
            worst, worst_name = diff, name
    print("max scaled difference %.3g (%s) over %d tensors" %
          (worst, worst_name, len(expected)))
    if worst > rtol:
        sys.exit("FAIL: above rtol %g" % rtol)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("ref")
    parser.add_argument("mode", choices=["grads", "params", "losses"])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--rtol", type=float, required=True)
    parser.add_argument("--key", default="grad",
                        help="grads: the reference's key (grad, grad64)")
    parser.add_argument("--exclude", default=None,
                        help="grads, params: leave out the tensors whose "
                             "name matches this regular expression")
    args = parser.parse_args()
    ref, meta = load(args.ref)
    if args.mode == "losses":
        expected = json.loads(meta[args.a])
        got = [float(m.group(1)) for m in re.finditer(
            r"^step \d+ loss (\S+)", open(args.b).read(), re.M)]
        if len(got) != len(expected):
            sys.exit("%d losses in the log, PyTorch has %d" % (len(got), len(expected)))
        worst = max(abs(a - b) / abs(b) for a, b in zip(got, expected))
        print("max relative loss difference %.3g over %d steps" % (worst, len(got)))
        if worst > args.rtol:
            sys.exit("FAIL: above rtol %g\nstrata %s\ntorch  %s" % (args.rtol, got, expected))
        return
    if args.mode == "grads":
        before, _ = load(args.a)
        after, _ = load(args.b)
        prefix = args.key + "/"
        actual = {prefix + n: [(x - y) / args.lr for x, y in zip(before[n], after[n])]
                  for n in before if n in after}
    else:
        after, _ = load(args.b)
        prefix = args.a + "/"
        actual = {prefix + n: v for n, v in after.items()}
    expected = {n: v for n, v in ref.items() if n.startswith(prefix) and
                not (args.exclude and re.search(args.exclude, n))}
    compare_tensors(expected, actual, args.rtol)


if __name__ == "__main__":
    main()
