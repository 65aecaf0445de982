#!/usr/bin/env python3
"""Checks the loss curve printed by strata-run.

    check_loss.py LOG --first K --last K --below RATIO [--max-final X]

Passes when the mean loss of the last K logged steps is below RATIO times the
mean of the first K (and, with --max-final, the last K mean is below X).
Prints the two means so a failure shows the numbers.
"""
import argparse
import re
import sys

parser = argparse.ArgumentParser()
parser.add_argument("log")
parser.add_argument("--first", type=int, default=5)
parser.add_argument("--last", type=int, default=5)
parser.add_argument("--below", type=float, required=True)
parser.add_argument("--max-final", type=float)
args = parser.parse_args()

losses = [float(m.group(1)) for m in
          re.finditer(r"^step \d+ loss (\S+)", open(args.log).read(), re.M)]
if len(losses) < args.first + args.last:
    sys.exit(f"only {len(losses)} logged steps")
first = sum(losses[:args.first]) / args.first
last = sum(losses[-args.last:]) / args.last
print(f"first {args.first} mean {first:.4f}, last {args.last} mean {last:.4f}, "
      f"ratio {last / first:.3f}")
if not last < args.below * first:
    sys.exit(f"loss did not fall below {args.below} of its start")
if args.max_final is not None and not last < args.max_final:
    sys.exit(f"final loss {last:.4f} is not below {args.max_final}")
print("loss check passed")
