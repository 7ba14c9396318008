#!/usr/bin/env python3
"""A charging station on the PyPI `ocpp` library, for tests/local_controller_python.rs: it
connects (through the Local Controller), boots, sends a Heartbeat, accepts SetChargingProfile,
and when its connection closes it reconnects (every 0.3 s) and boots again, until killed. It
logs every text message it sends and receives, as it went over its WebSocket.

usage: python_field_station.py WS_URL VERSION IDENTITY

Prints one JSON line per event on stdout, flushed:
  {"event":"sent","text":TEXT} / {"event":"recv","text":TEXT}
  {"event":"boot","status":STATUS,"connection":N}     (N counts the connections, from 1)
  {"event":"heartbeat","connection":N}
  {"event":"profile","payload":{...}}                 (a SetChargingProfile, answered Accepted)
  {"event":"closed","connection":N,"code":CODE}
  {"event":"refused","error":TEXT}                     (a connection attempt that failed)
  {"event":"call_failed","error":TEXT,"connection":N}  (the boot or heartbeat got no answer)
"""

import argparse
import asyncio
import json
import sys

import websockets
from ocpp.routing import on
from ocpp.v16 import ChargePoint as Cp16Base
from ocpp.v16 import call as call16
from ocpp.v16 import call_result as result16
from ocpp.v16.enums import ChargingProfileStatus
from ocpp.v201 import ChargePoint as Cp201Base
from ocpp.v201 import call as call201
from ocpp.v201 import call_result as result201
from ocpp.v201 import enums as enums201


def emit(event, **fields):
    # Decimal (the `ocpp` library's numbers) as a JSON number.
    text = json.dumps({"event": event, **fields}, separators=(",", ":"), default=float)
    print(text, flush=True)


class Logged:
    """The WebSocket as the `ocpp` library uses it (recv, send), logging each text."""

    def __init__(self, ws):
        self.ws = ws

    async def recv(self):
        text = await self.ws.recv()
        emit("recv", text=text)
        return text

    async def send(self, text):
        emit("sent", text=text)
        await self.ws.send(text)


class Cp16(Cp16Base):
    @on("SetChargingProfile")
    def on_profile(self, connector_id, cs_charging_profiles, **_):
        emit("profile", payload={"connector_id": connector_id, "profile": cs_charging_profiles})
        return result16.SetChargingProfile(status=ChargingProfileStatus.accepted)


class Cp201(Cp201Base):
    @on("SetChargingProfile")
    def on_profile(self, evse_id, charging_profile, **_):
        emit("profile", payload={"evse_id": evse_id, "profile": charging_profile})
        return result201.SetChargingProfile(
            status=enums201.ChargingProfileStatusEnumType.accepted
        )


async def boot(cp, version, connection):
    if version == "1.6":
        request = call16.BootNotification(charge_point_vendor="ACME", charge_point_model="Field")
        heartbeat = call16.Heartbeat()
    else:
        request = call201.BootNotification(
            charging_station={"vendor_name": "ACME", "model": "Field"},
            reason=enums201.BootReasonEnumType.power_up,
        )
        heartbeat = call201.Heartbeat()
    try:
        answer = await cp.call(request, suppress=False)
        emit("boot", status=answer.status, connection=connection)
        await cp.call(heartbeat, suppress=False)
        emit("heartbeat", connection=connection)
    except Exception as e:  # noqa: BLE001
        emit("call_failed", error=f"{type(e).__name__}: {e}", connection=connection)


async def main(args):
    subprotocol = {"1.6": "ocpp1.6", "2.0.1": "ocpp2.0.1"}[args.version]
    url = f"{args.url.rstrip('/')}/{args.identity}"
    classes = {"1.6": Cp16, "2.0.1": Cp201}
    connection = 0
    while True:
        try:
            ws = await websockets.connect(url, subprotocols=[subprotocol], open_timeout=10)
        except (OSError, websockets.exceptions.WebSocketException, asyncio.TimeoutError) as e:
            emit("refused", error=f"{type(e).__name__}: {e}")
            await asyncio.sleep(0.3)
            continue
        connection += 1
        cp = classes[args.version](args.identity, Logged(ws), response_timeout=10)
        receiver = asyncio.create_task(cp.start())
        # The boot runs beside the receiver: a connection that closes while a CALL waits for
        # its answer ends the receiver, and the CALL with it.
        booting = asyncio.create_task(boot(cp, args.version, connection))
        try:
            await receiver
        except websockets.exceptions.ConnectionClosed:
            pass
        booting.cancel()
        code = ws.close_code
        emit("closed", connection=connection, code=code)
        await asyncio.sleep(0.3)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("version", choices=["1.6", "2.0.1"])
    parser.add_argument("identity")
    try:
        asyncio.run(main(parser.parse_args()))
    except Exception as e:  # noqa: BLE001
        print(f"FAIL: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
