#!/usr/bin/env python3
"""A central system on the PyPI `ocpp` library (2.1.0) that manages a station's local
authorization list and authorization cache (ocpp-tokio's `station::LocalAuthStore`). Every
payload in and out is checked against the official schemas by the library (an answer that is
not schema-valid fails its call, and the event below is not printed).

usage: python_local_auth_csms.py --port P --version 1.6|2.0.1|2.1

Answers BootNotification Accepted, and Authorize: Accepted until 2099 for every token but
"BLOCKED". On the first boot of this process it runs the script below; on later boots it only
reads the list's version back. Prints one JSON line per event, flushed:
  {"event":"listening","port":P}
  {"event":"boot","id":ID,"count":N}
  {"event":"authorize","id_token":T}
  {"event":"send_local_list","step":NAME,"version":V,"update_type":U,"status":S}  (one per list)
  {"event":"list_version","step":NAME,"version":V}
  {"event":"clear_cache","status":S}
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
UNTIL = "2099-01-01T00:00:00Z"


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


# The lists sent, in the words of no version: (step, version, update type, [(token, status or
# None to remove, expiry or None, group or None)]).
LISTS = [
    ("full", 1, "Full", [("A", "Accepted", None, None), ("B", "Accepted", None, None), ("C", "Blocked", None, None)]),
    ("differential", 2, "Differential", [("D", "Accepted", UNTIL, None), ("B", None, None, None), ("C", "Accepted", None, "G")]),
    ("same_version", 2, "Differential", [("E", "Accepted", None, None)]),
    ("old_version", 1, "Differential", [("E", "Accepted", None, None)]),
    # One more than the station takes in one message (SendLocalListMaxLength,
    # LocalAuthListCtrlr.ItemsPerMessage: 100).
    ("too_many", 3, "Differential", [(f"T{i}", "Accepted", None, None) for i in range(101)]),
]


class Script:
    """The script, common to every version: `send_list(version, update_type, entries)`,
    `list_version()`, `clear_cache()` are the version's."""

    @after("BootNotification")
    async def after_boot(self, **_):
        await guarded(self.script if BOOTS["count"] == 1 else self.read_back)

    async def read_back(self):
        emit("list_version", step="restarted", version=await self.list_version())
        emit("script_done", id=self.id)

    async def script(self):
        emit("list_version", step="initial", version=await self.list_version())
        for step, version, update_type, entries in LISTS:
            status = await self.send_list(version, update_type, entries)
            emit("send_local_list", step=step, version=version, update_type=update_type, status=status)
            emit("list_version", step=step, version=await self.list_version())
        emit("clear_cache", status=await self.clear_cache())
        emit("script_done", id=self.id)


class Cs16(Script, Cp16Base):
    @on("BootNotification")
    def on_boot(self, **_):
        BOOTS["count"] += 1
        emit("boot", id=self.id, count=BOOTS["count"])
        return result16.BootNotification(current_time=now(), interval=300, status=RegistrationStatus.accepted)

    @on("Heartbeat")
    def on_heartbeat(self, **_):
        return result16.Heartbeat(current_time=now())

    @on("StatusNotification")
    def on_status(self, **_):
        return result16.StatusNotification()

    @on("Authorize")
    def on_authorize(self, id_tag, **_):
        emit("authorize", id_token=id_tag)
        status = "Blocked" if id_tag == "BLOCKED" else "Accepted"
        return result16.Authorize(id_tag_info={"status": status, "expiry_date": UNTIL})

    async def send_list(self, version, update_type, entries):
        data = []
        for token, status, expiry, group in entries:
            item = {"id_tag": token}
            if status is not None:
                info = {"status": status}
                if expiry:
                    info["expiry_date"] = expiry
                if group:
                    info["parent_id_tag"] = group
                item["id_tag_info"] = info
            data.append(item)
        request = call16.SendLocalList(list_version=version, update_type=update_type, local_authorization_list=data)
        return text((await self.call(request, suppress=False)).status)

    async def list_version(self):
        return (await self.call(call16.GetLocalListVersion(), suppress=False)).list_version

    async def clear_cache(self):
        return text((await self.call(call16.ClearCache(), suppress=False)).status)


class Cs2(Script):
    """2.x; `C`, `R`, `E`: the version's call, call_result and enums modules."""

    @on("BootNotification")
    def on_boot(self, **_):
        BOOTS["count"] += 1
        emit("boot", id=self.id, count=BOOTS["count"])
        return self.R.BootNotification(
            current_time=now(), interval=300, status=self.E.RegistrationStatusEnumType.accepted
        )

    @on("Heartbeat")
    def on_heartbeat(self, **_):
        return self.R.Heartbeat(current_time=now())

    @on("StatusNotification")
    def on_status(self, **_):
        return self.R.StatusNotification()

    @on("Authorize")
    def on_authorize(self, id_token, **_):
        emit("authorize", id_token=id_token["id_token"])
        status = "Blocked" if id_token["id_token"] == "BLOCKED" else "Accepted"
        return self.R.Authorize(id_token_info={"status": status, "cache_expiry_date_time": UNTIL})

    async def send_list(self, version, update_type, entries):
        data = []
        for token, status, expiry, group in entries:
            item = {"id_token": {"id_token": token, "type": "ISO14443"}}
            if status is not None:
                info = {"status": status}
                if expiry:
                    info["cache_expiry_date_time"] = expiry
                if group:
                    info["group_id_token"] = {"id_token": group, "type": "Central"}
                item["id_token_info"] = info
            data.append(item)
        request = self.C.SendLocalList(version_number=version, update_type=update_type, local_authorization_list=data)
        return text((await self.call(request, suppress=False)).status)

    async def list_version(self):
        return (await self.call(self.C.GetLocalListVersion(), suppress=False)).version_number

    async def clear_cache(self):
        return text((await self.call(self.C.ClearCache(), suppress=False)).status)


class Cs201(Cs2, Cp201Base):
    C, R, E = call201, result201, enums201


class Cs21(Cs2, Cp21Base):
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
        print(f"FAIL: python local auth csms {args.version}: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
