"""Reconciles the stations' ledger with the CSMS's database after a crash test, and measures the
outages: "nothing acknowledged is lost, nothing refused is kept".

Part of the crash test of the reference CSMS (scripts/crash-test.sh, issue 40); the harness
calls `reconcile`, and this file runs on its own on a kept run directory:

    python3 scripts/crash_test/reconcile.py RUN_DIR [--sqlite FILE | --rows ROWS.jsonl]

(RUN_DIR holds ledger/*.jsonl, faults.jsonl and rows.jsonl, the `transactions` table as the
harness read it.)

The checks, on the `transactions` rows (whatever columns the migrations made; those used:
identity, id, id_tag, started_ms, ended_ms, meter_start_wh, meter_last_wh):

- lost start: an acknowledged start has no row (1.6: identity and the id the CSMS gave; 2.0.1:
  identity and transactionId);
- lost stop: an acknowledged stop (StopTransaction, Ended) whose row is missing or not ended;
- start overwritten: the row of an acknowledged start was started later than its
  acknowledgement (+ START_SLACK_MS: the row was made again, e.g. by the stop of a transaction
  the CSMS no longer knew), or its meter_start_wh is not the meterStart sent (1.6) or the Started's
  meterValue (2.0.1 stations that send one);
- stop data wrong: an acknowledged stop's row has another meter_last_wh than the stop's reading;
- duplicate id: a 1.6 transactionId given to two acknowledged starts, or held by rows of two
  stations;
- refused but kept: a row no acknowledgement explains (1.6: an id never acknowledged; 2.0.1: a
  transaction whose Started was never acknowledged, or ended though its Ended never was) whose
  start time falls in the window of a refused attempt (sent .. CALLERROR, the CALLERROR may come
  after the station's timeout) of that transaction (its idTag / transactionId). A row that falls
  in the window of an attempt that was not answered (connection dropped by a kill, or no answer
  at all) is "ambiguous": the CSMS may have committed it and crashed before answering, which
  OCPP 1.6 cannot tell apart; one whose CALLRESULT came after the station's timeout is
  "acknowledged late" (the station had sent the start again); both reported, not failures. A
  row that fits no attempt is "unexplained" (a failure).
- open rows left: rows still open at the end that no unfinished transaction of the ledger
  explains (the stations finish every transaction before the end); reported, each also falls
  in one of the kinds above.

Outage measurements (faults.jsonl: {"kind": "outage", "begin_ms", "down_ms", "restart_ms",
"end_ms"}: the fault began, the database was away, it was being brought back, it was back; and
{"kind": "kill", "at_ms"}): the time from the outage's beginning to the first CALLERROR; for
starts and stops sent during an outage, how they were answered and how long a refusal took (a
failure beyond REFUSAL_BOUND_MS, or if an outage got no CALLERROR at all); a CALLRESULT sent and
received while no commit could succeed (down_ms .. restart_ms) is an acknowledgement without a
commit (a failure); the latency of MeterValues and TransactionEvent Updated (answers that need
no commit) sent during outages, p50/p99/max, and outside them for comparison.
"""

import argparse
import glob
import json
import os
import sys
from collections import defaultdict

SLACK_MS = 2000  # slack of an attempt's window (sent .. answered) to hold a row's time stamp
START_SLACK_MS = 250  # a row's started_ms may be this much later than its start's acknowledgement
REFUSAL_BOUND_MS = 3500  # the documented "at most 3 s" to a CALLERROR, with scheduling slack


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def read_ledger(ledger_dir):
    """The attempts of every station; a late answer (its own line) is folded into the attempt
    that timed out: `late` ("ack"/"error"), `late_ms`, `late_tx_id`."""
    attempts, late = [], []
    for path in sorted(glob.glob(os.path.join(ledger_dir, "*.jsonl"))):
        for line in read_jsonl(path):
            (late if line["outcome"].startswith("late_") else attempts).append(line)
    index = {(a["identity"], a["key"], a["kind"], a["attempt"]): a for a in attempts}
    for line in late:
        attempt = index.get((line["identity"], line["key"], line["kind"], line["attempt"]))
        if attempt:
            attempt.update(late=line["outcome"][5:], late_ms=line["answered_ms"], late_tx_id=line["tx_id"])
    return attempts


def percentile(values, p):
    """Nearest-rank percentile of a list (None when empty)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))
    return ordered[int(rank) - 1]


class Logical:
    """One transaction as the ledger tells it: its attempts and acknowledgements."""

    def __init__(self, identity, version, key):
        self.identity, self.version, self.key = identity, version, key
        self.starts, self.stops = [], []  # attempts (ledger lines)
        self.start_ack = self.stop_ack = None

    @property
    def row_id(self):
        """The row's `id`: what the CSMS gave (1.6) or the transactionId (2.0.1)."""
        if self.version == "1.6":
            return str(self.start_ack["tx_id"]) if self.start_ack else None
        return self.key



def attempt_at(attempts, at_ms):
    """The last attempt whose window (sent .. answered; sent .. sent + 10 s when not answered)
    holds `at_ms`, with slack: the attempt that made a row stamped `at_ms`."""
    found = None
    for attempt in attempts:
        end = attempt["answered_ms"] or attempt.get("late_ms") or attempt["sent_ms"] + 10_000
        if attempt["sent_ms"] - SLACK_MS <= at_ms <= end + SLACK_MS:
            found = attempt
    return found


def reconcile(ledger, faults, rows):
    """The checks and measurements; returns a summary dict (see `report`)."""
    logical = {}
    for line in ledger:
        if line["kind"] == "meter":
            continue
        key = (line["identity"], line["key"])
        t = logical.setdefault(key, Logical(line["identity"], line["version"], line["key"]))
        if line["kind"] == "start":
            t.starts.append(line)
            if line["outcome"] == "ack":
                t.start_ack = line
        else:
            t.stops.append(line)
            if line["outcome"] == "ack":
                t.stop_ack = line
    versions = {line["identity"]: line["version"] for line in ledger}
    rows_by_id = {(r["identity"], str(r["id"])): r for r in rows}
    problems = defaultdict(list)
    lost_keys = set()  # the transactions with a lost or altered acknowledgement

    def lost(kind, t, text):
        problems[kind].append(text)
        lost_keys.add((t.identity, t.key))

    # (a), (b): every acknowledgement is in the database as it was acknowledged.
    for t in logical.values():
        if not t.start_ack:
            continue
        row = rows_by_id.get((t.identity, t.row_id))
        if row is None:
            lost("lost_start", t, f"{t.identity} {t.key} id {t.row_id}: no row")
            if t.stop_ack:
                lost("lost_stop", t, f"{t.identity} {t.key} id {t.row_id}: no row")
            continue
        if row["started_ms"] > t.start_ack["answered_ms"] + START_SLACK_MS:
            lost(
                "start_overwritten", t,
                f"{t.identity} {t.key} id {t.row_id}: started_ms {row['started_ms']} is "
                f"{row['started_ms'] - t.start_ack['answered_ms']} ms after the start's acknowledgement"
            )
        sent_meter = t.start_ack["meter_wh"]
        if sent_meter is not None and row["meter_start_wh"] != sent_meter:
            lost(
                "start_overwritten", t,
                f"{t.identity} {t.key} id {t.row_id}: meter_start_wh {row['meter_start_wh']}, "
                f"sent {sent_meter}"
            )
        if t.stop_ack:
            if row["ended_ms"] is None:
                lost("lost_stop", t, f"{t.identity} {t.key} id {t.row_id}: row not ended")
            elif row["meter_last_wh"] != t.stop_ack["meter_wh"]:
                lost(
                    "stop_data_wrong", t,
                    f"{t.identity} {t.key} id {t.row_id}: meter_last_wh {row['meter_last_wh']}, "
                    f"the acknowledged stop sent {t.stop_ack['meter_wh']}"
                )

    # (d): a 1.6 id given twice, or held by two stations' rows.
    given = defaultdict(list)
    for t in logical.values():
        if t.version == "1.6" and t.start_ack:
            given[t.row_id].append(f"{t.identity} {t.key}")
    for tx_id, holders in given.items():
        if len(holders) > 1:
            problems["duplicate_id"].append(f"id {tx_id} given to {', '.join(holders)}")
    held = defaultdict(set)
    for r in rows:
        if versions.get(r["identity"]) == "1.6":
            held[str(r["id"])].add(r["identity"])
    for tx_id, identities in held.items():
        if len(identities) > 1 and len(given.get(tx_id, [])) <= 1:
            problems["duplicate_id"].append(f"id {tx_id} in rows of {', '.join(sorted(identities))}")

    # (c): rows no acknowledgement explains.
    explained = {(t.identity, t.row_id) for t in logical.values() if t.start_ack}
    late_acked = {(t.identity, str(a["late_tx_id"] if t.version == "1.6" else t.key))
                  for t in logical.values() for a in t.starts if a.get("late") == "ack"}
    by_key = {(t.identity, t.key): t for t in logical.values()}
    unfinished = {(t.identity, t.row_id) for t in logical.values() if t.start_ack and not t.stop_ack}
    ambiguous, late_rows = [], []

    def refused(attempt):
        return attempt["outcome"] == "error" or attempt.get("late") == "error"

    for r in rows:
        identity, row_id = r["identity"], str(r["id"])
        key = r.get("id_tag") if versions.get(identity) == "1.6" else row_id
        t = by_key.get((identity, key))
        if (identity, row_id) in explained:
            # 2.0.1 (and 1.6) stops: ended although the stop was only refused.
            if r["ended_ms"] is not None and t and not t.stop_ack and t.stops:
                attempt = attempt_at(t.stops, r["ended_ms"])
                label = f"{identity} {key} id {row_id}: ended, its stop never acknowledged"
                if attempt and refused(attempt):
                    problems["refused_kept"].append(f"{label} (refused attempt {attempt['attempt']})")
                elif attempt and attempt.get("late") == "ack":
                    late_rows.append(f"{label} (attempt {attempt['attempt']} acknowledged late)")
                elif attempt:
                    ambiguous.append(f"{label} (attempt {attempt['attempt']} {attempt['outcome']})")
                else:
                    problems["unexplained_row"].append(label)
            continue
        if (identity, row_id) in late_acked:
            late_rows.append(f"{identity} id {row_id}: a start acknowledged after the station gave up on it")
            continue
        label = f"{identity} id {row_id} (idTag/transactionId {key}, started_ms {r['started_ms']}, " \
                f"ended_ms {r['ended_ms']})"
        if versions.get(identity) is None:
            problems["unexplained_row"].append(f"{label}: no such station in the ledger")
            continue
        attempt = attempt_at(t.starts, r["started_ms"]) if t else None
        if attempt is None:
            problems["unexplained_row"].append(f"{label}: fits no attempt")
        elif refused(attempt):
            late = " (answered after the station's timeout)" if attempt.get("late") else ""
            problems["refused_kept"].append(f"{label}: refused attempt {attempt['attempt']}{late}")
        elif attempt["outcome"] == "ack":
            # A 1.6 start acknowledged with another id: this row is a second one.
            problems["refused_kept"].append(f"{label}: a second row of a start acknowledged as id {t.row_id}")
        else:
            ambiguous.append(f"{label}: attempt {attempt['attempt']} {attempt['outcome']}")
    open_orphans = [
        f"{r['identity']} id {r['id']}" for r in rows
        if r["ended_ms"] is None and (r["identity"], str(r["id"])) not in unfinished
    ]

    # Outages and kills.
    outages = [f for f in faults if f["kind"] == "outage"]
    kills = [f for f in faults if f["kind"] == "kill"]
    server_exits = [f for f in faults if f["kind"] == "server_exit"]
    attempts = ledger
    first_errors = []
    for o in outages:
        errors = [a["answered_ms"] for a in attempts
                  if a["outcome"] == "error" and a["answered_ms"] and a["answered_ms"] >= o["begin_ms"]
                  and a["sent_ms"] <= o["end_ms"]]
        first_errors.append(min(errors) - o["begin_ms"] if errors else None)

    def during(a):
        return any(o["begin_ms"] <= a["sent_ms"] and (a["answered_ms"] or a["sent_ms"]) <= o["end_ms"]
                   for o in outages)

    committing = [a for a in attempts if a["kind"] != "meter" and during(a)]

    def no_commit_possible(a):
        """Sent and answered while the database was surely away: PostgreSQL stopped and not yet
        being started again, SQLite's lock held."""
        return any(o["down_ms"] <= a["sent_ms"] and a["answered_ms"] <= o.get("restart_ms", o["end_ms"])
                   for o in outages)

    acked_in_outage = [
        f"{a['identity']} {a['kind']} {a['key']} attempt {a['attempt']}"
        for a in committing if a["outcome"] == "ack" and no_commit_possible(a)
    ]
    error_latency = [a["answered_ms"] - a["sent_ms"] for a in committing if a["outcome"] == "error"]
    meters = [a for a in attempts if a["kind"] == "meter" and a["outcome"] == "ack"]
    meter_in = [a["answered_ms"] - a["sent_ms"] for a in meters if during(a)]
    meter_out = [a["answered_ms"] - a["sent_ms"] for a in meters if not during(a)]
    # The documented bound is per CALL: a start or stop sent while the database is away is
    # refused within ~3 s. An outage that no CALLERROR answered at all fails too.
    slow = [e for e in error_latency if e > REFUSAL_BOUND_MS] + [e for e in first_errors if e is None]

    def stats(values):
        return {"count": len(values), "p50_ms": percentile(values, 50), "p99_ms": percentile(values, 99),
                "max_ms": max(values) if values else None}

    outcome_count = defaultdict(int)
    for a in attempts:
        outcome_count[f"{a['kind']}_{a['outcome']}"] += 1
    kept = sum(len(problems[k]) for k in ("refused_kept", "unexplained_row"))
    failed = lost_keys or kept or problems["duplicate_id"] or slow or server_exits or acked_in_outage
    return {
        "stations": len(versions),
        "transactions_begun": len(logical),
        "acknowledged_starts": sum(1 for t in logical.values() if t.start_ack),
        "acknowledged_stops": sum(1 for t in logical.values() if t.stop_ack),
        "refused_attempts": sum(1 for a in attempts if refused(a) and a["kind"] != "meter"),
        "unanswered_attempts": sum(
            1 for a in attempts if a["outcome"] in ("timeout", "dropped") and a["kind"] != "meter"
        ),
        "answered_after_timeout": sum(1 for a in attempts if a.get("late")),
        "attempts": dict(sorted(outcome_count.items())),
        "rows": len(rows),
        "kills": len(kills),
        "outages": len(outages),
        "server_exits": len(server_exits),
        "lost": len(lost_keys),
        "kept": kept,
        "duplicates": len(problems["duplicate_id"]),
        "ambiguous": ambiguous,
        "acknowledged_late": late_rows,
        "open_rows_left": open_orphans,
        "problems": {k: v for k, v in problems.items() if v},
        "first_error_after_outage_ms": first_errors,
        "refusal_bound_ms": REFUSAL_BOUND_MS,
        "refusal_too_slow": len(slow),
        "starts_stops_during_outages": {
            "sent": len(committing),
            "refused": len(error_latency),
            "acknowledged": len(acked_in_outage),
            "unanswered": sum(1 for a in committing if a["outcome"] in ("timeout", "dropped")),
            "refusal_latency": stats(error_latency),
        },
        "acknowledged_during_outage": acked_in_outage,
        "no_commit_latency_during_outages": stats(meter_in),
        "no_commit_latency_otherwise": stats(meter_out),
        "ok": not failed,
    }


def report(summary, out=sys.stdout, detail=10):
    """The summary as text; at most `detail` lines of each kind of problem."""
    s = summary

    def ms(v):
        return "-" if v is None else f"{v / 1000:.2f} s"

    def lat(st):
        return f"n={st['count']} p50 {ms(st['p50_ms'])} p99 {ms(st['p99_ms'])} max {ms(st['max_ms'])}"

    p = lambda *a: print(*a, file=out)  # noqa: E731
    p(f"stations {s['stations']}, transactions begun {s['transactions_begun']}, "
      f"rows in the database {s['rows']}")
    p(f"acknowledged starts {s['acknowledged_starts']}, acknowledged stops {s['acknowledged_stops']}")
    p(f"starts/stops refused (CALLERROR) {s['refused_attempts']}, not answered (timeout, dropped) "
      f"{s['unanswered_attempts']}, of which answered after the station's timeout "
      f"{s['answered_after_timeout']}")
    p(f"attempts by kind and outcome: {s['attempts']}")
    p(f"kills {s['kills']}, outages {s['outages']}, exits of the server on its own {s['server_exits']}")
    firsts = ", ".join(ms(v) for v in s["first_error_after_outage_ms"])
    p(f"first CALLERROR after an outage began: {firsts or '-'}")
    d = s["starts_stops_during_outages"]
    p(f"starts/stops sent during outages: {d['sent']}: refused {d['refused']} ({lat(d['refusal_latency'])}; "
      f"over {ms(s['refusal_bound_ms'])}: {s['refusal_too_slow']}), acknowledged while no commit was possible "
      f"{d['acknowledged']}, not answered {d['unanswered']}")
    p(f"MeterValues / Updated latency during outages: {lat(s['no_commit_latency_during_outages'])}")
    p(f"MeterValues / Updated latency otherwise:      {lat(s['no_commit_latency_otherwise'])}")
    for kind, items in sorted(s["problems"].items()):
        p(f"{kind}: {len(items)}")
        for item in items[:detail]:
            p(f"    {item}")
        if len(items) > detail:
            p(f"    ... {len(items) - detail} more")
    for name in ("acknowledged_during_outage", "acknowledged_late", "ambiguous", "open_rows_left"):
        items = s[name]
        if items:
            p(f"{name}: {len(items)}")
            for item in items[:detail]:
                p(f"    {item}")
    p(f"LOST (or altered) acknowledged transactions: {s['lost']}, KEPT refused rows: {s['kept']}, "
      f"DUPLICATE ids: {s['duplicates']}")
    p("RESULT: " + ("OK" if s["ok"] else "FAIL"))


def main():
    parser = argparse.ArgumentParser(description="Reconcile a crash test's run directory again.")
    parser.add_argument("run_dir")
    parser.add_argument("--sqlite", help="read the rows from this SQLite file instead of RUN_DIR/rows.jsonl")
    parser.add_argument("--rows", help="rows as JSON lines (default RUN_DIR/rows.jsonl)")
    args = parser.parse_args()
    if args.sqlite:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from processes import read_rows_sqlite

        rows = read_rows_sqlite(args.sqlite)
    else:
        rows = read_jsonl(args.rows or os.path.join(args.run_dir, "rows.jsonl"))
    summary = reconcile(read_ledger(os.path.join(args.run_dir, "ledger")),
                        read_jsonl(os.path.join(args.run_dir, "faults.jsonl")), rows)
    report(summary)
    sys.exit(0 if summary["ok"] else 1)


if __name__ == "__main__":
    main()
