//! A central system that records every message in `capture.jsonl` (`ocpp replay` plays it
//! again): `cargo run -p ocpp-cli --example capture_server -- 127.0.0.1:9000`.
use std::{fs::File, sync::Arc};

use ocpp_cli::capture::CaptureRecorder;
use ocpp_tokio::{v1_6, DateTime, Router, Server};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listen = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:9000".into());
    let recorder = Arc::new(CaptureRecorder::new(File::create("capture.jsonl")?));
    let router = Router::<()>::default()
        .on(|_, _: v1_6::BootNotificationRequest| async {
            let accepted = v1_6::RegistrationStatus::Accepted;
            Ok(v1_6::BootNotificationResponse::new(
                accepted,
                DateTime::now(),
                300,
            ))
        })
        .on(|_, _: v1_6::HeartbeatRequest| async {
            Ok(v1_6::HeartbeatResponse::new(DateTime::now()))
        });
    let server = Server::builder()
        .handler(router)
        .on_message(recorder.hook())
        .bind(listen)
        .await?;
    println!("listening on {}", server.local_addr()?);
    Ok(server.run().await?)
}
