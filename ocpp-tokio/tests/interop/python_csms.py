#!/usr/bin/env python3
"""A central system on the PyPI `ocpp` library (2.1.0) for ocpp-tokio's station client.

usage: python_csms.py --port P --version 1.6|2.0.1|2.1

Serves ws://127.0.0.1:P/ocpp/<identity> with the one subprotocol (ocpp1.6, ocpp2.0.1 or ocpp2.1).
Answers BootNotification Accepted with interval 1 (a heartbeat every second), Heartbeat with the
current time, StatusNotification (and Authorize, MeterValues, the transaction messages) if they
come. Once a station's BootNotification has been answered it sends RemoteStartTransaction (1.6,
idTag TAG-1) or RequestStartTransaction (2.x, idToken TAG-1 ISO14443, remoteStartId 1) and
prints the typed status it got back.

Prints one JSON line per event on stdout, flushed:
  {"event":"listening","port":P}
  {"event":"connected","id":ID,"subprotocol":...}
  {"event":"boot","id":ID,"reason":REASON-or-null}
  {"event":"heartbeat","id":ID}
  {"event":"status_notification","id":ID,"status":...}
  {"event":"remote_start","id":ID,"status":"Accepted"}   (or "error": ... when it failed)
  {"event":"disconnected","id":ID}
Runs until killed.
"""

import argparse
import asyncio
import json
import sys
from datetime import datetime, timezone

import websockets
from ocpp.routing import after, on
from ocpp.v16 import ChargePoint as Cp16Base
from ocpp.v16 import call as call16
from ocpp.v16 import call_result as result16
from ocpp.v16.enums import AuthorizationStatus, RegistrationStatus
from ocpp.v201 import ChargePoint as Cp201Base
from ocpp.v201 import call as call201
from ocpp.v201 import call_result as result201
from ocpp.v201 import enums as enums201
from ocpp.v21 import ChargePoint as Cp21Base
from ocpp.v21 import call as call21
from ocpp.v21 import call_result as result21
from ocpp.v21 import enums as enums21

REMOTE_START_TIMEOUT = 10  # seconds for the station to answer the remote start


def emit(event, **fields):
    print(json.dumps({"event": event, **fields}, separators=(",", ":")), flush=True)


def now():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def status_text(status):
    """An enum member's value (`Accepted`), or the text as it came."""
    return getattr(status, "value", status)


async def remote_start(cs, request):
    """Sends `request` (the remote start) from `cs`; emits the status it got back, or the error."""
    try:
        answer = await cs.call(request, suppress=False)
        emit("remote_start", id=cs.id, status=status_text(answer.status))
    except Exception as e:  # noqa: BLE001
        emit("remote_start", id=cs.id, error=f"{type(e).__name__}: {e}")


class Cs16(Cp16Base):
    """OCPP 1.6 central system side of one connection."""

    @on("BootNotification")
    def on_boot(self, charge_point_vendor, charge_point_model, **_):
        emit("boot", id=self.id, reason=None, vendor=charge_point_vendor, model=charge_point_model)
        return result16.BootNotification(current_time=now(), interval=1, status=RegistrationStatus.accepted)

    @after("BootNotification")
    async def after_boot(self, **_):
        await remote_start(self, call16.RemoteStartTransaction(id_tag="TAG-1"))

    @on("Heartbeat")
    def on_heartbeat(self, **_):
        emit("heartbeat", id=self.id)
        return result16.Heartbeat(current_time=now())

    @on("StatusNotification")
    def on_status(self, connector_id, error_code, status, **_):
        emit("status_notification", id=self.id, connector=connector_id, status=status)
        return result16.StatusNotification()

    @on("Authorize")
    def on_authorize(self, id_tag, **_):
        emit("authorize", id=self.id, id_tag=id_tag)
        return result16.Authorize(id_tag_info={"status": AuthorizationStatus.accepted})

    @on("StartTransaction")
    def on_start(self, connector_id, id_tag, **_):
        emit("start_transaction", id=self.id, connector=connector_id, id_tag=id_tag)
        return result16.StartTransaction(transaction_id=1, id_tag_info={"status": AuthorizationStatus.accepted})

    @on("StopTransaction")
    def on_stop(self, transaction_id, **_):
        emit("stop_transaction", id=self.id, transaction=transaction_id)
        return result16.StopTransaction()

    @on("MeterValues")
    def on_meter_values(self, connector_id, **_):
        emit("meter_values", id=self.id, connector=connector_id)
        return result16.MeterValues()


def cs2x(base, call, result, enums):
    """The central system side of one connection on OCPP 2.0.1 or 2.1 (`base`, `call`,
    `result`, `enums`: that version's classes of the library)."""

    class Cs2x(base):
        @on("BootNotification")
        def on_boot(self, charging_station, reason, **_):
            emit("boot", id=self.id, reason=status_text(reason), vendor=charging_station.get("vendor_name"))
            return result.BootNotification(
                current_time=now(), interval=1, status=enums.RegistrationStatusEnumType.accepted
            )

        @after("BootNotification")
        async def after_boot(self, **_):
            request = call.RequestStartTransaction(
                id_token={"id_token": "TAG-1", "type": "ISO14443"},
                remote_start_id=1,
            )
            await remote_start(self, request)

        @on("Heartbeat")
        def on_heartbeat(self, **_):
            emit("heartbeat", id=self.id)
            return result.Heartbeat(current_time=now())

        @on("StatusNotification")
        def on_status(self, timestamp, connector_status, evse_id, connector_id, **_):
            emit("status_notification", id=self.id, evse=evse_id, connector=connector_id, status=connector_status)
            return result.StatusNotification()

        @on("Authorize")
        def on_authorize(self, id_token, **_):
            emit("authorize", id=self.id, id_token=id_token.get("id_token"))
            return result.Authorize(id_token_info={"status": enums.AuthorizationStatusEnumType.accepted})

        @on("TransactionEvent")
        def on_transaction_event(self, event_type, **_):
            emit("transaction_event", id=self.id, event_type=event_type)
            return result.TransactionEvent()

        @on("MeterValues")
        def on_meter_values(self, evse_id, **_):
            emit("meter_values", id=self.id, evse=evse_id)
            return result.MeterValues()

    return Cs2x


Cs201 = cs2x(Cp201Base, call201, result201, enums201)
Cs21 = cs2x(Cp21Base, call21, result21, enums21)


async def serve(args):
    subprotocol, cls = {"1.6": ("ocpp1.6", Cs16), "2.0.1": ("ocpp2.0.1", Cs201), "2.1": ("ocpp2.1", Cs21)}[
        args.version
    ]

    async def handler(ws):
        path = ws.request.path.split("?", 1)[0]
        identity = path.rsplit("/", 1)[-1]
        if not path.startswith("/ocpp/") or not identity or ws.subprotocol != subprotocol:
            emit("refused", path=path, subprotocol=ws.subprotocol)
            await ws.close(code=1008, reason="expected /ocpp/<id> and " + subprotocol)
            return
        emit("connected", id=identity, subprotocol=ws.subprotocol)
        cs = cls(identity, ws, response_timeout=REMOTE_START_TIMEOUT)
        try:
            await cs.start()
        except websockets.exceptions.ConnectionClosed:
            pass
        finally:
            emit("disconnected", id=identity)

    async with websockets.serve(handler, "127.0.0.1", args.port, subprotocols=[subprotocol]):
        emit("listening", port=args.port)
        await asyncio.Future()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--version", choices=["1.6", "2.0.1", "2.1"], required=True)
    args = parser.parse_args()
    try:
        asyncio.run(serve(args))
    except KeyboardInterrupt:
        pass
    except Exception as e:  # noqa: BLE001
        print(f"FAIL: python-ocpp csms {args.version}: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
