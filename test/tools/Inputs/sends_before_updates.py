"""Checks that strata-sim's replay makes every in-place update wait for the
sends issued before it, as the executor does.

usage: sends_before_updates.py PLAN TRACE

For every rank with a program of its own: prints "UPDATES n" (its optimizer
updates issued after a send, summed over those ranks) and "ORDER ok" when
each starts no sooner than every earlier send of its rank ended, else the
offending update.
"""
import json
import sys

plan = json.load(open(sys.argv[1]))
events = json.load(open(sys.argv[2]))
events = events["traceEvents"] if isinstance(events, dict) else events
count, ok = 0, True
for rank in plan["ranks"]:
    if "program" not in rank:
        continue
    pid, program = rank["rank"], rank["program"]
    sends = [i for i, inst in enumerate(program) if inst["op"] == "send"]
    updates = [i for i, inst in enumerate(program)
               if inst["op"] in ("adam_update", "sgd_update")
               and any(s < i for s in sends)]
    ends, starts = {}, {}
    for e in events:
        if e.get("ph") != "X" or e.get("pid") != pid:
            continue
        i = e["args"]["instruction"]
        if i < 0:  # not one of the plan's instructions ("step setup")
            continue
        if program[i]["op"] == "send":
            ends[i] = max(ends.get(i, 0), e["ts"] + e["dur"])
        elif i in updates and e.get("tid") == 0:
            starts[i] = e["ts"]
    count += len(updates)
    for u in updates:
        last = max(ends[s] for s in sends if s < u)
        if u not in starts or starts[u] < last - 1e-3:
            ok = False
            print("EARLY rank", pid, "update", u, starts.get(u), last)
print("UPDATES", count)
print("ORDER", "ok" if ok and count else "wrong")
