//! A mock charging station on ocpp-tokio's [`Station`]: connects, boots (again until
//! Accepted), heartbeats at the interval the central system gave, reconnects with the back-off,
//! and answers every CALL of the central system `NotSupported`.
//!
//! What it logs: the central system's CALLs and its answers to them, as capture lines
//! ([`crate::capture`]; `dir` as the central system sees it), and each change of the station's
//! status (connecting, registering, accepted, waiting) on stderr. The BootNotification and
//! Heartbeat CALLs are written by the [`Station`]'s own task, which has no message hook: they
//! are not in the log (the mock `csms` logs both sides of them).
//!
//! ```no_run
//! use std::sync::Arc;
//! use ocpp_cli::capture::CaptureRecorder;
//! use ocpp_cli::mock_station;
//! use ocpp_messages::OcppVersion;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let recorder = Arc::new(CaptureRecorder::new(std::io::stdout()));
//! let station = mock_station::connect("ws://127.0.0.1:9000/ocpp/CP1", OcppVersion::V1_6, &recorder)?;
//! station.accepted().await?;
//! # Ok(()) }
//! ```

use std::io::Write;
use std::sync::Arc;

use ocpp_messages::envelope::{write_call, write_call_error};
use ocpp_tokio::station::{StationError, StationInfo};
use ocpp_tokio::{Answer, ErrorAnswer, IncomingCall, OcppVersion, Router, Session, Station};

use crate::capture::{CaptureDirection, CaptureRecorder};

/// Starts the station for `url` (its last segment is the identity), offering `version` only.
///
/// # Errors
/// [`StationError`] when the URL is not `ws[s]://host[:port]/path/IDENTITY`.
pub fn connect<W: Write + Send + 'static>(
    url: &str,
    version: OcppVersion,
    recorder: &Arc<CaptureRecorder<W>>,
) -> Result<Station, StationError> {
    let log = Arc::clone(recorder);
    let router = Router::<()>::default().fallback(move |session: Session<()>, call| {
        let log = Arc::clone(&log);
        async move { answer(&session, call, &log) }
    });
    Station::builder(url)?
        .versions([version])
        .info(StationInfo::new("ocpp-cli", "mock station"))
        .router(router)
        .connect()
}

/// Answers a CALL of the central system `NotSupported`, logging both.
fn answer<W: Write + Send + 'static>(
    session: &Session<()>,
    call: IncomingCall,
    log: &CaptureRecorder<W>,
) -> Answer {
    let identity = session.identity().as_str();
    let version = call.version();
    let mut text = Vec::new();
    if write_call(&mut text, call.id(), call.action(), call.request()).is_ok() {
        log.record_text(
            identity,
            version,
            CaptureDirection::Out,
            String::from_utf8_lossy(&text).into_owned(),
        );
    }
    let error = ErrorAnswer::not_supported(call.action());
    let mut text = Vec::new();
    if write_call_error(
        &mut text,
        version,
        call.id(),
        &error.code,
        &error.description,
        None,
    )
    .is_ok()
    {
        log.record_text(
            identity,
            version,
            CaptureDirection::In,
            String::from_utf8_lossy(&text).into_owned(),
        );
    }
    Answer::Error(error)
}
