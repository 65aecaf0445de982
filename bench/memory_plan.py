#!/usr/bin/env python3
"""Buffer planning (--strata-plan-buffers) on the model suite.

    python3 bench/memory_plan.py [--bin build/bin] [--steps 8] [--repeat 3]
                                 [--out bench/memory-plan-models.md]

For each model: the unplanned arena (every buffer its own bytes), the arena
after each strategy, the live lower bound, the ratio arena / lower bound and
the planning time (the pass's wall time from --mlir-timing); then the step
time of the unplanned and the `auto`-planned plan, alternated --repeat times
(the least mean of each), and the peak RSS of each run.
"""
import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from benchutil import cpu_name, mean_step_ms  # noqa: E402

STRATEGIES = ["fixed-structure", "greedy-size", "best-fit", "exact", "auto"]
GPL = "/usr/share/common-licenses/GPL-3"

# name, strata-model arguments, passes after autodiff, ranks, run the steps?
MODELS = [
    ("main-job GPT (gpt-tiny, hidden 128, seq 64, batch 32)",
     "gpt --preset gpt-tiny --hidden 128 --seq 64 --positions 64 --batch 32",
     "", 1, True),
    ("gpt-tiny, batch 16", "gpt --preset gpt-tiny --batch 16", "", 1, True),
    ("MLP 4x1024, batch 256",
     "mlp --layers 4 --hidden 1024 --inputs 1024 --classes 10 --batch 256",
     "", 1, True),
    ("ResNet-18, 64x64, batch 8",
     "resnet18 --batch 8 --image-size 64 --classes 10", "", 1, True),
    ("VGG-16, 224x224, batch 32", "vgg16 --batch 32", "", 1, False),
    ("gpt-tiny batch 16, 1F1B: 2 stages, 4 micro-batches",
     "gpt --preset gpt-tiny --batch 4",
     "--strata-schedule-pipeline=stages=2 micro-batches=4 schedule=1f1b",
     2, True),
    ("gpt-tiny batch 16, interleaved: 4 chunks on 2 devices, 4 micro-batches",
     "gpt --preset gpt-tiny --batch 4",
     "--strata-schedule-pipeline=stages=4 virtual=2 micro-batches=4 "
     "schedule=interleaved", 2, True),
    ("gpt2-small, seq 1024, batch 8 (compile only)",
     "gpt --preset gpt2-small --batch 8", "", 1, False),
]


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), result.stderr[-2000:]))
    return result


def plan(binary, step, strategy, out):
    result = run([binary + "/strata-opt", step,
                  "--strata-plan-buffers=strategy=%s time-limit=5" % strategy,
                  "--mlir-timing", "--mlir-timing-display=list", "-o", out])
    remark = re.search(r"planned (\d+) buffers: arena (\d+) bytes \(lower "
                       r"bound (\d+), ratio \S+; (\d+) bytes unplanned\) "
                       r"with (\S+)", result.stderr)
    seconds = re.search(r"^\s*([0-9.]+) \(\s*[0-9.]+%\)\s+PlanBuffersPass",
                        result.stderr, re.M)
    return {"buffers": int(remark.group(1)), "arena": int(remark.group(2)),
            "bound": int(remark.group(3)), "unplanned": int(remark.group(4)),
            "winner": remark.group(5), "seconds": float(seconds.group(1))}


def train(binary, plan_json, ranks, steps, model_args):
    cmd = [binary + "/strata-run", plan_json, "--steps", str(steps),
           "--threads", "2" if ranks == 1 else "1"]
    if model_args.startswith("gpt"):
        cmd += ["--data", GPL]
    if ranks > 1:
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np",
               str(ranks)] + cmd
    out = run(cmd).stdout
    rss = float(re.search(r"peak RSS ([0-9.]+) MiB", out).group(1))
    return mean_step_ms(out), rss


def mib(n):
    return "%.1f" % (n / 2**20)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default="build/bin")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default="bench/memory-plan-models.md")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp()
    load = os.getloadavg()[0]
    rows, timing = [], []
    for name, model, passes, ranks, steps in MODELS:
        step = os.path.join(tmp, "step.mlir")
        gen = subprocess.run(args.bin + "/strata-model " + model +
                             " | " + args.bin + "/strata-opt "
                             "--strata-autodiff=optimizer=adamw " +
                             (shlex.quote(passes) if passes else "") +
                             " -o " + step, shell=True, capture_output=True,
                             text=True)
        if gen.returncode != 0:
            sys.exit(gen.stderr)
        results = {s: plan(args.bin, step, s,
                           os.path.join(tmp, s + ".mlir")) for s in STRATEGIES}
        first = results["auto"]
        cells = ["%s (%.3f, %.2f s)" % (mib(r["arena"]),
                                        r["arena"] / r["bound"], r["seconds"])
                 for r in results.values()]
        rows.append("| %s | %d | %s | %s | %s | %s |" % (
            name, first["buffers"], mib(first["unplanned"]),
            mib(first["bound"]), " | ".join(cells), first["winner"]))
        print(rows[-1], flush=True)
        if not steps:
            continue
        ref = os.path.join(tmp, "ref.json")
        auto = os.path.join(tmp, "auto.json")
        run([args.bin + "/strata-translate", "--export-plan", step, "-o", ref])
        run([args.bin + "/strata-translate", "--export-plan",
             os.path.join(tmp, "auto.mlir"), "-o", auto])
        best = {"ref": (1e30, 0), "auto": (1e30, 0)}
        for _ in range(args.repeat):
            for key, path in (("ref", ref), ("auto", auto)):
                ms, rss = train(args.bin, path, ranks, args.steps, model)
                best[key] = (min(best[key][0], ms), max(best[key][1], rss))
        timing.append("| %s | %d | %.1f | %.1f | %.3f | %.0f | %.0f |" % (
            name, ranks, best["ref"][0], best["auto"][0],
            best["auto"][0] / best["ref"][0], best["ref"][1],
            best["auto"][1]))
        print(timing[-1], flush=True)
    with open(args.out, "w") as f:
        f.write("# Buffer planning on the model suite\n\n")
        f.write("Produced by `python3 bench/memory_plan.py --steps %d "
                "--repeat %d` on %s, 2 cores, load average %.1f at the "
                "start (other work shared the machine).\n\n" %
                (args.steps, args.repeat, cpu_name(), load))
        f.write("Every step is `strata-model ... | strata-opt "
                "--strata-autodiff=optimizer=adamw [pipeline pass]`. Arena "
                "sizes in MiB; each strategy's cell is `arena (arena / lower "
                "bound, planning time)`, the planning time being "
                "`--strata-plan-buffers`' wall time from `--mlir-timing` "
                "(lifetimes, packing, checks and rewriting; `time-limit=5`). "
                "The lower bound is the largest total of buffers live at one "
                "time. Pipelined plans hold every device's program in one "
                "arena layout (the programs laid end to end), so their "
                "numbers are per rank.\n\n")
        f.write("| model | buffers | unplanned | lower bound | " +
                " | ".join(STRATEGIES) + " | auto's winner |\n")
        f.write("| --- | ---: | ---: | ---: | " +
                " | ".join("---:" for _ in STRATEGIES) + " | --- |\n")
        f.write("\n".join(rows) + "\n\n")
        f.write("## Step time before and after planning\n\n")
        f.write("Mean step time over steps 2..%d (strata-run's summary), the "
                "least of %d alternated runs of each plan; 2 kernel threads "
                "on one rank, 1 per rank under mpirun; peak RSS is the "
                "largest of rank 0's `memory: peak RSS`.\n\n" %
                (args.steps, args.repeat))
        f.write("| model | ranks | unplanned ms | planned (auto) ms | "
                "planned / unplanned | unplanned peak RSS MiB | planned peak "
                "RSS MiB |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
        f.write("\n".join(timing) + "\n")


if __name__ == "__main__":
    main()
