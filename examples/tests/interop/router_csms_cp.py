#!/usr/bin/env python3
"""A charge point on the PyPI `ocpp` library (2.1.0) against the `router-csms` example.

usage: router_csms_cp.py WS_URL VERSION IDENTITY [--timeout S]

Both versions: BootNotification (expects Accepted, interval 300), Heartbeat, two
StatusNotifications, Authorize TAG-OK (expects Accepted) and TAG-BAD (expects Invalid), starts a
transaction with TAG-OK (expects Accepted), sends MeterValues, then prints `READY <transactionId>`
and waits for a line on stdin, answering the CSMS's remote starts meanwhile (Accepted, printed as
`REMOTE-START ...`; the token TAG-FAIL is answered with a CALLERROR GenericError). On that line it
checks that a remote start came, stops the transaction and exits.

  VERSION 1.6: StatusNotification connector 1 Preparing, connector 2 Available; StartTransaction
               on connector 1; MeterValues on connector 1 (Energy.Active.Import.Register 1500 Wh,
               then Power.Active.Import 7.2 kW); RemoteStartTransaction; StopTransaction.
  VERSION 2.0.1: StatusNotification EVSE 1/connector 1 Occupied, EVSE 2/connector 1 Available;
               TransactionEvent Started (TX-<IDENTITY>, EVSE 1, TAG-OK), Updated (no token);
               MeterValues on EVSE 1 (Power.Active.Import 7200, then 2500 without a measurand,
               which is Energy.Active.Import.Register); RequestStartTransaction;
               TransactionEvent Ended.

Exits 0 on success (last line `python-ocpp VERSION: all checks passed`), 1 with a `FAIL:` line on
stderr otherwise; bounded by --timeout (default 30 s).
"""

import argparse
import asyncio
import sys
from datetime import datetime, timezone

import websockets
from ocpp.exceptions import GenericError
from ocpp.routing import on
from ocpp.v16 import ChargePoint as Cp16Base
from ocpp.v16 import call as call16
from ocpp.v16 import call_result as result16
from ocpp.v16 import enums as enums16
from ocpp.v201 import ChargePoint as Cp201Base
from ocpp.v201 import call as call201
from ocpp.v201 import call_result as result201
from ocpp.v201 import enums as enums201

FAILING_TAG = "TAG-FAIL"


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def say(line):
    print(line, flush=True)


def now():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Cp16(Cp16Base):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.remote_starts = []

    @on("RemoteStartTransaction")
    def on_remote_start(self, id_tag, **_):
        if id_tag == FAILING_TAG:
            raise GenericError(description="this idTag fails")
        self.remote_starts.append(id_tag)
        say(f"REMOTE-START idTag={id_tag}")
        return result16.RemoteStartTransaction(status=enums16.RemoteStartStopStatus.accepted)


class Cp201(Cp201Base):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.remote_starts = []

    @on("RequestStartTransaction")
    def on_request_start(self, id_token, remote_start_id, **_):
        if id_token["id_token"] == FAILING_TAG:
            raise GenericError(description="this idToken fails")
        self.remote_starts.append(id_token["id_token"])
        say(f"REMOTE-START idToken={id_token['id_token']} type={id_token['type']} remoteStartId={remote_start_id}")
        return result201.RequestStartTransaction(status=enums201.RequestStartStopStatusEnumType.accepted)


async def call(cp, payload):
    return await cp.call(payload, suppress=False)


async def stdin_lines():
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    return reader


async def wait_for_go(cp, stdin):
    """Waits for the test's line (remote starts are answered meanwhile), then expects one."""
    line = await stdin.readline()
    check(line, "stdin closed before the go-ahead")
    check(cp.remote_starts, "no remote start came")


async def run16(cp, stdin):
    boot = await call(cp, call16.BootNotification(charge_point_vendor="ACME", charge_point_model="Py16"))
    check(boot.status == enums16.RegistrationStatus.accepted, f"BootNotification: {boot.status!r}")
    check(boot.interval == 300, f"BootNotification interval: {boot.interval!r}")
    say(f"BootNotification: {boot.status} interval={boot.interval}")
    beat = await call(cp, call16.Heartbeat())
    say(f"Heartbeat: {beat.current_time}")
    for connector, status in [(1, enums16.ChargePointStatus.preparing), (2, enums16.ChargePointStatus.available)]:
        await call(
            cp,
            call16.StatusNotification(
                connector_id=connector, error_code=enums16.ChargePointErrorCode.no_error, status=status
            ),
        )
    say("StatusNotification: 2 sent")
    for id_tag, expected in [("TAG-OK", "Accepted"), ("TAG-BAD", "Invalid")]:
        answer = await call(cp, call16.Authorize(id_tag=id_tag))
        check(answer.id_tag_info["status"] == expected, f"Authorize {id_tag}: {answer.id_tag_info!r}")
        say(f"Authorize {id_tag}: {answer.id_tag_info['status']}")
    start = await call(cp, call16.StartTransaction(connector_id=1, id_tag="TAG-OK", meter_start=1000, timestamp=now()))
    check(start.id_tag_info["status"] == "Accepted", f"StartTransaction: {start.id_tag_info!r}")
    transaction = start.transaction_id
    say(f"StartTransaction: transactionId={transaction}")
    await call(
        cp,
        call16.MeterValues(
            connector_id=1,
            transaction_id=transaction,
            meter_value=[
                {
                    "timestamp": now(),
                    "sampled_value": [
                        {"value": "1500", "measurand": "Energy.Active.Import.Register", "unit": "Wh"},
                        {"value": "7.2", "measurand": "Power.Active.Import", "unit": "kW"},
                    ],
                }
            ],
        ),
    )
    say(f"READY {transaction}")
    await wait_for_go(cp, stdin)
    stop = await call(
        cp, call16.StopTransaction(meter_stop=1600, timestamp=now(), transaction_id=transaction, id_tag="TAG-OK")
    )
    say(f"StopTransaction: {stop}")


async def run201(cp, stdin):
    boot = await call(
        cp,
        call201.BootNotification(
            charging_station={"vendor_name": "ACME", "model": "Py201"},
            reason=enums201.BootReasonEnumType.power_up,
        ),
    )
    check(boot.status == enums201.RegistrationStatusEnumType.accepted, f"BootNotification: {boot.status!r}")
    check(boot.interval == 300, f"BootNotification interval: {boot.interval!r}")
    say(f"BootNotification: {boot.status} interval={boot.interval}")
    beat = await call(cp, call201.Heartbeat())
    say(f"Heartbeat: {beat.current_time}")
    for evse, status in [(1, enums201.ConnectorStatusEnumType.occupied), (2, enums201.ConnectorStatusEnumType.available)]:
        await call(
            cp, call201.StatusNotification(timestamp=now(), connector_status=status, evse_id=evse, connector_id=1)
        )
    say("StatusNotification: 2 sent")
    for token, expected in [("TAG-OK", "Accepted"), ("TAG-BAD", "Invalid")]:
        answer = await call(cp, call201.Authorize(id_token={"id_token": token, "type": "ISO14443"}))
        check(answer.id_token_info["status"] == expected, f"Authorize {token}: {answer.id_token_info!r}")
        say(f"Authorize {token}: {answer.id_token_info['status']}")
    transaction = f"TX-{cp.id}"
    started = await call(
        cp,
        call201.TransactionEvent(
            event_type=enums201.TransactionEventEnumType.started,
            timestamp=now(),
            trigger_reason=enums201.TriggerReasonEnumType.authorized,
            seq_no=0,
            transaction_info={"transaction_id": transaction, "charging_state": "Charging"},
            id_token={"id_token": "TAG-OK", "type": "ISO14443"},
            evse={"id": 1, "connector_id": 1},
        ),
    )
    check(
        started.id_token_info is not None and started.id_token_info["status"] == "Accepted",
        f"TransactionEvent Started: {started.id_token_info!r}",
    )
    say(f"TransactionEvent Started: transactionId={transaction} {started.id_token_info['status']}")
    updated = await call(
        cp,
        call201.TransactionEvent(
            event_type=enums201.TransactionEventEnumType.updated,
            timestamp=now(),
            trigger_reason=enums201.TriggerReasonEnumType.charging_state_changed,
            seq_no=1,
            transaction_info={"transaction_id": transaction, "charging_state": "SuspendedEV"},
        ),
    )
    check(updated.id_token_info is None, f"TransactionEvent Updated: {updated.id_token_info!r}")
    await call(
        cp,
        call201.MeterValues(
            evse_id=1,
            meter_value=[
                {
                    "timestamp": now(),
                    "sampled_value": [{"value": 7200.0, "measurand": "Power.Active.Import"}, {"value": 2500.0}],
                }
            ],
        ),
    )
    say(f"READY {transaction}")
    await wait_for_go(cp, stdin)
    await call(
        cp,
        call201.TransactionEvent(
            event_type=enums201.TransactionEventEnumType.ended,
            timestamp=now(),
            trigger_reason=enums201.TriggerReasonEnumType.stop_authorized,
            seq_no=2,
            transaction_info={"transaction_id": transaction, "stopped_reason": "Local"},
        ),
    )
    say("TransactionEvent Ended")


async def main(args):
    subprotocol = {"1.6": "ocpp1.6", "2.0.1": "ocpp2.0.1"}[args.version]
    url = f"{args.url.rstrip('/')}/{args.identity}"
    stdin = await stdin_lines()
    async with websockets.connect(url, subprotocols=[subprotocol], open_timeout=5, close_timeout=2) as ws:
        check(ws.subprotocol == subprotocol, f"subprotocol {ws.subprotocol!r}")
        cp = (Cp16 if args.version == "1.6" else Cp201)(args.identity, ws, response_timeout=10)
        receiver = asyncio.create_task(cp.start())
        try:
            await (run16 if args.version == "1.6" else run201)(cp, stdin)
        finally:
            receiver.cancel()
            try:
                await receiver
            except (asyncio.CancelledError, Exception):
                pass


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("version", choices=["1.6", "2.0.1"])
    parser.add_argument("identity")
    parser.add_argument("--timeout", type=float, default=30.0)
    args = parser.parse_args()
    try:
        asyncio.run(asyncio.wait_for(main(args), args.timeout))
    except Failure as e:
        print(f"FAIL: python-ocpp {args.version}: {e}", file=sys.stderr)
        sys.exit(1)
    except Exception as e:  # noqa: BLE001
        print(f"FAIL: python-ocpp {args.version}: {type(e).__name__}: {e!r}", file=sys.stderr)
        sys.exit(1)
    say(f"python-ocpp {args.version}: all checks passed")
