#!/usr/bin/env python3
"""Changes a file while a command runs.

    change_during_run.py FILE remove|truncate|rewrite -o LOG -- COMMAND...

Runs COMMAND with its stdout in LOG; once it has printed its first line
starting with "step " (its first training step is done), FILE is removed,
truncated to 0 bytes or rewritten with other bytes of the same length.
Exits with COMMAND's exit code and prints the action taken.
"""
import os
import subprocess
import sys

args = sys.argv[1:]
split = args.index("--")
options, command = args[:split], args[split + 1:]
path, action = options[0], options[1]
log = options[options.index("-o") + 1]

done = False
with open(log, "w") as out:
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    for line in proc.stdout:
        out.write(line)
        if not done and line.startswith("step "):
            if action == "remove":
                os.remove(path)
            elif action == "truncate":
                os.truncate(path, 0)
            elif action == "rewrite":
                size = os.path.getsize(path)
                with open(path, "wb") as f:
                    f.write(bytes((i * 7 + 3) % 251 for i in range(size)))
            else:
                sys.exit("unknown action " + action)
            done = True
    proc.wait()
print(f"{action} after the first step: {'done' if done else 'never'}; exit code {proc.returncode}")
sys.exit(proc.returncode)
