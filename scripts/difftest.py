#!/usr/bin/env python3
"""Differential testing: random models x random pass combinations against
the unoptimised single-rank reference (DESIGN.md's core invariant).

    python3 scripts/difftest.py [--build build] [--seed S] [--count N]
        [--steps K] [--out DIR] [--max-ranks 4] [--no-shrink] [--json FILE]

Each draw picks a model (MLP, GPT or a small CNN, random small sizes) and a
pass configuration (data-parallel replicas, pipeline stages with a schedule
and micro-batches, gradient sync with random buckets, GEMM tiling, buffer
planning strategy, optimizer), compiles the reference (the same model at the
global batch, autodiff only) and the configured plan, runs both for K steps
with the same seed (the configured one under mpirun when it has several
ranks), and compares the per-step losses and the final checkpoints:

- bit-identical (equal loss text, equal checkpoint bytes) when nothing
  reorders arithmetic: one rank, one micro-batch, no tiling (buffer planning
  only moves buffers);
- otherwise within a relative 1e-5 on losses and 1e-4 (of each tensor's
  largest magnitude, at least 1e-6) on the checkpoint: data parallelism,
  micro-batches and
  a different GEMM blocking change the order of float sums, nothing else
  (the tolerance of test/Integration/pipeline.test and data-parallel.test);
  with Adam, whose step divides by the gradient's size, an element may also
  differ by a thousandth of lr per step (a parameter whose true gradient is
  zero, like attention's key bias, moves by normalised rounding noise).

A configuration that strata-opt rejects with a diagnostic is counted as
rejected, per pair of passes, not as a failure; a draw whose reference itself
diverges (a NaN loss) is counted as diverged. A mismatch, a crash (a
signal, a sanitizer report) or a hang prints a one-line reproducer, is shrunk
(fewer layers, fewer steps, passes dropped one by one while it still fails)
and saved under --out with a repro.sh. Exit status 1 when any draw failed.

Passes that do not exist yet (recomputation, activation compression, mixed
precision) are not drawn; the summary says so.
"""
import argparse
import itertools
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe"]
NOT_YET = ["remat (--strata-remat)", "compression (--strata-compress-activations)",
           "precision (--strata-mixed-precision)"]
LOSS_RTOL = 1e-5
CHECKPOINT_RTOL = 1e-4
CHECKPOINT_FLOOR = 1e-6


class Case:
    """One draw: the model, the passes and how it runs."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def copy(self, **kw):
        d = dict(self.__dict__)
        d.update(kw)
        return Case(**d)

    # The batch the configured step is written for: one micro-batch of one
    # replica (data parallelism without a pipeline: one replica's shard).
    def step_batch(self):
        return self.global_batch // (self.replicas * self.micro_batches)

    def ranks(self):
        return self.replicas * self.stages

    def model_args(self, batch):
        if self.family == "mlp":
            return (f"mlp --batch {batch} --inputs {self.inputs} --hidden "
                    f"{self.hidden} --layers {self.layers} --classes "
                    f"{self.classes}")
        if self.family == "gpt":
            return (f"gpt --layers {self.layers} --hidden {self.hidden} "
                    f"--heads {self.heads} --seq {self.seq} --vocab "
                    f"{self.vocab} --batch {batch}")
        return (f"resnet18 --batch {batch} --image-size {self.image} "
                f"--classes {self.classes}")

    def autodiff(self):
        return f'--strata-autodiff="{self.optimizer}"'

    def passes(self):
        """The configured passes after autodiff, as strata-opt arguments."""
        p = []
        if self.stages > 1 or self.micro_batches > 1:
            p.append(f'--strata-schedule-pipeline="stages={self.stages} '
                     f'replicas={self.replicas} micro-batches='
                     f'{self.micro_batches} schedule={self.schedule}"')
        elif self.replicas > 1:
            p.append(f"--strata-data-parallel=replicas={self.replicas}")
        if self.grad_sync:
            p.append(f'--strata-insert-grad-sync="{self.grad_sync}"')
        if self.tiling:
            p.append("--strata-tile-gemm")
        if self.planning:
            p.append(f"--strata-plan-buffers=strategy={self.planning}")
        return p

    def pass_names(self):
        names = []
        if self.stages > 1 or self.micro_batches > 1:
            names.append("pipeline")
        elif self.replicas > 1:
            names.append("data-parallel")
        for flag, name in ((self.grad_sync, "grad-sync"),
                           (self.tiling, "tile-gemm"),
                           (self.planning, "plan-buffers")):
            if flag:
                names.append(name)
        return names or ["none"]

    def exact(self):
        """Whether nothing reorders arithmetic (bit-identical expected)."""
        return (self.replicas == 1 and self.stages == 1
                and self.micro_batches == 1 and not self.tiling)

    def describe(self):
        return (f"{self.model_args(self.global_batch)} | {self.optimizer} | "
                f"{' '.join(self.passes()) or '(no passes)'} | ranks "
                f"{self.ranks()} steps {self.steps}")


def draw(rng, max_ranks, steps):
    family = rng.choices(["mlp", "gpt", "cnn"], weights=[12, 6, 1])[0]
    c = Case(family=family, steps=steps, layers=rng.randint(1, 4),
             inputs=rng.choice([8, 16, 32]), hidden=rng.choice([8, 16, 32]),
             classes=rng.choice([2, 4, 10]), heads=rng.choice([1, 2]),
             seq=rng.choice([4, 8]), vocab=rng.choice([16, 32]),
             image=32, seed=rng.randint(1, 1000))
    if family == "gpt":
        c.hidden = c.heads * rng.choice([4, 8])
        c.layers = rng.randint(1, 3)
    if family == "cnn":
        c.layers = 1
    c.optimizer = rng.choice([
        "optimizer=sgd lr=0.1", "optimizer=sgd lr=0.05 momentum=0.9",
        "optimizer=adam lr=0.01", "optimizer=adamw lr=0.01"])
    if family == "cnn":  # no normalisation layers: small steps only
        c.optimizer = rng.choice(["optimizer=sgd lr=0.001",
                                  "optimizer=adamw lr=0.0001"])
    # Ranks = replicas x stages <= max_ranks.
    c.replicas = rng.choice([r for r in (1, 2, 4) if r <= max_ranks
                             and (family != "cnn" or r <= 2)])
    # Mostly valid draws: no more stages than layers (one in ten may ask
    # for more, to keep the rejection path exercised).
    most = c.layers if rng.random() < 0.9 else 4
    stage_choices = [s for s in (1, 2, 4)
                     if s * c.replicas <= max_ranks and s <= max(most, 1)]
    c.stages = rng.choice(stage_choices) if family != "cnn" else 1
    # Micro-batches with one stage: gradient accumulation.
    c.micro_batches = rng.choice([1, 2, 4]) if (
        c.stages > 1 or rng.random() < 0.25) else 1
    c.schedule = rng.choice(["gpipe", "1f1b", "zb-h1"])
    per = rng.choice([1, 2, 4]) if family != "cnn" else 1
    c.global_batch = per * c.replicas * c.micro_batches
    c.grad_sync = None
    if c.replicas > 1 and rng.random() < 0.6:
        c.grad_sync = rng.choice([
            f"bucket-bytes={rng.choice([256, 1024, 4096, 65536])}",
            f"bucket-bytes={rng.choice([1024, 4096])} staleness=0",
            f"bucket-bytes=4096 accumulate=host chunk-bytes="
            f"{rng.choice([256, 1024])}"]) if family != "cnn" else \
            f"bucket-bytes={rng.choice([65536, 1 << 20])}"
        # (Host accumulation moves a bucket in chunk-sized collectives: a
        # ResNet's 11M parameters in 256-byte chunks take minutes.)
    c.tiling = rng.random() < 0.25
    c.planning = rng.choice([None, None, "auto", "greedy-size", "best-fit"])
    return c


class Runner:
    def __init__(self, build, work, timeout):
        self.bin = os.path.abspath(os.path.join(build, "bin"))
        self.work = work
        self.timeout = timeout
        self.checks = 0
        self.env = dict(os.environ)
        self.env.setdefault("STRATA_TARGET_PATH", os.path.join(
            os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
            "targets"))

    def sh(self, cmd):
        """Runs a shell command; returns (status, output). status is 'ok',
        'error' (a non-zero exit), 'crash' (a signal or a sanitizer report)
        or 'hang'."""
        try:
            p = subprocess.run(["bash", "-o", "pipefail", "-c", cmd],
                               capture_output=True, text=True,
                               timeout=self.timeout, env=self.env)
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b"")
            return "hang", out.decode() if isinstance(out, bytes) else out
        out = p.stdout + p.stderr
        if (p.returncode < 0 or p.returncode >= 128
                or "Sanitizer" in out or "Assertion" in out
                or "Stack dump" in out or "PLEASE submit a bug" in out):
            return "crash", out
        return ("ok" if p.returncode == 0 else "error"), out

    def compile_cmds(self, case, tag):
        b = self.bin
        ref = os.path.join(self.work, f"{tag}.ref.json")
        cfg = os.path.join(self.work, f"{tag}.cfg.json")
        ref_cmd = (f"{b}/strata-model {case.model_args(case.global_batch)} | "
                   f"{b}/strata-opt {case.autodiff()} | {b}/strata-translate "
                   f"--export-plan -o {ref}")
        cfg_cmd = (f"{b}/strata-model {case.model_args(case.step_batch())} | "
                   f"{b}/strata-opt {case.autodiff()} "
                   f"{' '.join(case.passes())} | {b}/strata-translate "
                   f"--export-plan -o {cfg}")
        return ref, cfg, ref_cmd, cfg_cmd

    def run_cmd(self, case, plan, ranks, save):
        run = (f"{self.bin}/strata-run {plan} --steps {case.steps} --threads 1 "
               f"--seed {case.seed} --save {save}")
        if ranks > 1:
            run = " ".join(MPIRUN) + f" -np {ranks} " + run
        return run

    def check(self, case, tag):
        self.checks += 1
        """Returns (verdict, detail, commands). verdict is 'pass', 'rejected',
        'mismatch', 'crash', 'hang' or 'error'."""
        ref, cfg, ref_cmd, cfg_cmd = self.compile_cmds(case, tag)
        cmds = [ref_cmd, cfg_cmd]
        status, out = self.sh(ref_cmd)
        if status != "ok":
            return status if status != "error" else "error", \
                "reference did not compile: " + tail(out), cmds
        status, out = self.sh(cfg_cmd)
        if status == "error" and "error:" in out:
            return "rejected", first_error(out), cmds
        if status != "ok":
            return status, "configured plan did not compile: " + tail(out), cmds
        ref_ck = os.path.join(self.work, f"{tag}.ref.safetensors")
        cfg_ck = os.path.join(self.work, f"{tag}.cfg.safetensors")
        ref_run = self.run_cmd(case, ref, 1, ref_ck)
        cfg_run = self.run_cmd(case, cfg, case.ranks(), cfg_ck)
        cmds += [ref_run, cfg_run]
        status, ref_out = self.sh(ref_run)
        if status == "error" and "the loss is nan" in ref_out:
            return "diverged", "the reference diverged: " + tail(ref_out), cmds
        if status != "ok":
            return (status if status != "error" else "error",
                    "reference run failed: " + tail(ref_out), cmds)
        status, cfg_out = self.sh(cfg_run)
        if status != "ok":
            return (status if status != "error" else "error",
                    "configured run failed: " + tail(cfg_out), cmds)
        return compare(case, ref_out, cfg_out, ref_ck, cfg_ck) + (cmds,)


def tail(text, n=3):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return " / ".join(lines[-n:])


def first_error(text):
    for line in text.splitlines():
        if "error:" in line:
            return line.strip()[:300]
    return tail(text)


def losses(text):
    return {int(m.group(1)): m.group(2) for m in re.finditer(
        r"^step (\d+) loss (\S+)", text, re.M)}


def load_safetensors(path):
    import struct
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        lo, hi = info["data_offsets"]
        fmt = "f" if info["dtype"] == "F32" else "i"
        out[name] = struct.unpack(f"<{(hi - lo) // 4}{fmt}", body[lo:hi])
    return out


def compare(case, ref_out, cfg_out, ref_ck, cfg_ck):
    a, b = losses(ref_out), losses(cfg_out)
    if not a or a.keys() != b.keys():
        return "mismatch", f"steps differ: {sorted(a)} vs {sorted(b)}"
    if case.exact():
        for s in sorted(a):
            if a[s] != b[s]:
                return "mismatch", (f"step {s} loss {b[s]} != reference "
                                    f"{a[s]} (bit-identical expected)")
        if open(ref_ck, "rb").read() != open(cfg_ck, "rb").read():
            return "mismatch", "checkpoints differ (bit-identical expected)"
        return "pass", "bit-identical"
    worst = max(abs(float(a[s]) - float(b[s])) / max(abs(float(a[s])), 1e-30)
                for s in a)
    if worst > LOSS_RTOL:
        return "mismatch", (f"losses differ by {worst:.3g} relative "
                            f"(tolerance {LOSS_RTOL})")
    # Adam normalises each element's step by its gradient's size, so an
    # element whose gradient is (near) zero, like the attention key bias's,
    # takes a step set by rounding noise: allow a thousandth of lr per step.
    lr = float(re.search(r"lr=(\S+)", case.optimizer).group(1))
    atol = 1e-3 * lr * case.steps if "adam" in case.optimizer else 0.0
    ra, rb = load_safetensors(ref_ck), load_safetensors(cfg_ck)
    if ra.keys() != rb.keys():
        return "mismatch", "checkpoints hold different tensors"
    worst_ck = 0.0
    for name in ra:
        # A tensor whose true value is zero (the key bias's gradient is:
        # softmax ignores a shift shared by a row's scores) holds only
        # rounding noise; the floor keeps noise from dividing noise.
        scale = max(max((abs(v) for v in ra[name]), default=0.0),
                    CHECKPOINT_FLOOR)
        d = max((abs(x - y) for x, y in zip(ra[name], rb[name])), default=0.0)
        worst_ck = max(worst_ck, max(d - atol, 0.0) / scale)
    if worst_ck > CHECKPOINT_RTOL:
        return "mismatch", (f"checkpoints differ by {worst_ck:.3g} of the "
                            f"largest magnitude (tolerance {CHECKPOINT_RTOL})")
    return "pass", f"loss {worst:.2g}, checkpoint {worst_ck:.2g}"


def shrink(runner, case, verdict, tag):
    """Smaller cases that still fail the same way."""
    best = case
    changed = True
    budget = runner.checks + 16  # shrinking tries at most 16 candidates
    while changed and runner.checks < budget:
        changed = False
        candidates = []
        if best.layers > 1:
            candidates.append(best.copy(layers=best.layers - 1))
        if best.steps > 1:
            candidates.append(best.copy(steps=max(1, best.steps // 2)))
        for drop in ("grad_sync", "tiling", "planning"):
            if getattr(best, drop):
                candidates.append(best.copy(**{drop: None if drop != "tiling"
                                               else False}))
        if best.micro_batches > 1:
            candidates.append(best.copy(
                micro_batches=best.micro_batches // 2,
                global_batch=best.global_batch // 2))
        if best.replicas > 1:
            candidates.append(best.copy(
                replicas=best.replicas // 2,
                global_batch=best.global_batch // 2,
                grad_sync=best.grad_sync if best.replicas > 2 else None))
        for c in candidates:
            if runner.checks >= budget:
                break
            if runner.check(c, tag + ".shrink")[0] == verdict:
                best, changed = c, True
                break
    return best


def save_failure(out_dir, index, case, verdict, detail, cmds):
    d = os.path.join(out_dir, f"case-{index:04d}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "repro.sh"), "w") as f:
        f.write("#!/bin/bash\n# " + verdict + ": " + detail + "\n"
                "# " + case.describe() + "\nset -ex\n")
        for c in cmds:
            f.write(c + "\n")
    with open(os.path.join(d, "case.json"), "w") as f:
        json.dump(case.__dict__, f, indent=1)
    return d


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--max-ranks", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=180)
    ap.add_argument("--out", default="difftest-failures")
    ap.add_argument("--no-shrink", action="store_true")
    ap.add_argument("--time-limit", type=float, default=0,
                    help="stop drawing after this many seconds (0: never)")
    ap.add_argument("--json", help="write the summary here")
    args = ap.parse_args()
    if args.count < 1 or args.count > 100000 or args.steps < 1 \
            or args.steps > 1000 or args.max_ranks < 1 or args.max_ranks > 16:
        sys.exit("difftest: --count 1..100000, --steps 1..1000, "
                 "--max-ranks 1..16")
    if args.max_ranks > 1 and not shutil.which("mpirun"):
        print("difftest: no mpirun; drawing single-rank cases only")
        args.max_ranks = 1
    rng = random.Random(args.seed)
    verdicts = Counter()
    rejected_pairs = Counter()
    drawn_pairs = Counter()
    failures = []
    start = time.time()
    with tempfile.TemporaryDirectory(prefix="difftest.") as work:
        runner = Runner(args.build, work, args.timeout)
        for i in range(args.count):
            if args.time_limit and time.time() - start > args.time_limit:
                print(f"difftest: time limit reached after {i} draws")
                break
            case = draw(rng, args.max_ranks, args.steps)
            names = case.pass_names()
            pairs = list(itertools.combinations(sorted(names), 2)) or \
                [(names[0], names[0])]
            for p in pairs:
                drawn_pairs[p] += 1
            verdict, detail, cmds = runner.check(case, f"d{i}")
            verdicts[verdict] += 1
            print(f"[{i + 1}/{args.count}] {verdict:8s} {case.describe()}"
                  f"  ({detail})", flush=True)
            if verdict == "rejected":
                for p in pairs:
                    rejected_pairs[p] += 1
                continue
            if verdict in ("pass", "diverged"):
                continue
            small = case if args.no_shrink else shrink(runner, case, verdict,
                                                       f"d{i}")
            v2, d2, cmds2 = runner.check(small, f"d{i}.final")
            if v2 == "pass":
                # Not reproduced (a timeout on a loaded machine, say).
                verdicts[verdict] -= 1
                verdicts["flaky"] += 1
                print(f"  not reproduced on a second run: flaky ({detail})")
                continue
            where = save_failure(args.out, i, small, v2, d2, cmds2)
            print(f"  REPRO ({v2}, saved in {where}): "
                  + " && ".join(cmds2), flush=True)
            failures.append({"index": i, "verdict": v2, "detail": d2,
                             "case": small.describe(), "dir": where})
    elapsed = time.time() - start
    summary = {
        "seed": args.seed, "count": sum(verdicts.values()),
        "steps": args.steps,
        "seconds": round(elapsed, 1), "verdicts": dict(verdicts),
        "rejected_by_pair": {f"{a}+{b}": f"{rejected_pairs[(a, b)]}/{n}"
                             for (a, b), n in sorted(drawn_pairs.items())},
        "not_drawn": NOT_YET, "failures": failures,
    }
    drawn = sum(verdicts.values())
    print(f"difftest: seed {args.seed}, {drawn} draws in {elapsed:.0f} s: "
          + ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items())))
    print("rejected / drawn per pass pair: " + ", ".join(
        f"{k} {v}" for k, v in summary["rejected_by_pair"].items()))
    print("not drawn (no such pass yet): " + ", ".join(NOT_YET))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
    bad = sum(v for k, v in verdicts.items()
              if k not in ("pass", "rejected", "diverged", "flaky"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
