//! Server-role decoding of one masked text frame (20 B and 64 KiB), ours against tungstenite 0.29
//! in the same run.
//!
//! `cargo bench -p ocpp-frame --bench decode -- --warm-up-time 1 --measurement-time 3`
//!
//! Each variant copies the frame once, as reading it from a socket would, then unmasks and
//! validates the UTF-8 and hands out the message:
//! - `decode`: our copying path; the frame is a borrowed slice, the payload is copied out.
//! - `decode_buf`: our zero-copy path; the frame is appended to a reused read buffer (the copy),
//!   the payload is split off it and unmasked in place.
//! - `tungstenite`: `WebSocket::read` over an in-memory stream re-armed every iteration; the
//!   stream's `read` is the copy into tungstenite's read buffer.

use std::hint::black_box;
use std::io::{self, Read, Write};

use bytes::BytesMut;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ocpp_frame::{Decoder, DecoderConfig, Encoder, Message, Role};
use tungstenite::protocol::{Role as TRole, WebSocket, WebSocketConfig};

/// One frame, read again from the start whenever it is re-armed.
struct Rearmed {
    frame: Vec<u8>,
    pos: usize,
}

impl Read for Rearmed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(self.frame.len() - self.pos);
        buf[..n].copy_from_slice(&self.frame[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

impl Write for Rearmed {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn masked_text_frame(len: usize) -> (Vec<u8>, String) {
    // Mostly ASCII with some two- and three-byte characters, like JSON with names in it.
    let mut text = String::with_capacity(len);
    for c in "[2,\"19223201\",\"BootNotification\",{\"vendor\":\"Ünïcödé €\"}]"
        .chars()
        .cycle()
    {
        if text.len() + c.len_utf8() > len {
            break;
        }
        text.push(c);
    }
    while text.len() < len {
        text.push(' ');
    }
    let mut frame = Vec::new();
    Encoder::new(Role::Client)
        .encode_text(&text, Some([0x37, 0xfa, 0x21, 0x3d]), &mut frame)
        .expect("encode");
    (frame, text)
}

fn decode(c: &mut Criterion) {
    let mut group = c.benchmark_group("decode");
    for (label, len) in [("20B", 20usize), ("64KiB", 64 * 1024)] {
        let (frame, text) = masked_text_frame(len);
        group.throughput(Throughput::Bytes(frame.len() as u64));

        let mut decoder = Decoder::new(Role::Server, DecoderConfig::default());
        let decoded = decoder.decode(&frame).expect("decode");
        assert_eq!(decoded.message, Some(Message::Text(text.as_str().into())));
        group.bench_function(BenchmarkId::new("ocpp_decode", label), |b| {
            b.iter(|| {
                let decoded = decoder.decode(black_box(&frame)).expect("decode");
                black_box(decoded.message)
            })
        });

        let mut buf = BytesMut::with_capacity(128 * 1024);
        buf.extend_from_slice(&frame);
        let message = decoder.decode_buf(&mut buf).expect("decode_buf");
        assert_eq!(message, Some(Message::Text(text.as_str().into())));
        drop(message);
        group.bench_function(BenchmarkId::new("ocpp_decode_buf", label), |b| {
            b.iter(|| {
                buf.extend_from_slice(black_box(&frame));
                black_box(decoder.decode_buf(&mut buf).expect("decode_buf"))
            })
        });

        let stream = Rearmed {
            frame: frame.clone(),
            pos: 0,
        };
        let mut ws =
            WebSocket::from_raw_socket(stream, TRole::Server, Some(WebSocketConfig::default()));
        let message = ws.read().expect("tungstenite read");
        assert_eq!(message.to_text().expect("text"), text);
        group.bench_function(BenchmarkId::new("tungstenite", label), |b| {
            b.iter(|| {
                ws.get_mut().pos = 0;
                black_box(ws.read().expect("tungstenite read"))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, decode);
criterion_main!(benches);
