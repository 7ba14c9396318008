//! The TLS tests: handshakes through [`TlsSession`](super::TlsSession) with either backend (small
//! pipes, close_notify, alerts), client certificates, a certificate's common name.

use std::collections::VecDeque;

use rustls::pki_types::ServerName;
use rustls::ClientConnection;

use super::*;

/// A client-side session for the server at 127.0.0.1 (the name of [`pki`]'s server
/// certificate): the ClientHello is queued at once.
fn client_session(config: Arc<ClientConfig>) -> TlsSession {
    let server_name = ServerName::try_from("127.0.0.1").unwrap();
    TlsSession::new(ClientConnection::new(config, server_name).unwrap().into())
}

/// The rustls server of [`pki`]'s `dir`: its server certificate, client certificates required
/// from its CA.
fn rustls_server(dir: &Path) -> TlsSession {
    let config = server_config(
        &dir.join("server.pem"),
        &dir.join("server.key"),
        Some(&dir.join("ca.pem")),
    )
    .unwrap();
    TlsSession::server(config).unwrap()
}

/// The OpenSSL server configuration of [`pki`]'s `dir`: its server certificate, client
/// certificates required from its CA.
#[cfg(feature = "openssl")]
fn openssl_server_config(dir: &Path) -> openssl::OpenSslConfig {
    openssl::server_config(
        &[(&dir.join("server.pem"), &dir.join("server.key"))],
        &load_certificates(&dir.join("ca.pem")).unwrap(),
        openssl::ClientCertificatePolicy::Required,
    )
    .unwrap()
}

/// One direction of a socket pair in memory: at most `capacity` bytes in flight, at most
/// `max_write` taken per write, `WouldBlock` when full or empty (a non-blocking socket).
struct Pipe {
    bytes: VecDeque<u8>,
    capacity: usize,
    max_write: usize,
    blocked_writes: usize,
    partial_writes: usize,
    eof: bool,
}

impl Pipe {
    fn new(capacity: usize, max_write: usize) -> Pipe {
        Pipe {
            bytes: VecDeque::new(),
            capacity,
            max_write,
            blocked_writes: 0,
            partial_writes: 0,
            eof: false,
        }
    }
}

impl Write for Pipe {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let room = self.capacity - self.bytes.len();
        if room == 0 {
            self.blocked_writes += 1;
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = buf.len().min(room).min(self.max_write);
        if n < buf.len() {
            self.partial_writes += 1;
        }
        self.bytes.extend(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Read for Pipe {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.bytes.is_empty() {
            return if self.eof {
                Ok(0)
            } else {
                Err(io::ErrorKind::WouldBlock.into())
            };
        }
        let n = buf.len().min(self.bytes.len());
        for (slot, byte) in buf.iter_mut().zip(self.bytes.drain(..n)) {
            *slot = byte;
        }
        Ok(n)
    }
}

/// A CA, a server certificate for 127.0.0.1 and a client certificate with CN `CP001`, as
/// PEM files in a fresh directory.
fn pki() -> PathBuf {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "tls-unit-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, "unit CA");
    std::fs::write(dir.join("ca.pem"), ca.self_signed(&ca_key).unwrap().pem()).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    for (name, sans, cn) in [
        ("server", vec!["127.0.0.1".to_owned()], "csms"),
        ("cp", vec![], "CP001"),
    ] {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(sans).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        let cert = params.signed_by(&key, &issuer).unwrap();
        std::fs::write(dir.join(format!("{name}.pem")), cert.pem()).unwrap();
        std::fs::write(dir.join(format!("{name}.key")), key.serialize_pem()).unwrap();
    }
    dir
}

/// Moves records between the two sessions until neither has anything to say; returns the
/// plaintext each received.
fn pump(
    client: &mut TlsSession,
    server: &mut TlsSession,
    to_server: &mut Pipe,
    to_client: &mut Pipe,
) -> (Vec<u8>, Vec<u8>) {
    let (mut at_client, mut at_server) = (Vec::new(), Vec::new());
    let mut scratch = [0u8; 4096];
    for _ in 0..10_000 {
        client.write_to(to_server).unwrap();
        let a = server.receive(to_server, &mut scratch, |p| at_server.extend_from_slice(p));
        server.write_to(to_client).unwrap();
        let b = client.receive(to_client, &mut scratch, |p| at_client.extend_from_slice(p));
        match (a, b) {
            (Received::WouldBlock, Received::WouldBlock)
                if !client.wants_write() && !server.wants_write() =>
            {
                return (at_client, at_server)
            }
            (Received::Failed(e), _) | (_, Received::Failed(e)) => panic!("{e}"),
            _ => {}
        }
    }
    panic!("no quiet state");
}

/// Sends 300 KB from `sender` to `receiver` through `pipe`: `send` takes what fits,
/// stops on WouldBlock, and goes on after the receiver read; `check` sees both after each
/// step.
fn transfer(
    sender: &mut TlsSession,
    receiver: &mut TlsSession,
    pipe: &mut Pipe,
    check: impl Fn(&TlsSession, &TlsSession),
) {
    let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let (mut offset, mut received) = (0, Vec::new());
    let mut scratch = [0u8; 4096];
    for _ in 0..10_000 {
        offset += sender.send(pipe, &data[offset..]).unwrap();
        let _ = receiver.receive(pipe, &mut scratch, |p| received.extend_from_slice(p));
        check(sender, receiver);
        if received.len() == data.len() {
            break;
        }
    }
    assert!(
        received == data,
        "{} of {} bytes",
        received.len(),
        data.len()
    );
    assert!(pipe.blocked_writes > 0, "never blocked");
    assert!(pipe.partial_writes > 0, "never a partial write");
}

/// close_notify from `server`: the client sees the end of the stream; nothing is sent
/// after it.
fn close_notify(server: &mut TlsSession, client: &mut TlsSession, to_client: &mut Pipe) {
    let mut scratch = [0u8; 4096];
    server.close();
    server.close();
    assert_eq!(server.send(to_client, b"late").unwrap(), 0);
    let mut ended = false;
    for _ in 0..10 {
        match client.receive(to_client, &mut scratch, |_| panic!("data after close")) {
            Received::Closed => {
                ended = true;
                break;
            }
            Received::Progress | Received::WouldBlock => {}
            other => panic!("{other:?}"),
        }
    }
    assert!(ended);
}

/// A client that presents no certificate against `server`, which requires one: runs the
/// handshake until the server fails (at most 100 rounds); the server then abandons the session
/// and writes its alert. The server's failure (if it failed), the client and the pipe to it.
fn handshake_without_a_client_certificate(
    dir: &Path,
    server: &mut TlsSession,
) -> (Option<TlsFailure>, TlsSession, Pipe) {
    let mut client = client_session(client_config(&dir.join("ca.pem"), None).unwrap());
    let (mut to_server, mut to_client) = (Pipe::new(1 << 20, 1 << 20), Pipe::new(1 << 20, 1 << 20));
    let mut scratch = [0u8; 4096];
    for _ in 0..100 {
        client.write_to(&mut to_server).unwrap();
        if let Received::Failed(e) = server.receive(&mut to_server, &mut scratch, |_| {}) {
            server.abandon();
            server.write_to(&mut to_client).unwrap();
            return (Some(e), client, to_client);
        }
        server.write_to(&mut to_client).unwrap();
        let _ = client.receive(&mut to_client, &mut scratch, |_| {});
    }
    (None, client, to_client)
}

/// The client reads until it fails, at most 10 times: with the server's
/// `certificate_required` alert (the server refused a client without a certificate).
fn assert_certificate_required_alert(client: &mut TlsSession, to_client: &mut Pipe) {
    let mut scratch = [0u8; 4096];
    let mut alert = None;
    for _ in 0..10 {
        if let Received::Failed(e) = client.receive(to_client, &mut scratch, |_| {}) {
            alert = Some(e);
            break;
        }
    }
    assert!(
        matches!(
            alert,
            Some(TlsFailure::Rustls(rustls::Error::AlertReceived(
                rustls::AlertDescription::CertificateRequired
            )))
        ),
        "{alert:?}"
    );
}

/// The OpenSSL backend driven the same way, against a rustls client: a static-RSA suite
/// cannot be shown here (rustls will not offer one; `tests/tls_openssl.rs` does), but the
/// Sans-IO session is: handshake, client certificate, bulk both ways through a small
/// pipe, close_notify.
#[cfg(feature = "openssl")]
#[test]
fn openssl_session_handshake_bulk_and_close_notify() {
    let dir = pki();
    let config = openssl_server_config(&dir);
    for version in [&rustls::version::TLS12, &rustls::version::TLS13] {
        let client_config = Arc::new(
            ClientConfig::builder_with_provider(provider())
                .with_protocol_versions(&[version])
                .unwrap()
                .with_root_certificates(load_roots(&dir.join("ca.pem")).unwrap())
                .with_client_auth_cert(
                    load_certificates(&dir.join("cp.pem")).unwrap(),
                    load_private_key(&dir.join("cp.key")).unwrap(),
                )
                .unwrap(),
        );
        let mut client = client_session(client_config);
        let mut server = TlsSession::accept(&ServerTls::OpenSsl(config.clone())).unwrap();
        let (mut to_server, mut to_client) = (Pipe::new(10_000, 3000), Pipe::new(10_000, 3000));
        assert!(server.is_handshaking());
        pump(&mut client, &mut server, &mut to_server, &mut to_client);
        assert!(!client.is_handshaking() && !server.is_handshaking());
        assert_eq!(server.peer_common_name(), Some(Some("CP001".to_owned())));
        assert_eq!(client.peer_common_name(), Some(Some("csms".to_owned())));
        // The in-memory buffers stay within a record or two of the limit.
        let bounded = |server: &TlsSession| match &server.backend {
            Backend::OpenSsl(session) => {
                let (incoming, outgoing) = session.buffered();
                assert!(incoming < 40_000, "incoming {incoming}");
                assert!(outgoing < TLS_BUFFER_LIMIT + 40_000, "outgoing {outgoing}");
            }
            Backend::Rustls(_) => panic!("not OpenSSL"),
        };
        transfer(&mut client, &mut server, &mut to_server, |_, s| bounded(s));
        transfer(&mut server, &mut client, &mut to_client, |s, _| bounded(s));
        close_notify(&mut server, &mut client, &mut to_client);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "openssl")]
#[test]
fn openssl_config_refuses_a_key_of_another_certificate() {
    let dir = pki();
    let error = openssl::server_config(
        &[(&dir.join("server.pem"), &dir.join("cp.key"))],
        &[],
        openssl::ClientCertificatePolicy::None,
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("cp.key: the private key") && error.contains("mismatch"),
        "{error}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "openssl")]
#[test]
fn openssl_session_without_the_required_client_certificate_fails_with_an_alert() {
    let dir = pki();
    let config = openssl_server_config(&dir);
    let mut server = TlsSession::accept(&ServerTls::OpenSsl(config)).unwrap();
    let (failure, mut client, mut to_client) =
        handshake_without_a_client_certificate(&dir, &mut server);
    assert!(
        matches!(failure, Some(TlsFailure::OpenSsl(_))),
        "{failure:?}"
    );
    assert_certificate_required_alert(&mut client, &mut to_client);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn handshake_bulk_through_a_small_pipe_and_close_notify() {
    let dir = pki();
    let client_config = client_config(
        &dir.join("ca.pem"),
        Some((&dir.join("cp.pem"), &dir.join("cp.key"))),
    )
    .unwrap();
    let mut client = client_session(client_config);
    let mut server = rustls_server(&dir);
    // 10 KB in flight at most, 3000 bytes per write: records (up to 16 KiB) are cut.
    let (mut to_server, mut to_client) = (Pipe::new(10_000, 3000), Pipe::new(10_000, 3000));
    pump(&mut client, &mut server, &mut to_server, &mut to_client);
    assert!(!client.is_handshaking() && !server.is_handshaking());
    assert_eq!(server.peer_common_name(), Some(Some("CP001".to_owned())));
    assert_eq!(client.peer_common_name(), Some(Some("csms".to_owned())));
    assert_eq!(
        transport(Some(&server)),
        ocpp_reference_csms::Transport::Tls {
            client_certificate: Some(ocpp_reference_csms::ClientCertificate::new(Some(
                "CP001".into()
            )))
        }
    );

    // 300 KB from the server: `send` takes what fits, stops on WouldBlock, and goes on
    // after the client read.
    transfer(&mut server, &mut client, &mut to_client, |_, _| {});
    close_notify(&mut server, &mut client, &mut to_client);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_missing_client_certificate_fails_with_an_alert() {
    let dir = pki();
    let mut server = rustls_server(&dir);
    let (failure, mut client, mut to_client) =
        handshake_without_a_client_certificate(&dir, &mut server);
    assert!(
        matches!(
            failure,
            Some(TlsFailure::Rustls(rustls::Error::NoCertificatesPresented))
        ),
        "{failure:?}"
    );
    to_client.eof = true;
    assert_certificate_required_alert(&mut client, &mut to_client);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn common_name_of_a_certificate_without_one() {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["x.test".to_owned()]).unwrap();
    params.distinguished_name = rcgen::DistinguishedName::new();
    let cert = params.self_signed(&key).unwrap();
    assert_eq!(common_name(cert.der()), None);
    assert_eq!(common_name(&CertificateDer::from(&b"not DER"[..])), None);
}
