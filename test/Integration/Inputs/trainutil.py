"""What check_planned.py and check_remat.py share: running a command and
training a plan with a fixed seed, returning its losses, checkpoint and
arena."""
import os
import re
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
