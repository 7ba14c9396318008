#!/usr/bin/env python3
"""A central system on the PyPI `ocpp` library, for tests/local_controller_python.rs: the
central system behind the Local Controller. It logs every text message it receives and sends,
as the text went over its WebSocket, so that the test compares them byte for byte with what the
stations sent and received.

usage: python_relay_csms.py --port P

Serves ws://127.0.0.1:P/ocpp/<identity> with ocpp1.6 and ocpp2.0.1. Answers BootNotification
Accepted (interval 300), Heartbeat with the current time, StatusNotification.

Prints one JSON line per event on stdout, flushed:
  {"event":"listening","port":P}
  {"event":"connected","id":ID,"subprotocol":...}
  {"event":"recv","id":ID,"text":TEXT}      (a text message from the station, as received)
  {"event":"sent","id":ID,"text":TEXT}      (a text message to the station, as sent)
  {"event":"disconnected","id":ID,"code":CODE}
Runs until killed.
"""

import argparse
import asyncio
import json
import sys
from datetime import datetime, timezone

import websockets
from ocpp.routing import on
from ocpp.v16 import ChargePoint as Cp16Base
from ocpp.v16 import call_result as result16
from ocpp.v16.enums import RegistrationStatus
from ocpp.v201 import ChargePoint as Cp201Base
from ocpp.v201 import call_result as result201
from ocpp.v201 import enums as enums201


def emit(event, **fields):
    print(json.dumps({"event": event, **fields}, separators=(",", ":")), flush=True)


def now():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class Logged:
    """The WebSocket as the `ocpp` library uses it (recv, send), logging each text."""

    def __init__(self, ws, identity):
        self.ws = ws
        self.identity = identity

    async def recv(self):
        text = await self.ws.recv()
        emit("recv", id=self.identity, text=text)
        return text

    async def send(self, text):
        emit("sent", id=self.identity, text=text)
        await self.ws.send(text)


class Cs16(Cp16Base):
    @on("BootNotification")
    def on_boot(self, **_):
        return result16.BootNotification(
            current_time=now(), interval=300, status=RegistrationStatus.accepted
        )

    @on("Heartbeat")
    def on_heartbeat(self, **_):
        return result16.Heartbeat(current_time=now())

    @on("StatusNotification")
    def on_status(self, **_):
        return result16.StatusNotification()


class Cs201(Cp201Base):
    @on("BootNotification")
    def on_boot(self, **_):
        return result201.BootNotification(
            current_time=now(), interval=300, status=enums201.RegistrationStatusEnumType.accepted
        )

    @on("Heartbeat")
    def on_heartbeat(self, **_):
        return result201.Heartbeat(current_time=now())

    @on("StatusNotification")
    def on_status(self, **_):
        return result201.StatusNotification()


async def serve(args):
    async def handler(ws):
        path = ws.request.path.split("?", 1)[0]
        identity = path.rstrip("/").rsplit("/", 1)[-1]
        emit("connected", id=identity, subprotocol=ws.subprotocol)
        classes = {"ocpp1.6": Cs16, "ocpp2.0.1": Cs201}
        cs = classes[ws.subprotocol](identity, Logged(ws, identity), response_timeout=10)
        try:
            await cs.start()
        except websockets.exceptions.ConnectionClosed as closed:
            code = closed.rcvd.code if closed.rcvd else None
            emit("disconnected", id=identity, code=code)

    async with websockets.serve(
        handler, "127.0.0.1", args.port, subprotocols=["ocpp1.6", "ocpp2.0.1"]
    ):
        emit("listening", port=args.port)
        await asyncio.Future()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    try:
        asyncio.run(serve(parser.parse_args()))
    except Exception as e:  # noqa: BLE001
        print(f"FAIL: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
