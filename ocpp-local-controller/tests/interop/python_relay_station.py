#!/usr/bin/env python3
"""A charging station on the PyPI `ocpp` library, for tests/local_controller.rs: it connects
(through the Local Controller), boots, sends a Heartbeat, then stays connected.

usage: python_relay_station.py WS_URL VERSION IDENTITY [--hold S]

Prints `BOOT <status>` and `HEARTBEAT <time>`, then stays connected for --hold seconds
(default 30; the test kills it sooner). Exits 1 with a `FAIL:` line on stderr on an error.
"""

import argparse
import asyncio
import sys

import websockets
from ocpp.v16 import ChargePoint as Cp16
from ocpp.v16 import call as call16
from ocpp.v201 import ChargePoint as Cp201
from ocpp.v201 import call as call201
from ocpp.v201 import enums as enums201


async def boot(cp, version):
    if version == "1.6":
        request = call16.BootNotification(charge_point_vendor="ACME", charge_point_model="Relayed")
        heartbeat = call16.Heartbeat()
    else:
        request = call201.BootNotification(
            charging_station={"vendor_name": "ACME", "model": "Relayed"},
            reason=enums201.BootReasonEnumType.power_up,
        )
        heartbeat = call201.Heartbeat()
    answer = await cp.call(request, suppress=False)
    print(f"BOOT {answer.status}", flush=True)
    beat = await cp.call(heartbeat, suppress=False)
    print(f"HEARTBEAT {beat.current_time}", flush=True)


async def main(args):
    subprotocol = {"1.6": "ocpp1.6", "2.0.1": "ocpp2.0.1"}[args.version]
    url = f"{args.url.rstrip('/')}/{args.identity}"
    async with websockets.connect(url, subprotocols=[subprotocol], open_timeout=10) as ws:
        if ws.subprotocol != subprotocol:
            raise RuntimeError(f"subprotocol {ws.subprotocol!r}")
        classes = {"1.6": Cp16, "2.0.1": Cp201}
        cp = classes[args.version](args.identity, ws, response_timeout=10)
        receiver = asyncio.create_task(cp.start())
        await boot(cp, args.version)
        await asyncio.sleep(args.hold)
        receiver.cancel()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("version", choices=["1.6", "2.0.1"])
    parser.add_argument("identity")
    parser.add_argument("--hold", type=float, default=30.0)
    arguments = parser.parse_args()
    try:
        asyncio.run(main(arguments))
    except Exception as e:  # noqa: BLE001
        print(f"FAIL: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
