#!/usr/bin/env python3
"""A central system on the PyPI `ocpp` library (2.1.0) that reads and sets a station's device
model (ocpp-tokio's `station::DeviceModelStore`). Every payload in and out is checked against the
official schemas by the library (a station answer or NotifyReport that is not schema-valid fails
its call, or is answered with a CALLERROR, and the event below is not printed).

usage: python_device_model_csms.py --port P --version 1.6|2.0.1|2.1

Answers BootNotification Accepted with interval 0 (the station chooses: its HeartbeatInterval).
On the first boot of this process it runs the script below and prints what it got; on later
boots it only reads HeartbeatInterval back. Prints one JSON line per event, flushed:
  {"event":"listening","port":P}
  {"event":"boot","id":ID,"count":N}
  {"event":"heartbeat","id":ID}
  1.6:   {"event":"get_configuration_all","keys":{KEY:{"readonly":..,"value":..}}}
         {"event":"get_configuration","known":{..},"unknown":[..]}
         {"event":"change_configuration","key":K,"value":V,"status":S}   (one per change)
         {"event":"heartbeat_interval","value":V}                      (later boots)
  2.x:   {"event":"get_variables","results":[[STATUS, VALUE-or-null], ..]}
         {"event":"set_variables","results":[STATUS, ..]}
         {"event":"report","request_id":N,"status":S,"seq_nos":[..],"tbc":[..],
          "items":[["Component","Variable", DATATYPE, [MUTABILITY..]], ..]}
         {"event":"heartbeat_interval","value":V}                      (later boots)
  {"event":"script_done","id":ID}   or   {"event":"script_failed","error":...}
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
from ocpp.v16.enums import RegistrationStatus
from ocpp.v201 import ChargePoint as Cp201Base
from ocpp.v201 import call as call201
from ocpp.v201 import call_result as result201
from ocpp.v201 import enums as enums201
from ocpp.v21 import ChargePoint as Cp21Base
from ocpp.v21 import call as call21
from ocpp.v21 import call_result as result21
from ocpp.v21 import enums as enums21

TIMEOUT = 10  # seconds for each answer
BOOTS = {"count": 0}


def emit(event, **fields):
    print(json.dumps({"event": event, **fields}, separators=(",", ":")), flush=True)


def now():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def text(value):
    """An enum member's value, or the value as it came."""
    return getattr(value, "value", value)


async def guarded(script):
    try:
        await script()
    except Exception as e:  # noqa: BLE001
        emit("script_failed", error=f"{type(e).__name__}: {e}")


class Cs16(Cp16Base):
    @on("BootNotification")
    def on_boot(self, **_):
        BOOTS["count"] += 1
        emit("boot", id=self.id, count=BOOTS["count"])
        return result16.BootNotification(current_time=now(), interval=0, status=RegistrationStatus.accepted)

    @after("BootNotification")
    async def after_boot(self, **_):
        await guarded(self.script if BOOTS["count"] == 1 else self.read_back)

    @on("Heartbeat")
    def on_heartbeat(self, **_):
        emit("heartbeat", id=self.id)
        return result16.Heartbeat(current_time=now())

    @on("StatusNotification")
    def on_status(self, **_):
        return result16.StatusNotification()

    async def read_back(self):
        answer = await self.call(call16.GetConfiguration(key=["HeartbeatInterval"]), suppress=False)
        emit("heartbeat_interval", value=answer.configuration_key[0]["value"])
        emit("script_done", id=self.id)

    async def script(self):
        answer = await self.call(call16.GetConfiguration(), suppress=False)
        keys = {k["key"]: {"readonly": k["readonly"], "value": k.get("value")} for k in answer.configuration_key}
        emit("get_configuration_all", keys=keys, unknown=answer.unknown_key)
        answer = await self.call(call16.GetConfiguration(key=["HeartbeatInterval", "AcmeUnknown"]), suppress=False)
        known = {k["key"]: k.get("value") for k in (answer.configuration_key or [])}
        emit("get_configuration", known=known, unknown=answer.unknown_key)
        for key, value in [
            ("NumberOfConnectors", "3"),
            ("HeartbeatInterval", "soon"),
            ("AcmeUnknown", "1"),
            ("MeterValuesSampledData", "Voltage,Energy.Active.Import.Register"),
            ("MeterValuesSampledData", "Voltage,Nonsense"),
            ("HeartbeatInterval", "1"),
        ]:
            answer = await self.call(call16.ChangeConfiguration(key=key, value=value), suppress=False)
            emit("change_configuration", key=key, value=value, status=text(answer.status))
        emit("script_done", id=self.id)


def cv(component, variable, **extra):
    """A GetVariableData / SetVariableData item: component (name or dict) and variable."""
    if isinstance(component, str):
        component = {"name": component}
    if isinstance(variable, str):
        variable = {"name": variable}
    return {"component": component, "variable": variable, **extra}


class Device2:
    """The 2.x central system side of one connection; `C`, `R`, `E`: the version's call,
    call_result and enums modules."""

    reports = {}
    done = {}

    @on("BootNotification")
    def on_boot(self, **_):
        BOOTS["count"] += 1
        emit("boot", id=self.id, count=BOOTS["count"])
        return self.R.BootNotification(
            current_time=now(), interval=0, status=self.E.RegistrationStatusEnumType.accepted
        )

    @after("BootNotification")
    async def after_boot(self, **_):
        await guarded(self.script if BOOTS["count"] == 1 else self.read_back)

    @on("Heartbeat")
    def on_heartbeat(self, **_):
        emit("heartbeat", id=self.id)
        return self.R.Heartbeat(current_time=now())

    @on("StatusNotification")
    def on_status(self, **_):
        return self.R.StatusNotification()

    @on("NotifyReport")
    def on_notify_report(self, request_id, generated_at, seq_no, tbc=False, report_data=None, **_):
        report = self.reports.setdefault(request_id, {"seq_nos": [], "tbc": [], "items": []})
        report["seq_nos"].append(seq_no)
        report["tbc"].append(tbc)
        for item in report_data or []:
            characteristics = item.get("variable_characteristics") or {}
            mutability = [a.get("mutability") for a in item["variable_attribute"]]
            report["items"].append(
                [item["component"]["name"], item["variable"]["name"], characteristics.get("data_type"), mutability]
            )
        if not tbc:
            self.done.setdefault(request_id, asyncio.Event()).set()
        return self.R.NotifyReport()

    async def report(self, request, request_id):
        answer = await self.call(request, suppress=False)
        status = text(answer.status)
        if status == "Accepted":
            await asyncio.wait_for(self.done.setdefault(request_id, asyncio.Event()).wait(), TIMEOUT)
        report = self.reports.get(request_id, {"seq_nos": [], "tbc": [], "items": []})
        emit("report", request_id=request_id, status=status, **report)

    async def read_back(self):
        request = self.C.GetVariables(get_variable_data=[cv("OCPPCommCtrlr", "HeartbeatInterval")])
        answer = await self.call(request, suppress=False)
        emit("heartbeat_interval", value=answer.get_variable_result[0].get("attribute_value"))
        emit("script_done", id=self.id)

    async def script(self):
        request = self.C.GetVariables(
            get_variable_data=[
                cv("OCPPCommCtrlr", "HeartbeatInterval"),
                cv("SecurityCtrlr", "SecurityProfile"),
                cv("AcmeCtrlr", "HeartbeatInterval"),
                cv("OCPPCommCtrlr", "Acme"),
                cv("OCPPCommCtrlr", "HeartbeatInterval", attribute_type="MaxSet"),
                cv("DeviceDataCtrlr", {"name": "ItemsPerMessage", "instance": "GetReport"}),
                cv("SecurityCtrlr", "BasicAuthPassword"),
            ]
        )
        answer = await self.call(request, suppress=False)
        results = [[text(r["attribute_status"]), r.get("attribute_value")] for r in answer.get_variable_result]
        emit("get_variables", results=results)
        request = self.C.SetVariables(
            set_variable_data=[
                cv("OCPPCommCtrlr", "HeartbeatInterval", attribute_value="1"),
                cv("SecurityCtrlr", "SecurityProfile", attribute_value="3"),
                cv("TxCtrlr", "EVConnectionTimeOut", attribute_value="-5"),
                cv("AcmeCtrlr", "HeartbeatInterval", attribute_value="1"),
                cv("OCPPCommCtrlr", "Acme", attribute_value="1"),
                cv("OCPPCommCtrlr", "HeartbeatInterval", attribute_value="1", attribute_type="MaxSet"),
                cv("TxCtrlr", "TxStopPoint", attribute_value="EVConnected,Authorized,PowerPathClosed"),
            ]
        )
        answer = await self.call(request, suppress=False)
        emit("set_variables", results=[text(r["attribute_status"]) for r in answer.set_variable_result])
        await self.report(self.C.GetBaseReport(request_id=1, report_base="FullInventory"), 1)
        await self.report(self.C.GetBaseReport(request_id=2, report_base="ConfigurationInventory"), 2)
        await self.report(self.C.GetBaseReport(request_id=3, report_base="SummaryInventory"), 3)
        request = self.C.GetReport(request_id=4, component_variable=[{"component": {"name": "OCPPCommCtrlr"}}])
        await self.report(request, 4)
        request = self.C.GetReport(request_id=5, component_variable=[{"component": {"name": "AcmeCtrlr"}}])
        await self.report(request, 5)
        emit("script_done", id=self.id)


class Cs201(Device2, Cp201Base):
    C, R, E = call201, result201, enums201


class Cs21(Device2, Cp21Base):
    C, R, E = call21, result21, enums21


async def serve(args):
    subprotocol, cls = {
        "1.6": ("ocpp1.6", Cs16),
        "2.0.1": ("ocpp2.0.1", Cs201),
        "2.1": ("ocpp2.1", Cs21),
    }[args.version]

    async def handler(ws):
        identity = ws.request.path.split("?", 1)[0].rsplit("/", 1)[-1]
        cs = cls(identity, ws, response_timeout=TIMEOUT)
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
        print(f"FAIL: python device model csms {args.version}: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
