#!/usr/bin/env python3
"""SIGKILLs a command while it writes a file atomically.

    kill_during_write.py FILE [--tries N] -- COMMAND...

Runs COMMAND and polls FILE's directory for the temporary file that
writeFileAtomically creates (FILE.tmp.XXXXXX); the moment one appears the
command is killed with SIGKILL. A command that finishes before that is run
again, up to N times (default 5). Prints "killed during the write" (or fails
when no run could be caught), then what is left: whether FILE exists and how
many temporary files remain (they are removed afterwards).
"""
import glob
import os
import signal
import subprocess
import sys
import time

args = sys.argv[1:]
split = args.index("--")
options, command = args[:split], args[split + 1:]
path = options[0]
tries = int(options[options.index("--tries") + 1]) if "--tries" in options else 5
pattern = glob.escape(path) + ".tmp.*"

caught = False
for attempt in range(tries):
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while proc.poll() is None:
        if glob.glob(pattern):
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            caught = proc.returncode == -signal.SIGKILL
            break
        time.sleep(0.0005)
    if caught:
        break
if not caught:
    sys.exit(f"the command finished before its write could be interrupted ({tries} tries)")
print("killed during the write")
print("file exists:", "yes" if os.path.exists(path) else "no")
left = glob.glob(pattern)
print("temporary files left:", len(left))
for f in left:
    os.remove(f)
