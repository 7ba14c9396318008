#!/usr/bin/env python3
"""Interop check: a charge point built on the PyPI `ocpp` library (2.1.0) against mio-server.

usage: python_cp.py WS_URL VERSION --admin HTTP_URL [--identity ID] [--timeout S] [-v]

  WS_URL   base URL of the CSMS, e.g. ws://127.0.0.1:9000/ocpp (the identity is appended)
  VERSION  1.6, 2.0.1 or 2.1
  --admin  base URL of mio-server's admin API, e.g. http://127.0.0.1:9001

Connects with the matching subprotocol (ocpp1.6 / ocpp2.0.1 / ocpp2.1), then, through the library's
ChargePoint (which validates every message against the OCPP JSON schemas):
  * BootNotification: expects status Accepted and an interval > 0
  * Heartbeat: expects currentTime, an ISO 8601 date-time
  * StatusNotification: expects a (schema-valid) empty CALLRESULT
  * commands down: while the ChargePoint runs, POSTs to the admin API
      1.6:   Reset {"type":"Soft"}, ChangeConfiguration {"key":..,"value":..}
      2.x:   Reset {"type":"Immediate"}, SetVariables [..]
    checks that the handler received exactly that payload and that the HTTP 200 body carries
    the handler's answer; and ClearCache (no handler here) must come back as a 502 CALLERROR
    NotImplemented (on 2.1, which the library leaves unanswered, as a 504 at the caller's
    deadline).
Exits 0 on success; 1 with a `FAIL: ...` line on any mismatch; 2 on a usage error. The whole
run is bounded by --timeout (default 20 s).
"""

import argparse
import asyncio
import json
import logging
import os
import sys
import urllib.error
import urllib.request
from datetime import datetime, timezone

import websockets
from ocpp.routing import on
from ocpp.v16 import ChargePoint as ChargePoint16
from ocpp.v16 import call as call16
from ocpp.v16 import call_result as result16
from ocpp.v16.enums import (
    ChargePointErrorCode,
    ChargePointStatus,
    ConfigurationStatus,
    RegistrationStatus,
    ResetStatus,
)
from ocpp.v201 import ChargePoint as ChargePoint201
from ocpp.v201 import call as call201
from ocpp.v201 import call_result as result201
from ocpp.v201 import datatypes as types201
from ocpp.v201 import enums as enums201
from ocpp.v21 import ChargePoint as ChargePoint21
from ocpp.v21 import call as call21
from ocpp.v21 import call_result as result21
from ocpp.v21 import datatypes as types21
from ocpp.v21 import enums as enums21

HTTP_TIMEOUT = 10  # seconds for one admin request


class Failure(Exception):
    """A mismatch between what the server did and what OCPP (or the admin API) says."""


def check(condition, message):
    if not condition:
        raise Failure(message)


def check_datetime(value, what):
    check(isinstance(value, str), f"{what}: expected a date-time string, got {value!r}")
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise Failure(f"{what}: not an ISO 8601 date-time: {value!r}") from None


class Cp16(ChargePoint16):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.received = []  # (action, payload in snake_case)

    @on("Reset")
    def on_reset(self, **payload):
        self.received.append(("Reset", payload))
        return result16.Reset(status=ResetStatus.accepted)

    @on("ChangeConfiguration")
    def on_change_configuration(self, **payload):
        self.received.append(("ChangeConfiguration", payload))
        return result16.ChangeConfiguration(status=ConfigurationStatus.reboot_required)


def cp2x(base, result, types, enums):
    """The charge point's handlers on OCPP 2.0.1 or 2.1 (`base`, `result`, `types`, `enums`:
    that version's classes of the library)."""

    class Cp2x(base):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.received = []

        @on("Reset")
        def on_reset(self, **payload):
            self.received.append(("Reset", payload))
            return result.Reset(status=enums.ResetStatusEnumType.scheduled)

        @on("SetVariables")
        def on_set_variables(self, **payload):
            self.received.append(("SetVariables", payload))
            results = [
                types.SetVariableResultType(
                    attribute_status=enums.SetVariableStatusEnumType.accepted,
                    # Said on both versions (2.1's class sets it by default, 2.0.1's does not).
                    attribute_type=enums.AttributeEnumType.actual,
                    component=types.ComponentType(name=item["component"]["name"]),
                    variable=types.VariableType(name=item["variable"]["name"]),
                )
                for item in payload["set_variable_data"]
            ]
            return result.SetVariables(set_variable_result=results)

    return Cp2x


Cp201 = cp2x(ChargePoint201, result201, types201, enums201)
Cp21 = cp2x(ChargePoint21, result21, types21, enums21)


def admin_post(admin, identity, action, payload, headers=None):
    """POST /chargepoints/{identity}/call/{action}; returns (status, parsed JSON body)."""
    url = f"{admin}/chargepoints/{identity}/call/{action}"
    data = json.dumps(payload).encode()
    request = urllib.request.Request(
        url, data=data, method="POST", headers={"Content-Type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT) as response:
            status, body = response.status, response.read()
    except urllib.error.HTTPError as e:
        status, body = e.code, e.read()
    try:
        parsed = json.loads(body)
    except ValueError:
        raise Failure(f"POST {url}: HTTP {status} with a body that is not JSON: {body!r}")
    return status, parsed


async def command(cp, admin, identity, action, payload, expect_received, expect_result):
    """Sends one command down through the admin API while `cp` runs; checks both ends."""
    before = len(cp.received)
    status, body = await asyncio.to_thread(admin_post, admin, identity, action, payload)
    check(status == 200, f"{action}: admin API answered HTTP {status}, expected 200: {body}")
    check(body.get("action") == action, f"{action}: admin body names action {body.get('action')!r}")
    check(
        body.get("result") == expect_result,
        f"{action}: admin body result {body.get('result')!r}, expected {expect_result!r}",
    )
    got = cp.received[before:]
    check(len(got) == 1, f"{action}: the charge point handled {len(got)} commands, expected 1")
    check(got[0][0] == action, f"{action}: the charge point handled {got[0][0]}")
    check(
        got[0][1] == expect_received,
        f"{action}: the charge point received {got[0][1]!r}, expected {expect_received!r}",
    )
    print(f"  {action} down: charge point got {got[0][1]}, admin API answered {body['result']}")


async def unhandled_command(admin, identity, action, payload):
    """A command this charge point has no handler for: expects 502 with NotImplemented."""
    status, body = await asyncio.to_thread(admin_post, admin, identity, action, payload)
    check(status == 502, f"{action} (unhandled): admin API answered HTTP {status}, expected 502: {body}")
    code = (body.get("error") or {}).get("code")
    check(code == "NotImplemented", f"{action} (unhandled): CALLERROR code {code!r}, expected NotImplemented: {body}")
    print(f"  {action} down (no handler): 502 {code}")


async def unanswered_command(admin, identity, action, payload):
    """A command the charge point never answers: the library's 2.1 ChargePoint (ocpp 2.1.0)
    sends no CALLERROR for an action it has no handler for (its `_raise_key_error` knows 1.6
    and 2.0.1 only), so the server's side must end the CALL itself: with the caller's deadline
    of 2 s (`x-deadline-ms`), HTTP 504 (it may have reached the charge point)."""
    headers = {"x-deadline-ms": "2000"}
    status, body = await asyncio.to_thread(admin_post, admin, identity, action, payload, headers)
    check(status == 504, f"{action} (unanswered): admin API answered HTTP {status}, expected 504: {body}")
    print(f"  {action} down (never answered): 504 {body}")


async def run_v16(cp, admin, identity):
    boot = await cp.call(
        call16.BootNotification(charge_point_vendor="ACME", charge_point_model="PyOCPP-16"),
        suppress=False,
    )
    check(boot.status == RegistrationStatus.accepted, f"BootNotification: status {boot.status!r}, expected Accepted")
    check(isinstance(boot.interval, int) and boot.interval > 0, f"BootNotification: interval {boot.interval!r}")
    check_datetime(boot.current_time, "BootNotification currentTime")
    print(f"  BootNotification: {boot.status} interval={boot.interval}")

    beat = await cp.call(call16.Heartbeat(), suppress=False)
    check_datetime(beat.current_time, "Heartbeat currentTime")
    print(f"  Heartbeat: currentTime={beat.current_time}")

    await cp.call(
        call16.StatusNotification(
            connector_id=1,
            error_code=ChargePointErrorCode.no_error,
            status=ChargePointStatus.available,
        ),
        suppress=False,
    )
    print("  StatusNotification: ok")

    await command(cp, admin, identity, "Reset", {"type": "Soft"}, {"type": "Soft"}, {"status": "Accepted"})
    await command(
        cp,
        admin,
        identity,
        "ChangeConfiguration",
        {"key": "HeartbeatInterval", "value": "120"},
        {"key": "HeartbeatInterval", "value": "120"},
        {"status": "RebootRequired"},
    )
    await unhandled_command(admin, identity, "ClearCache", {})


async def run_v2x(cp, admin, identity, call, enums, model, unhandled=unhandled_command):
    """The scenario on 2.0.1 or 2.1 (`call`, `enums`: that version's modules; `unhandled`:
    the check of a command the charge point has no handler for)."""
    boot = await cp.call(
        call.BootNotification(
            charging_station={"vendor_name": "ACME", "model": model},
            reason=enums.BootReasonEnumType.power_up,
        ),
        suppress=False,
    )
    check(
        boot.status == enums.RegistrationStatusEnumType.accepted,
        f"BootNotification: status {boot.status!r}, expected Accepted",
    )
    check(isinstance(boot.interval, int) and boot.interval > 0, f"BootNotification: interval {boot.interval!r}")
    check_datetime(boot.current_time, "BootNotification currentTime")
    print(f"  BootNotification: {boot.status} interval={boot.interval}")

    beat = await cp.call(call.Heartbeat(), suppress=False)
    check_datetime(beat.current_time, "Heartbeat currentTime")
    print(f"  Heartbeat: currentTime={beat.current_time}")

    await cp.call(
        call.StatusNotification(
            timestamp=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            connector_status=enums.ConnectorStatusEnumType.available,
            evse_id=1,
            connector_id=1,
        ),
        suppress=False,
    )
    print("  StatusNotification: ok")

    await command(cp, admin, identity, "Reset", {"type": "Immediate"}, {"type": "Immediate"}, {"status": "Scheduled"})
    set_data = [
        {"attributeValue": "120", "component": {"name": "OCPPCommCtrlr"}, "variable": {"name": "HeartbeatInterval"}}
    ]
    await command(
        cp,
        admin,
        identity,
        "SetVariables",
        {"setVariableData": set_data},
        {
            "set_variable_data": [
                {"attribute_value": "120", "component": {"name": "OCPPCommCtrlr"}, "variable": {"name": "HeartbeatInterval"}}
            ]
        },
        {
            "setVariableResult": [
                {
                    "attributeStatus": "Accepted",
                    "attributeType": "Actual",
                    "component": {"name": "OCPPCommCtrlr"},
                    "variable": {"name": "HeartbeatInterval"},
                }
            ]
        },
    )
    await unhandled(admin, identity, "ClearCache", {})


async def run_v201(cp, admin, identity):
    await run_v2x(cp, admin, identity, call201, enums201, "PyOCPP-201")


async def run_v21(cp, admin, identity):
    await run_v2x(cp, admin, identity, call21, enums21, "PyOCPP-21", unanswered_command)


async def main(args):
    subprotocol = {"1.6": "ocpp1.6", "2.0.1": "ocpp2.0.1", "2.1": "ocpp2.1"}[args.version]
    url = f"{args.url.rstrip('/')}/{args.identity}"
    print(f"python-ocpp {args.version}: connecting to {url} ({subprotocol})")
    async with websockets.connect(url, subprotocols=[subprotocol], open_timeout=5, close_timeout=2) as ws:
        check(ws.subprotocol == subprotocol, f"handshake: subprotocol {ws.subprotocol!r}, expected {subprotocol!r}")
        cls = {"1.6": Cp16, "2.0.1": Cp201, "2.1": Cp21}[args.version]
        cp = cls(args.identity, ws, response_timeout=5)
        receiver = asyncio.create_task(cp.start())
        try:
            scenario = {"1.6": run_v16, "2.0.1": run_v201, "2.1": run_v21}[args.version]
            work = asyncio.create_task(scenario(cp, args.admin.rstrip("/"), args.identity))
            done, _ = await asyncio.wait({work, receiver}, return_when=asyncio.FIRST_COMPLETED)
            if work not in done:
                # The receive loop ended first: the server closed the connection.
                work.cancel()
                exc = receiver.exception()
                raise Failure(f"connection ended during the scenario: {exc!r}")
            work.result()
        finally:
            receiver.cancel()
            try:
                await receiver
            except (asyncio.CancelledError, Exception):
                pass
        await ws.close()
        check(ws.close_code in (1000, 1005), f"close: code {ws.close_code}")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("url", help="ws://HOST:PORT[/path] (the identity is appended)")
    parser.add_argument("version", choices=["1.6", "2.0.1", "2.1"])
    parser.add_argument("--admin", required=True, help="http://HOST:PORT of the admin API")
    parser.add_argument("--identity", help="charge point identity (default py<version>-<pid>)")
    parser.add_argument("--timeout", type=float, default=20.0, help="overall timeout in seconds")
    parser.add_argument("-v", "--verbose", action="store_true", help="log every OCPP message")
    args = parser.parse_args()
    # The library logs each message at INFO and a traceback for the CALLERROR it sends back for
    # the unhandled command (expected here); show them only on request.
    logging.basicConfig(level=logging.INFO if args.verbose else logging.CRITICAL, format="  %(name)s: %(message)s")
    if not args.identity:
        args.identity = f"py{args.version.replace('.', '')}-{os.getpid()}"
    return args


if __name__ == "__main__":
    args = parse_args()
    try:
        asyncio.run(asyncio.wait_for(main(args), args.timeout))
    except Failure as e:
        print(f"FAIL: python-ocpp {args.version}: {e}", file=sys.stderr)
        sys.exit(1)
    except asyncio.TimeoutError as e:
        detail = str(e) or f"the run exceeded {args.timeout} s"
        print(f"FAIL: python-ocpp {args.version}: timed out: {detail}", file=sys.stderr)
        sys.exit(1)
    except Exception as e:  # noqa: BLE001 -- any library error (CALLERROR, schema, socket) is a failure
        print(f"FAIL: python-ocpp {args.version}: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
    print(f"python-ocpp {args.version}: all checks passed")
