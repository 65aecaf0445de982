#!/usr/bin/env python3
"""Breaks a plan with compressed activations in one way, for the loader's
error tests.

    mutate_compress.py IN.json OUT.json HOW

HOW: drop-compress (the first compress instruction), site (the first
decompress names another site), format (the first compress's format code is
not a format), none (the first compress and its decompresses use 'none'),
bytes (the first packed buffer is one byte short), candidates (the first
compress's format is not among its candidates), twice (the second compress
reuses the first one's site).
"""
import json
import sys

src, dst, how = sys.argv[1:4]
plan = json.load(open(src))
program = plan["ranks"][0]["program"]
compresses = [i for i in program if i["op"] == "compress"]
first = compresses[0]
site = first["attrs"]["site"]
decompresses = [i for i in program
                if i["op"] == "decompress" and i["attrs"]["site"] == site]
if how == "drop-compress":
    program.remove(first)
elif how == "site":
    decompresses[0]["attrs"]["site"] = compresses[1]["attrs"]["site"]
elif how == "format":
    for inst in [first] + decompresses:
        inst["attrs"]["format"] = 15
elif how == "none":
    for inst in [first] + decompresses:
        inst["attrs"]["format"] = 0
elif how == "bytes":
    buffer = plan["buffers"][first["out"][0]]
    buffer["shape"][0] -= 1
    buffer["bytes"] -= 1
elif how == "candidates":
    for inst in [first] + decompresses:
        inst["attrs"]["candidates"] = [20516]
elif how == "twice":
    compresses[1]["attrs"]["site"] = site
else:
    sys.exit("unknown mutation " + how)
json.dump(plan, open(dst, "w"))
