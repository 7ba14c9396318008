//! The floor peer: see README.md. `peer-rust-floor LISTEN_ADDR PUSH_INTERVAL_MS`.

use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};

const LISTENER: Token = Token(usize::MAX);
/// Transaction ids handed out by StartTransaction (distinct per server run).
static NEXT_TRANSACTION: AtomicU32 = AtomicU32::new(1);
const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// One connection: 24 bytes (socket 4, state 1, sequence 4 + padding, spill pointer 8).
struct Slot {
    stream: TcpStream,
    open: bool,
    push_seq: u32,
    /// Input of a partial frame or request head, then output the socket did not take.
    spill: Option<Box<Spill>>,
}

#[derive(Default)]
struct Spill {
    input: Vec<u8>,
    output: Vec<u8>,
}

fn main() -> io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let addr = args.get(1).map_or("127.0.0.1:9000", String::as_str).parse().expect("address");
    let push_ms: u64 = args.get(2).and_then(|p| p.parse().ok()).unwrap_or(0);
    let mut poll = Poll::new()?;
    let mut listener = TcpListener::bind(addr)?;
    poll.registry().register(&mut listener, LISTENER, Interest::READABLE)?;
    let mut slots: Vec<Option<Slot>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut events = Events::with_capacity(1024);
    let mut input = vec![0u8; 64 * 1024];
    let mut out = Vec::with_capacity(64 * 1024);
    let mut clock = Clock::default();
    let push = (push_ms > 0).then(|| Duration::from_millis(push_ms));
    let mut next_push = push.map(|p| Instant::now() + p);
    loop {
        let timeout = next_push.map(|at| at.saturating_duration_since(Instant::now()));
        match poll.poll(&mut events, timeout) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        for event in events.iter() {
            if event.token() == LISTENER {
                while let Ok((mut stream, _)) = listener.accept() {
                    let index = free.pop().unwrap_or_else(|| {
                        slots.push(None);
                        slots.len() - 1
                    });
                    let interest = Interest::READABLE | Interest::WRITABLE;
                    if poll.registry().register(&mut stream, Token(index), interest).is_ok() {
                        slots[index] = Some(Slot { stream, open: false, push_seq: 0, spill: None });
                    } else {
                        free.push(index);
                    }
                }
                continue;
            }
            let index = event.token().0;
            let Some(slot) = slots.get_mut(index).and_then(Option::as_mut) else {
                continue;
            };
            let alive = if event.is_readable() || event.is_read_closed() {
                serve(slot, &mut input, &mut out, &mut clock)
            } else {
                // Only what an earlier write left: `out` still holds the last answer to
                // another connection.
                out.clear();
                flush(slot, &mut out)
            };
            if !alive {
                if let Some(mut slot) = slots[index].take() {
                    let _ = poll.registry().deregister(&mut slot.stream);
                }
                free.push(index);
            }
        }
        if let (Some(at), Some(period)) = (next_push, push) {
            if at <= Instant::now() {
                next_push = Some(at + period);
                for slot in slots.iter_mut().flatten().filter(|s| s.open) {
                    // Stamped per message, right before its write, as mio-server does.
                    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
                    slot.push_seq += 1;
                    let seq = slot.push_seq;
                    let json = format!(
                        "[2,\"p{seq}\",\"DataTransfer\",{{\"vendorId\":\"bench\",\"messageId\":\"ts\",\"data\":\"{seq}:{nanos}\"}}]"
                    );
                    out.clear();
                    frame(&mut out, 0x1, json.as_bytes());
                    flush(slot, &mut out);
                }
            }
        }
    }
}

/// Reads what the socket has (one read unless it filled the buffer) and answers it in one write.
fn serve(slot: &mut Slot, input: &mut [u8], out: &mut Vec<u8>, clock: &mut Clock) -> bool {
    out.clear();
    loop {
        let n = match slot.stream.read(input) {
            Ok(0) => return false,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return false,
        };
        let full = n == input.len();
        let mut spilled = slot.spill.as_mut().map(|s| std::mem::take(&mut s.input)).unwrap_or_default();
        let data: &mut [u8] = if spilled.is_empty() {
            &mut input[..n]
        } else {
            spilled.extend_from_slice(&input[..n]);
            &mut spilled[..]
        };
        let mut used = 0;
        if !slot.open {
            match handshake(data, out) {
                Some(head) => {
                    slot.open = true;
                    used = head;
                }
                None => {
                    slot.spill.get_or_insert_with(Box::default).input = data.to_vec();
                    continue;
                }
            }
        }
        match frames(&mut data[used..], out, clock) {
            Some(n) => used += n,
            None => return false, // a close frame: drop the connection
        }
        if used < data.len() {
            let rest = data[used..].to_vec();
            slot.spill.get_or_insert_with(Box::default).input = rest;
        }
        if !full {
            break;
        }
    }
    flush(slot, out)
}

/// Writes `out` (after what an earlier write left); keeps what the socket does not take.
fn flush(slot: &mut Slot, out: &mut Vec<u8>) -> bool {
    if let Some(spill) = slot.spill.as_mut() {
        if !spill.output.is_empty() {
            spill.output.extend_from_slice(out);
            std::mem::swap(&mut spill.output, out);
            spill.output.clear();
        }
    }
    let mut written = 0;
    while written < out.len() {
        match slot.stream.write(&out[written..]) {
            Ok(0) => return false,
            Ok(n) => written += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    if written < out.len() {
        slot.spill.get_or_insert_with(Box::default).output = out[written..].to_vec();
    } else if slot.spill.as_ref().is_some_and(|s| s.input.is_empty() && s.output.is_empty()) {
        slot.spill = None;
    }
    true
}

/// Answers a complete upgrade request; `None` while the head is partial.
fn handshake(data: &[u8], out: &mut Vec<u8>) -> Option<usize> {
    let end = data.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = std::str::from_utf8(&data[..end]).ok()?;
    let key = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("sec-websocket-key").then(|| value.trim())
        })
        .unwrap_or("");
    let mut sha = sha1_smol::Sha1::new();
    sha.update(key.as_bytes());
    sha.update(GUID.as_bytes());
    let accept = base64::engine::general_purpose::STANDARD.encode(sha.digest().bytes());
    out.extend_from_slice(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Protocol: ocpp1.6\r\nSec-WebSocket-Accept: ");
    out.extend_from_slice(accept.as_bytes());
    out.extend_from_slice(b"\r\n\r\n");
    Some(end)
}

/// Handles every whole frame in `data`; returns the bytes used (`None`: a close frame).
fn frames(data: &mut [u8], out: &mut Vec<u8>, clock: &mut Clock) -> Option<usize> {
    let mut at = 0;
    while data.len() - at >= 2 {
        let (b0, b1) = (data[at], data[at + 1]);
        let (len, mut head) = match b1 & 0x7f {
            126 if data.len() - at >= 4 => (usize::from(u16::from_be_bytes([data[at + 2], data[at + 3]])), 4),
            127 if data.len() - at >= 10 => {
                let mut b = [0u8; 8];
                b.copy_from_slice(&data[at + 2..at + 10]);
                (usize::try_from(u64::from_be_bytes(b)).unwrap_or(usize::MAX / 2), 10)
            }
            126 | 127 => break,
            n => (usize::from(n), 2),
        };
        let masked = b1 & 0x80 != 0;
        if data.len() - at < head + if masked { 4 } else { 0 } + len {
            break;
        }
        let mut key = [0u8; 4];
        if masked {
            key.copy_from_slice(&data[at + head..at + head + 4]);
            head += 4;
        }
        let payload = &mut data[at + head..at + head + len];
        for (i, byte) in payload.iter_mut().enumerate() {
            *byte ^= key[i % 4];
        }
        match b0 & 0x0f {
            0x1 => answer(payload, out, clock),
            0x9 => frame(out, 0xA, payload),
            0x8 => return None,
            _ => {}
        }
        at += head + len;
    }
    Some(at)
}

/// Answers a CALL (`[2,"id","Action",{..}]`); ignores everything else.
fn answer(text: &[u8], out: &mut Vec<u8>, clock: &mut Clock) {
    if text.get(1) != Some(&b'2') {
        return;
    }
    let mut quoted = text.split(|&b| b == b'"');
    let (Some(_), Some(id), Some(_), Some(action)) = (quoted.next(), quoted.next(), quoted.next(), quoted.next()) else {
        return;
    };
    let now = clock.now();
    let mut json = Vec::with_capacity(96);
    json.extend_from_slice(b"[3,\"");
    json.extend_from_slice(id);
    json.extend_from_slice(b"\",");
    match action {
        b"BootNotification" => {
            json.extend_from_slice(b"{\"status\":\"Accepted\",\"currentTime\":\"");
            json.extend_from_slice(now);
            json.extend_from_slice(b"\",\"interval\":300}");
        }
        b"Heartbeat" => {
            json.extend_from_slice(b"{\"currentTime\":\"");
            json.extend_from_slice(now);
            json.extend_from_slice(b"\"}");
        }
        b"StartTransaction" => {
            let id = NEXT_TRANSACTION.fetch_add(1, Ordering::Relaxed);
            json.extend_from_slice(format!("{{\"transactionId\":{id},").as_bytes());
            json.extend_from_slice(b"\"idTagInfo\":{\"status\":\"Accepted\"}}");
        }
        b"Authorize" | b"StopTransaction" => {
            json.extend_from_slice(b"{\"idTagInfo\":{\"status\":\"Accepted\"}}")
        }
        _ => json.extend_from_slice(b"{}"),
    }
    json.push(b']');
    frame(out, 0x1, &json);
}

/// Appends an unmasked frame (server to client).
fn frame(out: &mut Vec<u8>, opcode: u8, payload: &[u8]) {
    out.push(0x80 | opcode);
    match payload.len() {
        n if n < 126 => out.push(n as u8),
        n if n <= 0xffff => {
            out.push(126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(payload);
}

/// The current time as RFC 3339 text, formatted once a second.
#[derive(Default)]
struct Clock {
    second: u64,
    text: Vec<u8>,
}

impl Clock {
    fn now(&mut self) -> &[u8] {
        let secs = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        if secs != self.second || self.text.is_empty() {
            self.second = secs;
            let days = (secs / 86_400) as i64;
            let rem = secs % 86_400;
            // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
            let z = days + 719_468;
            let era = z.div_euclid(146_097);
            let doe = z - era * 146_097;
            let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
            let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
            let mp = (5 * doy + 2) / 153;
            let day = doy - (153 * mp + 2) / 5 + 1;
            let month = if mp < 10 { mp + 3 } else { mp - 9 };
            let year = yoe + era * 400 + i64::from(month <= 2);
            self.text = format!(
                "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
                rem / 3600,
                rem % 3600 / 60,
                rem % 60
            )
            .into_bytes();
        }
        &self.text
    }
}
