//! A fixed amount of work for instruction counts (callgrind), `ocpp-tokio`'s side of a
//! Heartbeat: a server (a `Router` answering 1.6 Heartbeat) on a current-thread runtime on the
//! main thread, and one charge point on a plain thread with a blocking socket that sends N
//! Heartbeats one after another, each after the answer to the one before. The server's work
//! is the main thread's; run at N = 1 and N = 1001, the difference / 1000 is what one
//! Heartbeat costs the server: the driver's turns, the core, the router, tokio's I/O and
//! scheduling (the kernel is not counted). BENCHMARKS.md has the commands and the figures.
//!
//! ```sh
//! cargo build --release -p ocpp-tokio --example heartbeat_callgrind
//! valgrind --tool=callgrind --separate-threads=yes target/release/examples/heartbeat_callgrind 1001
//! ```

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

use ocpp_tokio::{v1_6, ConnectionConfig, DateTime, OcppVersion, Router, Server};

/// The charge point: upgrade, then `count` Heartbeats, each answered before the next.
fn charge_point(addr: SocketAddr, count: usize) -> std::io::Result<()> {
    let mut socket = TcpStream::connect(addr)?;
    socket.set_nodelay(true)?;
    write!(
        socket,
        "GET /ocpp/CP-1 HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n\
         Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: ocpp1.6\r\n\r\n"
    )?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        socket.read_exact(&mut byte)?;
        head.push(byte[0]);
    }
    if !head.starts_with(b"HTTP/1.1 101") {
        return Err(std::io::Error::other(String::from_utf8_lossy(&head).into_owned()));
    }
    let mut frame = Vec::with_capacity(64);
    let mut answer = [0u8; 256];
    for n in 0..count {
        let text = format!("[2,\"{n:08}\",\"Heartbeat\",{{}}]");
        frame.clear();
        // A masked text frame with a zero mask: the payload goes as it is.
        frame.extend_from_slice(&[0x81, 0x80 | text.len() as u8, 0, 0, 0, 0]);
        frame.extend_from_slice(text.as_bytes());
        socket.write_all(&frame)?;
        let mut header = [0u8; 2];
        socket.read_exact(&mut header)?;
        let len = usize::from(header[1] & 0x7f);
        if len >= 126 {
            return Err(std::io::Error::other("a longer answer than expected"));
        }
        socket.read_exact(&mut answer[..len])?;
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let count: usize = std::env::args().nth(1).map_or(Ok(1001), |n| n.parse())?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async move {
        let config = ConnectionConfig::default().versions(vec![OcppVersion::V1_6]);
        let router = Router::<()>::default().on(|_, _: v1_6::HeartbeatRequest| async {
            Ok(v1_6::HeartbeatResponse::new(DateTime::now()))
        });
        let server = Server::builder().config(config).handler(router).bind("127.0.0.1:0").await?;
        let addr = server.local_addr()?;
        tokio::spawn(server.run());
        let client = std::thread::spawn(move || charge_point(addr, count));
        let done = tokio::task::spawn_blocking(move || client.join()).await?;
        match done {
            Ok(result) => result?,
            Err(_) => return Err("the charge point thread panicked".into()),
        }
        println!("{count} Heartbeats answered");
        Ok(())
    })
}
