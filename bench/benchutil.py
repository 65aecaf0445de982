"""Helpers shared by the benchmark scripts in bench/."""
import platform
import subprocess


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
