"""Helpers shared by the benchmark scripts in bench/."""
import json
import platform
import subprocess


def trace_spans(path, from_step=1):
    """The spans ('X' events) of a strata-run --trace file from step
    `from_step` on (the trace's events are a list, or a dict's
    "traceEvents")."""
    with open(path) as f:
        events = json.load(f)
    if isinstance(events, dict):
        events = events.get("traceEvents", [])
    return [e for e in events if e.get("ph") == "X" and
            e.get("args", {}).get("step", 0) >= from_step]


def cpu_name():
    """The processor's model name (from /proc/cpuinfo where there is one)."""
    try:
        with open("/proc/cpuinfo") as f:
            return next(l.split(":", 1)[1].strip() for l in f
                        if l.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def sh(command):
    """Runs a shell command, failing on a non-zero exit; returns its stdout."""
    return subprocess.run(command, shell=True, check=True, text=True,
                          capture_output=True).stdout


def mean_step_ms(strata_run_output):
    """strata-run's mean step time (ms) from its summary line."""
    summary = [l for l in strata_run_output.splitlines()
               if l.startswith("summary")][0]
    return float(summary.split("mean ms ")[1].split()[0])
