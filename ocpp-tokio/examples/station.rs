//! A charging station: `station URL VERSION`, e.g.
//! `cargo run -p ocpp-tokio --example station -- ws://127.0.0.1:9000/ocpp/CP001 1.6`.
//! It connects, boots until Accepted, heartbeats at the interval given, accepts remote starts,
//! and reconnects (with the back-off) and boots again whenever the central system goes away.
use ocpp_tokio::station::{Station, StationInfo, Status};
use ocpp_tokio::{v1_6, v2_0_1, v2_1, OcppVersion, Reply, Router, Session};

async fn remote_start(
    _: Session<()>,
    request: v1_6::RemoteStartTransactionRequest,
) -> Reply<v1_6::RemoteStartTransactionResponse> {
    println!("remote start for {}", request.id_tag);
    let accepted = v1_6::RemoteStartStopStatus::Accepted;
    Ok(v1_6::RemoteStartTransactionResponse::new(accepted))
}

async fn request_start(
    _: Session<()>,
    request: v2_0_1::RequestStartTransactionRequest,
) -> Reply<v2_0_1::RequestStartTransactionResponse> {
    println!("remote start for {}", request.id_token.id_token);
    let accepted = v2_0_1::RequestStartStopStatusEnum::Accepted;
    Ok(v2_0_1::RequestStartTransactionResponse::new(accepted))
}

async fn request_start_2_1(
    _: Session<()>,
    request: v2_1::RequestStartTransactionRequest,
) -> Reply<v2_1::RequestStartTransactionResponse> {
    println!("remote start for {}", request.id_token.id_token);
    let accepted = v2_1::RequestStartStopStatusEnum::Accepted;
    Ok(v2_1::RequestStartTransactionResponse::new(accepted))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(url), Some(version)) = (args.next(), args.next()) else {
        return Err("usage: station ws://host:port/path/IDENTITY 1.6|2.0.1|2.1".into());
    };
    let version: OcppVersion = version.parse()?;
    let router = Router::<()>::default().on(remote_start).on(request_start).on(request_start_2_1);
    let station = Station::builder(&url)?
        .versions([version])
        .info(StationInfo::new("ACME", "Example"))
        .router(router)
        .connect()?;
    // Print every change of the station's status until it stops for good.
    let mut status = station.watch_status();
    while status.changed().await.is_ok() {
        let now = *status.borrow_and_update();
        println!("{now:?}");
        if now == Status::Stopped {
            break;
        }
    }
    Ok(station.stopped().await?)
}
