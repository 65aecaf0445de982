#!/usr/bin/env python3
"""Checks a strata-run Chrome trace for overlapped gradient all-reduces.

    check_overlap.py TRACE.json [--min-buckets N] [--min-overlapping K]

Every bucket all-reduce of the last traced step (events on the
"communication" track, tid 1) must be in flight while at least one backward
kernel (an instruction of phase "backward" that is not a collective) runs,
except the last bucket, which starts after the last gradient; prints how much
backward compute each bucket overlapped. `--min-overlapping K` asks for
only K overlapping buckets instead (sanitizer builds, where the instrumented
kernels and a loaded machine move the timing).
"""
import argparse
import json
import sys

parser = argparse.ArgumentParser()
parser.add_argument("trace")
parser.add_argument("--min-buckets", type=int, default=2)
parser.add_argument("--min-overlapping", type=int, default=None)
args = parser.parse_args()

events = [e for e in json.load(open(args.trace))["traceEvents"]
          if e.get("ph") == "X"]
step = max(e["args"]["step"] for e in events)
events = [e for e in events if e["args"]["step"] == step]
comm = sorted((e for e in events if e["tid"] == 1), key=lambda e: e["ts"])
compute = [e for e in events if e["tid"] == 0 and e["cat"] == "backward"
           and not e["name"].startswith("all_reduce")]
if len(comm) < args.min_buckets:
    sys.exit(f"expected at least {args.min_buckets} bucket all-reduces in "
             f"step {step}, found {len(comm)}")
overlapped = 0
for c in comm:
    begin, end = c["ts"], c["ts"] + c["dur"]
    us = sum(max(0.0, min(end, k["ts"] + k["dur"]) - max(begin, k["ts"]))
             for k in compute)
    print(f"{c['name']}: in flight {c['dur']:.0f} us, "
          f"overlapping {us:.0f} us of backward kernels")
    overlapped += us > 0
needed = (len(comm) - 1 if args.min_overlapping is None
          else args.min_overlapping)
if overlapped < needed:
    sys.exit(f"only {overlapped} of {len(comm)} bucket all-reduces overlap "
             "backward kernels")
print(f"{overlapped} of {len(comm)} bucket all-reduces overlap backward kernels")
