#!/usr/bin/env python3
"""A charge point on the PyPI `ocpp` library (2.1.0) against `examples/stations.rs`.

usage: python_station.py WS_URL VERSION IDENTITY STATUSES [--timeout S]

  BootNotification (expects Accepted, interval 300), Heartbeat, Authorize TAG-OK (expects
  Accepted) and TAG-BAD (expects Invalid), STATUSES StatusNotifications, then a clean close.
  VERSION is 1.6 or 2.0.1. Exits 0 on success, 1 with a `FAIL:` line otherwise; bounded by
  --timeout (default 20 s).
"""

import argparse
import asyncio
import sys
from datetime import datetime, timezone

import websockets
from ocpp.v16 import ChargePoint as Cp16
from ocpp.v16 import call as call16
from ocpp.v16 import enums as enums16
from ocpp.v201 import ChargePoint as Cp201
from ocpp.v201 import call as call201
from ocpp.v201 import enums as enums201


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def now():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


async def run16(cp, statuses):
    boot = await cp.call(call16.BootNotification(charge_point_vendor="ACME", charge_point_model="Py16"), suppress=False)
    check(boot.status == enums16.RegistrationStatus.accepted and boot.interval == 300, f"BootNotification: {boot!r}")
    await cp.call(call16.Heartbeat(), suppress=False)
    for tag, expected in [("TAG-OK", enums16.AuthorizationStatus.accepted), ("TAG-BAD", enums16.AuthorizationStatus.invalid)]:
        answer = await cp.call(call16.Authorize(id_tag=tag), suppress=False)
        check(answer.id_tag_info["status"] == expected, f"Authorize {tag}: {answer!r}")
        print(f"  Authorize {tag}: {answer.id_tag_info['status']}")
    for connector in range(statuses):
        await cp.call(
            call16.StatusNotification(
                connector_id=connector,
                error_code=enums16.ChargePointErrorCode.no_error,
                status=enums16.ChargePointStatus.available,
            ),
            suppress=False,
        )


async def run201(cp, statuses):
    boot = await cp.call(
        call201.BootNotification(
            charging_station={"vendor_name": "ACME", "model": "Py201"},
            reason=enums201.BootReasonEnumType.power_up,
        ),
        suppress=False,
    )
    check(boot.status == enums201.RegistrationStatusEnumType.accepted and boot.interval == 300, f"BootNotification: {boot!r}")
    await cp.call(call201.Heartbeat(), suppress=False)
    for tag, expected in [("TAG-OK", "Accepted"), ("TAG-BAD", "Invalid")]:
        answer = await cp.call(call201.Authorize(id_token={"id_token": tag, "type": "ISO14443"}), suppress=False)
        check(answer.id_token_info["status"] == expected, f"Authorize {tag}: {answer!r}")
        print(f"  Authorize {tag}: {answer.id_token_info['status']}")
    for connector in range(1, statuses + 1):
        await cp.call(
            call201.StatusNotification(
                timestamp=now(),
                connector_status=enums201.ConnectorStatusEnumType.available,
                evse_id=1,
                connector_id=connector,
            ),
            suppress=False,
        )


async def main(args):
    subprotocol = {"1.6": "ocpp1.6", "2.0.1": "ocpp2.0.1"}[args.version]
    url = f"{args.url.rstrip('/')}/{args.identity}"
    async with websockets.connect(url, subprotocols=[subprotocol], open_timeout=5, close_timeout=2) as ws:
        check(ws.subprotocol == subprotocol, f"subprotocol {ws.subprotocol!r}")
        cp = (Cp16 if args.version == "1.6" else Cp201)(args.identity, ws, response_timeout=5)
        receiver = asyncio.create_task(cp.start())
        try:
            await (run16 if args.version == "1.6" else run201)(cp, args.statuses)
            print(f"  {args.statuses} StatusNotifications answered")
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
    parser.add_argument("statuses", type=int)
    parser.add_argument("--timeout", type=float, default=20.0)
    args = parser.parse_args()
    try:
        asyncio.run(asyncio.wait_for(main(args), args.timeout))
    except Failure as e:
        print(f"FAIL: {e}")
        sys.exit(1)
    except Exception as e:  # noqa: BLE001 - any other failure is a failed run
        print(f"FAIL: {type(e).__name__}: {e}")
        sys.exit(1)
