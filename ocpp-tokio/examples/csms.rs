use ocpp_tokio::{server::ServerError, v1_6, v2_0_1, ChargePoint, ConnectionConfig, DateTime};
use ocpp_tokio::{OcppVersion, Router, Server};

async fn remote_start(cp: ChargePoint) {
    let request = v1_6::RemoteStartTransactionRequest::new("TAG-1").with_connector_id(1);
    println!("{}: RemoteStartTransaction -> {:?}", cp.identity(), cp.call(request).await);
}

#[tokio::main]
async fn main() -> Result<(), ServerError> {
    let listen = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:9000".into());
    let config = ConnectionConfig::default().versions(vec![OcppVersion::V1_6, OcppVersion::V2_0_1]);
    // One typed function per action: a response of another action does not compile.
    let router = Router::<()>::default()
        .on(|s, _: v1_6::BootNotificationRequest| async move {
            tokio::spawn(remote_start(s.charge_point().clone())); // leaves after this answer
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
        });
    let server = Server::builder().config(config).handler(router).bind(listen).await?;
    println!("listening on {}", server.local_addr()?);
    server.run().await
}
