use ocpp_tokio::{v1_6, v2_0_1, Answer, ChargePoint, ConnectionConfig, DateTime, Handler};
use ocpp_tokio::{IncomingCall, OcppVersion, Request, Server, ServerError};

struct Csms;

impl Handler for Csms {
    async fn on_call(&self, cp: &ChargePoint, call: IncomingCall) -> Answer {
        let secs = std::time::UNIX_EPOCH.elapsed().unwrap().as_secs() as i64;
        let (current_time, interval) = (DateTime::from_unix_timestamp(secs).unwrap(), 300);
        match call.request() {
            Request::V1_6(request) => Answer::result(match **request {
                v1_6::Request::BootNotification(_) => {
                    tokio::spawn(remote_start(cp.clone())); // runs once the answer is out
                    let status = v1_6::RegistrationStatus::Accepted;
                    v1_6::Response::from(v1_6::BootNotificationResponse {
                        status,
                        current_time,
                        interval,
                    })
                }
                v1_6::Request::Heartbeat(_) => v1_6::HeartbeatResponse { current_time }.into(),
                _ => return Answer::not_supported(),
            }),
            Request::V2_0_1(request) => Answer::result(match **request {
                v2_0_1::Request::BootNotification(_) => {
                    let status = v2_0_1::RegistrationStatusEnum::Accepted;
                    let (custom_data, status_info) = (None, None);
                    v2_0_1::Response::from(v2_0_1::BootNotificationResponse {
                        status,
                        current_time,
                        interval,
                        custom_data,
                        status_info,
                    })
                }
                v2_0_1::Request::Heartbeat(_) => {
                    v2_0_1::HeartbeatResponse { current_time, custom_data: None }.into()
                }
                _ => return Answer::not_supported(),
            }),
            _ => Answer::not_supported(),
        }
    }
}

async fn remote_start(cp: ChargePoint) {
    let request = v1_6::RemoteStartTransactionRequest {
        connector_id: Some(1),
        id_tag: "TAG-1".into(),
        charging_profile: None,
    };
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
