"""What check_planned.py, check_remat.py, check_compress.py and
check_mixed_precision.py share: running a command, training a plan with a
fixed seed (its losses, checkpoint and arena), and reading a checkpoint's
parameters."""
import json
import math
import os
import re
import struct
import subprocess
import sys


def run(cmd, **kw):
    """Runs `cmd`; exits with its output when it fails."""
    result = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if result.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(cmd), result.stdout,
                                       result.stderr))
    return result


def train(plan, workdir, name, steps, np=1, extra=()):
    """Trains `plan` `steps` steps with seed 3 on one thread (under `mpirun
    -np` when np > 1), saving WORKDIR/NAME.safetensors. Returns the (step,
    loss) pairs, the checkpoint path, and the arena and live lower bound from
    the memory line."""
    ckpt = os.path.join(workdir, name + ".safetensors")
    cmd = ["strata-run", plan, "--steps", str(steps), "--threads", "1",
           "--seed", "3", "--save", ckpt] + list(extra)
    if np > 1:
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np",
               str(np)] + cmd
    out = run(cmd).stdout
    losses = re.findall(r"^step (\d+) loss (\S+)", out, re.M)
    arena = re.search(r"^memory: arena (\d+) bytes, live lower bound (\d+)",
                      out, re.M)
    if not losses or not arena:
        sys.exit("no losses or memory line in the output of " + plan)
    return losses, ckpt, int(arena.group(1)), int(arena.group(2))


def parameters(path):
    """The f32 parameters of a checkpoint (optimizer states left out)."""
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, info in sorted(header.items()):
        if name == "__metadata__" or info["dtype"] != "F32" or \
                name.endswith((".velocity", ".m", ".v")):
            continue
        begin, end = info["data_offsets"]
        out[name] = struct.unpack("<%df" % ((end - begin) // 4),
                                  body[begin:end])
    return out


def gradient(after, before):
    """The parameter change of one step, flattened in name order."""
    return [a - b for name in sorted(before)
            for a, b in zip(after[name], before[name])]


def norm(v):
    return math.sqrt(sum(x * x for x in v))
