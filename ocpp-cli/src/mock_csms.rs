//! A mock central system: accepts every station (any identity, every version this build
//! knows), answers the basics with schema-valid answers, and logs every message as a capture
//! line ([`crate::capture`]).
//!
//! | CALL | answer |
//! | --- | --- |
//! | BootNotification | Accepted, the configured heartbeat interval |
//! | Heartbeat | the current time |
//! | StatusNotification, MeterValues | the empty answer |
//! | Authorize | Accepted |
//! | StartTransaction (1.6) | Accepted, transaction ids 1, 2, 3... in the order of this process |
//! | TransactionEvent (2.x), StopTransaction (1.6) | Accepted |
//! | anything else | CALLERROR `NotSupported` (the router's fallback) |
//!
//! Built on ocpp-tokio's [`Server`] and [`Router::on_concept`]: one handler per concept covers
//! every version, and the router makes each version's answer.
//!
//! ```no_run
//! use std::sync::Arc;
//! use ocpp_cli::capture::CaptureRecorder;
//! use ocpp_cli::mock_csms;
//!
//! # async fn run() -> Result<(), ocpp_tokio::server::ServerError> {
//! let recorder = Arc::new(CaptureRecorder::new(std::io::stdout()));
//! let server = mock_csms::bind("127.0.0.1:9000", 300, &recorder).await?;
//! server.run().await
//! # }
//! ```

use std::io::Write;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use ocpp_model::{
    Authorization, AuthorizationRequested, AuthorizationStatus, BootAnswer, Booted, EventAnswer,
    Heartbeat, MeterReadings, StatusChanged, TransactionEnded, TransactionStarted,
    TransactionUpdated,
};
use ocpp_tokio::server::ServerError;
use ocpp_tokio::{DateTime, OcppVersion, Router, Server, Session};

use crate::capture::CaptureRecorder;

/// The mock's state: the next 1.6 transaction id.
type Cp = Session<(), Arc<AtomicI32>>;

/// The mock's router: the answers of the table above, `interval_s` for BootNotification.
pub fn router(interval_s: u32) -> Router<(), Arc<AtomicI32>> {
    Router::<()>::default()
        .with_state(Arc::new(AtomicI32::new(1)))
        .on_concept(move |_: Cp, _: Booted| async move {
            Ok(BootAnswer::accepted(interval_s, DateTime::now()))
        })
        .on_concept(|_: Cp, _: Heartbeat| async { Ok(EventAnswer::heartbeat(DateTime::now())) })
        .on_concept(|_: Cp, _: StatusChanged| async { Ok(EventAnswer::Received) })
        .on_concept(|_: Cp, _: MeterReadings| async { Ok(EventAnswer::Received) })
        .on_concept(|_: Cp, _: AuthorizationRequested| async { Ok(accepted()) })
        .on_concept(|cp: Cp, _: TransactionStarted| async move { Ok(start(&cp)) })
        .on_concept(|_: Cp, _: TransactionUpdated| async { Ok(transaction(None)) })
        .on_concept(|_: Cp, _: TransactionEnded| async { Ok(transaction(None)) })
}

/// Binds the mock on `listen`, recording every message with `recorder`.
///
/// # Errors
/// [`ServerError`] when the address cannot be bound.
pub async fn bind<W: Write + Send + 'static>(
    listen: &str,
    interval_s: u32,
    recorder: &Arc<CaptureRecorder<W>>,
) -> Result<Server<Router<(), Arc<AtomicI32>>>, ServerError> {
    Server::builder()
        .handler(router(interval_s))
        .on_message(recorder.hook())
        .bind(listen)
        .await
}

fn accepted() -> Authorization {
    Authorization::new(AuthorizationStatus::Accepted)
}

fn transaction(transaction_id: Option<i32>) -> EventAnswer {
    EventAnswer::transaction(transaction_id, Some(accepted()))
}

/// A started transaction: 1.6 is given the next id; 2.x brought its own.
fn start(cp: &Cp) -> EventAnswer {
    let id = (cp.version() == OcppVersion::V1_6).then(|| cp.app().fetch_add(1, Ordering::Relaxed));
    transaction(id)
}
