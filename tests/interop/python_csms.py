#!/usr/bin/env python3
"""A minimal central system on the Python `ocpp` package (2.1.0) and `websockets`, for the
interop test of our `charge-point` simulator (examples/tests/charge_point_interop.rs).

It listens on 127.0.0.1 (port 0: a free one), prints `listening <port>` on stdout, accepts one
charge point on ocpp1.6, ocpp2.0.1 or ocpp2.1, answers BootNotification (Accepted, interval 1 s),
Heartbeat and StatusNotification, prints one JSON line per CALL it saw, and exits 0 as soon as
it has seen all three, or 1 after --timeout seconds.

usage: python3 tests/interop/python_csms.py [--port N] [--timeout S]
"""

import argparse
import asyncio
import json
import sys
from datetime import datetime, timezone

import websockets
from ocpp.routing import on
from ocpp.v16 import ChargePoint as ChargePoint16
from ocpp.v16 import call_result as result16
from ocpp.v16.enums import Action as Action16
from ocpp.v16.enums import RegistrationStatus
from ocpp.v201 import ChargePoint as ChargePoint201
from ocpp.v201 import call_result as result201
from ocpp.v201 import enums as enums201
from ocpp.v21 import ChargePoint as ChargePoint21
from ocpp.v21 import call_result as result21
from ocpp.v21 import enums as enums21

NEEDED = {"BootNotification", "Heartbeat", "StatusNotification"}


def now():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Seen:
    """The CALLs seen so far; `done` is set once every needed action came."""

    def __init__(self):
        self.actions = set()
        self.done = asyncio.Event()

    def add(self, identity, version, action, payload):
        print(
            json.dumps(
                {"identity": identity, "version": version, "action": action, "payload": payload},
                default=str,
            ),
            flush=True,
        )
        self.actions.add(action)
        if NEEDED <= self.actions:
            self.done.set()


def central_system_16(seen):
    class CentralSystem16(ChargePoint16):
        @on(Action16.boot_notification)
        def on_boot(self, **payload):
            seen.add(self.id, "1.6", "BootNotification", payload)
            return result16.BootNotification(
                current_time=now(), interval=1, status=RegistrationStatus.accepted
            )

        @on(Action16.heartbeat)
        def on_heartbeat(self, **payload):
            seen.add(self.id, "1.6", "Heartbeat", payload)
            return result16.Heartbeat(current_time=now())

        @on(Action16.status_notification)
        def on_status(self, **payload):
            seen.add(self.id, "1.6", "StatusNotification", payload)
            return result16.StatusNotification()

    return CentralSystem16


def central_system_2x(seen, version, base, result, enums):
    """The central system on OCPP 2.0.1 or 2.1 (`base`, `result`, `enums`: that version's
    classes of the library)."""

    class CentralSystem2x(base):
        @on(enums.Action.boot_notification)
        def on_boot(self, **payload):
            seen.add(self.id, version, "BootNotification", payload)
            return result.BootNotification(
                current_time=now(), interval=1, status=enums.RegistrationStatusEnumType.accepted
            )

        @on(enums.Action.heartbeat)
        def on_heartbeat(self, **payload):
            seen.add(self.id, version, "Heartbeat", payload)
            return result.Heartbeat(current_time=now())

        @on(enums.Action.status_notification)
        def on_status(self, **payload):
            seen.add(self.id, version, "StatusNotification", payload)
            return result.StatusNotification()

    return CentralSystem2x


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=30.0)
    args = parser.parse_args()
    seen = Seen()
    classes = {
        "ocpp1.6": central_system_16(seen),
        "ocpp2.0.1": central_system_2x(seen, "2.0.1", ChargePoint201, result201, enums201),
        "ocpp2.1": central_system_2x(seen, "2.1", ChargePoint21, result21, enums21),
    }

    async def handler(connection):
        identity = connection.request.path.rstrip("/").rsplit("/", 1)[-1]
        cls = classes.get(connection.subprotocol)
        if cls is None:
            await connection.close(1002, "no OCPP subprotocol in common")
            return
        try:
            await cls(identity, connection).start()
        except websockets.exceptions.ConnectionClosed:
            pass

    async with websockets.serve(
        handler, "127.0.0.1", args.port, subprotocols=list(classes)
    ) as server:
        port = server.sockets[0].getsockname()[1]
        print(f"listening {port}", flush=True)
        try:
            await asyncio.wait_for(seen.done.wait(), args.timeout)
        except asyncio.TimeoutError:
            print(f"timeout: saw only {sorted(seen.actions)}", flush=True)
            return 1
    print(f"saw {sorted(seen.actions)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
