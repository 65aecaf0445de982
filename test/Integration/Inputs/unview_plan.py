#!/usr/bin/env python3
"""Writes PLAN as it was before reshapes became views: every buffer with
`view_of` gets bytes of its own past the end of the arena (so its reshape
copies again), and the arenas grow to hold them.

    unview_plan.py PLAN OUT

Prints "unviewed N views" (N: how many buffers had view_of).
"""
import json
import sys


def main():
    plan = json.load(open(sys.argv[1]))
    end = max(rank["arena_bytes"] for rank in plan["ranks"])
    views = 0
    for buffer in plan["buffers"]:
        if "view_of" not in buffer:
            continue
        del buffer["view_of"]
        buffer["offset"] = end
        end += (buffer["bytes"] + 63) // 64 * 64
        views += 1
    for rank in plan["ranks"]:
        rank["arena_bytes"] = end
    json.dump(plan, open(sys.argv[2], "w"), indent=1)
    print(f"unviewed {views} views")


if __name__ == "__main__":
    main()
