#!/usr/bin/env python3
"""Turns a data-parallel plan for R replicas into a plan for 2R ranks that
trains two independent copies side by side: ranks [0, R) reduce over group
"a", ranks [R, 2R) over group "b". Both halves read the same shards
(replica r and R + r read shard r), so each half trains exactly like the
R-rank plan. Exercises per-rank programs, program_of and communicator
groups (sub-communicators).

usage: split_groups.py IN.json OUT.json
"""
import copy
import json
import sys


def main():
    src, dst = sys.argv[1], sys.argv[2]
    with open(src) as f:
        plan = json.load(f)
    replicas = plan["replicas"]
    rank0 = plan["ranks"][0]
    second = copy.deepcopy(rank0)
    for inst in second["program"]:
        if inst["op"] == "all_reduce":
            inst["attrs"]["group"] = 1
    ranks = []
    for r in range(2 * replicas):
        half, replica = divmod(r, replicas)
        entry = {k: v for k, v in rank0.items() if k != "program"}
        entry.update(rank=r, replica=replica)
        if r == 0:
            entry["program"] = rank0["program"]
        elif r == replicas:
            entry["program"] = second["program"]
        else:
            entry["program_of"] = half * replicas
        ranks.append(entry)
    plan["ranks"] = ranks
    plan["groups"] = [
        {"name": "a", "ranks": list(range(replicas))},
        {"name": "b", "ranks": list(range(replicas, 2 * replicas))},
    ]
    with open(dst, "w") as f:
        json.dump(plan, f)


if __name__ == "__main__":
    main()
