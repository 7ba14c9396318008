#!/usr/bin/env python3
"""A charge point on the PyPI `ocpp` library (2.1.0) against `examples/stations.rs`.

usage: python_station.py WS_URL VERSION IDENTITY STATUSES [--timeout S]

(Shares python_cp.py's connection and command line.)

  BootNotification (expects Accepted, interval 300), Heartbeat, Authorize TAG-OK (expects
  Accepted) and TAG-BAD (expects Invalid), STATUSES StatusNotifications, then a clean close.
  VERSION is 1.6 or 2.0.1. Exits 0 on success, 1 with a `FAIL:` line otherwise; bounded by
  --timeout (default 20 s).
"""

from datetime import datetime, timezone

from ocpp.v16 import ChargePoint as Cp16
from ocpp.v16 import call as call16
from ocpp.v16 import enums as enums16
from ocpp.v201 import ChargePoint as Cp201
from ocpp.v201 import call as call201
from ocpp.v201 import enums as enums201


from python_cp import check, cli, drive


def now():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


async def run16(cp, statuses):
    boot = await cp.call(call16.BootNotification(charge_point_vendor="ACME", charge_point_model="Py16"), suppress=False)
    check(boot.status == enums16.RegistrationStatus.accepted and boot.interval == 300, f"BootNotification: {boot!r}")
    await cp.call(call16.Heartbeat(), suppress=False)
    for tag, expected in [("TAG-OK", enums16.AuthorizationStatus.accepted), ("TAG-BAD", enums16.AuthorizationStatus.invalid)]:
        answer = await cp.call(call16.Authorize(id_tag=tag), suppress=False)
        check(answer.id_tag_info["status"] == expected, f"Authorize {tag}: {answer!r}")
        print(f"  Authorize {tag}: {answer.id_tag_info['status']}")
    for connector in range(statuses):
        await cp.call(
            call16.StatusNotification(
                connector_id=connector,
                error_code=enums16.ChargePointErrorCode.no_error,
                status=enums16.ChargePointStatus.available,
            ),
            suppress=False,
        )


async def run201(cp, statuses):
    boot = await cp.call(
        call201.BootNotification(
            charging_station={"vendor_name": "ACME", "model": "Py201"},
            reason=enums201.BootReasonEnumType.power_up,
        ),
        suppress=False,
    )
    check(boot.status == enums201.RegistrationStatusEnumType.accepted and boot.interval == 300, f"BootNotification: {boot!r}")
    await cp.call(call201.Heartbeat(), suppress=False)
    for tag, expected in [("TAG-OK", "Accepted"), ("TAG-BAD", "Invalid")]:
        answer = await cp.call(call201.Authorize(id_token={"id_token": tag, "type": "ISO14443"}), suppress=False)
        check(answer.id_token_info["status"] == expected, f"Authorize {tag}: {answer!r}")
        print(f"  Authorize {tag}: {answer.id_token_info['status']}")
    for connector in range(1, statuses + 1):
        await cp.call(
            call201.StatusNotification(
                timestamp=now(),
                connector_status=enums201.ConnectorStatusEnumType.available,
                evse_id=1,
                connector_id=connector,
            ),
            suppress=False,
        )


if __name__ == "__main__":
    cli(
        lambda parser: parser.add_argument("statuses", type=int),
        lambda args: drive(args, {"1.6": Cp16, "2.0.1": Cp201}, {"1.6": run16, "2.0.1": run201}, args.statuses),
    )
