//! The OpenSSL backend (`--tls-backend openssl`, cargo feature `openssl`): the suites rustls
//! will never offer. OCPP 2.0.1 Part 2 A00.FR.318 (and the OCTT's TLS cases, TC_A_04 and
//! TC_A_07) asks a CSMS for `TLS_RSA_WITH_AES_128_GCM_SHA256` and
//! `TLS_RSA_WITH_AES_256_GCM_SHA384` (static RSA key exchange, no forward secrecy) beside the
//! ECDHE-ECDSA AES-GCM suites.
//!
//! - [`server_config`]: one context for every connection: TLS 1.2 and 1.3 only, TLS 1.2 with
//!   [`TLS12_CIPHERS`] (ECDHE-ECDSA and ECDHE-RSA AES-GCM, then the two static-RSA suites;
//!   nothing with CBC or SHA-1), an RSA and/or an ECDSA certificate (OpenSSL keeps one per
//!   key type and picks the one the negotiated suite needs), client certificates required or
//!   optional against the CAs given, as the rustls backend does.
//! - [`OpenSslSession`]: one connection for the mio loop, Sans-IO: an `SslStream` over a pair
//!   of in-memory buffers. The loop reads the socket into the incoming buffer, the session
//!   hands out plaintext; the session's records collect in the outgoing buffer, and the loop
//!   writes them to the socket. OpenSSL never sees the socket.
//! - [`session`] and [`handshake`]: the same over a tokio stream (`tokio-openssl`), for
//!   tokio-server, which then hands the plaintext stream to `ocpp-tokio`.

use std::fmt;
use std::io::{self, Read, Write};
use std::path::Path;
use std::pin::Pin;

use openssl::error::ErrorStack;
use openssl::pkey::PKey;
use openssl::ssl::{
    ErrorCode, Ssl, SslContext, SslContextBuilder, SslMethod, SslOptions, SslStream, SslVerifyMode,
    SslVersion,
};
use openssl::x509::X509;
use rustls::pki_types::CertificateDer;
use tokio::io::{AsyncRead, AsyncWrite};

use super::{load_certificates, TlsError, TLS_BUFFER_LIMIT};

/// The TLS 1.2 suites offered, in the server's order of preference (OpenSSL names): the
/// ECDHE AES-GCM suites (forward secrecy; A00.FR.317) first, then the two static-RSA ones
/// A00.FR.318 requires (`TLS_RSA_WITH_AES_128_GCM_SHA256`, `TLS_RSA_WITH_AES_256_GCM_SHA384`).
pub const TLS12_CIPHERS: &str = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:\
ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384:AES128-GCM-SHA256:AES256-GCM-SHA384";

/// The TLS 1.3 suites offered (all of them AEAD with ephemeral key exchange).
pub const TLS13_SUITES: &str =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";

/// Why OpenSSL refused a configuration or a session.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {error}")]
pub struct OpenSslError {
    /// What was being done (e.g. the file being loaded).
    pub what: String,
    /// OpenSSL's error queue.
    #[source]
    pub error: ErrorStack,
}

fn failed(what: impl Into<String>) -> impl FnOnce(ErrorStack) -> TlsError {
    let what = what.into();
    move |error| TlsError::OpenSsl(OpenSslError { what, error })
}

/// The server side's OpenSSL context, shared by every connection (cheap to clone).
#[derive(Clone)]
pub struct OpenSslConfig {
    context: SslContext,
}

impl fmt::Debug for OpenSslConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenSslConfig").finish_non_exhaustive()
    }
}

impl OpenSslConfig {
    /// A fresh server-side `Ssl` for one connection.
    fn ssl(&self) -> Result<Ssl, ErrorStack> {
        Ssl::new(&self.context)
    }
}

/// Which client certificates the OpenSSL listener asks for (the same policy as
/// [`super::ClientCertificates`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientCertificatePolicy {
    /// None asked for.
    None,
    /// Every client must present one that chains to the CAs (security profile 3 for all).
    Required,
    /// A client may present one (verified: a bad one fails the handshake); one without goes
    /// on to the upgrade, where the station's own profile decides.
    Optional,
}

/// The server context: `identities` are (certificate chain, private key) PEM file pairs, at
/// most one per key type (RSA, ECDSA); the static-RSA suites need the RSA one, the
/// ECDHE-ECDSA suites the ECDSA one. Client certificates chain to `client_cas`.
///
/// ```no_run
/// use ocpp_examples::tls::openssl::{server_config, ClientCertificatePolicy};
/// let rsa = ("rsa.pem".as_ref(), "rsa.key".as_ref());
/// let ecdsa = ("ecdsa.pem".as_ref(), "ecdsa.key".as_ref());
/// let config = server_config(&[rsa, ecdsa], &[], ClientCertificatePolicy::None).unwrap();
/// ```
pub fn server_config(
    identities: &[(&Path, &Path)],
    client_cas: &[CertificateDer<'static>],
    policy: ClientCertificatePolicy,
) -> Result<OpenSslConfig, TlsError> {
    let mut builder = SslContextBuilder::new(SslMethod::tls_server()).map_err(failed("context"))?;
    builder
        .set_min_proto_version(Some(SslVersion::TLS1_2))
        .map_err(failed("TLS versions"))?;
    builder
        .set_max_proto_version(Some(SslVersion::TLS1_3))
        .map_err(failed("TLS versions"))?;
    builder
        .set_cipher_list(TLS12_CIPHERS)
        .map_err(failed("TLS 1.2 cipher suites"))?;
    builder
        .set_ciphersuites(TLS13_SUITES)
        .map_err(failed("TLS 1.3 cipher suites"))?;
    builder.set_options(
        SslOptions::CIPHER_SERVER_PREFERENCE
            | SslOptions::NO_COMPRESSION
            | SslOptions::NO_RENEGOTIATION,
    );
    for (cert, key) in identities {
        add_identity(&mut builder, cert, key)?;
    }
    if policy != ClientCertificatePolicy::None {
        for certificate in client_cas {
            let ca = X509::from_der(certificate.as_ref()).map_err(failed("a CA certificate"))?;
            builder
                .add_client_ca(&ca)
                .map_err(failed("a CA certificate (its name)"))?;
            builder
                .cert_store_mut()
                .add_cert(ca)
                .map_err(failed("a CA certificate (trust anchor)"))?;
        }
        let mode = match policy {
            ClientCertificatePolicy::Required => {
                SslVerifyMode::PEER | SslVerifyMode::FAIL_IF_NO_PEER_CERT
            }
            _ => SslVerifyMode::PEER,
        };
        builder.set_verify(mode);
    }
    Ok(OpenSslConfig {
        context: builder.build(),
    })
}

/// Adds one certificate chain and its key; OpenSSL keeps it in the slot of its key type.
fn add_identity(builder: &mut SslContextBuilder, cert: &Path, key: &Path) -> Result<(), TlsError> {
    // Read here first for the errors the rustls backend gives (a file without certificates).
    load_certificates(cert)?;
    // The leaf and its intermediates, in the slot of the leaf's key type (OpenSSL 1.0.2+).
    builder
        .set_certificate_chain_file(cert)
        .map_err(failed(format!("{}: the certificate chain", cert.display())))?;
    let pem = std::fs::read(key).map_err(|error| TlsError::Read {
        path: key.to_owned(),
        error,
    })?;
    let in_key = |what: &str| failed(format!("{}: {what}", key.display()));
    let private_key = PKey::private_key_from_pem(&pem).map_err(in_key("the private key"))?;
    builder
        .set_private_key(&private_key)
        .map_err(in_key("the private key of the --tls-cert given with it"))?;
    builder
        .check_private_key()
        .map_err(in_key("the private key does not match the certificate"))?;
    Ok(())
}

/// The in-memory transport under the `SslStream`: records in from the socket, records out to
/// it. Reading an empty buffer would block; writing always succeeds (the session bounds how
/// much it lets in).
#[derive(Debug, Default)]
struct Buffers {
    incoming: Vec<u8>,
    /// How much of `incoming` OpenSSL has read.
    incoming_read: usize,
    outgoing: Vec<u8>,
    /// How much of `outgoing` went to the socket.
    outgoing_written: usize,
}

impl Read for Buffers {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = &self.incoming[self.incoming_read..];
        if available.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.incoming_read += n;
        if self.incoming_read == self.incoming.len() {
            self.incoming.clear();
            self.incoming_read = 0;
        }
        Ok(n)
    }
}

impl Write for Buffers {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.outgoing.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Buffers {
    fn pending_out(&self) -> usize {
        self.outgoing.len() - self.outgoing_written
    }

    /// Drops what was already consumed, so that a stream whose buffers never empty (a
    /// partial record always left, a socket never quite drained) does not grow them.
    fn compact(&mut self) {
        if self.incoming_read > 0 {
            self.incoming.drain(..self.incoming_read);
            self.incoming_read = 0;
        }
        if self.outgoing_written > 0 {
            self.outgoing.drain(..self.outgoing_written);
            self.outgoing_written = 0;
        }
    }
}

/// What one step of an [`OpenSslSession`] saw, for [`super::TlsSession`].
#[derive(Debug)]
pub(super) enum Step {
    /// Plaintext was handed on or the handshake moved; more may come with more records.
    Progress,
    /// The peer sent `close_notify`.
    Closed,
    /// A TLS error (a failed handshake, a bad record); OpenSSL queued its alert.
    Failed(openssl::ssl::Error),
}

/// One server-side connection's TLS state on OpenSSL, between the socket and the OCPP
/// connection (see the module docs).
pub struct OpenSslSession {
    stream: SslStream<Buffers>,
    handshaking: bool,
    /// The peer's verified end-entity certificate, read once when the handshake completed.
    peer_certificate: Option<CertificateDer<'static>>,
}

impl fmt::Debug for OpenSslSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenSslSession")
            .field("handshaking", &self.handshaking)
            .field("client_certificate", &self.peer_certificate.is_some())
            .finish_non_exhaustive()
    }
}

/// The largest plaintext handed to one `SSL_write` (one record).
const RECORD: usize = 16 * 1024;

impl OpenSslSession {
    /// A server-side session (the handshake starts with the client's first bytes).
    pub fn server(config: &OpenSslConfig) -> Result<Self, OpenSslError> {
        let with = |what: &str| {
            let what = what.to_owned();
            move |error| OpenSslError { what, error }
        };
        let mut ssl = config.ssl().map_err(with("new session"))?;
        ssl.set_accept_state();
        let stream = SslStream::new(ssl, Buffers::default()).map_err(with("new session"))?;
        Ok(OpenSslSession {
            stream,
            handshaking: true,
            peer_certificate: None,
        })
    }

    /// Whether the handshake is still going on.
    pub fn is_handshaking(&self) -> bool {
        self.handshaking
    }

    /// Whether records wait to be written to the socket.
    pub fn wants_write(&self) -> bool {
        self.stream.get_ref().pending_out() > 0
    }

    /// The peer's verified end-entity certificate, once the handshake completed.
    pub fn peer_certificate(&self) -> Option<&CertificateDer<'static>> {
        self.peer_certificate.as_ref()
    }

    /// The negotiated cipher suite's OpenSSL name (`AES128-GCM-SHA256`, ...), once known.
    pub fn cipher(&self) -> Option<&'static str> {
        self.stream.ssl().current_cipher().map(|c| c.name())
    }

    /// The length of the incoming and outgoing buffers (consumed parts included).
    #[cfg(test)]
    pub(super) fn buffered(&self) -> (usize, usize) {
        let buffers = self.stream.get_ref();
        (buffers.incoming.len(), buffers.outgoing.len())
    }

    /// Takes records read from the socket.
    pub(super) fn feed(&mut self, records: &[u8]) {
        let buffers = self.stream.get_mut();
        buffers.compact();
        buffers.incoming.extend_from_slice(records);
    }

    /// Moves the handshake on, then decrypts what the records hold, handing every piece of
    /// plaintext to `on_plaintext` through `scratch`, until OpenSSL needs more records.
    pub(super) fn process(
        &mut self,
        scratch: &mut [u8],
        mut on_plaintext: impl FnMut(&[u8]),
    ) -> Step {
        if self.handshaking {
            match self.stream.accept() {
                Ok(()) => {
                    self.handshaking = false;
                    self.peer_certificate = self
                        .stream
                        .ssl()
                        .peer_certificate()
                        .and_then(|c| c.to_der().ok())
                        .map(CertificateDer::from);
                }
                Err(e) if e.code() == ErrorCode::WANT_READ => return Step::Progress,
                Err(e) => return Step::Failed(e),
            }
        }
        loop {
            match self.stream.ssl_read(scratch) {
                Ok(0) => return Step::Progress,
                Ok(n) => on_plaintext(&scratch[..n]),
                Err(e) if e.code() == ErrorCode::ZERO_RETURN => return Step::Closed,
                Err(e) if e.code() == ErrorCode::WANT_READ => return Step::Progress,
                Err(e) => return Step::Failed(e),
            }
        }
    }

    /// Encrypts as much of `plaintext` as fits under the buffer limit (nothing during the
    /// handshake or after `close_notify`); returns how much it took.
    pub(super) fn encrypt(&mut self, plaintext: &[u8], closed: bool) -> io::Result<usize> {
        if self.handshaking || closed {
            return Ok(0);
        }
        self.stream.get_mut().compact();
        let mut taken = 0;
        while taken < plaintext.len() && self.stream.get_ref().pending_out() < TLS_BUFFER_LIMIT {
            let end = plaintext.len().min(taken + RECORD);
            match self.stream.ssl_write(&plaintext[taken..end]) {
                Ok(n) => taken += n,
                Err(e) if e.code() == ErrorCode::WANT_READ => break,
                Err(e) => return Err(io::Error::other(e.to_string())),
            }
        }
        Ok(taken)
    }

    /// Writes queued records to `socket` until it would block or none are left.
    pub(super) fn write_records(&mut self, socket: &mut impl Write) -> io::Result<()> {
        let buffers = self.stream.get_mut();
        while buffers.pending_out() > 0 {
            match socket.write(&buffers.outgoing[buffers.outgoing_written..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => buffers.outgoing_written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        buffers.outgoing.clear();
        buffers.outgoing_written = 0;
        Ok(())
    }

    /// Queues `close_notify`.
    pub(super) fn close(&mut self) {
        // Into memory: it cannot block; an error (a session that never completed its
        // handshake) leaves nothing to say.
        let _ = self.stream.shutdown();
    }
}

/// The server side of a TLS session over a tokio stream (tokio-server): run [`handshake`]
/// on it, then it carries plaintext.
pub fn session<S>(
    config: &OpenSslConfig,
    stream: S,
) -> Result<tokio_openssl::SslStream<S>, ErrorStack>
where
    S: AsyncRead + AsyncWrite,
{
    tokio_openssl::SslStream::new(config.ssl()?, stream)
}

/// The server side of the TLS handshake over a [`session`]: the peer's verified end-entity
/// certificate, if it presented one. On failure OpenSSL has written its alert; the stream is
/// still the caller's, to close gracefully.
pub async fn handshake<S>(
    stream: &mut tokio_openssl::SslStream<S>,
) -> Result<Option<CertificateDer<'static>>, openssl::ssl::Error>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    Pin::new(&mut *stream).accept().await?;
    Ok(stream
        .ssl()
        .peer_certificate()
        .and_then(|c| c.to_der().ok())
        .map(CertificateDer::from))
}
