"""Benchmark peer: an OCPP 1.6 central system on the `ocpp` package (ocpp.v16.ChargePoint with
@on handlers) and `websockets` (asyncio server).

python server.py LISTEN_ADDR PUSH_INTERVAL_MS

The ocpp package validates every message against its JSON schema, by default in the asyncio
default thread pool (ocpp.messages.ASYNC_VALIDATION = True). PEER_SYNC_VALIDATION=1 validates on
the event loop instead (still validating).
"""

import asyncio
import itertools
import logging
import os
import resource
import sys
import time
from datetime import datetime, timezone

import websockets
import ocpp.messages
from ocpp.routing import on
from ocpp.v16 import ChargePoint as ChargePoint16
from ocpp.v16 import call, call_result
from ocpp.v16.datatypes import IdTagInfo
from ocpp.v16.enums import (
    Action,
    AuthorizationStatus,
    DataTransferStatus,
    RegistrationStatus,
)

HEARTBEAT_INTERVAL = 300
transaction_ids = itertools.count(1)


def now():
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def accepted():
    return IdTagInfo(status=AuthorizationStatus.accepted)


class CentralSystemSide(ChargePoint16):
    """One connected charge point, as the central system sees it."""

    @on(Action.boot_notification)
    def on_boot_notification(self, **_):
        return call_result.BootNotification(
            current_time=now(), interval=HEARTBEAT_INTERVAL, status=RegistrationStatus.accepted
        )

    @on(Action.heartbeat)
    def on_heartbeat(self, **_):
        return call_result.Heartbeat(current_time=now())

    @on(Action.status_notification)
    def on_status_notification(self, **_):
        return call_result.StatusNotification()

    @on(Action.meter_values)
    def on_meter_values(self, **_):
        return call_result.MeterValues()

    @on(Action.authorize)
    def on_authorize(self, **_):
        return call_result.Authorize(id_tag_info=accepted())

    @on(Action.start_transaction)
    def on_start_transaction(self, **_):
        return call_result.StartTransaction(
            transaction_id=next(transaction_ids), id_tag_info=accepted()
        )

    @on(Action.stop_transaction)
    def on_stop_transaction(self, **_):
        return call_result.StopTransaction(id_tag_info=accepted())

    @on(Action.data_transfer)
    def on_data_transfer(self, **_):
        return call_result.DataTransfer(status=DataTransferStatus.accepted)


async def push(cp, interval_ms):
    """Every interval_ms, one DataTransfer CALL through the library's call path (which waits for
    the CALLRESULT: one CALL in flight per connection, as OCPP-J requires)."""
    loop = asyncio.get_running_loop()
    period = interval_ms / 1000
    due = loop.time() + period
    for seq in itertools.count(1):
        await asyncio.sleep(max(0.0, due - loop.time()))
        # The stamp is taken as the request is built, right before cp.call(), which validates
        # it against the schema, serialises it and sends it.
        request = call.DataTransfer(
            vendor_id="bench", message_id="ts", data=f"{seq}:{time.time_ns()}"
        )
        try:
            await cp.call(request)
        except asyncio.TimeoutError:
            pass  # no answer within response_timeout (30 s): carry on
        except websockets.ConnectionClosed:
            return
        due += period
        if due < loop.time():
            due = loop.time()  # fell behind: next push at once, missed ticks are dropped


def make_handler(push_ms):
    async def handler(connection):
        identity = connection.request.path.rstrip("/").rsplit("/", 1)[-1]
        cp = CentralSystemSide(identity, connection)
        pusher = asyncio.create_task(push(cp, push_ms)) if push_ms > 0 else None
        try:
            await cp.start()
        except websockets.ConnectionClosed:
            pass
        finally:
            if pusher is not None:
                pusher.cancel()

    return handler


async def main(listen, push_ms):
    host, _, port = listen.rpartition(":")
    async with websockets.serve(
        make_handler(push_ms),
        host.strip("[]"),
        int(port),
        subprotocols=["ocpp1.6"],
        backlog=4096,
    ) as server:
        validation = "thread pool" if ocpp.messages.ASYNC_VALIDATION else "event loop"
        print(
            f"python-ocpp peer listening on {listen}, push every {push_ms} ms,"
            f" schema validation in the {validation}",
            file=sys.stderr,
        )
        await server.serve_forever()


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: server.py LISTEN_ADDR PUSH_INTERVAL_MS")
    # No per-message logs (the ocpp package logs every message at INFO).
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("ocpp").setLevel(logging.ERROR)
    logging.getLogger("websockets").setLevel(logging.ERROR)
    if os.environ.get("PEER_SYNC_VALIDATION") == "1":
        ocpp.messages.ASYNC_VALIDATION = False
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = 1 << 20 if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
