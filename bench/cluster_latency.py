#!/usr/bin/env python3
"""Latency of a command through the admin API of a cluster of mio-server nodes.

Usage: cluster_latency.py OUT.json SAMPLES ADMIN_PORT [ADMIN_PORT ...]

Reads which node holds which charge point (GET /chargepoints on every node), then sends
SAMPLES commands `POST /chargepoints/ID/call/DataTransfer` to random charge points twice over:
through the admin API of the node that holds the charge point ("same node") and through the
admin API of another node ("other node": the command crosses Redis to the holder and its
answer comes back the same way). One command at a time, a new HTTP connection each (the same
overhead for both kinds). ocpp-load's charge points answer this DataTransfer with Accepted.

Writes {"same_node": {...}, "other_node": {...}} with p50, p90, p99 and max in microseconds
and the count of each HTTP status; a status other than 200 is a failure and is counted, not
timed.
"""

import http.client
import json
import random
import sys
import time

BODY = json.dumps({"vendorId": "bench", "messageId": "ts", "data": "1:0"})


def get_json(port, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return json.loads(response.read())
    finally:
        conn.close()


def command(port, identity):
    """One command; (HTTP status, microseconds)."""
    start = time.perf_counter_ns()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=35)
    try:
        conn.request(
            "POST",
            f"/chargepoints/{identity}/call/DataTransfer",
            body=BODY,
            headers={"Content-Type": "application/json"},
        )
        response = conn.getresponse()
        response.read()
        status = response.status
    except OSError:
        status = 0
    finally:
        conn.close()
    return status, (time.perf_counter_ns() - start) / 1000.0


def summary(times, statuses):
    times.sort()

    def q(p):
        if not times:
            return None
        return round(times[min(len(times) - 1, int(p * len(times)))], 1)

    return {
        "commands": len(times) + sum(v for k, v in statuses.items() if k != "200"),
        "ok": len(times),
        "statuses": statuses,
        "p50_us": q(0.50),
        "p90_us": q(0.90),
        "p99_us": q(0.99),
        "max_us": round(times[-1], 1) if times else None,
    }


def main():
    out, samples, ports = sys.argv[1], int(sys.argv[2]), [int(p) for p in sys.argv[3:]]
    holders = []  # (identity, index of its node)
    for index, port in enumerate(ports):
        for cp in get_json(port, "/chargepoints"):
            holders.append((cp["identity"], index))
    if not holders or len(ports) < 2:
        raise SystemExit("cluster_latency: need charge points and at least two nodes")
    rng = random.Random(7)
    results = {}
    for kind in ("same_node", "other_node"):
        times, statuses = [], {}
        for _ in range(samples):
            identity, holder = rng.choice(holders)
            if kind == "same_node":
                port = ports[holder]
            else:
                port = ports[rng.choice([i for i in range(len(ports)) if i != holder])]
            status, us = command(port, identity)
            statuses[str(status)] = statuses.get(str(status), 0) + 1
            if status == 200:
                times.append(us)
        results[kind] = summary(times, statuses)
    results["charge_points_listed"] = len(holders)
    with open(out, "w") as f:
        json.dump(results, f, indent=1)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
