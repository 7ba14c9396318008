//! Reading a socket past tokio's readiness, before a deadline of the core is judged.
//!
//! tokio's reactor takes at most 1,024 events a look and fires the timers that are due after
//! each look, so a task of its own may be woken by its timer while the Pong that answers its
//! ping is already in the socket, not yet reported readable: judged then, the deadline would
//! close a live connection. The driver first asks the socket itself ([`read_now`]): a plain
//! TCP socket by a non-blocking `recv`, a TLS one (server or client, over TCP) by the same
//! `recv` into its rustls session, whose decrypted bytes come out as tokio-rustls's own read
//! would give them. A stream of the application's own
//! ([`Service::serve_connection`](crate::server::Service::serve_connection)) is read only as
//! tokio reports it.

use std::any::Any;
use std::io::{self, Read};
use std::ops::DerefMut;

use rustls::ConnectionCommon;
use tokio::net::TcpStream;

use super::READ_CHUNK;

/// What [`read_now`] found.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Looked {
    /// Nothing yet (or a stream it cannot look into).
    Nothing,
    /// Bytes, handed to the callback.
    Read,
    /// The end of the stream (after any bytes handed to the callback).
    End,
    /// The stream failed (a socket error, a TLS record that does not decrypt).
    Failed,
}

/// Reads what `stream` holds now, whatever tokio's readiness says, and hands the bytes (the
/// plaintext, on TLS) to `data`: a [`TcpStream`], or a tokio-rustls server or client stream
/// over one; any other stream gives [`Looked::Nothing`].
pub(super) fn read_now(stream: &mut dyn Any, data: impl FnMut(&[u8])) -> Looked {
    if let Some(tcp) = stream.downcast_ref::<TcpStream>() {
        return read_tcp(tcp, data);
    }
    if let Some(tls) = stream.downcast_mut::<tokio_rustls::server::TlsStream<TcpStream>>() {
        let (tcp, session) = tls.get_mut();
        return read_tls(tcp, session, data);
    }
    if let Some(tls) = stream.downcast_mut::<tokio_rustls::client::TlsStream<TcpStream>>() {
        let (tcp, session) = tls.get_mut();
        return read_tls(tcp, session, data);
    }
    Looked::Nothing
}

/// One non-blocking `recv` on `tcp` (the socket is non-blocking: tokio made it so).
fn recv(tcp: &TcpStream, chunk: &mut [u8]) -> io::Result<usize> {
    (&*socket2::SockRef::from(tcp)).read(chunk)
}

fn would_block(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
    )
}

fn read_tcp(tcp: &TcpStream, mut data: impl FnMut(&[u8])) -> Looked {
    let mut chunk = [0u8; READ_CHUNK];
    match recv(tcp, &mut chunk) {
        Ok(0) => Looked::End,
        Ok(n) => {
            data(&chunk[..n]);
            Looked::Read
        }
        Err(e) if would_block(&e) => Looked::Nothing,
        Err(_) => Looked::Failed,
    }
}

/// One `recv` into the TLS `session` (the records it completes decrypted), then every
/// plaintext byte the session holds, read as tokio-rustls reads it: the session is the only
/// buffer of both, so what this takes, tokio-rustls's next read does not see again, and what
/// it leaves (a record not complete yet) the next read completes.
fn read_tls<S, D>(tcp: &TcpStream, session: &mut S, mut data: impl FnMut(&[u8])) -> Looked
where
    S: DerefMut<Target = ConnectionCommon<D>>,
{
    let mut chunk = [0u8; READ_CHUNK];
    let (n, tcp_end) = match recv(tcp, &mut chunk) {
        Ok(0) => (0, true),
        Ok(n) => (n, false),
        Err(e) if would_block(&e) => (0, false),
        Err(_) => return Looked::Failed,
    };
    let mut received = &chunk[..n];
    let mut looked = Looked::Nothing;
    let mut plain = [0u8; READ_CHUNK];
    loop {
        // Records into the session while it takes them (it stops taking while its
        // plaintext is not read: read below, then again).
        while !received.is_empty() && session.wants_read() {
            match session.read_tls(&mut received) {
                Ok(0) => break,
                Ok(_) => {}
                Err(_) => return Looked::Failed,
            }
            if session.process_new_packets().is_err() {
                return Looked::Failed;
            }
        }
        let mut progressed = false;
        loop {
            match session.reader().read(&mut plain) {
                // The peer's close_notify: the end, after what came before it.
                Ok(0) => return Looked::End,
                Ok(n) => {
                    data(&plain[..n]);
                    looked = Looked::Read;
                    progressed = true;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Looked::End,
                Err(_) => return Looked::Failed,
            }
        }
        if received.is_empty() || !progressed {
            break;
        }
    }
    if !received.is_empty() {
        // The session did not take every byte `recv` gave (it cannot happen with a chunk
        // smaller than its buffer): they cannot go back into the socket.
        return Looked::Failed;
    }
    if tcp_end {
        // TCP ended without close_notify (a truncation attack, or a peer that just closed):
        // the end, as tokio-rustls reads it.
        return Looked::End;
    }
    looked
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpListener;

    /// What `read_now` gives for `stream` until `want` bytes came (or the end, or it
    /// failed), asking again every millisecond, at most 5 s; never through tokio's readiness.
    async fn read_until(stream: &mut dyn Any, want: usize) -> (Vec<u8>, Looked) {
        let mut got = Vec::new();
        for _ in 0..5_000 {
            match read_now(stream, |bytes| got.extend_from_slice(bytes)) {
                Looked::Read if got.len() >= want => return (got, Looked::Read),
                Looked::Read | Looked::Nothing => {}
                other => return (got, other),
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        (got, Looked::Nothing)
    }

    fn tls_configs() -> (Arc<rustls::ServerConfig>, Arc<rustls::ClientConfig>) {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])
            .expect("a certificate");
        let cert = CertificateDer::from(certified.cert.der().to_vec());
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
            certified.signing_key.serialize_der(),
        ));
        let server = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_no_client_auth()
            .with_single_cert(vec![cert.clone()], key)
            .expect("server config");
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert).expect("root");
        let client = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        (Arc::new(server), Arc::new(client))
    }

    /// A TLS connection on loopback, both ends after the handshake.
    async fn tls_pair() -> (
        tokio_rustls::server::TlsStream<TcpStream>,
        tokio_rustls::client::TlsStream<TcpStream>,
    ) {
        let (server_config, client_config) = tls_configs();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let accept = async {
            let (tcp, _) = listener.accept().await.expect("accept");
            tokio_rustls::TlsAcceptor::from(server_config)
                .accept(tcp)
                .await
                .expect("server handshake")
        };
        let connect = async {
            let tcp = TcpStream::connect(addr).await.expect("connect");
            let name = ServerName::try_from("localhost").expect("name");
            tokio_rustls::TlsConnector::from(client_config)
                .connect(name, tcp)
                .await
                .expect("client handshake")
        };
        tokio::join!(accept, connect)
    }

    /// Plain TCP: nothing while nothing came, the bytes once they did, then the end.
    #[tokio::test]
    async fn a_plain_socket_is_read_as_it_is() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let mut client = TcpStream::connect(listener.local_addr().expect("address"))
            .await
            .expect("connect");
        let (mut server, _) = listener.accept().await.expect("accept");
        assert_eq!(read_now(&mut server, |_| {}), Looked::Nothing);
        client.write_all(b"pong").await.expect("write");
        assert_eq!(
            read_until(&mut server, 4).await,
            (b"pong".to_vec(), Looked::Read)
        );
        drop(client);
        assert_eq!(
            read_until(&mut server, usize::MAX).await,
            (Vec::new(), Looked::End)
        );
    }

    /// TLS, both sides: the plaintext of what came, whole (40,000 bytes: records over
    /// several reads), with nothing left for tokio-rustls's next read but what came after;
    /// then the peer's close_notify ends it.
    #[tokio::test]
    async fn a_tls_stream_gives_its_plaintext_on_both_sides() {
        let (mut server, mut client) = tls_pair().await;
        assert_eq!(read_now(&mut server, |_| {}), Looked::Nothing);
        let message: Vec<u8> = (0..40_000u32).map(|i| (i % 251) as u8).collect();
        client.write_all(&message).await.expect("write");
        client.flush().await.expect("flush");
        let (got, looked) = read_until(&mut server, message.len()).await;
        assert_eq!(looked, Looked::Read);
        assert_eq!(got, message, "the plaintext, in order");

        // The other way, and tokio-rustls's own read after: it sees what came next only.
        server.write_all(b"ping").await.expect("write");
        server.flush().await.expect("flush");
        assert_eq!(
            read_until(&mut client, 4).await,
            (b"ping".to_vec(), Looked::Read)
        );
        server.write_all(b"next").await.expect("write");
        server.flush().await.expect("flush");
        let mut next = [0u8; 4];
        tokio::time::timeout(Duration::from_secs(5), {
            use tokio::io::AsyncReadExt;
            client.read_exact(&mut next)
        })
        .await
        .expect("in time")
        .expect("read");
        assert_eq!(&next, b"next");

        client.shutdown().await.expect("close_notify");
        assert_eq!(
            read_until(&mut server, usize::MAX).await,
            (Vec::new(), Looked::End)
        );
    }

    /// Bytes that are not TLS records fail the stream.
    #[tokio::test]
    async fn garbage_under_tls_fails_the_stream() {
        let (mut server, mut client) = tls_pair().await;
        client
            .get_mut()
            .0
            .write_all(&[0x17, 0x03, 0x03, 0x00, 0x05, 1, 2, 3, 4, 5])
            .await
            .expect("write");
        let (_, looked) = read_until(&mut server, usize::MAX).await;
        assert_eq!(looked, Looked::Failed);
    }
}
