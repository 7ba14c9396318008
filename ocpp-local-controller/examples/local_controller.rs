//! A Local Controller: `local_controller LISTEN CSMS_URL`, e.g.
//! `local_controller 127.0.0.1:9100 ws://127.0.0.1:9000/ocpp`. Each station that connects to
//! LISTEN as `/ocpp/CP1` is relayed, unchanged, to `CSMS_URL/CP1`.
use ocpp_local_controller::{Leg, LocalController, LocalControllerError};

#[tokio::main]
async fn main() -> Result<(), LocalControllerError> {
    let mut args = std::env::args().skip(1);
    let listen = args.next().unwrap_or_else(|| "127.0.0.1:9100".into());
    let csms = args.next().unwrap_or_else(|| "ws://127.0.0.1:9000/ocpp".into());
    let controller = LocalController::builder(&csms)?
        .on_message(|m| {
            let arrow = match m.direction {
                Leg::StationToCsms => "->",
                Leg::CsmsToStation => "<-",
                _ => "--", // the controller's own (none here: it acts on nothing)
            };
            println!("{} {arrow} {}", m.identity, m.text);
        })
        .bind(listen)
        .await?;
    println!("local controller listening on {} relaying to {csms}", controller.local_addr()?);
    controller.run().await
}
