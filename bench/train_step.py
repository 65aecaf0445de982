#!/usr/bin/env python3
"""Training-step time of compiled models on this CPU, in f32 and with
--strata-mixed-precision (bf16), unfused and with --strata-fuse (and the
fused plan with its arena on 4 KiB pages, STRATA_NO_HUGEPAGE=1, to measure
the huge pages), with the
share of the step spent in GEMM (matmul and fused_matmul instructions, from
strata-run's trace), beside PyTorch eager (f32, and torch.autocast bf16) on
the same models in the same session.

    python3 bench/train_step.py [--build build] [--steps 12] [--threads 1 2]
        [--precisions f32 bf16] [--repeat R] [--torch PYTHON]
        [--baseline-run PATH/strata-run] [--baseline-label TEXT]

Writes bench/train-step.md (keeping what follows its notes marker line).
--torch names a Python with torch (default /work/venv-torch/bin/python when
it exists; "" for none); bench/torch_step.py runs the PyTorch side. Every repetition runs the unfused plan, the fused
plan and PyTorch one after the other (alternating, so that a change in the
machine's load hits all three), and each step time is the median of R
repetitions. With --baseline-run, the unfused plan also runs on that
strata-run (for example one built from an earlier commit) in the same
rotation, and the table gets its step time and the ratio.

It also reports adam_update's time per step (from the traces) beside the
bytes it moves (7 x 4 bytes per parameter: p, g, m, v read, p, m, v written),
and strata-optim-bench on arrays of the same size: adam_update's loop alone
and an in-place add over the same arrays (the memory's speed), to judge
whether the optimizer runs at the memory's speed.
"""
import argparse
import collections
import json
import os
import re
import resource
import statistics
import tempfile

from benchutil import cpu_name, mean_step_ms, sh, trace_spans

MODELS = [
    ("mlp: 4 layers, hidden 1024, batch 256",
     "mlp --layers 4 --hidden 1024 --inputs 1024 --classes 10 --batch 256",
     None, "mlp"),
    ("gpt-tiny: 4 layers, hidden 256, 4 heads, seq 128, batch 16 (byte text)",
     "gpt --preset gpt-tiny", "/usr/share/common-licenses/GPL-3", "gpt-tiny"),
]
HERE = os.path.dirname(os.path.abspath(__file__))
# The 1-minute load average before every repetition (the cores are shared).
LOADS = []
DEFAULT_TORCH = "/work/venv-torch/bin/python"
NOTES_MARK = "<!-- notes: kept when train_step.py rewrites this file -->"


def torch_ms(python, model, threads, steps, bf16):
    """PyTorch's wall and CPU milliseconds per step (steps 2..N)."""
    out = sh(f"{python} {HERE}/torch_step.py {model} --threads {threads} "
             f"--steps {steps}" + (" --bf16" if bf16 else ""))
    return (float(re.search(r"mean_ms (\S+)", out).group(1)),
            float(re.search(r"cpu_ms (\S+)", out).group(1)))


def cpu_seconds(command):
    """Runs `command`; returns its stdout and the CPU seconds (user + system)
    it and its children used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = sh(command)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return out, (after.ru_utime - before.ru_utime +
                 after.ru_stime - before.ru_stime)

GEMM_OPS = ("matmul", "fused_matmul")


def op_ms(trace, op, steps):
    """Milliseconds per step spent in instructions `op` over steps 2..N."""
    total = sum(e["dur"] for e in trace_spans(trace, 2) if e["name"] == op)
    return total / 1000.0 / (steps - 1)


def op_shares(trace):
    """GEMM share (%) and the largest ops over steps 2..N of a --trace
    file; fused matmuls count as GEMM (their epilogue included)."""
    by_op = collections.Counter()
    for e in trace_spans(trace, 2):  # after the warm-up, as strata-run's mean
        by_op[e["name"]] += e["dur"]
    total = sum(by_op.values())
    top = ", ".join(f"{k} {100 * v / total:.0f}%"
                    for k, v in by_op.most_common(4))
    gemm = sum(by_op[op] for op in GEMM_OPS)
    return 100.0 * gemm / total, top


def param_count(plan):
    """The number of f32 parameters of a plan."""
    buffers = json.load(open(plan))["buffers"]
    return sum(b["bytes"] // 4 for b in buffers if b["kind"] == "param")


def optim_bench(b, n):
    """strata-optim-bench on n parameters: {loop: (ms, GB/s)}."""
    out = sh(f"{b}/strata-optim-bench {n} --repeat 10")
    return {m.group(1): (float(m.group(2)), float(m.group(3)))
            for m in re.finditer(r"^(\S+) n \d+ ms (\S+) \S+ \S+ gbps (\S+)",
                                 out, re.M)}



def compile_plans(b, tmp, model, precision):
    """The runs of a model: name -> (plan, environment prefix): the unfused
    and the fused plan, and the fused plan with the arena on 4 KiB pages
    ("small_pages": STRATA_NO_HUGEPAGE=1)."""
    mixed = " --strata-mixed-precision" if precision == "bf16" else ""
    plans = {}
    for variant, fuse in (("unfused", ""), ("fused", " --strata-fuse")):
        plan = os.path.join(tmp, f"{variant}.json")
        sh(f"{b}/strata-model {model} | {b}/strata-opt "
           f"--strata-autodiff=optimizer=adamw{mixed}{fuse} | "
           f"{b}/strata-translate --export-plan -o {plan}")
        plans[variant] = (plan, "")
    plans["small_pages"] = (plans["fused"][0], "STRATA_NO_HUGEPAGE=1 ")
    return plans


def measure(args, b, tmp, name, model, data, torch_model, precision):
    plans = compile_plans(b, tmp, model, precision)
    rows = []
    for threads in args.threads:
        extra = f"--data {data}" if data and os.path.exists(data) else ""
        times = collections.defaultdict(list)
        shares = {}
        for _ in range(args.repeat):
            LOADS.append(os.getloadavg()[0])
            for variant, (plan, env) in plans.items():
                trace = os.path.join(tmp, f"{variant}.trace.json")
                run = (f"{plan} --steps {args.steps} --threads {threads} "
                       f"{extra}")
                out, cpu = cpu_seconds(
                    f"{env}{b}/strata-run {run} --trace {trace}")
                times[variant].append(mean_step_ms(out))
                if threads == 1:
                    # CPU time per step: the run minus a one-step run
                    # (start-up and the warm-up step), over the other steps.
                    _, cpu1 = cpu_seconds(
                        f"{env}{b}/strata-run {plan} --steps 1 --threads 1 "
                        f"{extra}")
                    times[f"{variant}_cpu"].append(
                        1e3 * (cpu - cpu1) / (args.steps - 1))
                shares[variant] = op_shares(trace)
                times[f"adam_{variant}"].append(
                    op_ms(trace, "adam_update", args.steps))
                if args.baseline_run and variant == "unfused":
                    # The baseline runs the unfused plan (an older runtime
                    # has no fused_matmul).
                    base_trace = os.path.join(tmp, "base.trace.json")
                    times["base"].append(mean_step_ms(sh(
                        f"{args.baseline_run} {run} --trace {base_trace}")))
                    times["base_adam"].append(op_ms(
                        base_trace, "adam_update", args.steps))
            if args.torch:
                wall, cpu = torch_ms(args.torch, torch_model, threads,
                                     args.steps, precision == "bf16")
                times["torch"].append(wall)
                if threads == 1:
                    times["torch_cpu"].append(cpu)
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append({"name": name, "precision": precision, "threads": threads,
                     "unfused": med["unfused"], "fused": med["fused"],
                     "small_pages": med["small_pages"],
                     "share_small_pages": shares["small_pages"][0],
                     "torch": med.get("torch"), "base": med.get("base"),
                     "adam": med["adam_unfused"],
                     "adam_fused": med["adam_fused"],
                     "base_adam": med.get("base_adam"),
                     "params": param_count(plans["unfused"][0]),
                     "cpu": {k[:-4]: v for k, v in med.items()
                             if k.endswith("_cpu")},
                     "share_unfused": shares["unfused"][0],
                     "share": shares["fused"][0], "top": shares["fused"][1],
                     "loads": LOADS[-args.repeat:]})
        print(rows[-1], flush=True)
    return rows


def header(args):
    loads = sorted(LOADS)
    lines = [
        "# Training-step time on the CPU",
        "",
        f"Produced by `python3 bench/train_step.py --steps {args.steps}"
        + (f" --repeat {args.repeat}" if args.repeat > 1 else "")
        + (f" --threads {' '.join(map(str, args.threads))}"
           if args.threads != [1, 2] else "")
        + (f" --precisions {' '.join(args.precisions)}"
           if args.precisions != ["f32", "bf16"] else "")
        + (f" --baseline-run ... --baseline-label '{args.baseline_label}'"
           if args.baseline_run else "") + "` on "
        f"{os.cpu_count()} cores ({cpu_name()}; the 1-minute load average "
        f"sampled before each repetition was {loads[0]:.1f} to "
        f"{loads[-1]:.1f}, median {statistics.median(loads):.1f}: the cores "
        "are shared with other builds and runs, so the times are medians of "
        "alternating runs and only ratios within one row are meaningful). "
        "Each model is compiled with "
        "`strata-opt --strata-autodiff=optimizer=adamw` (and "
        "`--strata-mixed-precision` for bf16), unfused and with "
        "`--strata-fuse`, and run by `strata-run`; "
        "the step time is strata-run's mean over steps 2..N (step 1 is "
        "warm-up), the GEMM share is the time of `matmul` and "
        "`fused_matmul` instructions (epilogues included) over the time of "
        "all instructions in the same steps, from `--trace`; \"fused, 4 KiB "
        "pages\" is the fused plan run with `STRATA_NO_HUGEPAGE=1` (the "
        "arena without the transparent-huge-page advice): the huge pages' "
        "effect in the same rotation"
        + (f"; each step time is the median of {args.repeat} runs"
           if args.repeat > 1 else "")
        + (". PyTorch: `bench/torch_step.py` (the same model, AdamW, eager; "
           "bf16 is `torch.autocast(\"cpu\", dtype=torch.bfloat16)`), "
           "in the same rotation, its mean over steps 2..N"
           if args.torch else "")
        + (f". The {args.baseline_label} column runs the unfused plans on "
           "another strata-run, in the same rotation (ratio: this build's "
           "unfused step over it)"
           if args.baseline_run else "") + ".",
        "",
    ]
    cols = ["model", "precision", "threads", "unfused (ms)", "fused (ms)",
            "fused / unfused", "fused, 4 KiB pages (ms)",
            "fused / 4 KiB pages"]
    if args.torch:
        cols += ["PyTorch (ms)", "fused / PyTorch"]
    if args.baseline_run:
        cols += [f"{args.baseline_label} (ms)", "ratio"]
    cols += ["GEMM share unfused", "GEMM share fused",
             "GEMM share 4 KiB pages",
             "largest ops (fused)"]
    lines.append("| " + " | ".join(cols) + " |")
    lines.append("| " + " | ".join("---" if c in ("model", "precision",
                                                  "largest ops (fused)")
                                   else "---:" for c in cols) + " |")
    return lines


def adam_lines(args, b, rows):
    """adam_update per step beside the bytes it must move, and the loop
    alone (strata-optim-bench) beside the memory's speed."""
    lines = ["", "adam_update per step: its time in the step (ms, from the "
             "traces, so wall time, inflated when the cores are shared; "
             "fused: the multi-tensor group), the bytes it must move (28 per "
             "parameter: p, g, m, v read; p, m, v written) and the bandwidth "
             "that makes; then `strata-optim-bench PARAMETERS --repeat 10` "
             "(one thread, best of 10): the scalar loop (the arithmetic "
             "before vectorisation), the loop this CPU runs, and an in-place "
             "add over the same four arrays (24 bytes per element: the "
             "memory's speed).", "",
             "| model | precision | threads | parameters | MB moved | "
             "in step unfused (ms) | in step fused (ms) | in step GB/s | "
             "scalar loop (ms) | vector loop (ms) | vector loop GB/s | "
             "in-place add GB/s |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
             "| ---: | ---: | ---: |"]
    bench = {}
    for r in rows:
        n = r["params"]
        if n not in bench:
            bench[n] = optim_bench(b, n)
        loops = bench[n]
        vector = loops.get("adam_avx512") or loops.get("adam_avx2") or \
            loops["adam_scalar"]
        moved = 28 * n
        cells = [r["name"].split(":")[0], r["precision"], str(r["threads"]),
                 f"{n / 1e6:.2f} M", f"{moved / 1e6:.0f}",
                 f"{r['adam']:.2f}", f"{r['adam_fused']:.2f}",
                 f"{moved / r['adam_fused'] / 1e6:.1f}",
                 f"{loops['adam_scalar'][0]:.2f}", f"{vector[0]:.2f}",
                 f"{vector[1]:.1f}", f"{loops['inplace_add'][1]:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--precisions", nargs="+", default=["f32", "bf16"],
                        choices=["f32", "bf16"])
    parser.add_argument("--torch", default=DEFAULT_TORCH
                        if os.path.exists(DEFAULT_TORCH) else "")
    parser.add_argument("--baseline-run", default=None)
    parser.add_argument("--baseline-label", default="baseline")
    parser.add_argument("--output", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "train-step.md"))
    args = parser.parse_args()
    b = os.path.abspath(os.path.join(args.build, "bin"))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, data, torch_model in MODELS:
            for precision in args.precisions:
                rows += measure(args, b, tmp, name, model, data, torch_model,
                                precision)
    lines = header(args)
    for r in rows:
        cells = [r["name"], r["precision"], str(r["threads"]),
                 f"{r['unfused']:.1f}", f"{r['fused']:.1f}",
                 f"{r['fused'] / r['unfused']:.2f}",
                 f"{r['small_pages']:.1f}",
                 f"{r['fused'] / r['small_pages']:.2f}"]
        if args.torch:
            cells += [f"{r['torch']:.1f}", f"{r['fused'] / r['torch']:.2f}"]
        if args.baseline_run:
            cells += [f"{r['base']:.1f}", f"{r['unfused'] / r['base']:.3f}"]
        cells += [f"{r['share_unfused']:.0f}%", f"{r['share']:.0f}%",
                  f"{r['share_small_pages']:.0f}%", r["top"]]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "CPU time per step at 1 thread (ms; user + system time, "
              "which time-sharing with the other processes on these cores "
              "does not inflate as it does wall time: strata-run's CPU time "
              "for N steps minus a one-step run, over N - 1; PyTorch's "
              "process CPU time over steps 2..N). The goals are judged on "
              "these.", "",
              "| model | precision | unfused | fused | fused / unfused | "
              "fused, 4 KiB pages | fused / 4 KiB pages"
              + (" | PyTorch | fused / PyTorch" if args.torch else "") + " |",
              "| --- | --- | ---: | ---: | ---: | ---: | ---:"
              + (" | ---: | ---:" if args.torch else "") + " |"]
    for r in rows:
        c = r["cpu"]
        if not c:
            continue
        cells = [r["name"], r["precision"], f"{c['unfused']:.1f}",
                 f"{c['fused']:.1f}", f"{c['fused'] / c['unfused']:.2f}",
                 f"{c['small_pages']:.1f}",
                 f"{c['fused'] / c['small_pages']:.2f}"]
        if args.torch:
            cells += [f"{c['torch']:.1f}", f"{c['fused'] / c['torch']:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += adam_lines(args, b, rows)
    if args.baseline_run:
        lines += ["", f"adam_update time per step (ms, from the traces of "
                  f"the unfused plans): {args.baseline_label} beside this "
                  "build.", "",
                  "| model | precision | threads | "
                  f"{args.baseline_label} | this build | ratio |",
                  "| --- | --- | ---: | ---: | ---: | ---: |"]
        for r in rows:
            lines.append(f"| {r['name']} | {r['precision']} | {r['threads']} "
                         f"| {r['base_adam']:.2f} | {r['adam']:.2f} | "
                         f"{r['adam'] / r['base_adam']:.2f} |")
    # Hand-written notes below NOTES_MARK in the existing file are kept.
    notes = []
    if os.path.exists(args.output):
        old = open(args.output).read().splitlines()
        if NOTES_MARK in old:
            notes = [""] + old[old.index(NOTES_MARK):]
    with open(args.output, "w") as f:
        f.write("\n".join(lines + notes) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
