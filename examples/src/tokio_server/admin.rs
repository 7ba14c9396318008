//! The admin HTTP interface on tokio: one short task per request (`Connection: close`); the
//! parsing, routing and answers are [`crate::csms::admin`]'s.

use std::io;
use std::net::Shutdown;
use std::sync::Arc;
use std::time::Duration;

use socket2::SockRef;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinSet;
use tokio::time::timeout;

use super::{is_resource_exhaustion, Command, Shared, ACCEPT_RETRY};
use crate::csms::admin::{self, AdminRequest, HttpResponse, Route};

/// How long an admin client may take to send its request, and we to write the answer.
const ADMIN_IO_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an admin command may wait beyond the connection's call timeout before 504.
const ADMIN_CALL_GRACE: Duration = Duration::from_secs(5);
/// The stack buffer one read fills (admin traffic is light).
const READ_CHUNK: usize = 4096;

/// Accepts admin clients until shutdown, then waits (bounded) for the requests in progress,
/// which answer 503 if they wait for a charge point.
pub(super) async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
) {
    let mut requests = JoinSet::new();
    while !*stop.borrow_and_update() {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((socket, _)) => {
                    requests.spawn(serve_one(socket, Arc::clone(&shared), stop.clone()));
                }
                Err(e) if is_resource_exhaustion(&e) => {
                    tracing::warn!("admin accept: {e}; retrying shortly");
                    tokio::time::sleep(ACCEPT_RETRY).await;
                }
                Err(e) => tracing::debug!("admin accept: {e}"),
            },
            Some(_) = requests.join_next(), if !requests.is_empty() => {}
            _ = stop.changed() => {}
        }
    }
    drop(listener);
    let _ = timeout(ADMIN_IO_TIMEOUT, async {
        while requests.join_next().await.is_some() {}
    })
    .await;
}

/// One request and its answer.
async fn serve_one(socket: TcpStream, shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let request = match timeout(ADMIN_IO_TIMEOUT, read_request(&socket)).await {
        Ok(Ok(Some(Ok(request)))) => request,
        Ok(Ok(Some(Err(response)))) => {
            write_response(&socket, &response).await;
            return;
        }
        // The client went away, the socket failed or the request took too long.
        Ok(Ok(None)) | Ok(Err(_)) | Err(_) => return,
    };
    let response = match admin::route(&shared.csms, &request) {
        Route::Respond(response) => response,
        Route::Call { identity, request } => {
            let handle = shared.identities().get(&identity).cloned();
            match handle {
                None => HttpResponse::not_connected(&identity),
                Some(handle) => {
                    let (reply, answer) = oneshot::channel();
                    let command = Command::AdminCall { request, reply };
                    let wait = shared.connection_config.get_call_timeout() + ADMIN_CALL_GRACE;
                    match timeout(ADMIN_IO_TIMEOUT, handle.commands.send(command)).await {
                        Ok(Ok(())) => tokio::select! {
                            answer = timeout(wait, answer) => match answer {
                                Ok(Ok(response)) => response,
                                // The task ended without answering.
                                Ok(Err(_)) => HttpResponse::disconnected(),
                                Err(_) => HttpResponse::timeout(),
                            },
                            _ = stop.changed() => HttpResponse::shutting_down(),
                        },
                        Ok(Err(_)) => {
                            HttpResponse::error(404, "the charge point is no longer connected")
                        }
                        Err(_) => HttpResponse::error(503, "the charge point's mailbox is full"),
                    }
                }
            }
        }
    };
    write_response(&socket, &response).await;
}

/// Reads until a whole request is parsed: `None` if the client closed first, `Some(Err)` for a
/// request to refuse.
async fn read_request(
    socket: &TcpStream,
) -> io::Result<Option<Result<AdminRequest, HttpResponse>>> {
    let mut input = Vec::new();
    loop {
        socket.readable().await?;
        let mut chunk = [0u8; READ_CHUNK];
        match socket.try_read(&mut chunk) {
            Ok(0) => return Ok(None),
            Ok(n) => input.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        // The parser refuses a head or a body past its limits, so `input` stays bounded.
        match AdminRequest::parse(&input) {
            Ok(None) => {}
            Ok(Some((request, _))) => return Ok(Some(Ok(request))),
            Err(response) => return Ok(Some(Err(response))),
        }
    }
}

/// Writes the answer (bounded in time) and half-closes: the request was read, so closing sends
/// no reset.
async fn write_response(socket: &TcpStream, response: &HttpResponse) {
    let bytes = response.to_bytes();
    let write = async {
        let mut written = 0;
        while written < bytes.len() {
            socket.writable().await?;
            match socket.try_write(&bytes[written..]) {
                Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    };
    if let Ok(Ok(())) = timeout(ADMIN_IO_TIMEOUT, write).await {
        let _ = SockRef::from(socket).shutdown(Shutdown::Write);
    }
}
