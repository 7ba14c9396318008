#!/usr/bin/env python3
"""The front door against mio-server and the floor, from one `bench/run.sh` results folder.

    python3 bench/front_door_report.py RESULTS_DIR

Reads the idle, heartbeat and push runs of `rust-floor`, `mio-1`, `tokio-server` and
`rust-tungstenite-tuned` (one size) and prints the Markdown table of issue "The front door at
mio-server's cost": RSS per idle booted charge point, server CPU per heartbeat-phase request and
per push, push p99 and loss, with mio-server's ratios to the floor and tokio-server's to
mio-server, all measured in that one run.
"""

import os
import sys

from floor_report import fmt, load, measures

SERVERS = (
    ("rust-floor", "the floor (one recv, one send, no validation, no state)"),
    ("mio-1", "mio-server"),
    ("tokio-server", "tokio-server (the CSMS on `ocpp-tokio`)"),
    ("rust-tungstenite-tuned", "tokio-tungstenite with tuned buffers (a plain OCPP responder)"),
)


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


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main(sys.argv[1] if len(sys.argv) > 1 else "bench/results/latest")
