#!/usr/bin/env python3
"""Compile time and peak memory of each pass over GPT models of growing depth
(issue 24): hidden 1024, 16 heads, sequence 1024, vocabulary 50257, batch 1,
AdamW.

    python3 bench/compile_layers.py [--build build] [--layers 96 192 384 768 1536]
        [--repeat 1] [--output bench/compile-layers.md]

Each pass runs on the previous one's output file (generate -> autodiff ->
lower-to-plan -> export), plus data-parallel + insert-grad-sync on the step;
wall time and peak RSS come from /usr/bin/time (the median of --repeat runs).
"""
import argparse
import os
import statistics
import subprocess
import tempfile

from benchutil import cpu_name

MODEL = "gpt --hidden 1024 --heads 16 --seq 1024 --vocab 50257 --batch 1"


def timed(cmd):
    out = subprocess.run(["/usr/bin/time", "-f", "TIME %e %M", "bash", "-c",
                          cmd], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"failed: {cmd}\n{out.stderr[-2000:]}")
    line = [l for l in out.stderr.splitlines() if l.startswith("TIME ")][-1]
    _, seconds, kb = line.split()
    return float(seconds), int(kb) / 1024.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--layers", type=int, nargs="+",
                    default=[96, 192, 384, 768, 1536])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--output", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "compile-layers.md"))
    a = ap.parse_args()
    b = os.path.abspath(os.path.join(a.build, "bin"))
    steps = [
        ("generate", "{b}/strata-model {model} --layers {L} -o {t}/m.mlir"),
        ("autodiff", "{b}/strata-opt {t}/m.mlir "
                     "--strata-autodiff=optimizer=adamw -o {t}/s.mlir"),
        ("annotate-costs", "{b}/strata-opt {t}/s.mlir "
                           "--strata-annotate-costs=target=cpu-local -o /dev/null"),
        ("data-parallel + grad-sync", "{b}/strata-opt {t}/s.mlir "
         "--strata-data-parallel=replicas=8 "
         "--strata-insert-grad-sync=bucket-bytes=26214400 "
         "-o /dev/null"),
        ("lower-to-plan", "{b}/strata-opt {t}/s.mlir --strata-lower-to-plan "
                          "-o {t}/l.mlir"),
        ("export-plan", "{b}/strata-translate --export-plan {t}/l.mlir "
                        "-o {t}/p.json"),
        ("whole pipe", "{b}/strata-model {model} --layers {L} | "
                       "{b}/strata-opt --strata-autodiff=optimizer=adamw "
                       "--strata-plan-buffers | {b}/strata-translate "
                       "--export-plan -o {t}/p2.json"),
    ]
    rows = {}
    with tempfile.TemporaryDirectory() as t:
        for L in a.layers:
            for name, cmd in steps:
                runs = [timed(cmd.format(b=b, model=MODEL, L=L, t=t))
                        for _ in range(a.repeat)]
                rows[(name, L)] = (statistics.median(r[0] for r in runs),
                                   max(r[1] for r in runs))
                print(name, L, rows[(name, L)], flush=True)
    lines = [
        "# Compile time and memory by depth (GPT, hidden 1024)",
        "",
        f"Produced by `python3 bench/compile_layers.py --layers "
        f"{' '.join(map(str, a.layers))} --repeat {a.repeat}` on "
        f"{os.cpu_count()} cores ({cpu_name()}): `strata-model {MODEL} "
        "--layers L`, AdamW; each pass on the previous pass's file; wall "
        "seconds and peak RSS (MiB) from /usr/bin/time.",
        "",
        "| pass | " + " | ".join(f"L = {L}" for L in a.layers) + " |",
        "| --- | " + " | ".join("---:" for _ in a.layers) + " |",
    ]
    for name, _ in steps:
        cells = [f"{rows[(name, L)][0]:.2f} s, {rows[(name, L)][1]:.0f} MiB"
                 for L in a.layers]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    with open(a.output, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
