"""The crash test of the reference CSMS's durability (issue 40): charge points run transactions
while the CSMS is killed and its database goes away; at the end the database must hold every
transaction event the CSMS acknowledged, and none it refused.

Run through scripts/crash-test.sh (which builds the servers and installs the `ocpp` package):

    python3 scripts/crash_test/harness.py --server-bin target/release/mio-server \
        --db sqlite|postgres --stations 60 --seconds 60 --out DIR

One run:
1. The database: a SQLite file in DIR, or a private PostgreSQL cluster (initdb in a temporary
   directory, a free loopback port; processes.py).
2. The CSMS (`--listen`, `--admin` on free loopback ports, `--database URL`).
3. N charge points (stations.py), 1.6 and 2.0.1 half and half, run transactions back to back
   for `--seconds`, each keeping its ledger in DIR/ledger/.
4. Meanwhile the faults, in a cycle from second 6 until 3 s before the end:
   - an outage of the database for `--outage-seconds` (PostgreSQL: `pg_ctl stop -m fast`, then
     start; SQLite: another process holds the write lock); in every second outage the CSMS is
     also killed two thirds of the way through (and started again at once: on PostgreSQL it
     cannot start until the database is back, and is started again until it does);
   - 3 s after the outage a SIGKILL of the CSMS and an immediate restart on the same database;
   - 5 s later another kill and restart; 5 s later the next cycle (pauses plus 0-2 s at random).
   A CSMS that exits by itself is restarted too (and the exit recorded as a fault).
   Every fault is a line of DIR/faults.jsonl.
5. After `--seconds` no transaction starts; the stations finish theirs (at most `--drain-seconds`).
6. The CSMS is stopped cleanly (SIGTERM), its `transactions` table read directly
   (DIR/rows.jsonl) and reconciled with the ledger (reconcile.py). The summary is printed and
   written to DIR/summary.json; the exit status is 1 if anything acknowledged was lost, anything
   refused kept, an id given twice or an outage not refused in time.

Only processes this harness started are signalled, by their PID; everything is on 127.0.0.1.
"""

import argparse
import asyncio
import json
import logging
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from processes import (  # noqa: E402
    CsmsServer, PostgresCluster, hold_sqlite_lock, now_ms, read_rows_postgres, read_rows_sqlite,
)
from reconcile import read_jsonl, read_ledger, reconcile, report  # noqa: E402
from stations import make_stations  # noqa: E402

WARMUP_S = 6  # before the first fault
AFTER_OUTAGE_S = 3  # from an outage's end to the kill that follows it
BETWEEN_KILLS_S = 5
QUIET_END_S = 3  # no fault begins later than this before the end


class Faults:
    """Breaks the CSMS and its database on a schedule; records each fault."""

    def __init__(self, server, db, cluster, sqlite_path, outage_s, path, rng):
        self.server, self.db, self.cluster = server, db, cluster
        self.sqlite_path, self.outage_s = sqlite_path, outage_s
        self.file = open(path, "a", encoding="utf-8")
        self.rng = rng
        self.restarting = False  # our kill and restart in progress: the watchdog keeps out

    def record(self, **fault):
        self.file.write(json.dumps(fault) + "\n")
        self.file.flush()
        print(f"  fault: {fault}", flush=True)

    async def outage(self, with_kill=False):
        if with_kill:
            async def kill_later():
                await asyncio.sleep(self.outage_s * 2 / 3)
                await self.kill(during_outage=True)

            await asyncio.gather(self.outage(), kill_later())
            return
        if self.db == "postgres":
            begin = now_ms()
            await asyncio.to_thread(self.cluster.stop, "fast")
            down = now_ms()
            await asyncio.sleep(self.outage_s)
            restart = now_ms()
            await asyncio.to_thread(self.cluster.start)
            self.record(kind="outage", db="postgres", begin_ms=begin, down_ms=down, restart_ms=restart,
                        end_ms=now_ms())
        else:
            begin, end = await asyncio.to_thread(hold_sqlite_lock, self.sqlite_path, self.outage_s)
            self.record(kind="outage", db="sqlite", begin_ms=begin, down_ms=begin, restart_ms=end, end_ms=end)

    async def kill(self, during_outage=False):
        self.restarting = True
        try:
            at = now_ms()
            self.server.kill()
            await asyncio.to_thread(self.server.start)
            self.record(kind="kill", at_ms=at, listening_ms=now_ms(), during_outage=during_outage)
        finally:
            self.restarting = False

    async def run(self, end):
        """The fault cycle until `end` (a time.monotonic() deadline)."""
        await asyncio.sleep(WARMUP_S)
        outages = 0
        while True:
            steps = [
                (lambda: self.outage(with_kill=outages % 2 == 1), self.outage_s + 2, AFTER_OUTAGE_S),
                (self.kill, 1, BETWEEN_KILLS_S),
                (self.kill, 1, BETWEEN_KILLS_S),
            ]
            for step, takes, pause in steps:
                if time.monotonic() + takes > end - QUIET_END_S:
                    return
                await step()
                await asyncio.sleep(pause + self.rng.random() * 2)
            outages += 1

    async def watchdog(self):
        """Restarts a CSMS that exited by itself (recorded: it is a finding)."""
        while True:
            await asyncio.sleep(0.5)
            if not self.restarting and not self.server.alive():
                code = self.server.process.returncode
                self.restarting = True
                try:
                    await asyncio.to_thread(self.server.start)
                finally:
                    self.restarting = False
                self.record(kind="server_exit", exit_code=code, at_ms=now_ms())


async def drive(args, server, faults, ledger_dir):
    stop_new = asyncio.Event()
    stations = make_stations(args.stations, server.url, ledger_dir, stop_new, args.seed)
    tasks = [asyncio.create_task(s.run()) for s in stations]
    end = time.monotonic() + args.seconds
    fault_task = asyncio.create_task(faults.run(end))
    watchdog = asyncio.create_task(faults.watchdog())
    await asyncio.sleep(args.seconds)
    print(f"crash test: {args.seconds} s up; no new transactions, the stations finish theirs", flush=True)
    stop_new.set()
    await fault_task
    _, pending = await asyncio.wait(tasks, timeout=args.drain_seconds)
    for task in pending:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    watchdog.cancel()
    await asyncio.gather(watchdog, return_exceptions=True)
    if pending:
        print(f"crash test: {len(pending)} stations did not finish within {args.drain_seconds} s", flush=True)
    return len(pending)


def main():
    parser = argparse.ArgumentParser(description="Crash test of the reference CSMS (see the file's header).")
    parser.add_argument("--server-bin", required=True, help="mio-server or tokio-server")
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--stations", type=int, default=60)
    parser.add_argument("--seconds", type=float, default=90, help="how long transactions start")
    parser.add_argument("--outage-seconds", type=float, default=10)
    parser.add_argument("--drain-seconds", type=float, default=60, help="to finish the open transactions")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", required=True, help="the run's directory (ledger, logs, summary)")
    parser.add_argument("--label", default="", help="words kept in summary.json (commit, ...)")
    parser.add_argument("--keep-db", action="store_true", help="keep the PostgreSQL cluster's directory")
    args = parser.parse_args()
    # The ocpp library logs every CALLERROR it receives; the ledger has them.
    logging.basicConfig(level=logging.CRITICAL)

    ledger_dir = os.path.join(args.out, "ledger")
    os.makedirs(ledger_dir, exist_ok=True)
    name = os.path.basename(args.server_bin)
    cluster = None
    sqlite_path = os.path.abspath(os.path.join(args.out, "csms.sqlite3"))
    if args.db == "postgres":
        print("crash test: starting a private PostgreSQL", flush=True)
        cluster = PostgresCluster()
        url = cluster.url
    else:
        url = f"sqlite://{sqlite_path}"
    server = CsmsServer(args.server_bin, name, url, args.out)
    try:
        server.start()
        print(f"crash test: {name} on {server.url}, database {url}, {args.stations} stations, "
              f"{args.seconds:g} s, run directory {args.out}", flush=True)
        faults = Faults(server, args.db, cluster, sqlite_path, args.outage_seconds,
                        os.path.join(args.out, "faults.jsonl"), random.Random(args.seed))
        unfinished = asyncio.run(drive(args, server, faults, ledger_dir))
        exit_code = server.stop()
        print(f"crash test: {name} stopped (exit {exit_code}); reading the database", flush=True)
        rows = read_rows_postgres(cluster) if cluster else read_rows_sqlite(sqlite_path)
        with open(os.path.join(args.out, "rows.jsonl"), "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
    finally:
        server.stop()
        if cluster:
            if args.keep_db:
                print(f"crash test: PostgreSQL kept in {cluster.dir} (port {cluster.port})")
            else:
                cluster.remove()

    summary = reconcile(read_ledger(ledger_dir), read_jsonl(os.path.join(args.out, "faults.jsonl")), rows)
    summary.update(server=name, db=args.db, seconds=args.seconds, label=args.label,
                   server_exit_code=exit_code, stations_unfinished=unfinished)
    with open(os.path.join(args.out, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)
    print(f"crash test: {name} on {args.db}, {args.seconds:g} s, {args.label}")
    report(summary)
    sys.exit(0 if summary["ok"] else 1)


if __name__ == "__main__":
    main()
