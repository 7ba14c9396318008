use ocpp_tokio::{server::ServerError, v1_6, v2_0_1, ConnectionConfig, DateTime, OcppVersion};
use ocpp_tokio::{Router, Server};
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// What each connection keeps: made when its charge point connects, handed back at its close.
#[derive(Default)]
struct ConnectionState {
    statuses: AtomicU32,
}

/// The token list, the same for both versions.
const TOKENS: [&str; 1] = ["TAG-OK"];

#[tokio::main]
async fn main() -> Result<(), ServerError> {
    let listen = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:9000".into());
    let config = ConnectionConfig::default().versions(vec![OcppVersion::V1_6, OcppVersion::V2_0_1]);
    let router = Router::<ConnectionState>::default()
        .on(|_, _: v1_6::BootNotificationRequest| async {
            let accepted = v1_6::RegistrationStatus::Accepted;
            Ok(v1_6::BootNotificationResponse::new(accepted, DateTime::now(), 300))
        })
        .on(|_, _: v2_0_1::BootNotificationRequest| async {
            let accepted = v2_0_1::RegistrationStatusEnum::Accepted;
            Ok(v2_0_1::BootNotificationResponse::new(DateTime::now(), 300, accepted))
        })
        .on(|_, _: v1_6::HeartbeatRequest| async {
            Ok(v1_6::HeartbeatResponse::new(DateTime::now()))
        })
        .on(|_, _: v2_0_1::HeartbeatRequest| async {
            Ok(v2_0_1::HeartbeatResponse::new(DateTime::now()))
        })
        .on(|_, r: v1_6::AuthorizeRequest| async move {
            use v1_6::AuthorizationStatus::{Accepted, Invalid};
            let status = if TOKENS.contains(&r.id_tag.as_str()) { Accepted } else { Invalid };
            Ok(v1_6::AuthorizeResponse::new(v1_6::IdTagInfo::new(status)))
        })
        .on(|_, r: v2_0_1::AuthorizeRequest| async move {
            use v2_0_1::AuthorizationStatusEnum::{Accepted, Invalid};
            let status =
                if TOKENS.contains(&r.id_token.id_token.as_str()) { Accepted } else { Invalid };
            Ok(v2_0_1::AuthorizeResponse::new(v2_0_1::IdTokenInfo::new(status)))
        })
        .on(|cp, _: v1_6::StatusNotificationRequest| async move {
            cp.statuses.fetch_add(1, Relaxed);
            Ok(v1_6::StatusNotificationResponse::default())
        })
        .on(|cp, _: v2_0_1::StatusNotificationRequest| async move {
            cp.statuses.fetch_add(1, Relaxed);
            Ok(v2_0_1::StatusNotificationResponse::default())
        })
        .on_close(|cp, _| async move {
            let count = cp.statuses.load(Relaxed);
            println!("{} closed: {count} status notifications", cp.identity());
        });
    let server = Server::builder().config(config).handler(router).bind(listen).await?;
    println!("listening on {}", server.local_addr()?);
    server.run().await
}
