#!/usr/bin/env python3
"""Breaks a pipeline plan in one way, for the loader's error tests.

    mutate_pipeline.py IN.json OUT.json drop-recv|same-stage|bad-peer
"""
import json
import sys

src, dst, how = sys.argv[1:4]
plan = json.load(open(src))
ranks = plan["ranks"]
if how == "drop-recv":
    # Remove the first recv of the first rank that has one.
    for rank in ranks:
        program = rank.get("program", [])
        for i, inst in enumerate(program):
            if inst["op"] == "recv":
                del program[i]
                break
        else:
            continue
        break
elif how == "same-stage":
    ranks[-1]["stage"] = ranks[0]["stage"]
    ranks[-1]["replica"] = ranks[0]["replica"]
elif how == "bad-peer":
    for inst in ranks[0]["program"]:
        if inst["op"] == "send":
            inst["attrs"]["peer"] = 0
            break
else:
    sys.exit("unknown mutation " + how)
json.dump(plan, open(dst, "w"))
