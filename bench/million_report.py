#!/usr/bin/env python3
"""The report of bench/million.sh: reads what the script left in OUT, writes OUT/million.json
and prints a short summary (Markdown); a plot (OUT/million.svg) when matplotlib is installed.
Exit status 1 when a check fails (a charge point lost, a displaced one not booted again, a
claim missing in Redis at the end, a failed connect, ocpp-load's exit status).

Usage: million_report.py OUT
"""

import json
import os
import sys


def lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def read(path):
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return json.load(f)


def phase(load, name):
    return next((p for p in load.get("phases", []) if p.get("phase") == name), {})


def per(x, n, digits=1):
    return round(x / n, digits) if n else None


def first_reaching(series, target, start):
    """Seconds from `start` to the first (t, value) of `series` with value >= target."""
    for t, value in series:
        if value >= target:
            return round(max(0.0, t - start), 2)
    return None


def main():
    out = sys.argv[1]
    fig = {}
    for line in lines(os.path.join(out, "figures.jsonl")):
        fig.update(line)
    snaps = {s["name"]: s for s in lines(os.path.join(out, "snapshots.jsonl"))}
    load = read(os.path.join(out, "load.json"))
    n = fig.get("charge_points", 0)
    ticks = fig.get("clock_ticks", 100)
    connect, held = phase(load, "connect"), phase(load, "heartbeat")
    counters = held.get("counters", {})
    result = {"settings": {k: fig.get(k) for k in (
        "charge_points", "nodes", "hold_s", "heartbeat_s", "rate", "boot_rate", "cluster_ttl_s")}}

    # Connect.
    result["connect"] = {
        "seconds": round(fig.get("connect_s", 0), 1),
        "connected": connect.get("counters", {}).get("connected"),
        "failed": connect.get("failed"),
        "boot_pending": connect.get("counters", {}).get("boot_pending", 0),
        "rate_per_s": connect.get("connect_rate_per_s"),
    }

    # The hold: memory, CPU, Redis.
    empty, up = snaps.get("empty", {}), snaps.get("nodes_up", {})
    h0, h1 = snaps.get("hold_start", {}), snaps.get("hold_end", {})
    if h0 and h1:
        wall = h1["t"] - h0["t"]
        cpu = lambda key: round((h1[key] - h0[key]) / ticks / wall * 100, 1)
        result["hold"] = {
            "seconds": round(wall, 1),
            "nodes_rss_per_charge_point_bytes": per(h1["nodes_rss"] - up["nodes_rss"], n, 0),
            "nodes_rss_bytes": h1["nodes_rss"],
            "kernel_slab_per_charge_point_bytes": per(h1["slab"] - empty["slab"], n, 0),
            "kernel_tcp_mem_per_charge_point_bytes": per(h1["tcp_mem"] - empty["tcp_mem"], n, 0),
            "kernel_note": "both ends of every connection are on this machine (loopback): the "
            "kernel figures cover the client's socket too; Slab also moves with whatever else "
            "runs on the machine",
            "redis_used_memory_per_claim_bytes": per(
                h1["redis_used_memory"] - empty["redis_used_memory"], n, 0
            ),
            "redis_rss_per_claim_bytes": per(h1["redis_rss"] - empty["redis_rss"], n, 0),
            "redis_commands_per_s": round((h1["redis_commands"] - h0["redis_commands"]) / wall, 1),
            "redis_commands_per_s_per_claim": per(
                (h1["redis_commands"] - h0["redis_commands"]) / wall, n, 5
            ),
            "nodes_cpu_percent": cpu("nodes_ticks"),
            "redis_cpu_percent": cpu("redis_ticks"),
            "load_cpu_percent": cpu("load_ticks"),
            # Redis's main thread: seconds it ran, and seconds it was runnable but waited
            # for a CPU (/proc/PID/schedstat), from the nodes' start to the hold's end.
            "redis_ran_s": round((h1.get("redis_run_ns", 0) - up.get("redis_run_ns", 0)) / 1e9, 1),
            "redis_waited_for_cpu_s": round(
                (h1.get("redis_wait_ns", 0) - up.get("redis_wait_ns", 0)) / 1e9, 1
            ),
            "claims": fig.get("claims_after_hold"),
            "commands_other_node": read(os.path.join(out, "commands-hold.json")),
        }

    # The storm.
    kill_t = fig.get("kill_t")
    watch = lines(os.path.join(out, "watch-storm.jsonl"))
    storm = {
        "displaced": fig.get("displaced_listed"),
        "dropped": counters.get("dropped", 0),
        "rebooted": counters.get("rebooted", 0),
        "not_back": counters.get("not_back", 0),
        "boot_pending": counters.get("boot_pending", 0),
        "all_back_after_s": held.get("all_back_after_s"),
        "commands_not_displaced": read(os.path.join(out, "commands-storm.json")),
    }
    back = held.get("latency", {}).get("reconnect")
    if back:
        storm["booted_again_s"] = {
            "p50": round(back["p50_us"] / 1e6, 2),
            "p99": round(back["p99_us"] / 1e6, 2),
            "max": round(back["max_us"] / 1e6, 2),
        }
    if watch and kill_t:
        def total(line, key):
            return sum(v.get(key, 0) for k, v in line.items() if k != "t")

        before = [w for w in watch if w["t"] <= kill_t]
        base = total(before[-1], "ocpp_charge_points_connected") if before else None
        deferred0 = total(watch[0], "ocpp_boots_deferred_total")
        storm["pending_answers_survivors"] = int(
            total(watch[-1], "ocpp_boots_deferred_total") - deferred0
        )
        if base is not None and fig.get("displaced_listed"):
            d = fig["displaced_listed"]
            series = [
                (w["t"], total(w, "ocpp_charge_points_connected") - base)
                for w in watch
                if w["t"] > kill_t
            ]
            storm["connected_again_s"] = {
                f"{int(q * 100)}%": first_reaching(series, q * d, kill_t)
                for q in (0.5, 0.99, 1.0)
            }
            storm["timeline"] = [[round(t - kill_t, 2), v] for t, v in series]
    result["storm"] = storm

    # Redis restarted empty.
    keys = lines(os.path.join(out, "redis-keys.jsonl"))
    up_t = fig.get("redis_up_t")
    redis = {
        "claims_at_end": fig.get("claims_after_redis"),
        "all_claims_back_s": round(fig["redis_claims_back_t"] - up_t, 2)
        if up_t and "redis_claims_back_t" in fig
        else None,
        "commands_during": read(os.path.join(out, "commands-redis.json")),
    }
    series = [(k["t"], k["keys"]) for k in keys if "keys" in k]
    if up_t and series:
        redis["keys_back_s"] = {
            f"{int(q * 100)}%": first_reaching(series, q * n, up_t) for q in (0.5, 0.99, 1.0)
        }
        redis["timeline"] = [[round(t - up_t, 2), v] for t, v in series]
    result["redis_restart"] = redis

    lost = n - counters.get("open_at_end", 0)
    checks = {
        "no charge point lost (all booted and connected at the end)": lost == 0,
        "every connect booted": connect.get("failed") == 0,
        "every displaced charge point dropped and booted again": storm["dropped"]
        == storm["displaced"]
        and storm["rebooted"] == storm["dropped"]
        and storm["not_back"] == 0,
        "every claim back in Redis after its restart": fig.get("claims_after_redis") == n,
        "ocpp-load exited 0": fig.get("load_rc") == 0,
    }
    result["lost"] = lost
    result["checks"] = checks
    result["all_ok"] = all(checks.values())
    with open(os.path.join(out, "million.json"), "w") as f:
        json.dump(result, f, indent=1)

    hold = result.get("hold", {})
    c = hold.get("commands_other_node", {})
    cs = storm["commands_not_displaced"]
    cr = redis["commands_during"]
    ms = lambda us: "-" if us is None else f"{us / 1000:.1f} ms"
    print(f"# {n:,} charge points on {fig.get('nodes')} mio-server nodes, one Redis\n")
    print(f"- connect: {result['connect']}")
    print(
        f"- hold {hold.get('seconds')} s, Heartbeat every {fig.get('heartbeat_s')} s: nodes RSS "
        f"{hold.get('nodes_rss_per_charge_point_bytes')} B per charge point, kernel Slab "
        f"{hold.get('kernel_slab_per_charge_point_bytes')} B and TCP buffers "
        f"{hold.get('kernel_tcp_mem_per_charge_point_bytes')} B per charge point (both ends), "
        f"Redis used_memory {hold.get('redis_used_memory_per_claim_bytes')} B per claim, "
        f"{hold.get('redis_commands_per_s')} Redis commands/s "
        f"({hold.get('redis_commands_per_s_per_claim')} per claim); CPU nodes "
        f"{hold.get('nodes_cpu_percent')} %, Redis {hold.get('redis_cpu_percent')} %, "
        f"ocpp-load {hold.get('load_cpu_percent')} %; Redis's thread from the start to the hold's "
        f"end ran {hold.get('redis_ran_s')} s and waited {hold.get('redis_waited_for_cpu_s')} s "
        f"for a CPU"
    )
    print(
        f"- commands through another node: {c.get('ok')} of {c.get('commands')} answered, "
        f"p50 {ms(c.get('p50_us'))}, p99 {ms(c.get('p99_us'))}"
    )
    print(
        f"- storm (one node killed): {storm['displaced']} displaced, {storm['dropped']} dropped, "
        f"{storm['rebooted']} booted again, booted again after (p50/p99/max) "
        f"{storm.get('booted_again_s')}, connected again on the survivors "
        f"{storm.get('connected_again_s')}, Pending answers "
        f"{storm.get('pending_answers_survivors')}; commands to not-displaced ones: "
        f"{cs.get('ok')} of {cs.get('commands')} answered, p99 {ms(cs.get('p99_us'))}"
    )
    print(
        f"- Redis restarted empty: every claim back after {redis['all_claims_back_s']} s "
        f"(keys {redis.get('keys_back_s')}), {redis['claims_at_end']} claims; commands "
        f"meanwhile: {cr.get('ok')} of {cr.get('commands')} answered "
        f"({cr.get('statuses')}), p99 {ms(cr.get('p99_us'))}"
    )
    for what, ok in checks.items():
        print(f"- {'ok' if ok else 'FAILED'}: {what}")
    plot(out, result)
    return 0 if result["all_ok"] else 1


def plot(out, result):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("\n(matplotlib missing: no plot)", file=sys.stderr)
        return
    storm, redis = result["storm"], result["redis_restart"]
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.5))
    if storm.get("timeline"):
        a.plot([p[0] for p in storm["timeline"]], [p[1] for p in storm["timeline"]])
    a.set_xlabel("s since the node was killed")
    a.set_ylabel("charge points connected again on the others")
    a.set_title(f"Storm: {storm.get('displaced')} displaced")
    a.grid(True, alpha=0.3)
    if redis.get("timeline"):
        b.plot([p[0] for p in redis["timeline"]], [p[1] for p in redis["timeline"]])
    b.set_xlabel("s since Redis was started again (empty)")
    b.set_ylabel("keys in Redis")
    b.set_title("Claims made again by the refresh rounds")
    b.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "million.svg"))
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
