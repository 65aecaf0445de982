#!/usr/bin/env python3
"""Draws Chrome trace-event JSON as an SVG timeline: one row per device.

    scripts/pipeline-svg.py TRACE.json [MORE.json ...] -o OUT.svg
        [--step N] [--title TEXT]

Reads the predicted timeline that `strata-opt --strata-schedule-pipeline
"... trace=FILE"` writes (one row per pipeline device, one box per forward /
backward / weight-gradient pass of a micro-batch) or the traces of a real
run (`strata-run --trace FILE`; with mpirun, rank 0 writes FILE and rank r
FILE.rankR.json: pass them all). For a real run only step N (default: the
last step in the trace) is drawn, and each rank's row starts at that rank's
first instruction of the step (ranks keep their own clocks). Boxes are
coloured by category: forward blue, backward orange, weight gradients
green, update grey, communication (recv waits, all-reduces) red.
"""
import argparse
import html
import re
import json
import sys

COLOURS = {
    "forward": "#4c78a8",
    "backward": "#f58518",
    "weight-grad": "#54a24b",
    "update": "#9d9d9d",
    "communication": "#e45756",
}


def load(paths, step):
    rows = {}    # (pid, tid) -> list of (start, dur, name, cat)
    names = {}   # (pid, tid) -> label
    procs = {}   # pid -> process label
    for index, path in enumerate(paths):
        # strata-run writes one file per rank (FILE, FILE.rankR.json), each
        # numbering its own process 0: rows of different files stay apart.
        m = re.search(r"\.rank(\d+)\.json$", path)
        file_rank = int(m.group(1)) if m else (0 if index == 0 else index)
        try:
            trace = json.load(open(path))
        except (OSError, ValueError) as e:
            sys.exit("pipeline-svg: %s: %s" % (path, e))
        events = trace.get("traceEvents", trace if isinstance(trace, list)
                           else None)
        if events is None:
            sys.exit("pipeline-svg: %s: no traceEvents" % path)
        for e in events:
            pid = e.get("pid", 0)
            if len(paths) > 1:
                pid = file_rank
            key = (pid, e.get("tid", 0))
            if e.get("ph") == "M":
                label = e.get("args", {}).get("name", "")
                if e.get("name") == "thread_name":
                    names[key] = label
                elif e.get("name") == "process_name":
                    procs[key[0]] = ("rank %d" % file_rank if len(paths) > 1
                                     else label)
                continue
            if e.get("ph") != "X":
                continue
            args = e.get("args", {})
            rows.setdefault(key, []).append(
                (float(e["ts"]), float(e.get("dur", 0)), e.get("name", ""),
                 e.get("cat", ""), args.get("step")))
    # Real runs: keep one step and start each rank's row at 0.
    steps = {s for events in rows.values() for (_, _, _, _, s) in events
             if s is not None}
    if steps:
        chosen = step if step is not None else max(steps)
        if chosen not in steps:
            sys.exit("pipeline-svg: step %d is not in the trace (it has %d-%d)"
                     % (chosen, min(steps), max(steps)))
        for key in list(rows):
            kept = [e for e in rows[key] if e[4] == chosen]
            if not kept:
                del rows[key]
                continue
            rows[key] = kept
        for pid in {k[0] for k in rows}:
            origin = min(e[0] for k, events in rows.items() if k[0] == pid
                         for e in events)
            for key in rows:
                if key[0] == pid:
                    rows[key] = [(s - origin,) + e[1:]
                                 for e in rows[key] for s in [e[0]]]
    labels = {}
    for key in rows:
        pid, tid = key
        label = names.get(key, "tid %d" % tid)
        if pid in procs:
            label = procs[pid] + " " + label
        labels[key] = label
    return rows, labels


def category(name, cat):
    if name in ("recv", "send", "all_reduce", "all_reduce_wait",
                "all_reduce_start") or cat == "communication":
        return "communication"
    return cat


def draw(rows, labels, title, out):
    keys = sorted(rows)
    end = max((s + d for events in rows.values() for (s, d, _, _, _) in events),
              default=1.0) or 1.0
    left, width, row_h, top = 150, 900, 28, 40
    height = top + row_h * len(keys) + 50
    scale = width / end
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
             'font-family="sans-serif" font-size="11">' %
             (left + width + 20, height),
             '<rect width="100%" height="100%" fill="white"/>',
             '<text x="10" y="20" font-size="14">%s</text>' %
             html.escape(title)]
    for i, key in enumerate(keys):
        y = top + i * row_h
        parts.append('<text x="10" y="%d">%s</text>' %
                     (y + row_h * 0.6, html.escape(labels[key])))
        parts.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#ddd"/>' %
                     (left, y + row_h - 2, left + width, y + row_h - 2))
        for (s, d, name, cat, _) in rows[key]:
            colour = COLOURS.get(category(name, cat), "#bbbbbb")
            x, w = left + s * scale, max(d * scale, 0.5)
            parts.append('<rect x="%.2f" y="%d" width="%.2f" height="%d" '
                         'fill="%s" stroke="white" stroke-width="0.3">'
                         '<title>%s (%s) %.1f us</title></rect>' %
                         (x, y + 3, w, row_h - 8, colour, html.escape(name),
                          html.escape(cat), d))
            if w > 7 * len(name):
                parts.append('<text x="%.2f" y="%d" fill="white">%s</text>' %
                             (x + 2, y + row_h * 0.6, html.escape(name)))
    axis_y = top + row_h * len(keys) + 15
    parts.append('<text x="%d" y="%d">0</text>' % (left, axis_y))
    parts.append('<text x="%d" y="%d" text-anchor="end">%.3f ms</text>' %
                 (left + width, axis_y, end / 1000.0))
    x = left
    for cat, colour in COLOURS.items():
        parts.append('<rect x="%d" y="%d" width="10" height="10" fill="%s"/>'
                     % (x, axis_y + 10, colour))
        parts.append('<text x="%d" y="%d">%s</text>' % (x + 14, axis_y + 19,
                                                        cat))
        x += 120
    parts.append("</svg>")
    text = "\n".join(parts) + "\n"
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    import os
    os.replace(tmp, out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("traces", nargs="+")
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--step", type=int)
    parser.add_argument("--title", default="")
    args = parser.parse_args()
    rows, labels = load(args.traces, args.step)
    if not rows:
        sys.exit("pipeline-svg: no events to draw")
    draw(rows, labels, args.title or ", ".join(args.traces), args.output)


if __name__ == "__main__":
    main()
