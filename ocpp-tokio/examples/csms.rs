use ocpp_tokio::RequestRef::{V1_6, V2_0_1};
use ocpp_tokio::{v1_6, v2_0_1, Answer, ChargePoint, ConnectionConfig, DateTime, Handler};
use ocpp_tokio::{IncomingCall, OcppVersion, Server, ServerError};

struct Csms;
impl Handler for Csms {
    async fn on_call(&self, cp: &ChargePoint, call: IncomingCall) -> Answer {
        let now = DateTime::now();
        match call.view() {
            V1_6(v1_6::Request::BootNotification(_)) => {
                tokio::spawn(remote_start(cp.clone())); // its CALL leaves after this answer
                let accepted = v1_6::RegistrationStatus::Accepted;
                Answer::result(v1_6::BootNotificationResponse::new(accepted, now, 300))
            }
            V2_0_1(v2_0_1::Request::BootNotification(_)) => {
                let accepted = v2_0_1::RegistrationStatusEnum::Accepted;
                Answer::result(v2_0_1::BootNotificationResponse::new(now, 300, accepted))
            }
            V1_6(v1_6::Request::Heartbeat(_)) => Answer::result(v1_6::HeartbeatResponse::new(now)),
            V2_0_1(v2_0_1::Request::Heartbeat(_)) => {
                Answer::result(v2_0_1::HeartbeatResponse::new(now))
            }
            _ => Answer::not_supported(),
        }
    }
}

async fn remote_start(cp: ChargePoint) {
    let request = v1_6::RemoteStartTransactionRequest::new("TAG-1").with_connector_id(1);
    println!("{}: RemoteStartTransaction -> {:?}", cp.identity(), cp.call(request).await);
}

#[tokio::main]
async fn main() -> Result<(), ServerError> {
    let listen = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:9000".into());
    let config = ConnectionConfig::default().versions(vec![OcppVersion::V1_6, OcppVersion::V2_0_1]);
    let server = Server::builder().config(config).handler(Csms).bind(listen).await?;
    println!("listening on {}", server.local_addr()?);
    server.run().await
}
