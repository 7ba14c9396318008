//! Benchmark peer: a minimal OCPP 1.6 central system on ocpp-kit 0.3's `Csms` (its own
//! WebSocket layer and sans-I/O engine on tokio).
//!
//! Usage: peer-rust-ocpp-kit LISTEN_ADDR PUSH_INTERVAL_MS

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ocpp_kit::engine::{CallFailure, IncomingRequest};
use ocpp_kit::rpc::CallError;
use ocpp_kit::transport::{
    Auth, AuthOutcome, BoxFuture, Csms, CsmsHandle, Ctx, Handle, Handler, SessionContext,
    SessionEvent,
};
use ocpp_kit::types::DateTime;
use ocpp_kit::{v1_6, RawValue, Version};
use tokio::net::TcpSocket;
use tokio::sync::broadcast::error::RecvError;

const HEARTBEAT_INTERVAL: i32 = 300;

/// Hung on each session by the authenticator: whether its push task has been started.
#[derive(Default)]
struct PushState {
    started: AtomicBool,
}

struct Central {
    next_transaction: AtomicI32,
    push: Option<Duration>,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: {} LISTEN_ADDR PUSH_INTERVAL_MS", args[0]);
        std::process::exit(2);
    }
    let addr: SocketAddr = args[1].parse().expect("LISTEN_ADDR");
    let push_ms: u64 = args[2].parse().expect("PUSH_INTERVAL_MS");
    if let Err(error) = rlimit::increase_nofile_limit(u64::MAX) {
        eprintln!("could not raise RLIMIT_NOFILE: {error}");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(serve(addr, push_ms));
}

async fn serve(addr: SocketAddr, push_ms: u64) {
    let central = Arc::new(Central {
        next_transaction: AtomicI32::new(1),
        push: (push_ms > 0).then(|| Duration::from_millis(push_ms)),
    });
    let csms = Csms::builder()
        .bind(addr)
        .versions([Version::V1_6])
        // Default 10,000 established sessions; one process here holds up to ~19,990.
        .max_connections(120_000)
        .authenticate(|_auth: Auth| async {
            AuthOutcome::Accept(SessionContext::new(PushState::default()))
        })
        .handler(Shared(central.clone()))
        .build()
        .expect("Csms::build");

    // Start each session's push task as soon as it opens. The event is broadcast before the
    // session is registered in the router, and the channel (1024 deep) can lag during a fast
    // ramp, so the first CALL from the station starts the task too (see Handler::on_request).
    if central.push.is_some() {
        let handle = csms.handle();
        let mut events = handle.events();
        let central = central.clone();
        tokio::spawn(async move {
            loop {
                match events.recv().await {
                    Ok(SessionEvent::Opened { identity, .. }) => {
                        let handle = handle.clone();
                        let central = central.clone();
                        tokio::spawn(async move {
                            start_push_when_registered(&central, &handle, &identity).await;
                        });
                    }
                    Ok(_) | Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return,
                }
            }
        });
    }

    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()
    } else {
        TcpSocket::new_v6()
    }
    .expect("socket");
    socket.set_reuseaddr(true).expect("SO_REUSEADDR");
    socket.bind(addr).expect("bind");
    let listener = socket.listen(4096).expect("listen");
    eprintln!("rust-ocpp-kit peer listening on {addr}, push every {push_ms} ms");
    if let Err(error) = csms.serve_on(listener).await {
        eprintln!("serve: {error}");
        std::process::exit(1);
    }
}

async fn start_push_when_registered(
    central: &Arc<Central>,
    csms: &CsmsHandle,
    identity: &ocpp_kit::types::Identity,
) {
    for _ in 0..200 {
        if let Some(handle) = csms.session(identity).await {
            start_push(central, handle);
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Spawns the session's push task unless it runs already.
fn start_push(central: &Arc<Central>, handle: Handle) {
    let Some(period) = central.push else { return };
    let Some(state) = handle.session::<PushState>() else {
        return;
    };
    if state.started.swap(true, Ordering::AcqRel) {
        return;
    }
    tokio::spawn(push(handle, period));
}

/// One DataTransfer CALL every period through `Handle::call`, which waits for the typed
/// CALLRESULT (the engine keeps one CALL in flight per connection).
async fn push(handle: Handle, period: Duration) {
    let mut timer = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for seq in 1u64.. {
        timer.tick().await;
        // The stamp is taken here, as the request is built: `call` then serialises the
        // payload, hands it to the session's driver task over a channel, and the engine frames
        // and writes it.
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let mut request = v1_6::DataTransferRequest::new("bench");
        request.message_id = Some("ts".into());
        request.data = Some(format!("{seq}:{nanos}"));
        match handle.call(request).await {
            Ok(_) | Err(CallFailure::Rejected(_) | CallFailure::Timeout) => {}
            Err(_) => return, // disconnected, shutting down
        }
    }
}

struct Shared(Arc<Central>);

impl Handler for Shared {
    fn on_request(
        &self,
        ctx: Ctx,
        request: IncomingRequest,
    ) -> BoxFuture<'_, Result<Box<RawValue>, CallError>> {
        Box::pin(async move {
            if self.0.push.is_some() {
                start_push(&self.0, ctx.handle());
            }
            let action = v1_6::Action::from_wire(&request.action)
                .ok_or_else(|| CallError::not_implemented(&request.action))?;
            let typed = v1_6::CsRequest::decode(action, &request.payload, ctx.decode_options())?;
            self.0.answer(&ctx, &typed)
        })
    }
}

impl Central {
    fn answer(&self, ctx: &Ctx, request: &v1_6::CsRequest) -> Result<Box<RawValue>, CallError> {
        let accepted = || v1_6::IdTagInfo::new(v1_6::AuthorizationStatus::Accepted);
        match request {
            v1_6::CsRequest::BootNotification(_) => {
                ctx.reply(&v1_6::BootNotificationResponse::new(
                    v1_6::RegistrationStatus::Accepted,
                    DateTime::now(),
                    HEARTBEAT_INTERVAL,
                ))
            }
            v1_6::CsRequest::Heartbeat(_) => {
                ctx.reply(&v1_6::HeartbeatResponse::new(DateTime::now()))
            }
            v1_6::CsRequest::StatusNotification(_) => {
                ctx.reply(&v1_6::StatusNotificationResponse::new())
            }
            v1_6::CsRequest::MeterValues(_) => ctx.reply(&v1_6::MeterValuesResponse::new()),
            v1_6::CsRequest::Authorize(_) => ctx.reply(&v1_6::AuthorizeResponse::new(accepted())),
            v1_6::CsRequest::StartTransaction(_) => {
                ctx.reply(&v1_6::StartTransactionResponse::new(
                    accepted(),
                    self.next_transaction.fetch_add(1, Ordering::Relaxed),
                ))
            }
            v1_6::CsRequest::StopTransaction(_) => {
                let mut response = v1_6::StopTransactionResponse::new();
                response.id_tag_info = Some(accepted());
                ctx.reply(&response)
            }
            v1_6::CsRequest::DataTransfer(_) => ctx.reply(&v1_6::DataTransferResponse::new(
                v1_6::DataTransferStatus::Accepted,
            )),
            other => Err(CallError::not_supported(other.action().as_str())),
        }
    }
}
