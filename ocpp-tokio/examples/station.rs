//! A charging station: `station URL VERSION`, e.g.
//! `cargo run -p ocpp-tokio --example station -- ws://127.0.0.1:9000/ocpp/CP001 1.6`.
//! It connects, boots until Accepted, heartbeats at the interval given, accepts remote starts
//! (of 1.6, 2.0.1 and 2.1 alike), and reconnects (with the back-off) and boots again whenever
//! the central system goes away.
use ocpp_tokio::model::{Command, Outcome};
use ocpp_tokio::station::{Station, StationInfo, Status};
use ocpp_tokio::{ErrorAnswer, OcppVersion, Reply, Router, Session};

/// What the central system asks, in any version: remote starts are accepted, the rest refused.
async fn asked(_: Session<()>, command: Command) -> Reply<Outcome> {
    match command {
        Command::RemoteStart { token, .. } => {
            println!("remote start for {}", token.value);
            Ok(Outcome::Accepted)
        }
        other => Err(ErrorAnswer::not_supported(other.name())),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(url), Some(version)) = (args.next(), args.next()) else {
        return Err("usage: station ws://host:port/path/IDENTITY 1.6|2.0.1|2.1".into());
    };
    let version: OcppVersion = version.parse()?;
    let router = Router::<()>::default().on_command(asked);
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
