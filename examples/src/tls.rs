//! TLS for the examples' I/O loops (OCPP security profiles 2 and 3), with `rustls` driven the
//! Sans-IO way: the loop reads and writes the socket, a [`TlsSession`] turns TLS records into
//! plaintext for the `ocpp_proto::Connection` and its output back into records. The OCPP
//! crates never see TLS.
//!
//! - [`server_config`]: a server certificate (profile 2), optionally client certificates
//!   required and verified against a CA (profile 3, `WebPkiClientVerifier`);
//!   [`server_config_with`] also lets them be optional ([`ClientCertificates::Optional`]),
//!   for a listener where each station's own profile decides at the upgrade.
//! - [`client_config`]: the CA the charge point trusts, optionally its own certificate (for
//!   `ocpp_tokio::station::StationBuilder::tls`, which drives the client side itself).
//! - [`TlsSession`]: one server-side connection's TLS state between the socket and the OCPP
//!   connection, for the mio loop.
//! - [`common_name`]: the subject CN of a certificate: in OCPP 2.0.1 (A00, security profile 3)
//!   the charge point's certificate names its identity (serial number) there.
//!
//! - [`ServerTls`]: the server side of either backend, as both servers take it: rustls (the
//!   default; TLS 1.2 and 1.3 with the `ring` provider, forward-secret suites only) or, with
//!   the cargo feature `openssl` and `--tls-backend openssl`, OpenSSL ([`openssl`]), which
//!   also offers the static-RSA suites OCPP 2.0.1 A00.FR.318 requires. [`TlsSession`] drives
//!   either the same way.
//!
//! A connection without TLS holds no TLS state at all (`Option<Box<TlsSession>>` is one
//! pointer).

use std::fmt;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig, ServerConnection};

#[cfg(feature = "openssl")]
pub mod openssl;

/// Why a TLS configuration could not be built.
#[derive(Debug)]
#[non_exhaustive]
pub enum TlsError {
    /// A PEM file could not be read or holds no item of the kind wanted.
    Pem {
        /// The file.
        path: PathBuf,
        /// What was looked for: "certificate" or "private key".
        what: &'static str,
        /// The parser's or the file system's error.
        error: rustls::pki_types::pem::Error,
    },
    /// A CA certificate was refused as a trust anchor.
    BadCa {
        /// The file.
        path: PathBuf,
        /// Why.
        error: rustls::Error,
    },
    /// The client certificate verifier could not be built (e.g. no usable CA).
    Verifier(rustls::server::VerifierBuilderError),
    /// rustls refused the configuration (e.g. a key that does not match the certificate).
    Config(rustls::Error),
    /// A file could not be read.
    Read {
        /// The file.
        path: PathBuf,
        /// The file system's error.
        error: io::Error,
    },
    /// OpenSSL refused the configuration (a key that does not match its certificate, ...).
    #[cfg(feature = "openssl")]
    OpenSsl(openssl::OpenSslError),
    /// `--tls-backend openssl` in a build without the cargo feature `openssl`.
    BackendNotBuilt(&'static str),
    /// More certificates than the backend takes (rustls: one; OpenSSL: one per key type).
    TooManyCertificates {
        /// The backend.
        backend: &'static str,
        /// How many it takes.
        at_most: usize,
    },
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsError::Pem { path, what, error } => match error {
                rustls::pki_types::pem::Error::NoItemsFound => write!(
                    f,
                    "{}: no PEM {what} found (expected a `-----BEGIN ...-----` section)",
                    path.display()
                ),
                error => write!(f, "{}: cannot read the PEM {what}: {error}", path.display()),
            },
            TlsError::BadCa { path, error } => {
                write!(
                    f,
                    "{}: not a usable CA certificate: {error}",
                    path.display()
                )
            }
            TlsError::Verifier(e) => write!(f, "client certificate verifier: {e}"),
            TlsError::Config(e) => write!(f, "TLS configuration: {e}"),
            TlsError::Read { path, error } => write!(f, "{}: {error}", path.display()),
            #[cfg(feature = "openssl")]
            TlsError::OpenSsl(e) => write!(f, "TLS configuration (OpenSSL): {e}"),
            TlsError::BackendNotBuilt(backend) => write!(
                f,
                "--tls-backend {backend}: this binary was built without the cargo feature `{backend}`"
            ),
            TlsError::TooManyCertificates { backend, at_most } => write!(
                f,
                "--tls-backend {backend} takes at most {at_most} --tls-cert/--tls-key pair(s)"
            ),
        }
    }
}

impl std::error::Error for TlsError {}

/// Every certificate in a PEM file, in order (a server's own certificate first, then the
/// intermediates).
///
/// ```no_run
/// let chain = ocpp_examples::tls::load_certificates("server.pem".as_ref()).unwrap();
/// assert!(!chain.is_empty());
/// ```
pub fn load_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem_error = |error| TlsError::Pem {
        path: path.to_owned(),
        what: "certificate",
        error,
    };
    let certificates = CertificateDer::pem_file_iter(path)
        .map_err(pem_error)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(pem_error)?;
    if certificates.is_empty() {
        return Err(pem_error(rustls::pki_types::pem::Error::NoItemsFound));
    }
    Ok(certificates)
}

/// The first private key (PKCS#8, PKCS#1 or SEC1) in a PEM file.
pub fn load_private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_file(path).map_err(|error| TlsError::Pem {
        path: path.to_owned(),
        what: "private key",
        error,
    })
}

/// The CA certificates of a PEM file as trust anchors.
fn load_roots(path: &Path) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    for certificate in load_certificates(path)? {
        roots.add(certificate).map_err(|error| TlsError::BadCa {
            path: path.to_owned(),
            error,
        })?;
    }
    Ok(roots)
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The server side: `cert` (PEM chain) and `key` for security profile 2; with `client_ca`,
/// security profile 3: every client must present a certificate that chains to that CA, or the
/// handshake fails with an alert (`certificate_required`, `unknown_ca`, `bad_certificate`).
///
/// ```no_run
/// use ocpp_examples::tls::server_config;
/// let profile_2 = server_config("server.pem".as_ref(), "server.key".as_ref(), None).unwrap();
/// let profile_3 =
///     server_config("server.pem".as_ref(), "server.key".as_ref(), Some("ca.pem".as_ref()))
///         .unwrap();
/// ```
pub fn server_config(
    cert: &Path,
    key: &Path,
    client_ca: Option<&Path>,
) -> Result<Arc<ServerConfig>, TlsError> {
    let client_certificates = match client_ca {
        Some(ca) => ClientCertificates::Required(load_roots(ca)?),
        None => ClientCertificates::None,
    };
    server_config_with(cert, key, client_certificates)
}

/// Which client certificates a TLS listener asks for.
#[derive(Debug)]
#[non_exhaustive]
pub enum ClientCertificates {
    /// None (security profile 2 at most).
    None,
    /// Every client must present one that chains to these roots (profile 3 for all).
    Required(RootCertStore),
    /// A client may present one, verified against these roots (a bad one fails the
    /// handshake); one without is let through to the upgrade, where the station's own
    /// profile decides (`ocpp_reference_csms::credentials`).
    Optional(RootCertStore),
}

/// The CA certificates of PEM files, and more, as trust anchors (for
/// [`ClientCertificates`]).
pub fn roots(files: &[&Path], more: &[CertificateDer<'static>]) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    for path in files {
        roots.roots.extend(load_roots(path)?.roots);
    }
    for certificate in more {
        roots
            .add(certificate.clone())
            .map_err(|error| TlsError::BadCa {
                path: PathBuf::from("--ca-cert"),
                error,
            })?;
    }
    Ok(roots)
}

/// [`server_config`] with the client certificate policy spelled out.
pub fn server_config_with(
    cert: &Path,
    key: &Path,
    client_certificates: ClientCertificates,
) -> Result<Arc<ServerConfig>, TlsError> {
    let chain = load_certificates(cert)?;
    let key = load_private_key(key)?;
    let builder = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(rustls::ALL_VERSIONS)
        .map_err(TlsError::Config)?;
    let verifier = |roots: RootCertStore| {
        WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
    };
    let builder = match client_certificates {
        ClientCertificates::Required(roots) => {
            builder.with_client_cert_verifier(verifier(roots).build().map_err(TlsError::Verifier)?)
        }
        ClientCertificates::Optional(roots) => builder.with_client_cert_verifier(
            verifier(roots)
                .allow_unauthenticated()
                .build()
                .map_err(TlsError::Verifier)?,
        ),
        ClientCertificates::None => builder.with_no_client_auth(),
    };
    let config = builder
        .with_single_cert(chain, key)
        .map_err(TlsError::Config)?;
    Ok(Arc::new(config))
}

/// The charge point's side: trusts the CAs of the PEM file `ca`; with `identity` (certificate
/// chain and key files) it presents a client certificate (security profile 3).
pub fn client_config(
    ca: &Path,
    identity: Option<(&Path, &Path)>,
) -> Result<Arc<ClientConfig>, TlsError> {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(rustls::ALL_VERSIONS)
        .map_err(TlsError::Config)?
        .with_root_certificates(load_roots(ca)?);
    let config = match identity {
        Some((cert, key)) => builder
            .with_client_auth_cert(load_certificates(cert)?, load_private_key(key)?)
            .map_err(TlsError::Config)?,
        None => builder.with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

/// The subject Common Name of a DER certificate, if it has one in UTF-8 (or ASCII) form.
/// OCPP 2.0.1 security (A00.FR.4xx): the charge point certificate's CN carries its identity.
pub fn common_name(certificate: &CertificateDer<'_>) -> Option<String> {
    let (_, parsed) = x509_parser::parse_x509_certificate(certificate.as_ref()).ok()?;
    let cn = parsed.subject().iter_common_name().next()?;
    cn.as_str().ok().map(str::to_owned)
}

/// The server side of TLS, as both servers take it: which backend, with its configuration.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ServerTls {
    /// rustls (the default): forward-secret suites only.
    Rustls(Arc<ServerConfig>),
    /// OpenSSL (`--tls-backend openssl`): also the static-RSA suites.
    #[cfg(feature = "openssl")]
    OpenSsl(openssl::OpenSslConfig),
}

/// Why a TLS session failed: a handshake refused (no client certificate, an untrusted one, no
/// suite in common) or a bad record; or why it could not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum TlsFailure {
    /// rustls's error.
    Rustls(rustls::Error),
    /// OpenSSL's error.
    #[cfg(feature = "openssl")]
    OpenSsl(::openssl::ssl::Error),
    /// OpenSSL could not set a session up.
    #[cfg(feature = "openssl")]
    OpenSslSetup(openssl::OpenSslError),
}

impl fmt::Display for TlsFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsFailure::Rustls(e) => e.fmt(f),
            #[cfg(feature = "openssl")]
            TlsFailure::OpenSsl(e) => e.fmt(f),
            #[cfg(feature = "openssl")]
            TlsFailure::OpenSslSetup(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for TlsFailure {}

/// What one call of [`TlsSession::receive`] saw.
#[derive(Debug)]
#[must_use]
pub enum Received {
    /// Records were read (maybe plaintext handed on); read again.
    Progress,
    /// The socket has nothing more now.
    WouldBlock,
    /// The peer ended the stream (`close_notify`, or TCP end of stream with or without it).
    Closed,
    /// The peer broke the TLS protocol or failed verification (a handshake failure, a bad
    /// record). An alert is queued: write it with [`TlsSession::write_to`], then drop the
    /// connection.
    Failed(TlsFailure),
    /// The socket failed.
    Io(io::Error),
}

/// One connection's TLS state, between its socket and its OCPP connection, on either backend.
///
/// Input: [`TlsSession::receive`] reads records from the socket and hands each piece of
/// plaintext to a callback (the OCPP connection's `handle_data`). Output:
/// [`TlsSession::send`] takes the OCPP connection's pending bytes and writes records to the
/// socket until it would block. Closing: [`TlsSession::close`] queues `close_notify` once.
#[derive(Debug)]
pub struct TlsSession {
    backend: Backend,
    close_notify_sent: bool,
}

/// The session of one backend. The whole session is boxed per connection; the rustls one is
/// held inline (the default backend pays no second allocation), which leaves an OpenSSL
/// session's box about 1 KB larger than it needs, next to the several KB OpenSSL allocates
/// for its own state.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
enum Backend {
    Rustls(rustls::Connection),
    #[cfg(feature = "openssl")]
    OpenSsl(openssl::OpenSslSession),
}

/// How much plaintext a session may hold encrypted and unsent before refusing more (the OCPP
/// connection keeps the rest and applies its own back-pressure).
const TLS_BUFFER_LIMIT: usize = 64 * 1024;

impl TlsSession {
    /// A server-side rustls session (the handshake starts with the client's first bytes).
    pub fn server(config: Arc<ServerConfig>) -> Result<Self, rustls::Error> {
        Ok(Self::new(ServerConnection::new(config)?.into()))
    }

    /// A server-side session of the backend `config` names.
    pub fn accept(config: &ServerTls) -> Result<Self, TlsFailure> {
        match config {
            ServerTls::Rustls(config) => {
                Self::server(Arc::clone(config)).map_err(TlsFailure::Rustls)
            }
            #[cfg(feature = "openssl")]
            ServerTls::OpenSsl(config) => Ok(TlsSession {
                backend: Backend::OpenSsl(
                    openssl::OpenSslSession::server(config).map_err(TlsFailure::OpenSslSetup)?,
                ),
                close_notify_sent: false,
            }),
        }
    }

    fn new(mut connection: rustls::Connection) -> Self {
        connection.set_buffer_limit(Some(TLS_BUFFER_LIMIT));
        TlsSession {
            backend: Backend::Rustls(connection),
            close_notify_sent: false,
        }
    }

    /// Whether the handshake is still going on.
    pub fn is_handshaking(&self) -> bool {
        match &self.backend {
            Backend::Rustls(connection) => connection.is_handshaking(),
            #[cfg(feature = "openssl")]
            Backend::OpenSsl(session) => session.is_handshaking(),
        }
    }

    /// Whether records wait to be written to the socket.
    pub fn wants_write(&self) -> bool {
        match &self.backend {
            Backend::Rustls(connection) => connection.wants_write(),
            #[cfg(feature = "openssl")]
            Backend::OpenSsl(session) => session.wants_write(),
        }
    }

    /// The peer's certificate chain (end entity first) once the handshake verified it (the
    /// OpenSSL backend keeps the end entity only).
    pub fn peer_certificates(&self) -> Option<&[CertificateDer<'static>]> {
        match &self.backend {
            Backend::Rustls(connection) => connection.peer_certificates(),
            #[cfg(feature = "openssl")]
            Backend::OpenSsl(session) => session.peer_certificate().map(std::slice::from_ref),
        }
    }

    /// The subject CN of the peer's verified end-entity certificate: `None` when it sent none,
    /// `Some(None)` when it has no readable CN.
    pub fn peer_common_name(&self) -> Option<Option<String>> {
        self.peer_certificates()
            .and_then(<[_]>::first)
            .map(common_name)
    }

    /// Reads once from `socket`, decrypts, and hands every piece of plaintext to
    /// `on_plaintext` (through `scratch`, the loop's buffer). Call again on
    /// [`Received::Progress`].
    pub fn receive(
        &mut self,
        socket: &mut impl Read,
        scratch: &mut [u8],
        on_plaintext: impl FnMut(&[u8]),
    ) -> Received {
        match &mut self.backend {
            Backend::Rustls(connection) => {
                receive_rustls(connection, socket, scratch, on_plaintext)
            }
            #[cfg(feature = "openssl")]
            Backend::OpenSsl(session) => {
                let eof = match socket.read(scratch) {
                    Ok(0) => true,
                    Ok(n) => {
                        session.feed(&scratch[..n]);
                        false
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Received::WouldBlock,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => return Received::Progress,
                    Err(e) => return Received::Io(e),
                };
                match session.process(scratch, on_plaintext) {
                    openssl::Step::Progress if eof => Received::Closed,
                    openssl::Step::Progress => Received::Progress,
                    openssl::Step::Closed => Received::Closed,
                    openssl::Step::Failed(e) => Received::Failed(TlsFailure::OpenSsl(e)),
                }
            }
        }
    }

    /// Encrypts as much of `plaintext` as the session takes and writes records to `socket`
    /// until it would block. Returns how many plaintext bytes were taken (advance the OCPP
    /// connection's output by that much); an error means the socket is dead.
    pub fn send(&mut self, socket: &mut impl Write, plaintext: &[u8]) -> io::Result<usize> {
        match &mut self.backend {
            Backend::Rustls(connection) => {
                send_rustls(connection, socket, plaintext, self.close_notify_sent)
            }
            #[cfg(feature = "openssl")]
            Backend::OpenSsl(session) => {
                let mut taken = 0;
                loop {
                    let more = session.encrypt(&plaintext[taken..], self.close_notify_sent)?;
                    taken += more;
                    session.write_records(socket)?;
                    if more == 0 || taken == plaintext.len() || session.wants_write() {
                        return Ok(taken);
                    }
                }
            }
        }
    }

    /// Writes queued records (e.g. the alert after [`Received::Failed`]) until the socket
    /// would block. An error means the socket is dead.
    pub fn write_to(&mut self, socket: &mut impl Write) -> io::Result<()> {
        self.send(socket, &[]).map(|_| ())
    }

    /// Queues `close_notify` (once); write it with [`TlsSession::write_to`] before
    /// shutting the socket's write side.
    pub fn close(&mut self) {
        if !self.close_notify_sent {
            self.close_notify_sent = true;
            match &mut self.backend {
                Backend::Rustls(connection) => connection.send_close_notify(),
                #[cfg(feature = "openssl")]
                Backend::OpenSsl(session) => session.close(),
            }
        }
    }

    /// Marks the session as not to be closed with `close_notify` (after a fatal alert).
    pub fn abandon(&mut self) {
        self.close_notify_sent = true;
    }
}

/// [`TlsSession::receive`] on rustls.
fn receive_rustls(
    connection: &mut rustls::Connection,
    socket: &mut impl Read,
    scratch: &mut [u8],
    mut on_plaintext: impl FnMut(&[u8]),
) -> Received {
    let eof = match connection.read_tls(socket) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Received::WouldBlock,
        Err(e) if e.kind() == io::ErrorKind::Interrupted => return Received::Progress,
        Err(e) => return Received::Io(e),
    };
    if let Err(error) = connection.process_new_packets() {
        return Received::Failed(TlsFailure::Rustls(error));
    }
    loop {
        match connection.reader().read(scratch) {
            Ok(0) => return Received::Closed, // close_notify
            Ok(n) => on_plaintext(&scratch[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            // TCP end of stream without close_notify.
            Err(_) => return Received::Closed,
        }
    }
    if eof {
        Received::Closed
    } else {
        Received::Progress
    }
}

/// [`TlsSession::send`] on rustls.
fn send_rustls(
    connection: &mut rustls::Connection,
    socket: &mut impl Write,
    plaintext: &[u8],
    closed: bool,
) -> io::Result<usize> {
    let mut taken = 0;
    loop {
        if taken < plaintext.len() && !closed {
            taken += connection.writer().write(&plaintext[taken..])?;
        }
        if !connection.wants_write() {
            return Ok(taken);
        }
        match connection.write_tls(socket) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(taken),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// What the CSMS decides an upgrade on besides the request: plain TCP, or TLS with the client
/// certificate it verified (its subject CN read here, once per connection).
pub fn transport(session: Option<&TlsSession>) -> ocpp_reference_csms::Transport {
    match session {
        None => ocpp_reference_csms::Transport::Plain,
        Some(session) => ocpp_reference_csms::Transport::Tls {
            client_certificate: session
                .peer_common_name()
                .map(ocpp_reference_csms::ClientCertificate::new),
        },
    }
}

#[cfg(test)]
mod tests;
