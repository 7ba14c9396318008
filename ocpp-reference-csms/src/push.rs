//! The benchmark push: a DataTransfer CALL carrying a sequence number and the time it was
//! built, so a load client can measure one-way latency and detect gaps.
//!
//! Payload: `{"vendorId":"bench","messageId":"ts","data":"<seq>:<unix_time_nanos>"}` (on 2.x
//! `data` is any JSON value; the same string is sent).

use std::time::SystemTime;

use ocpp_messages::version::OcppVersion;
use ocpp_messages::{v1_6, v2_0_1, v2_1};
use ocpp_proto::{ChargePointIdentity, Request};

use super::Csms;

/// The `vendorId` of push messages.
pub const VENDOR_ID: &str = "bench";
/// The `messageId` of push messages.
pub const MESSAGE_ID: &str = "ts";

/// Nanoseconds since the Unix epoch, now.
pub fn unix_nanos_now() -> u128 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// `"<seq>:<unix_nanos>"`, printed straight into a string of the right size (`format!` goes
/// through the formatting machinery: about 430 of the 8,400 instructions a push cost the
/// server, callgrind with `heartbeat_loop push`).
fn push_data(seq: u64, unix_nanos: u128) -> String {
    let mut seq_text = itoa::Buffer::new();
    let mut nanos_text = itoa::Buffer::new();
    let (seq, nanos) = (seq_text.format(seq), nanos_text.format(unix_nanos));
    let mut data = String::with_capacity(seq.len() + 1 + nanos.len());
    data.push_str(seq);
    data.push(':');
    data.push_str(nanos);
    data
}

/// The `<seq>:<unix_nanos>` stamp of a push's `data` ([`data_transfer`] writes it), as the
/// charge point that answers it reads it back to measure the push's latency. Lenient as a
/// simulator should be: surrounding quotes and spaces are ignored.
///
/// ```
/// use ocpp_reference_csms::push;
/// assert_eq!(push::read_stamp("12:1700000000000000000"), Some((12, 1_700_000_000_000_000_000)));
/// assert_eq!(push::read_stamp("\"3: 42\""), Some((3, 42)));
/// assert_eq!(push::read_stamp("12"), None);
/// assert_eq!(push::read_stamp("x:1"), None);
/// ```
pub fn read_stamp(data: &str) -> Option<(u64, u128)> {
    let (seq, nanos) = data.trim_matches('"').split_once(':')?;
    Some((seq.trim().parse().ok()?, nanos.trim().parse().ok()?))
}

/// The stamp of `request` if it is a push ([`data_transfer`]'s inverse, for every version):
/// its DataTransfer's `data` read in place with [`read_stamp`], nothing copied.
///
/// ```
/// use ocpp_reference_csms::push;
/// use ocpp_messages::version::OcppVersion;
/// for version in [OcppVersion::V1_6, OcppVersion::V2_0_1, OcppVersion::V2_1] {
///     assert_eq!(push::stamp_of(&push::data_transfer(version, 7, 42)), Some((7, 42)));
/// }
/// ```
pub fn stamp_of(request: &Request) -> Option<(u64, u128)> {
    let data = match request {
        Request::V1_6(r) => match r.as_ref() {
            v1_6::Request::DataTransfer(d) => d.data.as_deref()?,
            _ => return None,
        },
        Request::V2_0_1(r) => match r.as_ref() {
            v2_0_1::Request::DataTransfer(d) => d.data.as_ref()?.as_str()?,
            _ => return None,
        },
        Request::V2_1(r) => match r.as_ref() {
            v2_1::Request::DataTransfer(d) => d.data.as_ref()?.as_str()?,
            _ => return None,
        },
        _ => return None,
    };
    read_stamp(data)
}

/// The push DataTransfer for `version`, stamped with `seq` and `unix_nanos` ([`tick`] builds
/// it). Build it right before the driver's connection takes it, when no CALL is in flight,
/// so that the connection serialises it at once and the stamp is the encode time.
///
/// ```
/// use ocpp_reference_csms::push;
/// use ocpp_messages::version::OcppVersion;
/// let request = push::data_transfer(OcppVersion::V1_6, 1, 42);
/// assert_eq!(request.action(), "DataTransfer");
/// assert_eq!(
///     serde_json::to_string(&request).unwrap(),
///     r#"{"vendorId":"bench","messageId":"ts","data":"1:42"}"#
/// );
/// ```
pub fn data_transfer(version: OcppVersion, seq: u64, unix_nanos: u128) -> Request {
    let data = push_data(seq, unix_nanos);
    match version {
        OcppVersion::V1_6 => v1_6::Request::from(v1_6::DataTransferRequest {
            vendor_id: VENDOR_ID.into(),
            message_id: Some(MESSAGE_ID.into()),
            data: Some(data),
        })
        .into(),
        OcppVersion::V2_0_1 => v2_0_1::Request::from(v2_0_1::DataTransferRequest {
            custom_data: None,
            message_id: Some(MESSAGE_ID.into()),
            data: Some(serde_json::Value::String(data)),
            vendor_id: VENDOR_ID.into(),
        })
        .into(),
        OcppVersion::V2_1 => v2_1::Request::from(v2_1::DataTransferRequest {
            message_id: Some(MESSAGE_ID.into()),
            data: Some(serde_json::Value::String(data)),
            vendor_id: VENDOR_ID.into(),
            custom_data: None,
        })
        .into(),
    }
}

/// One push tick for one charge point, shared by both servers: the next DataTransfer to
/// send, stamped now, or `None` while `busy`: a CALL of ours is unanswered or waits to go
/// out on the charge point's connection, as its driver knows it. Either way the push takes
/// its sequence number, so a skip (counted in `pushes_skipped`) shows at the charge point as
/// a gap (counted as lost) instead of being hidden.
///
/// The driver puts the request on its connection at once (so that the stamp is the encode
/// time), with nobody waiting for it (no deadline; its outcome comes to
/// [`Csms::on_call_completed`]), and reports what the connection did: taken, [`sent`];
/// refused (its queue full, the connection over), [`refused`].
///
/// ```
/// use ocpp_messages::version::OcppVersion;
/// use ocpp_proto::{ChargePointIdentity, RefusalReason, Request};
/// use ocpp_reference_csms::{push, Csms, CsmsConfig};
///
/// /// One charge point's tick: `busy` and `call` stand for the driver's connection
/// /// (`has_call_in_flight() || queued_calls() > 0`, `call_for(now, request, caller, None)`).
/// fn tick(
///     csms: &Csms,
///     identity: &ChargePointIdentity,
///     seq: &mut u64,
///     busy: bool,
///     call: impl FnOnce(Request) -> Result<(), RefusalReason>,
/// ) {
///     if let Some(request) = push::tick(csms, OcppVersion::V2_0_1, seq, busy) {
///         match call(request) {
///             Ok(()) => push::sent(csms, identity),
///             Err(_) => push::refused(csms),
///         }
///     }
/// }
///
/// let csms = Csms::new(CsmsConfig::default());
/// let identity = ChargePointIdentity::new("CP1".into(), false).unwrap();
/// let mut seq = 0;
/// tick(&csms, &identity, &mut seq, false, |_| Ok(()));
/// tick(&csms, &identity, &mut seq, true, |_| unreachable!("skipped"));
/// tick(&csms, &identity, &mut seq, false, |_| Err(RefusalReason::QueueFull));
/// assert_eq!(seq, 3);
/// assert_eq!(csms.metrics().calls_sent.get(), 1);
/// assert_eq!(csms.metrics().pushes_skipped.get(), 2);
/// ```
pub fn tick(csms: &Csms, version: OcppVersion, seq: &mut u64, busy: bool) -> Option<Request> {
    *seq += 1;
    if busy {
        csms.metrics().pushes_skipped.inc();
        return None;
    }
    Some(data_transfer(version, *seq, unix_nanos_now()))
}

/// The connection took the push [`tick`] made: counted as one of our CALLs sent
/// ([`Csms::on_call_sent`]).
pub fn sent(csms: &Csms, identity: &ChargePointIdentity) {
    csms.on_call_sent(identity, "DataTransfer");
}

/// The connection refused the push [`tick`] made: counted as skipped, as a push not made
/// while busy is; its number stays taken.
pub fn refused(csms: &Csms) {
    csms.metrics().pushes_skipped.inc();
}
