"""Smoke test of one benchmark peer (an OCPP 1.6 central system).

python smoke.py ws://127.0.0.1:PORT/ocpp --push-ms 200   # expects DataTransfer pushes
python smoke.py ws://127.0.0.1:PORT/ocpp --push-ms 0     # expects none

Connects 3 charge points with subprotocol ocpp1.6, sends the core 1.6 CALLs, checks every
answer, and checks the push: at least 3 DataTransfer CALLs per charge point, seq 1, 2, 3, ...,
stamps recent, each answered with a CALLRESULT {"status":"Accepted"}. Exit status 0 on success.
"""

import argparse
import asyncio
import datetime
import itertools
import json
import sys
import time

import websockets

CHARGE_POINTS = 3
MIN_PUSHES = 3


class Failure(Exception):
    pass


def check(condition, what):
    if not condition:
        raise Failure(what)


def check_time(value, what):
    check(isinstance(value, str), f"{what}: currentTime is not a string: {value!r}")
    try:
        parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as error:
        raise Failure(f"{what}: currentTime {value!r} is not RFC 3339: {error}")
    check(parsed.tzinfo is not None, f"{what}: currentTime {value!r} has no offset")
    skew = abs(parsed.timestamp() - time.time())
    check(skew < 5, f"{what}: currentTime {value!r} is {skew:.1f} s off")


class ChargePoint:
    def __init__(self, ws, name):
        self.ws = ws
        self.name = name
        self.ids = itertools.count(1)
        self.pending = {}
        self.pushes = []  # (seq, stamp_ns, received_ns)
        self.push_event = asyncio.Event()
        self.errors = []

    async def reader(self):
        async for raw in self.ws:
            received = time.time_ns()
            try:
                frame = json.loads(raw)
            except ValueError:
                self.errors.append(f"not JSON: {raw!r}")
                continue
            if not isinstance(frame, list) or not frame:
                self.errors.append(f"not an OCPP-J frame: {raw!r}")
                continue
            kind = frame[0]
            if kind in (3, 4):
                future = self.pending.pop(frame[1], None)
                if future is None:
                    self.errors.append(f"answer to an unknown id: {raw!r}")
                else:
                    future.set_result(frame)
            elif kind == 2:
                await self.on_call(frame, raw, received)
            else:
                self.errors.append(f"unknown message type: {raw!r}")

    async def on_call(self, frame, raw, received):
        if len(frame) != 4 or frame[2] != "DataTransfer":
            self.errors.append(f"unexpected CALL from the peer: {raw!r}")
            await self.ws.send(json.dumps([4, frame[1], "NotImplemented", "", {}]))
            return
        payload = frame[3]
        try:
            check(payload.get("vendorId") == "bench", f"vendorId: {raw!r}")
            check(payload.get("messageId") == "ts", f"messageId: {raw!r}")
            seq, stamp = payload["data"].split(":")
            self.pushes.append((int(seq), int(stamp), received))
        except (Failure, KeyError, ValueError, AttributeError) as error:
            self.errors.append(f"bad DataTransfer {raw!r}: {error}")
        await self.ws.send(json.dumps([3, frame[1], {"status": "Accepted"}]))
        if len(self.pushes) >= MIN_PUSHES:
            self.push_event.set()

    async def call(self, action, payload):
        message_id = f"{self.name}-{next(self.ids)}"
        future = asyncio.get_running_loop().create_future()
        self.pending[message_id] = future
        await self.ws.send(json.dumps([2, message_id, action, payload]))
        try:
            frame = await asyncio.wait_for(future, 10)
        except asyncio.TimeoutError:
            raise Failure(f"{self.name}: no answer to {action} within 10 s")
        check(frame[0] == 3, f"{self.name}: {action} answered with {frame!r}")
        check(isinstance(frame[2], dict), f"{self.name}: {action} payload {frame!r}")
        return frame[2]


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


async def exchange(cp):
    name = cp.name
    boot = await cp.call(
        "BootNotification", {"chargePointVendor": "bench", "chargePointModel": "smoke"}
    )
    check(boot.get("status") == "Accepted", f"{name}: Boot status {boot!r}")
    check(isinstance(boot.get("interval"), int) and boot["interval"] > 0, f"{name}: Boot interval {boot!r}")
    check_time(boot.get("currentTime"), f"{name}: BootNotification")

    heartbeat = await cp.call("Heartbeat", {})
    check_time(heartbeat.get("currentTime"), f"{name}: Heartbeat")

    status = await cp.call(
        "StatusNotification",
        {"connectorId": 1, "errorCode": "NoError", "status": "Available", "timestamp": now()},
    )
    check(status == {}, f"{name}: StatusNotification answer {status!r}")

    auth = await cp.call("Authorize", {"idTag": "TAG1"})
    check(auth.get("idTagInfo", {}).get("status") == "Accepted", f"{name}: Authorize {auth!r}")

    start = await cp.call(
        "StartTransaction",
        {"connectorId": 1, "idTag": "TAG1", "meterStart": 1000, "timestamp": now()},
    )
    check(isinstance(start.get("transactionId"), int), f"{name}: StartTransaction {start!r}")
    check(start.get("idTagInfo", {}).get("status") == "Accepted", f"{name}: StartTransaction {start!r}")
    transaction = start["transactionId"]

    meter = await cp.call(
        "MeterValues",
        {
            "connectorId": 1,
            "transactionId": transaction,
            "meterValue": [
                {
                    "timestamp": now(),
                    "sampledValue": [
                        {"value": "1500", "measurand": "Energy.Active.Import.Register", "unit": "Wh"}
                    ],
                }
            ],
        },
    )
    check(meter == {}, f"{name}: MeterValues answer {meter!r}")

    stop = await cp.call(
        "StopTransaction",
        {"transactionId": transaction, "idTag": "TAG1", "meterStop": 2000, "timestamp": now(), "reason": "Local"},
    )
    check(stop.get("idTagInfo", {}).get("status") == "Accepted", f"{name}: StopTransaction {stop!r}")
    return transaction


async def one(url, index, push_ms, results):
    name = f"SMOKE{index:03d}"
    async with websockets.connect(
        f"{url}/{name}", subprotocols=["ocpp1.6"], open_timeout=10, close_timeout=2
    ) as ws:
        check(ws.subprotocol == "ocpp1.6", f"{name}: subprotocol {ws.subprotocol!r}")
        cp = ChargePoint(ws, name)
        reader = asyncio.create_task(cp.reader())
        try:
            transaction = await exchange(cp)
            if push_ms > 0:
                timeout = max(10.0, push_ms * (MIN_PUSHES + 2) / 1000 * 3)
                try:
                    await asyncio.wait_for(cp.push_event.wait(), timeout)
                except asyncio.TimeoutError:
                    raise Failure(f"{name}: {len(cp.pushes)} DataTransfer pushes in {timeout:.0f} s")
                # Let one more answer reach the peer before closing.
                await asyncio.sleep(push_ms / 1000 / 2)
                seqs = [seq for seq, _, _ in cp.pushes]
                check(seqs[0] == 1, f"{name}: first push seq {seqs[0]}, not 1")
                check(
                    all(b == a + 1 for a, b in zip(seqs, seqs[1:])),
                    f"{name}: push seqs not consecutive: {seqs}",
                )
                for seq, stamp, received in cp.pushes:
                    delay = (received - stamp) / 1e6
                    check(-5 < delay < 5000, f"{name}: push {seq} stamped {delay:.1f} ms before receipt")
            else:
                await asyncio.sleep(1.0)
                check(not cp.pushes, f"{name}: {len(cp.pushes)} pushes with push off")
            check(not cp.errors, f"{name}: {cp.errors}")
            results[name] = (transaction, cp.pushes)
        finally:
            reader.cancel()


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("url", help="ws://HOST:PORT/PATH (the identity is appended)")
    parser.add_argument("--push-ms", type=int, default=200)
    args = parser.parse_args()
    results = {}
    tasks = [one(args.url, i + 1, args.push_ms, results) for i in range(CHARGE_POINTS)]
    outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    failed = [o for o in outcomes if isinstance(o, BaseException)]
    for error in failed:
        print(f"FAIL: {type(error).__name__}: {error}")
    transactions = sorted(t for t, _ in results.values())
    for name, (transaction, pushes) in sorted(results.items()):
        delays = [(r - s) / 1e6 for _, s, r in pushes]
        detail = (
            f"{len(pushes)} pushes, seq {pushes[0][0]}..{pushes[-1][0]}, "
            f"stamp->receive {min(delays):.2f}..{max(delays):.2f} ms"
            if pushes
            else "no pushes"
        )
        print(f"ok {name}: 7 CALLs answered, transactionId {transaction}, {detail}")
    if len(set(transactions)) != len(transactions):
        print(f"FAIL: transaction ids not distinct: {transactions}")
        failed.append(1)
    print(f"smoke: {len(results)} passed, {CHARGE_POINTS - len(results)} failed (push {args.push_ms} ms)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
