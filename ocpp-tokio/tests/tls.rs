//! Security profiles 2 (TLS + Basic credentials) and 3 (mutual TLS, the identity in the
//! client certificate's subject CN), certificates made by rcgen at test time; the handshake
//! deadline covers TLS.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use ocpp_server_core::Event;
use ocpp_tokio::ocpp::CloseReason;
use ocpp_tokio::rustls;
use ocpp_tokio::{OcppVersion, Server};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

type Identity = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

struct Pki {
    ca: CertificateDer<'static>,
    server: Identity,
    cp001: Identity,
    rogue_cp001: Identity,
}

fn ca(cn: &str) -> (CertificateDer<'static>, Issuer<'static, KeyPair>) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, cn);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let cert = params.self_signed(&key).unwrap();
    (cert.der().clone(), Issuer::new(params, key))
}

fn leaf(
    issuer: &Issuer<'_, KeyPair>,
    cn: &str,
    names: &[&str],
    usage: ExtendedKeyUsagePurpose,
) -> Identity {
    let key = KeyPair::generate().unwrap();
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let mut params = CertificateParams::new(names).unwrap();
    params.distinguished_name.push(DnType::CommonName, cn);
    params.extended_key_usages = vec![usage];
    let cert = params.signed_by(&key, issuer).unwrap();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    (vec![cert.der().clone()], key)
}

fn pki() -> Pki {
    let (ca_cert, ours) = ca("OCPP test CA");
    let (_, rogue) = ca("Rogue CA");
    Pki {
        ca: ca_cert,
        server: leaf(
            &ours,
            "csms.test",
            &["127.0.0.1", "localhost"],
            ExtendedKeyUsagePurpose::ServerAuth,
        ),
        cp001: leaf(&ours, "CP001", &[], ExtendedKeyUsagePurpose::ClientAuth),
        rogue_cp001: leaf(&rogue, "CP001", &[], ExtendedKeyUsagePurpose::ClientAuth),
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn roots(pki: &Pki) -> Arc<rustls::RootCertStore> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(pki.ca.clone()).unwrap();
    Arc::new(roots)
}

/// Profile 2 without `mutual`, profile 3 with.
fn server_tls(pki: &Pki, mutual: bool) -> Arc<rustls::ServerConfig> {
    let builder = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = if mutual {
        let verifier =
            rustls::server::WebPkiClientVerifier::builder_with_provider(roots(pki), provider())
                .build()
                .unwrap();
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    let (chain, key) = (pki.server.0.clone(), pki.server.1.clone_key());
    Arc::new(builder.with_single_cert(chain, key).unwrap())
}

fn connector(pki: &Pki, identity: Option<&Identity>) -> TlsConnector {
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots(pki));
    let config = match identity {
        Some((chain, key)) => builder
            .with_client_auth_cert(chain.clone(), key.clone_key())
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    TlsConnector::from(Arc::new(config))
}

type TlsCp = TestCp<tokio_rustls::client::TlsStream<TcpStream>>;

async fn tls_cp(
    server: &TestServer,
    connector: &TlsConnector,
    identity: &str,
    password: Option<&[u8]>,
) -> std::io::Result<TlsCp> {
    let tcp = TcpStream::connect(server.addr).await?;
    let name = ServerName::try_from("localhost").unwrap();
    let tls = connector.connect(name, tcp).await?;
    Ok(TestCp::over(
        tls,
        &server.addr.to_string(),
        identity,
        OcppVersion::V1_6,
        password,
    ))
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
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
    assert!(matches!(cp.next_event().await, Event::Connected { .. }));
    assert_eq!(cp.boot().await, "Accepted");

    let mut cp = tls_cp(&server, &connector, "AUTH-TLS2", Some(b"wrong-password-16"))
        .await
        .unwrap();
    assert_eq!(refused_with(cp.next_event().await), Some(401));
    let mut cp = tls_cp(&server, &connector, "AUTH-TLS3", None)
        .await
        .unwrap();
    assert_eq!(refused_with(cp.next_event().await), Some(401));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profile_3_client_certificates() {
    let pki = pki();
    let builder = Server::builder()
        .config(server_config())
        .tls(server_tls(&pki, true));
    let server = TestServer::start_with(builder).await;

    // CP001's certificate, identity CP001: accepted (the handler compares the subject CN).
    let with_cp001 = connector(&pki, Some(&pki.cp001));
    let mut cp = tls_cp(&server, &with_cp001, "CP001", None).await.unwrap();
    assert!(matches!(cp.next_event().await, Event::Connected { .. }));
    assert_eq!(cp.boot().await, "Accepted");

    // CP001's certificate for identity CP002: 403.
    let mut cp = tls_cp(&server, &with_cp001, "CP002", None).await.unwrap();
    assert_eq!(refused_with(cp.next_event().await), Some(403));

    // No certificate, or one of another CA: the TLS handshake fails (TLS 1.3 reports it on
    // the first read), and the server carries on.
    for identity in [None, Some(&pki.rogue_cp001)] {
        let connector = connector(&pki, identity);
        if let Ok(mut cp) = tls_cp(&server, &connector, "CP001", None).await {
            cp.flush().await;
            let mut byte = [0u8; 1];
            let read = tokio::time::timeout(WAIT, cp.stream.read(&mut byte))
                .await
                .unwrap();
            assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
        }
    }
    assert_eq!(server.charge_points.len(), 1);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
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
