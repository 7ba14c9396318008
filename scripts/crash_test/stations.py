"""Charge points of the crash test: OCPP 1.6 and 2.0.1 stations built on the PyPI `ocpp` library,
which run transactions back to back and keep a ledger of what the CSMS acknowledged or refused.

Part of the crash test of the reference CSMS (scripts/crash-test.sh, issue 40).

A station behaves as a real one does when its central system is unreliable:

- 1.6: StartTransaction, MeterValues (3), StopTransaction; 2.0.1: TransactionEvent Started
  (seqNo 0, with a meterValue unless the station is one that omits it), Updated (seqNo 1-3,
  each with a meterValue), Ended (seqNo 4, final meterValue). Each logical transaction has its
  own idTag (1.6) or transactionId (2.0.1), so that a row in the database names its station and
  transaction; the meter register only grows, so meterStart is unique too.
- A message answered with a CALLERROR, or not answered (timeout, connection dropped) is sent
  AGAIN, the same payload (same timestamps, seqNo, transactionId), after a pause or after the
  reconnect, until a CALLRESULT comes; only then the next message.
- A dropped connection is reconnected with a short back-off (0.25 s doubled up to 2 s, plus up
  to 0.25 s at random); each connection starts with a BootNotification.
- After `stop_new` is set no new transaction starts; the current one is finished (retried as
  above) and the station leaves.

The ledger (`LEDGER_DIR/<identity>.jsonl`, append-only, one JSON object a line) has one line per
attempt of a transaction message:
    {"identity", "version", "kind": "start"|"meter"|"stop", "key": idTag or transactionId,
     "attempt": 1.., "outcome": "ack"|"error"|"timeout"|"dropped"|"late_ack"|"late_error",
     "sent_ms", "answered_ms",
     "tx_id": the 1.6 transactionId the CSMS gave (start ack) or used (meter, stop) or the
     2.0.1 transactionId, "meter_wh": the energy register sent (null if none), "timestamp",
     "seq_no" (2.0.1), "connector", "error": "code: description" of a CALLERROR}
"late_ack" and "late_error" are a second line for an attempt that timed out: its answer came
after all (seen when the next CALL waits on that connection). Times are Unix milliseconds of
this machine's clock, the clock the CSMS stamps rows with.
"""

import asyncio
import json
import os
import random
import time
import uuid

import websockets
from ocpp.exceptions import OCPPError
from ocpp.messages import MessageType
from ocpp.routing import on
from ocpp.v16 import ChargePoint as ChargePoint16
from ocpp.v16 import call as call16
from ocpp.v201 import ChargePoint as ChargePoint201
from ocpp.v201 import call as call201
from ocpp.v201 import call_result as result201

RESPONSE_TIMEOUT_S = 10  # an answer later than this is "not answered": the message is resent
RETRY_PAUSE_S = 1.0  # before resending after a CALLERROR or a timeout
MESSAGE_PAUSE_S = 0.25  # between two messages of a transaction
METER_SAMPLES = 3  # MeterValues / Updated per transaction
BACKOFF_MIN_S, BACKOFF_MAX_S = 0.25, 2.0
CONNECTOR = 1


def now_ms():
    return int(time.time() * 1000)


def iso(ms):
    """A Unix time in ms as an OCPP date-time (UTC, milliseconds)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"


class LateAnswers:
    """Hands the answers that come after their CALL timed out (the library drops them) to
    `on_late(response)`: a CALLERROR then says the attempt was refused, a CALLRESULT that it
    was acknowledged after all. Seen when the next CALL of the connection waits."""

    on_late = None

    async def _get_specific_response(self, unique_id, timeout):
        wait_until = time.monotonic() + timeout
        while True:
            left = wait_until - time.monotonic()
            if left <= 0:
                raise asyncio.TimeoutError
            response = await asyncio.wait_for(self._response_queue.get(), left)
            if response.unique_id == unique_id:
                return response
            if self.on_late:
                self.on_late(response)


class Cp16(LateAnswers, ChargePoint16):
    pass


class Cp201(LateAnswers, ChargePoint201):
    """A 2.0.1 station answers the CSMS's GetTransactionStatus (sent after a seqNo gap)."""

    @on("GetTransactionStatus")
    def on_get_transaction_status(self, **_):
        return result201.GetTransactionStatus(messages_in_queue=False, ongoing_indicator=False)


class Message:
    """One transaction message as it will be sent (and resent): its payload is built once."""

    def __init__(self, kind, key, payload, meter_wh, timestamp, tx_id=None, seq_no=None):
        self.kind = kind  # start | meter | stop
        self.key = key
        self.payload = payload
        self.meter_wh = meter_wh
        self.timestamp = timestamp
        self.tx_id = tx_id
        self.seq_no = seq_no
        self.attempts = 0


class Station:
    def __init__(self, identity, version, start_meter, url, ledger_dir, stop_new, rng):
        self.identity = identity
        self.version = version  # "1.6" or "2.0.1"
        self.start_meter = start_meter  # 2.0.1: Started carries a meterValue
        self.url = f"{url}/{identity}"
        self.ledger = open(os.path.join(ledger_dir, f"{identity}.jsonl"), "a", encoding="utf-8")
        self.stop_new = stop_new
        self.rng = rng
        self.meter_wh = rng.randrange(1_000, 1_000_000)
        self.transactions = 0  # logical transactions begun
        self.plan = []  # the messages of the current transaction still to send
        self.pending = None  # the message being sent until acknowledged
        self.tx_id = None  # 1.6: the id the CSMS gave the current transaction
        self.connections = 0
        self.done = False
        self.timed_out = {}  # unique id of an attempt that timed out -> (message, attempt, sent)

    # --- what to send --------------------------------------------------------------------

    def _next_message(self):
        if not self.plan:
            if self.stop_new.is_set():
                return None
            self._begin_transaction()
        message = self.plan.pop(0)
        return message() if callable(message) else message

    def _begin_transaction(self):
        self.transactions += 1
        n = self.transactions
        if self.version == "1.6":
            key = f"{self.identity}-{n}"[-20:]  # the idTag (CiString20)
            self.plan = [self._start16(key)]
            self.plan += [lambda key=key: self._meter16(key) for _ in range(METER_SAMPLES)]
            self.plan.append(lambda key=key: self._stop16(key))
        else:
            key = f"{self.identity}-{n}"  # the transactionId (at most 36)
            self.plan = [self._event201(key, "Started", 0, self.start_meter)]
            self.plan += [
                lambda key=key, s=s: self._event201(key, "Updated", s, True) for s in range(1, METER_SAMPLES + 1)
            ]
            self.plan.append(lambda key=key: self._event201(key, "Ended", METER_SAMPLES + 1, True))

    def _advance_meter(self):
        self.meter_wh += self.rng.randrange(50, 2_000)
        return self.meter_wh

    def _start16(self, key):
        at = now_ms()
        meter = self._advance_meter()
        payload = call16.StartTransaction(
            connector_id=CONNECTOR, id_tag=key, meter_start=meter, timestamp=iso(at)
        )
        return Message("start", key, payload, meter, iso(at))

    def _meter16(self, key):
        at = now_ms()
        meter = self._advance_meter()
        sample = {"value": str(meter), "measurand": "Energy.Active.Import.Register", "unit": "Wh"}
        payload = call16.MeterValues(
            connector_id=CONNECTOR, transaction_id=self.tx_id,
            meter_value=[{"timestamp": iso(at), "sampled_value": [sample]}],
        )
        return Message("meter", key, payload, meter, iso(at), tx_id=self.tx_id)

    def _stop16(self, key):
        at = now_ms()
        meter = self._advance_meter()
        payload = call16.StopTransaction(
            meter_stop=meter, timestamp=iso(at), transaction_id=self.tx_id, reason="Local", id_tag=key,
        )
        return Message("stop", key, payload, meter, iso(at), tx_id=self.tx_id)

    def _event201(self, key, event_type, seq_no, with_meter):
        at = now_ms()
        meter = self._advance_meter() if with_meter else None
        info = {"transaction_id": key}
        if event_type == "Started":
            info["charging_state"] = "Charging"
        if event_type == "Ended":
            info["stopped_reason"] = "Local"
        triggers = {"Started": "Authorized", "Updated": "MeterValuePeriodic", "Ended": "StopAuthorized"}
        trigger = triggers[event_type]
        payload = call201.TransactionEvent(
            event_type=event_type, timestamp=iso(at), trigger_reason=trigger, seq_no=seq_no,
            transaction_info=info, evse={"id": 1, "connector_id": CONNECTOR},
        )
        if event_type == "Started":
            payload.id_token = {"id_token": key[-36:], "type": "Central"}
        if meter is not None:
            payload.meter_value = [{
                "timestamp": iso(at),
                "sampled_value": [{
                    "value": meter, "measurand": "Energy.Active.Import.Register",
                    "unit_of_measure": {"unit": "Wh"},
                }],
            }]
        kind = {"Started": "start", "Updated": "meter", "Ended": "stop"}[event_type]
        return Message(kind, key, payload, meter, iso(at), tx_id=key, seq_no=seq_no)

    # --- the ledger ----------------------------------------------------------------------

    def _late(self, response):
        """An answer to an attempt that timed out: a ledger line of its own ("late_ack",
        "late_error"), the attempt's number and its 1.6 id if one was given."""
        found = self.timed_out.pop(response.unique_id, None)
        if found is None:
            return
        message, attempt, sent = found
        if response.message_type_id == MessageType.CallError:
            self._record(message, "late_error", sent, now_ms(), attempt=attempt,
                         error=f"{response.error_code}: {response.error_description}")
        else:
            self._record(message, "late_ack", sent, now_ms(), attempt=attempt,
                         tx_id=response.payload.get("transactionId"))

    def _record(self, message, outcome, sent, answered=None, error=None, tx_id=None, attempt=None):
        line = {
            "identity": self.identity, "version": self.version, "kind": message.kind, "key": message.key,
            "attempt": attempt or message.attempts, "outcome": outcome,
            "sent_ms": sent, "answered_ms": answered,
            "tx_id": tx_id if tx_id is not None else message.tx_id, "meter_wh": message.meter_wh,
            "timestamp": message.timestamp, "seq_no": message.seq_no, "connector": CONNECTOR,
            "error": error,
        }
        if self.version == "2.0.1" and message.kind == "start":
            line["start_meter"] = self.start_meter
        self.ledger.write(json.dumps(line) + "\n")
        self.ledger.flush()

    # --- running -------------------------------------------------------------------------

    async def run(self):
        """Connects, reconnects, sends until the last transaction is finished."""
        backoff = BACKOFF_MIN_S
        while not self.done:
            try:
                ws = await websockets.connect(
                    self.url, subprotocols=[f"ocpp{self.version}"], open_timeout=5, close_timeout=1,
                )
            except (OSError, asyncio.TimeoutError, websockets.exceptions.WebSocketException):
                await asyncio.sleep(backoff + self.rng.random() * BACKOFF_MIN_S)
                backoff = min(backoff * 2, BACKOFF_MAX_S)
                continue
            backoff = BACKOFF_MIN_S
            self.connections += 1
            cls = Cp16 if self.version == "1.6" else Cp201
            cp = cls(self.identity, ws, response_timeout=RESPONSE_TIMEOUT_S)
            cp.on_late = self._late
            receiver = asyncio.create_task(cp.start())
            work = asyncio.create_task(self._session(cp))
            try:
                await asyncio.wait({receiver, work}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (work, receiver):
                    task.cancel()
                await asyncio.gather(work, receiver, return_exceptions=True)
                await ws.close()
        self.ledger.close()

    async def _session(self, cp):
        await self._boot(cp)
        while True:
            if self.pending is None:
                self.pending = self._next_message()
                if self.pending is None:
                    self.done = True
                    return
            message = self.pending
            if await self._send(cp, message):
                self.pending = None
                await asyncio.sleep(MESSAGE_PAUSE_S)
            else:
                await asyncio.sleep(RETRY_PAUSE_S)

    async def _boot(self, cp):
        while True:
            if self.version == "1.6":
                boot = call16.BootNotification(charge_point_vendor="CrashTest", charge_point_model="py16")
            else:
                boot = call201.BootNotification(
                    charging_station={"vendor_name": "CrashTest", "model": "py201"}, reason="PowerUp",
                )
            try:
                await cp.call(boot, suppress=False)
                return
            except (OCPPError, asyncio.TimeoutError):
                await asyncio.sleep(RETRY_PAUSE_S)

    async def _send(self, cp, message):
        """Sends one attempt; records it; True when acknowledged. A dropped connection
        (cancellation or ConnectionClosed) is recorded and propagates."""
        message.attempts += 1
        sent = now_ms()
        unique_id = str(uuid.uuid4())
        try:
            result = await cp.call(message.payload, suppress=False, unique_id=unique_id)
        except OCPPError as e:
            self._record(message, "error", sent, now_ms(), error=f"{e.code}: {e.description}")
            return False
        except asyncio.TimeoutError:
            self._record(message, "timeout", sent)
            self.timed_out[unique_id] = (message, message.attempts, sent)
            return False
        except (asyncio.CancelledError, websockets.exceptions.ConnectionClosed):
            self._record(message, "dropped", sent)
            raise
        answered = now_ms()
        if self.version == "1.6" and message.kind == "start":
            self.tx_id = result.transaction_id
            self._record(message, "ack", sent, answered, tx_id=result.transaction_id)
        else:
            self._record(message, "ack", sent, answered)
        return True


def make_stations(count, url, ledger_dir, stop_new, seed):
    """`count` stations, 1.6 and 2.0.1 alternately; every fourth 2.0.1 station's Started
    carries no meterValue."""
    stations = []
    for i in range(count):
        rng = random.Random(seed * 100_003 + i)
        if i % 2 == 0:
            stations.append(Station(f"ct16-{i:03d}", "1.6", True, url, ledger_dir, stop_new, rng))
        else:
            start_meter = (i // 2) % 4 != 3
            stations.append(Station(f"ct201-{i:03d}", "2.0.1", start_meter, url, ledger_dir, stop_new, rng))
    return stations
