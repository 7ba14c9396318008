//! `--capture FILE`: every text message of every charge point, in and out, as the bytes went
//! over the wire, written in the capture format of `ocpp-cli` ([`ocpp_cli::capture`]).
//!
//! The core decodes the frames itself and hands the loop typed events, so the loop never holds
//! a text frame. The capture is a tap on the two byte streams instead: the bytes the loop hands
//! to `handle_data` (after TLS) and the bytes it writes from `pending_transmit` (before TLS).
//! Each stream skips its HTTP upgrade head (up to the first blank line), then goes through a
//! frame decoder of its own (inflating when the connection agreed permessage-deflate), and each
//! text message becomes one capture line. What the capture holds is therefore exactly what the
//! peers exchanged, including CALLs the core refused and the CALLERRORs it answered alone.
//!
//! The taps live beside the sockets, in a map of the loop's that exists only with `--capture`:
//! the socket record does not grow, and without the option the loop pays one branch per read
//! and per write; no decoder exists.

use std::fs::File;
use std::sync::Arc;

use ocpp_cli::capture::{CaptureDirection, CaptureRecorder};
use ocpp_frame::deflate::DeflateParams;
use ocpp_frame::{Decoder, DecoderConfig, Message, Role};
use ocpp_messages::version::OcppVersion;

use crate::server_config::CaptureFile;

/// The largest message the tap reassembles; a larger one ends the tap of that stream (the
/// connection's own limits are usually far below it).
const MAX_MESSAGE: u64 = 16 * 1024 * 1024;

/// One connection's tap: both directions.
#[derive(Debug)]
pub(super) struct Tap {
    recorder: CaptureFile,
    inbound: Stream,
    outbound: Stream,
    /// Known once the connection is open ([`Tap::connected`]).
    open: Option<(String, OcppVersion)>,
}

/// One direction's bytes.
#[derive(Debug)]
struct Stream {
    dir: CaptureDirection,
    /// How many bytes of `\r\n\r\n` the head has matched so far; 4 once it ended.
    head: u8,
    /// The frames' decoder, made when the connection opened.
    decoder: Option<Decoder>,
    /// Bytes after the head that came before the connection opened (a pipelining client).
    early: Vec<u8>,
    /// The stream is no longer followed (a frame the tap could not decode, a refused upgrade).
    stopped: bool,
}

impl Tap {
    /// A tap for a new socket.
    pub(super) fn new(recorder: &CaptureFile) -> Tap {
        Tap {
            recorder: Arc::clone(recorder),
            inbound: Stream::new(CaptureDirection::In),
            outbound: Stream::new(CaptureDirection::Out),
            open: None,
        }
    }

    /// The upgrade succeeded: frames follow, from now on recorded under `identity`.
    pub(super) fn connected(
        &mut self,
        identity: &str,
        version: OcppVersion,
        deflate: Option<&DeflateParams>,
    ) {
        self.open = Some((identity.to_owned(), version));
        for stream in [&mut self.inbound, &mut self.outbound] {
            let role = match stream.dir {
                // The station's frames are masked, as a server receives them.
                CaptureDirection::In => Role::Server,
                CaptureDirection::Out => Role::Client,
            };
            let config = DecoderConfig::default()
                .max_frame_size(MAX_MESSAGE)
                .max_message_size(MAX_MESSAGE)
                .max_fragments(u32::MAX);
            let mut decoder = Decoder::new(role, config);
            if let Some(params) = deflate {
                decoder.set_deflate(params);
            }
            stream.decoder = Some(decoder);
        }
        let early = std::mem::take(&mut self.inbound.early);
        self.received(&early);
    }

    /// Bytes from the station, as handed to the connection.
    pub(super) fn received(&mut self, bytes: &[u8]) {
        self.inbound.feed(bytes, self.open.as_ref(), &self.recorder);
    }

    /// Bytes to the station, as written to the socket (or to TLS).
    pub(super) fn sent(&mut self, bytes: &[u8]) {
        self.outbound
            .feed(bytes, self.open.as_ref(), &self.recorder);
    }
}

impl Stream {
    fn new(dir: CaptureDirection) -> Stream {
        Stream {
            dir,
            head: 0,
            decoder: None,
            early: Vec::new(),
            stopped: false,
        }
    }

    fn feed(
        &mut self,
        mut bytes: &[u8],
        open: Option<&(String, OcppVersion)>,
        recorder: &CaptureRecorder<File>,
    ) {
        if self.stopped {
            return;
        }
        if self.head < 4 {
            let Some(rest) = self.skip_head(bytes) else {
                return;
            };
            bytes = rest;
        }
        let (Some(decoder), Some((identity, version))) = (&mut self.decoder, open) else {
            // Frames before the 101 (only a pipelining station sends any): kept until then.
            // Our own output never has frames before the connection opened: a refused upgrade
            // ends with its HTTP answer.
            if self.dir == CaptureDirection::In && self.early.len() < 64 * 1024 {
                self.early.extend_from_slice(bytes);
            } else {
                self.stopped = true;
            }
            return;
        };
        while !bytes.is_empty() {
            match decoder.decode(bytes) {
                Ok(decoded) => {
                    bytes = bytes.get(decoded.consumed..).unwrap_or_default();
                    match decoded.message {
                        Some(Message::Text(text)) => recorder.record_text(
                            identity,
                            *version,
                            self.dir,
                            text.as_str().to_owned(),
                        ),
                        Some(Message::Close(_)) => {
                            self.stopped = true;
                            return;
                        }
                        Some(_) => {}
                        None => return,
                    }
                }
                Err(_) => {
                    // The connection itself refuses such a frame and closes: nothing to record.
                    self.stopped = true;
                    return;
                }
            }
        }
    }

    /// Skips the HTTP head up to and including its blank line: `Some` with what follows once
    /// it ended, `None` while it goes on.
    fn skip_head<'b>(&mut self, bytes: &'b [u8]) -> Option<&'b [u8]> {
        const END: &[u8; 4] = b"\r\n\r\n";
        for (at, &byte) in bytes.iter().enumerate() {
            let matched = usize::from(self.head);
            self.head = if END.get(matched) == Some(&byte) {
                self.head + 1
            } else if byte == b'\r' {
                1
            } else {
                0
            };
            if self.head == 4 {
                return bytes.get(at + 1..);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_head_ends_at_the_first_blank_line_across_reads() {
        let mut stream = Stream::new(CaptureDirection::In);
        assert_eq!(stream.skip_head(b"GET / HTTP/1.1\r\nHost: x\r"), None);
        assert_eq!(stream.skip_head(b"\n\r"), None);
        assert_eq!(stream.skip_head(b"\nFRAME"), Some(&b"FRAME"[..]));
    }

    /// Moves bytes both ways until neither side has any, through the tap as the loop does;
    /// returns what the central system wrote.
    fn pump(
        station: &mut ocpp_proto::Connection,
        csms: &mut ocpp_proto::Connection,
        tap: &mut Tap,
    ) -> Vec<u8> {
        let now = std::time::Instant::now();
        let mut written = Vec::new();
        for _ in 0..100 {
            let up = station.pending_transmit().to_vec();
            station.advance_transmit(up.len());
            tap.received(&up);
            csms.handle_data(now, &up);
            let down = csms.pending_transmit().to_vec();
            csms.advance_transmit(down.len());
            tap.sent(&down);
            station.handle_data(now, &down);
            written.extend_from_slice(&down);
            if up.is_empty() && down.is_empty() {
                break;
            }
        }
        written
    }

    #[test]
    fn a_deflated_exchange_is_captured_as_its_texts() {
        use ocpp_frame::deflate::DeflateConfig;
        use ocpp_proto::{
            ChargePointIdentity, ConnectTarget, Connection, ConnectionConfig, DeflatePolicy, Event,
        };

        let path = std::env::temp_dir().join(format!("mio-tap-{}.jsonl", std::process::id()));
        let recorder: CaptureFile = Arc::new(CaptureRecorder::new(File::create(&path).unwrap()));
        let mut tap = Tap::new(&recorder);
        let now = std::time::Instant::now();
        let offer = DeflatePolicy::Offer(DeflateConfig::default());
        let station_config = ConnectionConfig::default()
            .versions(vec![OcppVersion::V1_6])
            .deflate(offer);
        let identity = ChargePointIdentity::new("CP1".into(), false).unwrap();
        let target = ConnectTarget::new("127.0.0.1:9000", "/ocpp", identity);
        let mut station =
            Connection::connect(now, Arc::new(station_config), &target, [1; 16], 1).unwrap();
        let mut csms = Connection::accept_incoming(now, Arc::new(ConnectionConfig::default()));

        pump(&mut station, &mut csms, &mut tap);
        assert!(matches!(
            csms.poll_event(),
            Some(Event::UpgradeRequested(_))
        ));
        csms.accept(now).unwrap();
        assert!(matches!(csms.poll_event(), Some(Event::Connected { .. })));
        assert!(csms.deflate().is_some(), "permessage-deflate agreed");
        tap.connected("CP1", OcppVersion::V1_6, csms.deflate());
        pump(&mut station, &mut csms, &mut tap);

        let data = "x".repeat(2000);
        let call = format!(r#"[2, "raw-1", "DataTransfer", {{"vendorId":"v","data":"{data}"}}]"#);
        let answer = format!(r#"[3,"raw-1",{{"status":"Accepted","data":"{data}"}}]"#);
        station.send_text(now, &call).unwrap();
        pump(&mut station, &mut csms, &mut tap);
        csms.send_text(now, &answer).unwrap();
        let wire = pump(&mut station, &mut csms, &mut tap);
        // The answer went compressed: its text is not on the wire.
        assert!(!wire.windows(100).any(|w| w == &data.as_bytes()[..100]));

        let lines =
            ocpp_cli::capture::read_capture(std::io::BufReader::new(File::open(&path).unwrap()))
                .unwrap();
        let _ = std::fs::remove_file(&path);
        let seen: Vec<(CaptureDirection, &str)> =
            lines.iter().map(|l| (l.dir, l.text.as_str())).collect();
        assert_eq!(
            seen,
            [
                (CaptureDirection::In, call.as_str()),
                (CaptureDirection::Out, answer.as_str())
            ]
        );
        assert!(lines
            .iter()
            .all(|l| l.identity == "CP1" && l.version == "ocpp1.6"));
    }

    #[test]
    fn a_lone_carriage_return_restarts_the_match() {
        let mut stream = Stream::new(CaptureDirection::Out);
        assert_eq!(stream.skip_head(b"A\r\r\n\r\nB"), Some(&b"B"[..]));
    }
}
