#!/usr/bin/env python3
"""A charge point on the PyPI `ocpp` library (2.1.0) against an ocpp-tokio CSMS.

usage: python_cp.py WS_URL VERSION IDENTITY [--timeout S]

  VERSION 1.6: BootNotification (expects Accepted), Heartbeat, then waits for the CSMS's
               RemoteStartTransaction, answers Accepted, and expects idTag TAG-1 connector 1.
  VERSION 2.0.1: BootNotification (expects Accepted), Heartbeat, StatusNotification (the CSMS
               answers NotSupported: a CALLERROR is expected).
Exits 0 on success, 1 with a `FAIL:` line otherwise; bounded by --timeout (default 20 s).
"""

import argparse
import asyncio
import sys
from datetime import datetime, timezone

import websockets
from ocpp.exceptions import OCPPError
from ocpp.routing import on
from ocpp.v16 import ChargePoint as Cp16Base
from ocpp.v16 import call as call16
from ocpp.v16 import call_result as result16
from ocpp.v16.enums import RegistrationStatus, RemoteStartStopStatus
from ocpp.v201 import ChargePoint as Cp201Base
from ocpp.v201 import call as call201
from ocpp.v201 import enums as enums201


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


class Cp16(Cp16Base):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.remote_start = asyncio.get_event_loop().create_future()

    @on("RemoteStartTransaction")
    def on_remote_start(self, id_tag, connector_id=None, **_):
        if not self.remote_start.done():
            self.remote_start.set_result((id_tag, connector_id))
        return result16.RemoteStartTransaction(status=RemoteStartStopStatus.accepted)


async def run16(cp):
    boot = await cp.call(call16.BootNotification(charge_point_vendor="ACME", charge_point_model="Py16"), suppress=False)
    check(boot.status == RegistrationStatus.accepted, f"BootNotification: {boot.status!r}")
    print(f"  BootNotification: {boot.status} interval={boot.interval}")
    beat = await cp.call(call16.Heartbeat(), suppress=False)
    print(f"  Heartbeat: {beat.current_time}")
    id_tag, connector = await asyncio.wait_for(cp.remote_start, 10)
    check((id_tag, connector) == ("TAG-1", 1), f"RemoteStartTransaction: {id_tag!r} {connector!r}")
    print(f"  RemoteStartTransaction received: idTag={id_tag} connectorId={connector}")
    await asyncio.sleep(0.2)  # let the CALLRESULT leave


async def run201(cp):
    boot = await cp.call(
        call201.BootNotification(
            charging_station={"vendor_name": "ACME", "model": "Py201"},
            reason=enums201.BootReasonEnumType.power_up,
        ),
        suppress=False,
    )
    check(boot.status == enums201.RegistrationStatusEnumType.accepted, f"BootNotification: {boot.status!r}")
    print(f"  BootNotification: {boot.status} interval={boot.interval}")
    beat = await cp.call(call201.Heartbeat(), suppress=False)
    print(f"  Heartbeat: {beat.current_time}")
    try:
        await cp.call(
            call201.StatusNotification(
                timestamp=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                connector_status=enums201.ConnectorStatusEnumType.available,
                evse_id=1,
                connector_id=1,
            ),
            suppress=False,
        )
        raise Failure("StatusNotification: expected a CALLERROR NotSupported")
    except OCPPError as e:
        # (The library maps codes by name, and swaps NotSupported/NotImplemented: accept either
        # class, check the code text.)
        code = getattr(e, "code", None) or type(e).__name__
        print(f"  StatusNotification: CALLERROR {code}")
        check("NotSupported" in str(code) or type(e).__name__ in ("NotSupportedError",), f"code {code!r}")


async def drive(args, classes, runs, *extra):
    """Connects as `args.identity` on `args.version`, runs that version's scenario, closes."""
    subprotocol = {"1.6": "ocpp1.6", "2.0.1": "ocpp2.0.1", "2.1": "ocpp2.1"}[args.version]
    url = f"{args.url.rstrip('/')}/{args.identity}"
    async with websockets.connect(url, subprotocols=[subprotocol], open_timeout=5, close_timeout=2) as ws:
        check(ws.subprotocol == subprotocol, f"subprotocol {ws.subprotocol!r}")
        cp = classes[args.version](args.identity, ws, response_timeout=5)
        receiver = asyncio.create_task(cp.start())
        try:
            await runs[args.version](cp, *extra)
        finally:
            receiver.cancel()
            try:
                await receiver
            except (asyncio.CancelledError, Exception):
                pass


def cli(add_arguments, scenario):
    """Parses the common arguments (and those `add_arguments` adds), runs `scenario(args)`
    within --timeout, and exits 0 on success, 1 with a `FAIL:` line otherwise."""
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("version", choices=["1.6", "2.0.1", "2.1"])
    parser.add_argument("identity")
    add_arguments(parser)
    parser.add_argument("--timeout", type=float, default=20.0)
    args = parser.parse_args()
    try:
        asyncio.run(asyncio.wait_for(scenario(args), args.timeout))
    except Failure as e:
        print(f"FAIL: python-ocpp {args.version}: {e}", file=sys.stderr)
        sys.exit(1)
    except Exception as e:  # noqa: BLE001
        print(f"FAIL: python-ocpp {args.version}: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
    print(f"python-ocpp {args.version}: all checks passed")


if __name__ == "__main__":
    cli(
        lambda parser: None,
        lambda args: drive(args, {"1.6": Cp16, "2.0.1": Cp201Base}, {"1.6": run16, "2.0.1": run201}),
    )
