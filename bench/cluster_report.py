#!/usr/bin/env python3
"""The summary of bench/cluster.sh: a Markdown table on stdout and two plots (growth of
memory and of command latency with the number of charge points) in the results folder and
bench/plots/.

Usage: cluster_report.py RESULTS_DIR
"""

import glob
import json
import os
import re
import shutil
import sys


def read(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def phase(load, name):
    for p in (load or {}).get("phases", []):
        if p.get("phase") == name:
            return p
    return {}


def fmt(x, digits=0, scale=1.0):
    if x is None:
        return "-"
    return f"{x * scale:,.{digits}f}"


def rows(outdir):
    sizes = sorted(
        int(m.group(1))
        for m in (re.search(r"redis-(\d+)\.json$", p) for p in glob.glob(f"{outdir}/redis-*.json"))
        if m
    )
    for size in sizes:
        load = read(f"{outdir}/load-{size}.json")
        yield size, load, read(f"{outdir}/redis-{size}.json") or {}, read(
            f"{outdir}/latency-{size}.json"
        ) or {}


def table(outdir):
    lines = [
        "| charge points | nodes | booted (claims) | connect failures | server RSS per CP | Redis RSS per CP | Redis commands/s | Redis CPU | heartbeat req/s | server CPU per request | command, same node p50 / p99 / max | command, other node p50 / p99 / max | commands not 200 |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for size, load, redis, latency in rows(outdir):
        connect, beat = phase(load, "connect"), phase(load, "heartbeat")
        same, other = latency.get("same_node", {}), latency.get("other_node", {})

        def lat(s):
            return " / ".join(fmt(s.get(k), 2, 1e-3) for k in ("p50_us", "p99_us", "max_us")) + " ms"

        failures = sum(
            v
            for s in (same, other)
            for k, v in s.get("statuses", {}).items()
            if k != "200"
        )
        lines.append(
            "| {:,} | {} | {:,} | {} | {} B | {} B | {} | {} % | {} | {} us | {} | {} | {} |".format(
                size,
                redis.get("nodes", "-"),
                int(redis.get("claims_seen", 0)),
                fmt(connect.get("failed")),
                fmt(connect.get("server_rss_per_connection_bytes")),
                fmt(redis.get("rss_per_charge_point_bytes")),
                fmt(redis.get("commands_per_s")),
                fmt(redis.get("cpu_percent"), 2),
                fmt(beat.get("requests_per_s")),
                fmt(beat.get("server_cpu_us_per_request"), 1),
                lat(same),
                lat(other),
                failures,
            )
        )
    return "\n".join(lines)


def plots(outdir):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plots", file=sys.stderr)
        return
    data = list(rows(outdir))
    if not data:
        return
    xs = [size for size, *_ in data]
    fig, (mem, lat) = plt.subplots(1, 2, figsize=(12, 4.5))
    server = [phase(load, "connect").get("server_rss_per_connection_bytes") for _, load, _, _ in data]
    redis = [r.get("rss_per_charge_point_bytes") for _, _, r, _ in data]
    mem.plot(xs, server, marker="o", label="mio-server nodes (sum) per charge point")
    mem.plot(xs, redis, marker="o", label="redis-server per charge point")
    mem.set_xlabel("charge points")
    mem.set_ylabel("bytes of RSS per charge point")
    mem.set_ylim(bottom=0)
    mem.set_title("Memory per booted charge point")
    mem.grid(True, alpha=0.3)
    mem.legend(fontsize=8)
    for kind, label in (("same_node", "same node"), ("other_node", "other node")):
        for key, style in (("p50_us", "-"), ("p99_us", "--")):
            ys = [(l.get(kind) or {}).get(key) for _, _, _, l in data]
            ys = [y / 1000 if y is not None else None for y in ys]
            lat.plot(xs, ys, style, marker="o", label=f"{label} {key[:3]}")
    lat.set_xlabel("charge points")
    lat.set_ylabel("ms (admin HTTP request to answer)")
    lat.set_ylim(bottom=0)
    lat.set_title("Command latency through the admin API")
    lat.grid(True, alpha=0.3)
    lat.legend(fontsize=8)
    fig.tight_layout()
    path = os.path.join(outdir, "cluster-growth.svg")
    fig.savefig(path)
    plt.close(fig)
    plots_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plots")
    shutil.copy(path, os.path.join(plots_dir, "cluster-growth.svg"))


def main():
    outdir = sys.argv[1]
    print(table(outdir))
    plots(outdir)


if __name__ == "__main__":
    main()
