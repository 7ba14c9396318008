#!/usr/bin/env python3
"""One charging session on the PyPI `ocpp` library (2.1.0), as OCPP 1.6, 2.0.1 or 2.1, against
`examples/every_version.rs`: the same session in every version, so that the central system's
one handler per concept sees the same events.

usage: python_session.py WS_URL VERSION IDENTITY [--timeout S]

  BootNotification, Authorize TAG-OK, a transaction started with the register at 2935 Wh, one
  meter value of 2935.600 Wh with its signed meter value, ended at 2940 Wh (EVDisconnected).
  1.6: StartTransaction, MeterValues (the register as text, a SignedData sample beside it),
  StopTransaction. 2.0.1 and 2.1: TransactionEvent Started, Updated (`signedMeterValue`),
  Ended, each version's messages built with its own classes of the library (which checks them
  against that version's schemas).
  Prints `wrote VALUE` for each register value it sends, as written on the wire.

The `ocpp` library writes a 2.x number from a Python float (`2935.6`) and rounds a
`decimal.Decimal` to one decimal place (its `_DecimalEncoder`); a meter writes its register
with its own digits, so this charge point writes `2935.600` into the message's text itself.
"""

from datetime import datetime, timezone

from ocpp.v16 import ChargePoint as Cp16
from ocpp.v16 import call as call16
from ocpp.v16 import enums as enums16
from ocpp.v201 import ChargePoint as Cp201Base
from ocpp.v201 import call as call201
from ocpp.v201 import enums as enums201
from ocpp.v21 import ChargePoint as Cp21Base
from ocpp.v21 import call as call21
from ocpp.v21 import enums as enums21

from python_cp import check, cli, drive

REGISTER = "2935.600"
SIGNED = "OCMF|{\"FV\":\"1.0\",\"RD\":[{\"RV\":2935.600,\"RU\":\"kWh\"}]}|{\"SA\":\"ECDSA-secp256r1-SHA256\",\"SD\":\"3045\"}"


def now():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def as_written(message):
    """The register as the meter wrote it (see the module's docstring)."""
    return message.replace(f"\"value\":{float(REGISTER)},", f"\"value\":{REGISTER},")


class Cp201(Cp201Base):
    async def _send(self, message):
        await super()._send(as_written(message))


class Cp21(Cp21Base):
    async def _send(self, message):
        await super()._send(as_written(message))


async def run16(cp):
    boot = await cp.call(call16.BootNotification(charge_point_vendor="ACME", charge_point_model="Py16"), suppress=False)
    check(boot.status == enums16.RegistrationStatus.accepted, f"BootNotification: {boot.status!r}")
    auth = await cp.call(call16.Authorize(id_tag="TAG-OK"), suppress=False)
    check(auth.id_tag_info["status"] == "Accepted", f"Authorize: {auth.id_tag_info!r}")
    start = await cp.call(
        call16.StartTransaction(connector_id=1, id_tag="TAG-OK", meter_start=2935, timestamp=now()), suppress=False
    )
    tx = start.transaction_id
    print("wrote 2935")
    sample = {"measurand": "Energy.Active.Import.Register", "unit": "Wh", "context": "Sample.Periodic"}
    values = [{"timestamp": now(), "sampled_value": [
        dict(sample, value=REGISTER),
        dict(sample, value=SIGNED, format="SignedData"),
    ]}]
    await cp.call(call16.MeterValues(connector_id=1, transaction_id=tx, meter_value=values), suppress=False)
    print(f"wrote {REGISTER}")
    await cp.call(
        call16.StopTransaction(meter_stop=2940, timestamp=now(), transaction_id=tx, reason=enums16.Reason.ev_disconnected),
        suppress=False,
    )
    print("wrote 2940")


async def run2x(cp, call, enums, model, transaction_id):
    """The session on 2.0.1 or 2.1 (`call` and `enums`: that version's modules)."""
    boot = await cp.call(
        call.BootNotification(
            charging_station={"vendor_name": "ACME", "model": model},
            reason=enums.BootReasonEnumType.power_up,
        ),
        suppress=False,
    )
    check(boot.status == enums.RegistrationStatusEnumType.accepted, f"BootNotification: {boot.status!r}")
    token = {"id_token": "TAG-OK", "type": "ISO14443"}
    auth = await cp.call(call.Authorize(id_token=token), suppress=False)
    check(auth.id_token_info["status"] == "Accepted", f"Authorize: {auth.id_token_info!r}")

    def event(kind, seq_no, trigger, value, signed=None, **info):
        sampled = {"value": value, "measurand": "Energy.Active.Import.Register", "unit_of_measure": {"unit": "Wh"}}
        if signed:
            sampled["signed_meter_value"] = signed
        return call.TransactionEvent(
            event_type=kind,
            timestamp=now(),
            trigger_reason=trigger,
            seq_no=seq_no,
            transaction_info=dict({"transaction_id": transaction_id}, **info),
            evse={"id": 1, "connector_id": 1},
            id_token=token if kind == enums.TransactionEventEnumType.started else None,
            meter_value=[{"timestamp": now(), "sampled_value": [sampled]}],
        )

    await cp.call(event(enums.TransactionEventEnumType.started, 0, "Authorized", 2935), suppress=False)
    print("wrote 2935")
    signed = {"signed_meter_data": SIGNED, "signing_method": "ECDSA-secp256r1-SHA256", "encoding_method": "OCMF",
              "public_key": "3059301306072a8648ce3d0201"}
    await cp.call(event(enums.TransactionEventEnumType.updated, 1, "MeterValuePeriodic", float(REGISTER), signed),
                  suppress=False)
    print(f"wrote {REGISTER}")
    await cp.call(event(enums.TransactionEventEnumType.ended, 2, "EVCommunicationLost", 2940,
                        stopped_reason="EVDisconnected"), suppress=False)
    print("wrote 2940")


async def run201(cp):
    await run2x(cp, call201, enums201, "Py201", "TX-PY201")


async def run21(cp):
    await run2x(cp, call21, enums21, "Py21", "TX-PY21")


if __name__ == "__main__":
    cli(
        lambda parser: None,
        lambda args: drive(args, {"1.6": Cp16, "2.0.1": Cp201, "2.1": Cp21}, {"1.6": run16, "2.0.1": run201, "2.1": run21}),
    )
