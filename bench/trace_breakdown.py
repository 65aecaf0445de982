#!/usr/bin/env python3
"""Where a step's time goes, from a strata-run --trace file.

    python3 bench/trace_breakdown.py TRACE.json [--from-step S] [--title T]
        [--top N]

Sums the spans ('X' events) of steps S and later by op kind (the span's
name) and pass (its category: forward, backward, update, ...), and prints a
markdown table: total microseconds per step, the share of all span time,
the number of spans per step and the mean span. The step's wall time is the
first span's start to the last span's end, per step, averaged.
"""
import argparse
import collections
import sys

from benchutil import trace_spans


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace")
    p.add_argument("--from-step", type=int, default=1)
    p.add_argument("--title", default=None)
    p.add_argument("--top", type=int, default=25)
    a = p.parse_args()
    try:
        spans = trace_spans(a.trace, a.from_step)
    except (OSError, ValueError) as e:
        sys.exit(f"trace_breakdown: {a.trace}: {e}")
    if not spans:
        sys.exit(f"trace_breakdown: {a.trace}: no spans from step "
                 f"{a.from_step}")
    steps = collections.defaultdict(list)
    for e in spans:
        steps[e["args"]["step"]].append(e)
    n = len(steps)
    walls = [max(e["ts"] + e["dur"] for e in s) - min(e["ts"] for e in s)
             for s in steps.values()]
    by = collections.defaultdict(lambda: [0.0, 0])
    for e in spans:
        k = (e["name"], e.get("cat", ""))
        by[k][0] += e["dur"]
        by[k][1] += 1
    total = sum(v[0] for v in by.values())
    print(f"### {a.title or a.trace}\n")
    print(f"{n} steps; wall {sum(walls) / n / 1000:.2f} ms/step (first span's "
          f"start to last span's end); spans {total / n / 1000:.2f} ms/step\n")
    print("| op | pass | us/step | share | spans/step | mean us |")
    print("| --- | --- | --- | --- | --- | --- |")
    rows = sorted(by.items(), key=lambda kv: -kv[1][0])
    for (name, cat), (dur, cnt) in rows[:a.top]:
        print(f"| {name} | {cat} | {dur / n:.0f} | {100 * dur / total:.1f}% | "
              f"{cnt / n:.0f} | {dur / cnt:.1f} |")
    rest = rows[a.top:]
    if rest:
        dur = sum(v[0] for _, v in rest)
        print(f"| {len(rest)} others | | {dur / n:.0f} | "
              f"{100 * dur / total:.1f}% | | |")
    print()


if __name__ == "__main__":
    main()
