#!/usr/bin/env python3
"""Writes PyTorch's learning-rate schedules and gradient clipping on fixed
inputs as a reference table for the runtime's unit tests
(runtime/test/driver/Inputs/torch-reference.json, committed).

    python scripts/torch_reference.py [OUT.json]     # needs torch

PyTorch is never a dependency of Strata: the table is produced once, where
torch is installed (a virtual environment from PyPI), and the tests compare
strata-rt's LrSchedule and clipGradientsByNorm with it.
"""
import json
import math
import os
import sys

import torch


def lrs(make_scheduler, base, steps):
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=base)
    sched = make_scheduler(opt)
    out = []
    for _ in range(steps):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return out


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        "runtime", "test", "driver", "Inputs", "torch-reference.json")
    S = torch.optim.lr_scheduler
    schedules = [
        {"strata": "linear-warmup,warmup=4,start=0.25", "base": 0.1,
         "torch": "LinearLR(start_factor=0.25, total_iters=4)",
         "lr": lrs(lambda o: S.LinearLR(o, start_factor=0.25, total_iters=4),
                   0.1, 10)},
        {"strata": "cosine,total=8,min-lr=0.001", "base": 0.1,
         "torch": "CosineAnnealingLR(T_max=8, eta_min=0.001)",
         "lr": lrs(lambda o: S.CosineAnnealingLR(o, T_max=8, eta_min=0.001),
                   0.1, 9)},
        {"strata": "step,every=3,gamma=0.5", "base": 0.1,
         "torch": "StepLR(step_size=3, gamma=0.5)",
         "lr": lrs(lambda o: S.StepLR(o, step_size=3, gamma=0.5), 0.1, 10)},
        {"strata": "warmup-cosine,warmup=3,total=10,min-lr=0.001", "base": 0.1,
         "torch": "SequentialLR([LinearLR(1/3, 1.0, total_iters=2), "
                  "CosineAnnealingLR(T_max=7, eta_min=0.001)], milestones=[3])",
         "lr": lrs(lambda o: S.SequentialLR(o, [
             S.LinearLR(o, start_factor=1 / 3, end_factor=1.0, total_iters=2),
             S.CosineAnnealingLR(o, T_max=7, eta_min=0.001)], milestones=[3]),
             0.1, 11)},
    ]
    torch.manual_seed(0)
    clips = []
    for max_norm in (0.5, 3.0, 100.0):
        grads = [torch.randn(3, 4), torch.randn(5), torch.randn(2, 2)]
        params = [torch.nn.Parameter(torch.zeros_like(g)) for g in grads]
        for p, g in zip(params, grads):
            p.grad = g.clone()
        norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
        clips.append({"max_norm": max_norm,
                      "grads": [g.flatten().tolist() for g in grads],
                      "norm": float(norm),
                      "clipped": [p.grad.flatten().tolist() for p in params]})
    with open(out, "w") as f:
        json.dump({"torch": torch.__version__, "schedules": schedules,
                   "clip_grad_norm": clips}, f, indent=1)
    print(f"wrote {out} (torch {torch.__version__})")


if __name__ == "__main__":
    main()
