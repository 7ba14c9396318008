//! Security profiles 2 (TLS + Basic credentials) and 3 (mutual TLS, the identity in the
//! client certificate's subject CN), certificates made by rcgen at test time; the handshake
//! deadline covers TLS.

mod common;

use std::time::{Duration, Instant};

use common::*;
use ocpp_proto::Event;
use ocpp_test_kit::WireChargePoint;
use ocpp_tokio::ocpp::CloseReason;
use ocpp_tokio::rustls::pki_types::ServerName;
use ocpp_tokio::{OcppVersion, Server};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

fn connector(pki: &Pki, identity: Option<&Identity>) -> TlsConnector {
    TlsConnector::from(client_tls(&pki.ca, identity))
}

type TlsCp = WireChargePoint<tokio_rustls::client::TlsStream<TcpStream>>;

async fn tls_cp(
    server: &TestServer,
    connector: &TlsConnector,
    identity: &str,
    password: Option<&[u8]>,
) -> std::io::Result<TlsCp> {
    let tcp = TcpStream::connect(server.addr).await?;
    let name = ServerName::try_from("localhost").unwrap();
    let tls = connector.connect(name, tcp).await?;
    let host = server.addr.to_string();
    let cp = WireChargePoint::over(tls, &host, identity, OcppVersion::V1_6, password);
    Ok(cp.expect("a charge point"))
}

fn refused_with(event: Event) -> Option<u16> {
    match event {
        Event::Closed(closed) => match closed.reason {
            CloseReason::UpgradeRefused { status, .. } => status,
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
}

async fn profile_2_tls_and_basic_credentials() {
    let pki = pki();
    let builder = Server::builder()
        .config(server_config())
        .tls(server_tls(&pki, false));
    let server = TestServer::start_with(builder).await;
    let connector = connector(&pki, None);

    let mut cp = tls_cp(&server, &connector, "AUTH-TLS", Some(PASSWORD))
        .await
        .unwrap();
    assert!(matches!(
        cp.next_event().await.unwrap(),
        Event::Connected { .. }
    ));
    assert_eq!(cp.boot().await.unwrap(), "Accepted");

    let mut cp = tls_cp(&server, &connector, "AUTH-TLS2", Some(b"wrong-password-16"))
        .await
        .unwrap();
    assert_eq!(refused_with(cp.next_event().await.unwrap()), Some(401));
    let mut cp = tls_cp(&server, &connector, "AUTH-TLS3", None)
        .await
        .unwrap();
    assert_eq!(refused_with(cp.next_event().await.unwrap()), Some(401));
    server.stop().await;
}

async fn profile_3_client_certificates() {
    let pki = pki();
    let builder = Server::builder()
        .config(server_config())
        .tls(server_tls(&pki, true));
    let server = TestServer::start_with(builder).await;

    // CP001's certificate, identity CP001: accepted (the handler compares the subject CN).
    let with_cp001 = connector(&pki, Some(&pki.cp001));
    let mut cp = tls_cp(&server, &with_cp001, "CP001", None).await.unwrap();
    assert!(matches!(
        cp.next_event().await.unwrap(),
        Event::Connected { .. }
    ));
    assert_eq!(cp.boot().await.unwrap(), "Accepted");

    // CP001's certificate for identity CP002: 403.
    let mut cp = tls_cp(&server, &with_cp001, "CP002", None).await.unwrap();
    assert_eq!(refused_with(cp.next_event().await.unwrap()), Some(403));

    // No certificate, or one of another CA: the TLS handshake fails (TLS 1.3 reports it on
    // the first read), and the server carries on.
    for identity in [None, Some(&pki.rogue_cp001)] {
        let connector = connector(&pki, identity);
        if let Ok(mut cp) = tls_cp(&server, &connector, "CP001", None).await {
            // The write may fail already: the read tells.
            let _ = cp.flush().await;
            let mut byte = [0u8; 1];
            let read = tokio::time::timeout(WAIT, cp.stream_mut().read(&mut byte))
                .await
                .unwrap();
            assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
        }
    }
    assert_eq!(server.charge_points.len(), 1);
    server.stop().await;
}

async fn the_handshake_deadline_covers_tls() {
    let pki = pki();
    let config = server_config().handshake_timeout(Duration::from_millis(300));
    let builder = Server::builder()
        .config(config)
        .tls(server_tls(&pki, false));
    let server = TestServer::start_with(builder).await;
    // A client that opens TCP and never starts TLS is dropped at the deadline.
    let started = Instant::now();
    let mut tcp = TcpStream::connect(server.addr).await.unwrap();
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(WAIT, tcp.read(&mut byte))
        .await
        .unwrap();
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(250) && took < Duration::from_secs(3),
        "{took:?}"
    );
    eventually("the task ended", || server.charge_points.is_empty()).await;
    server.stop().await;
}

in_both_layouts!(
    profile_2_tls_and_basic_credentials,
    profile_3_client_certificates,
    the_handshake_deadline_covers_tls,
);
