#!/usr/bin/env python3
"""bench/million.sh's probes of a cluster of mio-server nodes, through their admin APIs.

  million_probe.py holders OUT.json PORT:NODE...
      which node holds which charge point (GET /node/chargepoints on every node: its own
      connected ones): {"<node>": [identity, ...], ...}
  million_probe.py commands OUT.json HOLDERS.json SAMPLES STOP_FILE MAX_S EXCLUDE PORT:NODE...
      commands `POST /chargepoints/ID/call/DataTransfer`, one at a time, each to a random
      charge point of HOLDERS.json held by a node other than EXCLUDE (a node; - = none) and
      sent through the admin API of yet another node (the command crosses Redis to the holder
      and back): SAMPLES of them, or (SAMPLES = 0) until STOP_FILE exists or MAX_S passed.
      Writes p50, p90, p99, max (microseconds) of the answered (HTTP 200) and the count of
      each HTTP status (0 = no answer at all).
  million_probe.py watch OUT.jsonl STOP_FILE MAX_S PORT...
      every 0.5 s until STOP_FILE exists or MAX_S passed: one line of
      {"t": unix seconds, "<port>": {metric: value}} with each node's
      ocpp_charge_points_connected, ocpp_sockets_open, ocpp_boots_waiting and
      ocpp_boots_deferred_total (a node that does not answer is left out).

Loopback only, one HTTP connection per request, every request with a timeout.
"""

import http.client
import json
import os
import random
import sys
import time

BODY = json.dumps({"vendorId": "bench", "messageId": "ts", "data": "1:0"})
METRICS = (
    "ocpp_charge_points_connected",
    "ocpp_sockets_open",
    "ocpp_boots_waiting",
    "ocpp_boots_deferred_total",
)


def request(port, method, path, body=None, timeout=30):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        headers = {"Content-Type": "application/json"} if body else {}
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def nodes(args):
    """PORT:NODE arguments: [(port, node)]."""
    return [(int(a.split(":", 1)[0]), a.split(":", 1)[1]) for a in args]


def holders(out, ports):
    """Which node holds each charge point: each node's own connected ones
    (`GET /node/chargepoints`, from the node's memory, never from Redis)."""
    holder = {}
    listed_nodes = 0
    for port, node in ports:
        # A node busy with a storm can be slow to answer: ask again, and leave out a node that
        # never answers (its charge points are then not sampled).
        for attempt in range(5):
            status, body = request(port, "GET", "/node/chargepoints", timeout=120)
            if status == 200:
                break
            time.sleep(2)
        if status != 200:
            print(f"million_probe: GET /node/chargepoints on {port}: HTTP {status}; {node} left out",
                  file=sys.stderr)
            continue
        listed_nodes += 1
        for cp in json.loads(body):
            if cp.get("connected"):
                holder[cp["identity"]] = node
    if listed_nodes == 0:
        raise SystemExit("million_probe: no node listed its charge points")
    listing = {node: [] for _, node in ports}
    for identity, node in holder.items():
        listing.setdefault(node, []).append(identity)
    with open(out, "w") as f:
        json.dump(listing, f)
    print(json.dumps({node: len(ids) for node, ids in listing.items()}))


def command(port, identity):
    """One command: (HTTP status, microseconds); status 0 when no answer came."""
    start = time.perf_counter_ns()
    try:
        status, _ = request(
            port, "POST", f"/chargepoints/{identity}/call/DataTransfer", BODY, timeout=35
        )
    except OSError:
        status = 0
    return status, (time.perf_counter_ns() - start) / 1000.0


def quantile(times, p):
    return round(times[min(len(times) - 1, int(p * len(times)))], 1) if times else None


def commands(out, holders_file, samples, stop_file, max_s, exclude, ports):
    with open(holders_file) as f:
        listing = json.load(f)
    port_of = {node: port for port, node in ports}
    alive = [port for port, node in ports if node != exclude]
    pool = [
        (cp, port_of[node])
        for node, ids in listing.items()
        if node != exclude and node in port_of
        for cp in ids
    ]
    if not pool or len(alive) < 2:
        raise SystemExit("million_probe: need charge points and two nodes besides EXCLUDE")
    rng = random.Random(11)
    times, statuses = [], {}
    started = time.time()
    while True:
        if samples and sum(statuses.values()) >= samples:
            break
        if not samples and (os.path.exists(stop_file) or time.time() - started > max_s):
            break
        identity, holder = rng.choice(pool)
        port = rng.choice([p for p in alive if p != holder])
        status, us = command(port, identity)
        statuses[str(status)] = statuses.get(str(status), 0) + 1
        if status == 200:
            times.append(us)
        if not samples:
            time.sleep(0.01)
    times.sort()
    result = {
        "commands": sum(statuses.values()),
        "ok": len(times),
        "statuses": statuses,
        "seconds": round(time.time() - started, 1),
        "p50_us": quantile(times, 0.50),
        "p90_us": quantile(times, 0.90),
        "p99_us": quantile(times, 0.99),
        "max_us": round(times[-1], 1) if times else None,
    }
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result))


def metrics(port):
    try:
        status, body = request(port, "GET", "/metrics", timeout=2)
    except OSError:
        return None
    if status != 200:
        return None
    values = {}
    for line in body.decode().splitlines():
        name, _, value = line.partition(" ")
        if name in METRICS:
            values[name] = float(value)
    return values


def watch(out, stop_file, max_s, ports):
    started = time.time()
    with open(out, "a") as f:
        while not os.path.exists(stop_file) and time.time() - started < max_s:
            tick = time.time()
            line = {"t": round(tick, 3)}
            for port in ports:
                values = metrics(port)
                if values is not None:
                    line[str(port)] = values
            f.write(json.dumps(line) + "\n")
            f.flush()
            time.sleep(max(0.0, 0.5 - (time.time() - tick)))


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "holders":
        holders(args[0], nodes(args[1:]))
    elif mode == "commands":
        out, holders_file, samples, stop_file, max_s, exclude = args[:6]
        commands(
            out,
            holders_file,
            int(samples),
            stop_file,
            float(max_s),
            exclude,
            nodes(args[6:]),
        )
    elif mode == "watch":
        watch(args[0], args[1], float(args[2]), [int(p) for p in args[3:]])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
