#!/usr/bin/env python3
"""The distance to the floor, from one `bench/run.sh` results folder.

    python3 bench/floor_report.py RESULTS_DIR [PLOT.svg]

Reads the idle, heartbeat and push runs of `mio-1` and `rust-floor` (any sizes), prints a
Markdown table per size (server CPU per heartbeat-phase request, per push, RSS per idle
booted charge point, push p99 and loss, and the ratios to the floor measured in the same
run), and draws how each cost grows with the number of charge points in one process.

FLOOR_OURS="mio-1 uring-1" compares several of our servers with the floor (a column and a
ratio each); the default is mio-1 alone.
"""

import glob
import json
import os
import sys

OURS = tuple(os.environ.get("FLOOR_OURS", "mio-1").split())
SERVERS = OURS + ("rust-floor",)
NAMES = {"mio-1": "mio-server", "uring-1": "uring-server"}


def load(folder, servers=SERVERS):
    runs = {}
    for path in glob.glob(os.path.join(folder, "*.json")):
        with open(path) as f:
            run = json.load(f)
        if "error" in run or run.get("label") not in servers:
            continue
        runs[(run["scenario"], run["label"], run["charge_points"])] = run
    return runs


def phase(run, name):
    for p in (run or {}).get("phases", []):
        if p.get("phase") == name:
            return p
    return None


def measures(runs, label, size):
    idle = phase(runs.get(("idle", label, size)), "idle") or {}
    heartbeat = phase(runs.get(("heartbeat", label, size)), "heartbeat") or {}
    push = phase(runs.get(("push", label, size)), "push") or {}
    latency = (push.get("latency") or {}).get("push") or {}
    return {
        "request_us": heartbeat.get("server_cpu_us_per_request"),
        "request_sys_us": heartbeat.get("server_system_cpu_us_per_request"),
        "push_us": push.get("server_cpu_us_per_push"),
        "push_sys_us": push.get("server_system_cpu_us_per_push"),
        "rss_b": idle.get("server_rss_per_connection_bytes"),
        "anon_b": idle.get("server_anon_rss_per_connection_bytes"),
        "rss_total": idle.get("server_rss_bytes"),
        "anon_total": idle.get("server_anon_rss_bytes"),
        "open": (idle.get("counters") or {}).get("open_at_end"),
        "push_p99_us": latency.get("p99_us"),
        # a gap in a charge point's sequence numbers is a lost push (ocpp-load's push_lost)
        "push_lost": (push.get("counters") or {}).get("push_lost", 0 if push else None),
        "pushes": (push.get("counters") or {}).get("pushes"),
    }


def fmt(value, digits=1):
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}"


def ratio(ours, floor):
    if ours is None or not floor:
        return "-"
    return f"{ours / floor:.2f}x"


def marginal(runs, label, key):
    """Bytes per charge point between the smallest and the largest size of the run: the slope,
    in which every fixed cost of the process cancels (the executable's pages touched once, the
    read buffer, the thread stacks)."""
    points = []
    for size in sorted({s for (_, l, s) in runs if l == label}):
        m = measures(runs, label, size)
        if m[key] is not None and m["open"]:
            points.append((m["open"], m[key]))
    if len(points) < 2 or points[-1][0] == points[0][0]:
        return None
    (n0, b0), (n1, b1) = points[0], points[-1]
    return (b1 - b0) / (n1 - n0), n0, n1


def table(runs):
    sizes = sorted({size for (_, label, size) in runs if label == OURS[0]})
    names = [NAMES.get(label, label) for label in OURS]
    ratios = ["ratio"] if len(OURS) == 1 else [f"ratio {name}" for name in names]
    lines = [
        f"| charge points | measure | {' | '.join(names)} | floor | {' | '.join(ratios)} | goal |",
        "| ---: | --- |" + " ---: |" * (2 * len(OURS) + 1) + " --- |",
    ]
    blank = " |" * len(OURS)
    for size in sizes:
        ours = [measures(runs, label, size) for label in OURS]
        floor = measures(runs, "rust-floor", size)
        rows = [
            ("server CPU per heartbeat-phase request (system part)", "request_us", "request_sys_us", "<= 1.10x"),
            ("server CPU per push (system part)", "push_us", "push_sys_us", "<= 1.05x"),
        ]
        for name, key, sys_key, goal in rows:
            values = " | ".join(f"{fmt(m[key])} us ({fmt(m[sys_key])})" for m in ours)
            shares = " | ".join(ratio(m[key], floor[key]) for m in ours)
            lines.append(
                f"| {size:,} | {name} | {values} | "
                f"{fmt(floor[key])} us ({fmt(floor[sys_key])}) | {shares} | {goal} |"
            )
        values = " | ".join(f"{fmt(m['rss_b'], 0)} B" for m in ours)
        lines.append(
            f"| {size:,} | RSS per idle booted charge point | {values} | "
            f"{fmt(floor['rss_b'], 0)} B |{blank} <= 768 B |"
        )
        values = " | ".join(f"{fmt(m['anon_b'], 0)} B" for m in ours)
        lines.append(
            f"| {size:,} | of which anonymous (RssAnon: heap, stacks) | {values} | "
            f"{fmt(floor['anon_b'], 0)} B |{blank} |"
        )
        values = " | ".join(f"{fmt(m['push_p99_us'])} us, {fmt(m['push_lost'])}" for m in ours)
        lines.append(
            f"| {size:,} | push p99, lost | {values} | "
            f"{fmt(floor['push_p99_us'])} us, {fmt(floor['push_lost'])} |{blank} <= 10 us, 0 |"
        )
    for name, key in (("RSS", "rss_total"), ("anonymous RSS", "anon_total")):
        ours = [marginal(runs, label, key) for label in OURS]
        floor = marginal(runs, "rust-floor", key)
        if ours[0]:
            floor_text = f"{floor[0]:,.0f} B" if floor else "-"
            values = " | ".join(f"{m[0]:,.0f} B" if m else "-" for m in ours)
            lines.append(
                f"| {ours[0][1]:,} to {ours[0][2]:,} | {name} per charge point added (slope) | "
                f"{values} | {floor_text} |{blank} <= 768 B |"
            )
    return "\n".join(lines)


def pyplot():
    """matplotlib's pyplot drawing to files, or None (with a word on stderr) without it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plot", file=sys.stderr)
        return None
    return plt


def save(plt, fig, path):
    """Writes the figure to `path` and frees it."""
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    print(f"wrote {path}", file=sys.stderr)


def plot(runs, path):
    plt = pyplot()
    if plt is None:
        return
    panels = [
        ("rss_b", "RSS per idle booted charge point (B)"),
        ("request_us", "server CPU per request (us)"),
        ("push_us", "server CPU per push (us)"),
    ]
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    for ax, (key, title) in zip(axes, panels):
        for label in SERVERS:
            sizes = sorted({s for (_, l, s) in runs if l == label})
            points = [(s, measures(runs, label, s)[key]) for s in sizes]
            points = [(s, v) for s, v in points if v is not None]
            if points:
                ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
        ax.set_xscale("log")
        ax.set_xlabel("charge points in one process")
        ax.set_title(title, fontsize=10)
        ax.set_ylim(bottom=0)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    save(plt, fig, path)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    runs = load(sys.argv[1])
    print(table(runs))
    if len(sys.argv) > 2:
        plot(runs, sys.argv[2])


if __name__ == "__main__":
    main()
