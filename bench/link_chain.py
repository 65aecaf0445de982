"""Checks that emulated bucket all-reduces hold the link one after another
in issue order (the measurement behind docs/strata-sim.md's "median step
ended 1.9-2.4 ms past its chain", fixed by LinkOrder.h).

usage: link_chain.py PLAN TRACE GBPS LATENCY_US

    strata-model mlp --layers 8 --hidden 512 --inputs 512 --classes 10 \
        --batch 16 | strata-opt --strata-autodiff \
        --strata-insert-grad-sync="replicas=2 bucket-bytes=1048576" | \
        strata-translate --export-plan -o plan.json
    mpirun -np 2 strata-run plan.json --steps 9 --threads 1 \
        --emulate-link="bandwidth=0.4,latency=20" --trace trace.json
    python3 bench/link_chain.py plan.json trace.json 0.4 20

It times milliseconds, so it is a measurement for a quiet machine, not a
test (another process on the cores delays the ranks' threads by as much);
the order itself is unit-tested (StrataCommTests, LinkOrderTest).

The traces (TRACE for rank 0, TRACE.rankR.json for the others) are put on
one clock (their "clock_origin_us"). In every step after the second (MPI's
first transfers of a run set up their buffers) the emulated link carries
bucket B from the latest of its starts on the ranks, or from when bucket
B - 1 released it, whichever is later, for latency + bytes / bandwidth. In
the median step every rank's last bucket must have completed ("all_reduce
bucket B" spans) within 1 ms of when that chain ends: taking the link in the
order the transfers completed ended 1.9-2.4 ms late in the median step,
issue order 0.0-0.1 ms. (A real transfer slower than the emulated link would
end later, which these buckets are not; the median, as a thread the shared
cores serve late now and then delays one step.) Prints "BUCKETS n", then
"CHAIN ok", or the median step's excess. The bytes a bucket holds the link
for are its payload: 2 (p - 1) / p times it, as the emulation counts an
all-reduce's bytes, is the payload for the 2 ranks of the test.
"""
import json
import os
import sys

plan = json.load(open(sys.argv[1]))
base = sys.argv[2]
rate = float(sys.argv[3]) * 1e9
latency = float(sys.argv[4]) * 1e-6
sizes = {b["id"]: b["bytes"] for b in plan["buffers"]}
buckets = {}
for inst in plan["ranks"][0]["program"]:
    if inst["op"] == "all_reduce_start":
        buckets[inst["attrs"]["bucket"]] = sum(sizes[i] for i in inst["in"])
print("BUCKETS", len(buckets))
if len(plan["ranks"]) != 2:
    sys.exit("expected a 2-rank plan")
# (step, bucket) -> starts and ends over the ranks, in seconds.
starts, ends = {}, {}
rank, path = 0, base
while os.path.exists(path):
    trace = json.load(open(path))
    origin = trace.get("otherData", {}).get("clock_origin_us", 0.0)
    for e in trace["traceEvents"]:
        if e.get("ph") != "X" or not e["name"].startswith("all_reduce bucket"):
            continue
        step, bucket = e["args"]["step"], int(e["name"].split()[-1])
        if step > 2:
            key = (step, bucket)
            starts.setdefault(key, []).append((origin + e["ts"]) * 1e-6)
            ends.setdefault(key, []).append(
                (origin + e["ts"] + e["dur"]) * 1e-6)
    rank += 1
    path = f"{base}.rank{rank}.json"
if rank != 2:
    sys.exit(f"expected 2 traces, found {rank}")
steps = sorted({s for s, _ in starts})
missing = [(s, b) for s in steps for b in buckets if (s, b) not in starts]
if not steps or missing:
    sys.exit(f"no bucket spans after step 2, or some missing: {missing[:3]}")
excess = []
for step in steps:
    free = float("-inf")
    for bucket in sorted(buckets):
        free = max(free, max(starts[(step, bucket)])) + latency + \
            buckets[bucket] / rate
    excess.append(max(max(ends[(step, b)]) for b in buckets) - free)
excess.sort()
median = excess[len(excess) // 2]
chain = sum(latency + b / rate for b in buckets.values())
if median <= 1e-3:
    print("CHAIN ok")
else:
    print(f"CHAIN late: the median step ends {median * 1e3:.2f} ms after its "
          f"chain ({chain * 1e3:.2f} ms of link time)")
