#!/usr/bin/env python3
"""The front door against mio-server and the floor, from one `bench/run.sh` results folder.

    python3 bench/front_door_report.py RESULTS_DIR [--plot PLOT.svg [EARLIER_DIR...]]

Reads the idle, heartbeat and push runs of `rust-floor`, `mio-1`, `tokio-server`,
`tokio-tasks` (tokio-server with a task per connection) and `rust-tungstenite-tuned` (one size) and prints the Markdown table of issue "The front door at
mio-server's cost": RSS per idle booted charge point, server CPU per heartbeat-phase request and
per push, push p99 and loss, with mio-server's ratios to the floor and tokio-server's to
mio-server, all measured in that one run. With --plot, draws the four columns as bars per
server: RESULTS_DIR's run, beside the runs of each EARLIER_DIR (labelled by folder name), so
a change shows against the run before it (each run's own ratios are in its table).
"""

import os
import sys

from floor_report import fmt, load, measures, pyplot, save

SERVERS = (
    ("rust-floor", "the floor (one recv, one send, no validation, no state)"),
    ("mio-1", "mio-server"),
    ("tokio-server", "tokio-server (the CSMS on `ocpp-tokio`, one shard)"),
    ("tokio-tasks", "tokio-server, a task per connection (`--shards 0`)"),
    ("rust-tungstenite-tuned", "tokio-tungstenite with tuned buffers (a plain OCPP responder)"),
)
# The plot's axis labels, in SERVERS' order.
SHORT_NAMES = ("floor", "mio-server", "tokio-server", "tokio\ntasks", "tungstenite\ntuned")


def ratio(value, base, name):
    if value is None or not base:
        return fmt(value)
    return f"{fmt(value)} ({value / base:.2f}x {name})"


def main(folder):
    runs = load(folder, {label for label, _ in SERVERS})
    sizes = sorted({size for (_, _, size) in runs})
    for size in sizes:
        m = {label: measures(runs, label, size) for label, _ in SERVERS}
        floor, mio = m["rust-floor"], m["mio-1"]
        print(f"{size:,} charge points\n")
        print("| server | RSS per idle booted charge point | CPU per heartbeat-phase request | "
              "CPU per push | push p99 | lost |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for label, name in SERVERS:
            x = m[label]
            if label == "mio-1":
                request = ratio(x["request_us"], floor["request_us"], "floor")
                push = ratio(x["push_us"], floor["push_us"], "floor")
            elif label == "rust-floor":
                request, push = fmt(x["request_us"]), fmt(x["push_us"])
            else:
                request = ratio(x["request_us"], mio["request_us"], "mio")
                push = ratio(x["push_us"], mio["push_us"], "mio")
            rss = "-" if x["rss_b"] is None else f"{x['rss_b'] / 1024:.2f} KiB"
            print(f"| {name} | {rss} | {request} us | {push} us | "
                  f"{fmt(x['push_p99_us'])} us | {fmt(x['push_lost'])} |")
        print()


PANELS = (
    ("rss_b", "RSS per idle booted charge point (B)"),
    ("request_us", "server CPU per heartbeat-phase request (us)"),
    ("push_us", "server CPU per push (us)"),
    ("push_p99_us", "push latency p99 (us)"),
)


def plot(folders, path):
    plt = pyplot()
    if plt is None:
        return
    labels = {label for label, _ in SERVERS}
    runs = [(os.path.basename(os.path.normpath(f)), load(f, labels)) for f in folders]
    fig, axes = plt.subplots(1, len(PANELS), figsize=(16, 4.2))
    width = 0.8 / len(runs)
    for ax, (key, title) in zip(axes, PANELS):
        for i, (name, r) in enumerate(runs):
            sizes = sorted({size for (_, _, size) in r})
            values = []
            for label, _ in SERVERS:
                v = measures(r, label, sizes[-1])[key] if sizes else None
                values.append(0 if v is None else v)
            xs = [j + (i - (len(runs) - 1) / 2) * width for j in range(len(SERVERS))]
            ax.bar(xs, values, width, label=name)
        ax.set_xticks(range(len(SERVERS)))
        ax.set_xticklabels(SHORT_NAMES, fontsize=8)
        ax.set_title(title, fontsize=9)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=7)
    save(plt, fig, path)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    args = sys.argv[1:]
    folder = args[0] if args else "bench/results/latest"
    main(folder)
    if "--plot" in args:
        at = args.index("--plot")
        plot(args[at + 2:] + [folder], args[at + 1])  # the earlier runs first
