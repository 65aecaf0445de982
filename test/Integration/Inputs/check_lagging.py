#!/usr/bin/env python3
"""Checks the lagging-gradient logs of a multi-rank run (strata-run --lag-log).

    check_lagging.py LOG --ranks P --staleness S --steps FIRST-LAST
                     [--min-stale K]

LOG is rank 0's log; rank r > 0 wrote LOG.rankR. Passes when
- every rank logged the same aggregates, one per step FIRST..LAST, in order;
- every gradient set a rank computed ("computed rank R version V") is in
  exactly one aggregate, and every set of an aggregate was computed by its
  rank (no set applied twice, none lost, none invented);
- no rank has two sets in one aggregate and every aggregate holds a set;
- every set's staleness (aggregate step - version) is between 0 and S;
- at least K sets were stale (the run really lagged).
Prints a summary so a failure shows the numbers.
"""
import argparse
import re
import sys

parser = argparse.ArgumentParser()
parser.add_argument("log")
parser.add_argument("--ranks", type=int, required=True)
parser.add_argument("--staleness", type=int, required=True)
parser.add_argument("--steps", required=True)
parser.add_argument("--min-stale", type=int, default=0)
args = parser.parse_args()
first, last = (int(x) for x in args.steps.split("-"))

errors = []
computed = set()
views = []
for rank in range(args.ranks):
    path = args.log if rank == 0 else f"{args.log}.rank{rank}"
    aggregates = []
    for line in open(path):
        m = re.match(r"computed rank (\d+) version (\d+)$", line.strip())
        if m:
            r, v = int(m.group(1)), int(m.group(2))
            if r != rank:
                errors.append(f"{path}: rank {r} logged in rank {rank}'s log")
            if (r, v) in computed:
                errors.append(f"rank {r} computed version {v} twice")
            computed.add((r, v))
            continue
        m = re.match(r"aggregate step (\d+) count (\d+) sets(.*)$",
                     line.strip())
        if m:
            sets = [tuple(int(x) for x in s.split(":"))
                    for s in m.group(3).split()]
            if int(m.group(2)) != len(sets):
                errors.append(f"{path}: step {m.group(1)} count "
                              f"{m.group(2)} but {len(sets)} sets")
            aggregates.append((int(m.group(1)), sets))
    views.append(aggregates)

steps = [step for step, _ in views[0]]
if steps != list(range(first, last + 1)):
    errors.append(f"rank 0 aggregated steps {steps}, expected {first}-{last}")
for rank in range(1, args.ranks):
    if views[rank] != views[0]:
        errors.append(f"rank {rank}'s aggregates differ from rank 0's")

applied = {}
stale = 0
worst = 0
for step, sets in views[0]:
    if not sets:
        errors.append(f"step {step} holds no set")
    ranks = [r for r, _ in sets]
    if len(set(ranks)) != len(ranks):
        errors.append(f"step {step} holds two sets of one rank: {sets}")
    for r, v in sets:
        if (r, v) in applied:
            errors.append(f"set ({r}, {v}) applied at steps {applied[(r, v)]}"
                          f" and {step}")
        applied[(r, v)] = step
        if (r, v) not in computed:
            errors.append(f"step {step} holds set ({r}, {v}), which rank {r} "
                          "never computed")
        if not 0 <= step - v <= args.staleness:
            errors.append(f"set ({r}, {v}) applied at step {step}: staleness "
                          f"{step - v} outside [0, {args.staleness}]")
        stale += step > v
        worst = max(worst, step - v)
for r, v in sorted(computed - applied.keys()):
    errors.append(f"set ({r}, {v}) was computed but never applied")
if stale < args.min_stale:
    errors.append(f"only {stale} stale sets, expected at least "
                  f"{args.min_stale}")

print(f"{len(views[0])} aggregates, {len(applied)} sets applied once each, "
      f"{stale} stale, largest staleness {worst}")
if errors:
    sys.exit("\n".join(errors[:20]))
print("lagging check passed")
