#!/usr/bin/env python3
"""Runs a command that must fail within a time bound.

    run_bounded.py SECONDS -- COMMAND...

Passes when COMMAND exits non-zero within SECONDS (it is killed, and the
check fails, if it is still running then). Prints the exit code and time.
"""
import subprocess
import sys
import time

bound = float(sys.argv[1])
command = sys.argv[sys.argv.index("--") + 1:]
start = time.monotonic()
try:
    code = subprocess.run(command, timeout=bound, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode
except subprocess.TimeoutExpired:
    sys.exit(f"still running after {bound} s")
elapsed = time.monotonic() - start
print(f"exit code {code} after {elapsed:.1f} s")
if code == 0:
    sys.exit("expected a non-zero exit")
