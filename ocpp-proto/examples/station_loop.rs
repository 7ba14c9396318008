//! A charging station on the Sans-IO core and plain blocking sockets, with no async runtime:
//! `station_loop URL VERSION`, e.g.
//! `cargo run -p ocpp-proto --example station_loop -- ws://127.0.0.1:9000/ocpp/CP001 1.6`.
//!
//! It is the same program as `ocpp-tokio`'s `station` example, and `ocpp-tokio`'s
//! `station_interop` tests run both against the same central systems. It connects, boots
//! until Accepted, and heartbeats at the interval it is given. It accepts remote starts (read
//! in one vocabulary for every version, `ocpp_model::Command`). When
//! the central system goes away, it reconnects after the back-off and boots again. It prints
//! each change of its status.
//!
//! Every decision is made by [`Lifecycle`] (the station across its connections) or by
//! [`Connection`] (one WebSocket). This file only opens sockets, moves bytes and sleeps. It
//! speaks plain `ws://` only; for TLS, wrap the stream (e.g. in rustls's `StreamOwned`).

use std::hash::BuildHasher;
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ocpp_model::{Command, Outcome};
use ocpp_proto::station::{
    Cause, Lifecycle, NetworkProfile, NetworkProfiles, Next, RetryBackOff, StationInfo, StationUrl,
    Status, Transmit,
};
use ocpp_proto::{
    Answer, CloseCode, ConnectTarget, Connection, ConnectionConfig, ErrorCode, Event, Request,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(url), Some(version)) = (args.next(), args.next()) else {
        return Err("usage: station_loop ws://host:port/path/IDENTITY 1.6|2.0.1|2.1".into());
    };
    let url = StationUrl::parse(&url)?;
    let config = Arc::new(ConnectionConfig::default().versions(vec![version.parse()?]));
    let profiles = NetworkProfiles::new([NetworkProfile::new(0, url.csms_url())]);
    let info = StationInfo::new("ACME", "Example");
    let mut station = Lifecycle::<()>::new(info, RetryBackOff::default(), profiles);
    let mut shown = None;
    loop {
        // One central system: its URL stays the one given.
        station.begin_attempt();
        show(&station, &mut shown);
        let next = match open(&url) {
            Ok(tcp) => run(&mut station, &mut shown, tcp, &url, config.clone()),
            Err(error) => {
                eprintln!("connect failed: {error}");
                station.on_connect_failed(Instant::now(), Cause::Connect(error.kind()), random())
            }
        };
        show(&station, &mut shown);
        match next {
            Next::Reconnect(wait) => std::thread::sleep(wait),
            Next::ReconnectNow => {}
            Next::Stop(result) => return Ok(result?),
        }
    }
}

/// TCP to the central system, within 10 s.
fn open(url: &StationUrl) -> io::Result<TcpStream> {
    let addr = url.authority().to_socket_addrs()?.next();
    let addr = addr.ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no address"))?;
    let tcp = TcpStream::connect_timeout(&addr, Duration::from_secs(10))?;
    tcp.set_nodelay(true)?;
    Ok(tcp)
}

/// One connection, from the upgrade request to its end; what the station does next.
fn run(
    station: &mut Lifecycle<()>,
    shown: &mut Option<Status>,
    mut tcp: TcpStream,
    url: &StationUrl,
    config: Arc<ConnectionConfig>,
) -> Next {
    let now = Instant::now();
    let target = ConnectTarget::new(url.authority(), url.endpoint(), url.identity().clone());
    let mut key = [0u8; 16];
    key[..8].copy_from_slice(&random().to_le_bytes());
    key[8..].copy_from_slice(&random().to_le_bytes());
    let Ok(mut conn) = Connection::connect_with_callers(now, config, &target, key, random()) else {
        return station.on_connect_failed(now, Cause::Other, random());
    };
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        // What the bytes and the time caused.
        let now = Instant::now();
        while let Some(event) = conn.poll_event() {
            match event {
                Event::Connected { version } => station.on_connected(now, version),
                Event::Call { id, request } => {
                    let answer = station
                        .on_incoming(&request, |_| Ok(()))
                        .unwrap_or_else(|| {
                            let answer = answer_to(&request);
                            station.on_answered(now, &answer);
                            answer
                        });
                    let _ = conn.answer(now, &id, answer);
                }
                Event::CallCompleted {
                    action, outcome, ..
                } => {
                    station.on_call_completed(now, action, &outcome);
                }
                Event::Closed(closed) => {
                    let _ = tcp.write_all(conn.pending_transmit()); // the close frame
                    return station.on_closed(now, &closed.reason, random());
                }
                _ => {}
            }
        }
        // What is due, in the lifecycle's order.
        while let Some(transmit) = station.poll_transmit(now) {
            match transmit {
                Transmit::Own(request) => {
                    let action = request.action();
                    match conn.call(now, request) {
                        Ok(_) => station.on_call_sent(now, action),
                        Err(_) => station.on_own_call_refused(now, action),
                    }
                }
                // This program makes no CALLs of its own to hold.
                Transmit::Held(_) | Transmit::Expired(_) => {}
                Transmit::Close(reason) => conn.close(now, CloseCode::NORMAL, reason),
            }
        }
        show(station, shown);
        // Write everything, then read until the next deadline.
        let pending = conn.pending_transmit().len();
        if pending > 0 {
            match tcp.write_all(conn.pending_transmit()) {
                Ok(()) => conn.advance_transmit(pending),
                Err(_) => conn.handle_eof(now),
            }
            continue;
        }
        let deadline = [conn.poll_timeout(), station.poll_timeout()]
            .into_iter()
            .flatten()
            .min();
        let wait = deadline.map(|at| at.saturating_duration_since(now));
        if wait.is_some_and(|wait| wait.is_zero()) {
            conn.handle_timeout(now);
            station.handle_timeout(now);
            continue;
        }
        let _ = tcp.set_read_timeout(wait);
        match tcp.read(&mut buf) {
            Ok(0) => conn.handle_eof(Instant::now()),
            Ok(n) => conn.handle_data(Instant::now(), &buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => conn.handle_eof(Instant::now()),
        }
    }
}

/// The application's answer to the central system's CALL, in any version (read as an
/// `ocpp_model::Command`): remote starts are accepted.
fn answer_to(request: &Request) -> Answer {
    let Some(command) = Command::from_request(request) else {
        return Answer::not_supported(request.action());
    };
    let Command::RemoteStart { token, .. } = &command else {
        return Answer::not_supported(request.action());
    };
    println!("remote start for {}", token.value);
    match command.answer(request.version(), Outcome::Accepted) {
        Ok(response) => Answer::Result(response),
        Err(error) => Answer::error(ErrorCode::InternalError, error.to_string()),
    }
}

/// Prints the station's status when it changed.
fn show(station: &Lifecycle<()>, shown: &mut Option<Status>) {
    let status = station.status();
    if *shown != Some(status) {
        println!("{status:?}");
        *shown = Some(status);
    }
}

/// A random number (std's per-process random hash keys; a real station has a proper RNG).
fn random() -> u64 {
    std::collections::hash_map::RandomState::new().hash_one(Instant::now())
}
