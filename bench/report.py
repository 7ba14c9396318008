#!/usr/bin/env python3
"""Turns the JSON files of one `bench/run.sh` run into Markdown tables and plots.

    python3 bench/report.py RESULTS_DIR [--benchmarks BENCHMARKS.md] [--plots DIR]

Writes RESULTS_DIR/tables.md, the plots (SVG) into --plots (default RESULTS_DIR), and, with
--benchmarks, replaces the text between `<!-- bench:begin -->` and `<!-- bench:end -->` in that
file with the tables and links to the plots.
"""

import argparse
import json
import os
import re
import sys


def load(results):
    runs = []
    for name in sorted(os.listdir(results)):
        if name.endswith(".json"):
            with open(os.path.join(results, name)) as f:
                try:
                    run = json.load(f)
                except json.JSONDecodeError:
                    continue
            run["_file"] = name
            runs.append(run)
    return runs


def phase(run, name):
    for p in run.get("phases", []):
        if p.get("phase") == name:
            return p
    return None


def ms(us):
    if us is None:
        return "-"
    return f"{us / 1000:.3f}" if us < 10_000 else f"{us / 1000:.1f}"


def kib(x):
    return "-" if x is None else f"{x / 1024:.2f} KiB"


def num(x, digits=1):
    if x is None:
        return "-"
    return f"{x:,.{digits}f}"


SERVER_ORDER = [
    "mio-1",
    "mio-2",
    "rust-tungstenite-default",
    "rust-tungstenite-tuned",
    "rust-ocpp-kit",
    "node-ocpp-rpc",
    "python-ocpp",
]


def order(run):
    label = run.get("label", "")
    rank = SERVER_ORDER.index(label) if label in SERVER_ORDER else len(SERVER_ORDER)
    return (run.get("charge_points", 0), rank, label)


def failure(run):
    return run.get("error")


def counters(p):
    return p.get("counters", {}) if p else {}


def idle_table(runs):
    rows = [
        "| server | charge points | booted | connect rate /s | connect p99 ms | RSS per idle connection | server CPU idle (% of a core) | swarm CPU % |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for run in sorted((r for r in runs if r.get("scenario") == "idle"), key=order):
        if failure(run):
            rows.append(f"| {run['label']} | {run['charge_points']:,} | {failure(run)} | | | | | |")
            continue
        c, i = phase(run, "connect"), phase(run, "idle")
        booted = counters(c).get("connected", 0)
        per = i.get("server_rss_per_connection_bytes") if i else None
        per_text = f"{per / 1024:.2f} KiB" if per is not None else "-"
        lat = (c or {}).get("latency", {}).get("connect", {})
        rows.append(
            f"| {run['label']} | {run['charge_points']:,} | {booted:,} | {num(c.get('connect_rate_per_s'))} | "
            f"{ms(lat.get('p99_us'))} | {per_text} | {num(i.get('server_cpu_percent'), 2)} | {num(i.get('load_cpu_percent'), 1)} |"
        )
    return rows


def heartbeat_table(runs):
    rows = [
        "| server | charge points | answered /s | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | failed | disconnects | server CPU % | server CPU per request | server RSS per connection |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for run in sorted((r for r in runs if r.get("scenario") == "heartbeat"), key=order):
        if failure(run):
            rows.append(f"| {run['label']} | {run['charge_points']:,} | {failure(run)} | | | | | | | | | | |")
            continue
        h = phase(run, "heartbeat")
        if not h:
            continue
        k = counters(h)
        lat = h.get("latency", {}).get("request", {})
        booted = counters(phase(run, "connect")).get("connected", 0)
        note = "" if booted == run["charge_points"] else f" ({booted:,} booted)"
        per = h.get("server_cpu_us_per_request")
        rows.append(
            f"| {run['label']} | {run['charge_points']:,}{note} | {num(h.get('requests_per_s'))} | {ms(lat.get('p50_us'))} | "
            f"{ms(lat.get('p90_us'))} | {ms(lat.get('p99_us'))} | {ms(lat.get('p99_9_us'))} | {ms(lat.get('max_us'))} | "
            f"{k.get('requests_failed', 0) + k.get('requests_refused', 0)} | {k.get('disconnects', 0)} | "
            f"{num(h.get('server_cpu_percent'), 1)} | {num(per)} us | {kib(h.get('server_rss_per_connection_bytes'))} |"
        )
    return rows


def push_table(runs, scenario):
    rows = [
        "| server | clients | CPU load | pushes /s per client | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | lost | server CPU per push |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for run in sorted((r for r in runs if r.get("scenario") == scenario), key=order):
        burn = f"{run.get('burn_percent', 0)}%" if run.get("burn_percent") else "-"
        if failure(run):
            rows.append(f"| {run['label']} | {run['charge_points']:,} | {burn} | {failure(run)} | | | | | | | |")
            continue
        p = phase(run, "push")
        if not p:
            continue
        k = counters(p)
        lat = p.get("latency", {}).get("push", {})
        booted = counters(phase(run, "connect")).get("connected", 0)
        note = "" if booted == run["charge_points"] else f" ({booted:,} booted)"
        lost = k.get("push_lost", 0) + k.get("disconnects", 0)
        rows.append(
            f"| {run['label']} | {run['charge_points']:,}{note} | {burn} | {num(p.get('pushes_per_s_per_client'), 2)} | "
            f"{ms(lat.get('p50_us'))} | {ms(lat.get('p90_us'))} | {ms(lat.get('p99_us'))} | {ms(lat.get('p99_9_us'))} | "
            f"{ms(lat.get('max_us'))} | {lost} | {num(p.get('server_cpu_us_per_push'))} us |"
        )
    return rows


def reconnect_table(runs):
    rows = [
        "| server | charge points | dropped | back | all back after | reconnect p50 | reconnect p99 |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for run in sorted((r for r in runs if r.get("scenario") == "reconnect"), key=order):
        if failure(run):
            rows.append(f"| {run['label']} | {run['charge_points']:,} | {failure(run)} | | | | |")
            continue
        p = phase(run, "reconnect")
        if not p:
            continue
        k = counters(p)
        lat = p.get("latency", {}).get("reconnect", {})
        back = p.get("all_back_after_s")
        rows.append(
            f"| {run['label']} | {run['charge_points']:,} | {k.get('dropped', 0):,} | {k.get('rebooted', 0):,} | "
            f"{num(back, 2)} s | {ms(lat.get('p50_us'))} ms | {ms(lat.get('p99_us'))} ms |"
        )
    return rows


def plots(runs, outdir):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plots", file=sys.stderr)
        return []
    made = []

    def curve_plot(scenario, phase_name, hist, title, filename):
        chosen = [r for r in runs if r.get("scenario") == scenario and not failure(r)]
        if not chosen:
            return
        largest = {}
        for r in chosen:
            largest[r["label"]] = max(largest.get(r["label"], 0), r["charge_points"])
        fig, ax = plt.subplots(figsize=(8, 5))
        for r in sorted(chosen, key=order):
            if r["charge_points"] != largest[r["label"]]:
                continue
            p = phase(r, phase_name)
            points = (p or {}).get("curves", {}).get(hist)
            if not points:
                continue
            xs = [1 / (1 - q) if q < 1 else 1e6 for q, _ in points]
            ys = [v / 1000 for _, v in points]
            ax.plot(xs, ys, marker=".", label=f"{r['label']} ({r['charge_points']:,})")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ticks = [1, 2, 10, 100, 1000, 10000, 100000, 1e6]
        ax.set_xticks(ticks)
        ax.set_xticklabels(["0%", "50%", "90%", "99%", "99.9%", "99.99%", "99.999%", "max"])
        ax.set_xlabel("percentile")
        ax.set_ylabel("latency (ms)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = os.path.join(outdir, filename)
        fig.savefig(path)
        plt.close(fig)
        made.append((title, filename))

    curve_plot("push", "push", "push", "Push latency (DataTransfer, every 500 ms), by percentile", "push-latency.svg")
    curve_plot("heartbeat", "heartbeat", "request", "Request latency (Heartbeat, StatusNotification, MeterValues)", "heartbeat-latency.svg")
    curve_plot("stream", "push", "push", "Stream latency (100 messages/s per client)", "stream-latency.svg")

    def resource_plot(scenario, phase_name, key, scale, ylabel, title, filename):
        chosen = [r for r in runs if r.get("scenario") == scenario and not failure(r)]
        series = {}
        for r in chosen:
            p = phase(r, phase_name)
            if p and p.get(key) is not None:
                series.setdefault(r["label"], []).append((r["charge_points"], p[key] * scale))
        if not series:
            return
        fig, ax = plt.subplots(figsize=(8, 5))
        for label in sorted(series, key=lambda l: SERVER_ORDER.index(l) if l in SERVER_ORDER else 99):
            pts = sorted(series[label])
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("charge points")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, filename))
        plt.close(fig)
        made.append((title, filename))

    resource_plot("idle", "idle", "server_rss_per_connection_bytes", 1 / 1024, "KiB", "Server RSS per idle connection", "rss-per-connection.svg")
    resource_plot("idle", "idle", "server_cpu_percent", 1, "% of a core", "Server CPU while idle", "idle-cpu.svg")
    resource_plot("heartbeat", "heartbeat", "server_cpu_us_per_request", 1, "us", "Server CPU per request", "cpu-per-request.svg")
    resource_plot("push", "push", "server_cpu_us_per_push", 1, "us", "Server CPU per push", "cpu-per-push.svg")
    return made


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("results")
    parser.add_argument("--benchmarks")
    parser.add_argument("--plots")
    args = parser.parse_args()
    runs = load(args.results)
    plot_dir = args.plots or args.results
    os.makedirs(plot_dir, exist_ok=True)
    machine = ""
    path = os.path.join(args.results, "machine.txt")
    if os.path.exists(path):
        with open(path) as f:
            machine = f.read().strip()
    lines = []
    lines.append("Generated by `bench/report.py` from one run of `bench/run.sh`:")
    lines.append("")
    lines.append("```text")
    lines.append(machine)
    lines.append("```")
    lines.append("")
    lines.append("#### Connect and idle (connect at the set rate, BootNotification checked, then silent)")
    lines += [""] + idle_table(runs) + [""]
    lines.append("#### Heartbeat every 10 s, StatusNotification and MeterValues every 30 s (latency: CALL to CALLRESULT)")
    lines += [""] + heartbeat_table(runs) + [""]
    lines.append("#### Push: a DataTransfer to every charge point every 500 ms (latency: server stamp to kernel receive time)")
    lines += [""] + push_table(runs, "push") + [""]
    lines.append("#### Stream: 100 messages/s to 1 and 20 clients, with and without 80% CPU load")
    lines += [""] + push_table(runs, "stream") + [""]
    lines.append("#### Reconnect: the server is stopped and started again")
    lines += [""] + reconnect_table(runs) + [""]
    made = plots(runs, plot_dir)
    if made:
        lines.append("#### Plots")
        lines.append("")
        rel = os.path.relpath(plot_dir, os.path.dirname(os.path.abspath(args.benchmarks)) if args.benchmarks else args.results)
        for title, filename in made:
            lines.append(f"![{title}]({rel}/{filename})")
            lines.append("")
    text = "\n".join(lines).rstrip() + "\n"
    with open(os.path.join(args.results, "tables.md"), "w") as f:
        f.write(text)
    if args.benchmarks:
        with open(args.benchmarks) as f:
            doc = f.read()
        begin, end = "<!-- bench:begin -->", "<!-- bench:end -->"
        if begin in doc and end in doc:
            doc = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _m: begin + "\n" + text + end, doc, flags=re.S)
        else:
            doc = doc.rstrip() + "\n\n" + begin + "\n" + text + end + "\n"
        with open(args.benchmarks, "w") as f:
            f.write(doc)
    print(text)


if __name__ == "__main__":
    main()
