#!/usr/bin/env python3
"""A central system on the PyPI `ocpp` library (2.1.0) that records every transaction message,
for `tests/station_transactions.rs` (the `two_connectors` example killed during transactions).

usage: python_transactions_csms.py --port P --version 1.6|2.0.1

Answers BootNotification Accepted (interval 30), Heartbeat, StatusNotification, and every
transaction message. 1.6: a StartTransaction gets the next transactionId from 101 on; the same
StartTransaction again (same connector, idTag, meterStart and timestamp: a resend after a lost
answer) gets the same id. Runs until killed.

Commands on stdin, one per line:
  start ID_TAG          RemoteStartTransaction (1.6) / RequestStartTransaction (2.0.1,
                        remoteStartId counting from 1) to the station connected last
  stop TRANSACTION_ID   RemoteStopTransaction / RequestStopTransaction
  offline               close the connection and refuse new ones (HTTP 503)
  online                accept connections again

Prints one JSON line per event on stdout, flushed:
  {"event":"listening","port":P}
  {"event":"connected","id":ID} / {"event":"disconnected","id":ID} / {"event":"refused"}
  {"event":"boot","id":ID,"reason":...}
  {"event":"start","connector":C,"id_tag":T,"meter":W,"timestamp":S,"transaction":N}      (1.6)
  {"event":"meter","connector":C,"transaction":N,"value":"W"}                             (1.6)
  {"event":"stop","transaction":N,"meter":W,"reason":R}                                   (1.6)
  {"event":"tx","type":"Started","seq_no":0,"transaction":ID,"trigger":...,"reason":...,
   "value":W,"remote_start_id":...}                                                       (2.0.1)
  {"event":"command","command":...,"status":...} (or "error")
"""

import argparse
import asyncio
import http
import json
import sys
import threading
from datetime import datetime, timezone

import websockets
from ocpp.routing import on
from ocpp.v16 import ChargePoint as Cp16Base
from ocpp.v16 import call as call16
from ocpp.v16 import call_result as result16
from ocpp.v16.enums import AuthorizationStatus, RegistrationStatus
from ocpp.v201 import ChargePoint as Cp201Base
from ocpp.v201 import call as call201
from ocpp.v201 import call_result as result201
from ocpp.v201 import enums as enums201


def emit(event, **fields):
    print(json.dumps({"event": event, **fields}, separators=(",", ":")), flush=True)


def now():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def text(value):
    return getattr(value, "value", value)


class State:
    connected = None  # the ChargePoint of the last connection
    websocket = None
    offline = False
    next_id = 101
    starts = {}  # (connector, id_tag, meter, timestamp) -> transaction id
    remote_start_id = 0


STATE = State()


class Cs16(Cp16Base):
    @on("BootNotification")
    def on_boot(self, charge_point_vendor, charge_point_model, **_):
        emit("boot", id=self.id, reason=None)
        return result16.BootNotification(current_time=now(), interval=30, status=RegistrationStatus.accepted)

    @on("Heartbeat")
    def on_heartbeat(self, **_):
        return result16.Heartbeat(current_time=now())

    @on("StatusNotification")
    def on_status(self, **_):
        return result16.StatusNotification()

    @on("StartTransaction")
    def on_start(self, connector_id, id_tag, meter_start, timestamp, **_):
        key = (connector_id, id_tag, meter_start, timestamp)
        if key not in STATE.starts:
            STATE.starts[key] = STATE.next_id
            STATE.next_id += 1
        transaction = STATE.starts[key]
        emit("start", connector=connector_id, id_tag=id_tag, meter=meter_start, timestamp=timestamp,
             transaction=transaction)
        return result16.StartTransaction(transaction_id=transaction,
                                         id_tag_info={"status": AuthorizationStatus.accepted})

    @on("MeterValues")
    def on_meter_values(self, connector_id, meter_value, transaction_id=None, **_):
        value = meter_value[0]["sampled_value"][0]["value"]
        emit("meter", connector=connector_id, transaction=transaction_id, value=value)
        return result16.MeterValues()

    @on("StopTransaction")
    def on_stop(self, transaction_id, meter_stop, reason=None, **_):
        emit("stop", transaction=transaction_id, meter=meter_stop, reason=text(reason))
        return result16.StopTransaction()

    async def remote_start(self, id_tag):
        return await self.call(call16.RemoteStartTransaction(id_tag=id_tag), suppress=False)

    async def remote_stop(self, transaction):
        return await self.call(call16.RemoteStopTransaction(transaction_id=int(transaction)), suppress=False)


class Cs201(Cp201Base):
    @on("BootNotification")
    def on_boot(self, charging_station, reason, **_):
        emit("boot", id=self.id, reason=text(reason))
        return result201.BootNotification(current_time=now(), interval=30,
                                          status=enums201.RegistrationStatusEnumType.accepted)

    @on("Heartbeat")
    def on_heartbeat(self, **_):
        return result201.Heartbeat(current_time=now())

    @on("StatusNotification")
    def on_status(self, **_):
        return result201.StatusNotification()

    @on("TransactionEvent")
    def on_transaction_event(self, event_type, timestamp, trigger_reason, seq_no, transaction_info,
                             meter_value=None, evse=None, **_):
        value = None
        if meter_value:
            value = meter_value[0]["sampled_value"][0]["value"]
        emit("tx", type=text(event_type), seq_no=seq_no, transaction=transaction_info["transaction_id"],
             trigger=text(trigger_reason), reason=transaction_info.get("stopped_reason"),
             remote_start_id=transaction_info.get("remote_start_id"), value=value,
             evse=(evse or {}).get("id"))
        return result201.TransactionEvent()

    async def remote_start(self, id_tag):
        STATE.remote_start_id += 1
        request = call201.RequestStartTransaction(
            id_token={"id_token": id_tag, "type": enums201.IdTokenEnumType.iso14443},
            remote_start_id=STATE.remote_start_id,
        )
        return await self.call(request, suppress=False)

    async def remote_stop(self, transaction):
        return await self.call(call201.RequestStopTransaction(transaction_id=transaction), suppress=False)


async def command(line):
    words = line.split()
    if not words:
        return
    try:
        if words[0] == "offline":
            STATE.offline = True
            if STATE.websocket is not None:
                await STATE.websocket.close()
            emit("command", command=line, status="done")
        elif words[0] == "online":
            STATE.offline = False
            emit("command", command=line, status="done")
        elif words[0] == "start":
            answer = await STATE.connected.remote_start(words[1])
            emit("command", command=line, status=text(answer.status))
        elif words[0] == "stop":
            answer = await STATE.connected.remote_stop(words[1])
            emit("command", command=line, status=text(answer.status))
    except Exception as e:  # noqa: BLE001
        emit("command", command=line, error=f"{type(e).__name__}: {e}")


def read_stdin(loop):
    for line in sys.stdin:
        asyncio.run_coroutine_threadsafe(command(line.strip()), loop)


async def serve(args):
    subprotocol, cls = {"1.6": ("ocpp1.6", Cs16), "2.0.1": ("ocpp2.0.1", Cs201)}[args.version]

    def process_request(connection, request):
        if STATE.offline:
            emit("refused")
            return connection.respond(http.HTTPStatus.SERVICE_UNAVAILABLE, "offline\n")
        return None

    async def handler(ws):
        identity = ws.request.path.split("?", 1)[0].rsplit("/", 1)[-1]
        emit("connected", id=identity)
        cs = cls(identity, ws, response_timeout=10)
        STATE.connected = cs
        STATE.websocket = ws
        try:
            await cs.start()
        except websockets.exceptions.ConnectionClosed:
            pass
        finally:
            emit("disconnected", id=identity)

    async with websockets.serve(handler, "127.0.0.1", args.port, subprotocols=[subprotocol],
                                process_request=process_request):
        threading.Thread(target=read_stdin, args=(asyncio.get_running_loop(),), daemon=True).start()
        emit("listening", port=args.port)
        await asyncio.Future()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--version", choices=["1.6", "2.0.1"], required=True)
    args = parser.parse_args()
    try:
        asyncio.run(serve(args))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
