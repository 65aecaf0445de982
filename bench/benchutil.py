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


def loss_svg(curves, path, title, smooth_over=25, every=1):
    """Loss curves as an SVG: `curves` maps a name to losses, one per
    `every` steps, each point the mean of the last `smooth_over` of them."""
    width, height, pad = 720, 420, 50
    smooth = {}
    for name, losses in curves.items():
        k = smooth_over
        smooth[name] = [sum(losses[max(0, i - k + 1):i + 1]) /
                        len(losses[max(0, i - k + 1):i + 1])
                        for i in range(len(losses))]
    n = max(len(v) for v in smooth.values())
    skip = min(10, n // 10)  # The first steps' loss dwarfs the rest.
    lo = min(min(v[skip:]) for v in smooth.values())
    hi = max(max(v[skip:]) for v in smooth.values())
    colors = ["#000000", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
              "#9467bd", "#8c564b", "#e377c2", "#17becf"]
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
             'font-family="sans-serif" font-size="12">' % (width, height),
             '<rect width="100%" height="100%" fill="white"/>',
             '<text x="%d" y="20" text-anchor="middle">%s</text>' %
             (width // 2, title)]
    x0, y0, x1, y1 = pad, height - pad, width - 180, pad

    def xy(i, v):
        return (x0 + (x1 - x0) * i / max(n - 1, 1),
                y0 - (y0 - y1) * (v - lo) / max(hi - lo, 1e-9))
    parts.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' %
                 (x0, y0, x1, y0))
    parts.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' %
                 (x0, y0, x0, y1))
    for t in range(5):
        v = lo + (hi - lo) * t / 4
        _, y = xy(0, v)
        parts.append('<text x="%d" y="%.1f" text-anchor="end">%.2f</text>' %
                     (x0 - 4, y + 4, v))
        i = (n - 1) * t // 4
        x, _ = xy(i, lo)
        parts.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>' %
                     (x, y0 + 16, (i + 1) * every))
    parts.append('<text x="%d" y="%d" text-anchor="middle">step</text>' %
                 ((x0 + x1) // 2, height - 10))
    for k, (name, values) in enumerate(smooth.items()):
        color = colors[k % len(colors)]
        points = " ".join("%.1f,%.1f" % xy(i, v) for i, v in
                          enumerate(values) if i >= skip)
        parts.append('<polyline fill="none" stroke="%s" stroke-width="1.2" '
                     'points="%s"/>' % (color, points))
        parts.append('<text x="%d" y="%d" fill="%s">%s</text>' %
                     (x1 + 10, y1 + 16 * k + 10, color, name))
    parts.append("</svg>")
    open(path, "w").write("\n".join(parts) + "\n")
