"""Checks strata-sim's host copies around bucketed all-reduces.

usage: host_copies.py PLAN TRACE GBPS [UNPACK_GBPS]

Prints "BUCKETS n", then for every bucket whose pack (before the start) and
unpack (after the wait) events are in the Chrome TRACE on rank 0's compute
stream, "COPIES ok" when both last the bucket's bytes / (GBPS * 1e9)
seconds (an unpack UNPACK_GBPS's when given), carry the plan index of their start or wait, and the pack ends
before the bucket's transfer starts on the comm stream and the unpack
starts after it ended; else the bucket and what was found.
"""
import json
import sys

plan = json.load(open(sys.argv[1]))
events = json.load(open(sys.argv[2]))
events = events["traceEvents"] if isinstance(events, dict) else events
rates = {"pack": float(sys.argv[3]) * 1e9}
rates["unpack"] = float(sys.argv[4]) * 1e9 if len(sys.argv) > 4 else rates["pack"]
sizes = {b["id"]: b["bytes"] for b in plan["buffers"]}
buckets, index = {}, {}
for i, inst in enumerate(plan["ranks"][0]["program"]):
    if inst["op"] == "all_reduce_start":
        buckets[inst["attrs"]["bucket"]] = sum(sizes[i] for i in inst["in"])
        index[("pack", inst["attrs"]["bucket"])] = i
    if inst["op"] == "all_reduce_wait":
        index[("unpack", inst["attrs"]["bucket"])] = i
print("BUCKETS", len(buckets))
found, transfer = {}, {}
for e in events:
    if e.get("ph") != "X" or e.get("pid") != 0:
        continue
    if e["name"] == "all_reduce_start" and e.get("tid") != 0:
        transfer[e["args"]["instruction"]] = (e["ts"], e["ts"] + e["dur"])
    elif e.get("tid") == 0:
        found.setdefault(e["name"], []).append(
            (e["dur"], e["args"]["instruction"], e["ts"]))
ok = True
for bucket, nbytes in sorted(buckets.items()):
    for what in ("pack", "unpack"):
        want = nbytes / rates[what] * 1e6
        got = found.get(f"{what} bucket {bucket}", [])
        span = transfer.get(index[("pack", bucket)])
        if (len(got) != 1 or abs(got[0][0] - want) > 1e-6 * want + 1e-3
                or got[0][1] != index[(what, bucket)] or span is None
                or (what == "pack" and got[0][2] + got[0][0] > span[0] + 1e-3)
                or (what == "unpack" and got[0][2] < span[1] - 1e-3)):
            ok = False
            print("MISMATCH", what, bucket, got, want)
print("COPIES", "ok" if ok else "wrong")
