//! A connection's driver, for both sides: drives an `ocpp_proto::Connection` on a stream,
//! following the core's drain contract (one pass drains everything), with the side it serves
//! beside it ([`DriverSide`]: a charge point's connection to the central system, [`Serve`], or a
//! station's to its central system, `crate::station`). It is a task of its own (its timer a
//! tokio `Sleep`), one of many on a shard (`crate::shard`, which keeps every timer in one
//! heap), or the one connection a station's task awaits at a time.
//!
//! The driver owns the stream and the time: it reads into a stack buffer, hands the bytes to
//! the core, hands every event to the side, writes out, sleeps until the earlier of the
//! core's and the side's deadlines, and lingers while the last bytes leave once closed (the
//! core's linger). What the events mean, and what goes on the connection when, is the side's
//! (and, below it, the core's).

use std::any::Any;
use std::future::Future;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use ocpp_proto::Event;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::charge_point::{CallReply, TaskLink};
use crate::handler::PeerCertificate;
use crate::{BoxFuture, Handler};

/// Bytes read per `read` call: on the thread's stack, never in the connection's memory.
const READ_CHUNK: usize = 8 * 1024;
/// Turns of the loop before the task yields to others.
const TURNS_PER_POLL: usize = 64;

mod past_readiness;
mod sends;
mod serve;
mod shared;
mod timer;

use past_readiness::Looked;
pub(crate) use sends::SendRetry;
pub(crate) use serve::Serve;
pub(crate) use shared::ServerShared;
pub(crate) use timer::{DriverTimer, TaskTimer};

/// Polls a connection's SEND handlers in the order the SENDs came (one after the other, as
/// `Router::on_send` promises, on both sides); returns whether one finished. The queue's
/// memory is freed once it is empty.
pub(crate) fn poll_sends(
    sends: &mut std::collections::VecDeque<BoxFuture<()>>,
    cx: &mut Context<'_>,
) -> bool {
    let mut progressed = false;
    while let Some(send) = sends.front_mut() {
        match send.as_mut().poll(cx) {
            Poll::Ready(()) => {
                sends.pop_front();
                progressed = true;
            }
            Poll::Pending => break,
        }
    }
    if sends.is_empty() && sends.capacity() > 0 {
        *sends = std::collections::VecDeque::new();
    }
    progressed
}

/// What the handles' commands made of this turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// There was none.
    Idle,
    /// Some were applied.
    Busy,
    /// The connection ends at once (a shutdown past its grace period).
    Abort,
}

/// What one side of a connection does at each step of the driver's turn: the seam between
/// the one driver and the central system's ([`Serve`]) or the station's
/// (`StationSide`, in `crate::station`) use of it. A side hands the core's events to its
/// application, the application's answers and commands to the core, and says what else it
/// waits for; it neither reads nor writes the stream, nor sleeps.
///
/// One turn: [`poll_commands`](Self::poll_commands), a read, every event to
/// [`on_event`](Self::on_event), [`poll_handlers`](Self::poll_handlers) (and its events), a
/// write unless [`holds_output`](Self::holds_output) (then
/// [`on_written`](Self::on_written)); once closed, [`finish`](Self::finish) and
/// [`on_end`](Self::on_end), once each, and the linger; else the timeout of the core and of
/// [`poll_timeout`](Self::poll_timeout).
pub(crate) trait DriverSide {
    /// Who waits for one of our CALLs, handed back by the core with its outcome.
    type Caller;

    /// Applies the commands that came for the connection (`Abort`: it ends now).
    fn poll_commands(
        &mut self,
        cx: &mut Context<'_>,
        now: Instant,
        conn: &mut ocpp_proto::Connection<Self::Caller>,
    ) -> Flow;

    /// One event of the core (`Closed` included: the driver ends the turn it is drained in).
    fn on_event(
        &mut self,
        now: Instant,
        conn: &mut ocpp_proto::Connection<Self::Caller>,
        event: Event<Self::Caller>,
    );

    /// Polls what the application works on (an upgrade decision, answers, SENDs) and puts
    /// on the connection what is due; whether anything happened.
    fn poll_handlers(
        &mut self,
        cx: &mut Context<'_>,
        now: Instant,
        conn: &mut ocpp_proto::Connection<Self::Caller>,
    ) -> bool;

    /// Whether the output must wait this turn.
    fn holds_output(
        &mut self,
        _cx: &mut Context<'_>,
        _conn: &ocpp_proto::Connection<Self::Caller>,
    ) -> bool {
        false
    }

    /// Bytes were written: whether more went on the connection.
    fn on_written(
        &mut self,
        _now: Instant,
        _conn: &mut ocpp_proto::Connection<Self::Caller>,
    ) -> bool {
        false
    }

    /// The side's own next deadline, beside the core's.
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    /// The earlier of the side's and the core's deadlines has come.
    fn handle_timeout(&mut self, _now: Instant, _conn: &mut ocpp_proto::Connection<Self::Caller>) {}

    /// Once closed: until when the last bytes may take to leave, `now + linger` the first
    /// time it is asked (the side keeps it: a server keeps it only while it is needed).
    fn linger_until(&mut self, now: Instant, linger: Duration) -> Instant;

    /// The connection is over (or the driver dropped): the handles are released. Once.
    fn finish(&mut self) {}

    /// The connection ended (not dropped), after [`finish`](Self::finish). Once.
    fn on_end(&mut self) {}

    /// The turn found nothing to do (the side may free what it no longer uses).
    fn on_idle(&mut self) {}
}

/// The earlier of the core's and the side's deadlines.
fn earliest(core: Option<Instant>, side: Option<Instant>) -> Option<Instant> {
    match (core, side) {
        (Some(core), Some(side)) => Some(core.min(side)),
        (core, side) => core.or(side),
    }
}

/// The connection task: a future that ends when the connection is over.
///
/// Its size is memory per connection (a server's task is allocated at it): the side keeps
/// what it rarely uses boxed (see [`Serve`]).
pub(crate) struct Driver<S, D: DriverSide, T = TaskTimer> {
    stream: S,
    conn: ocpp_proto::Connection<D::Caller>,
    /// The connection's one timer, armed at or before the next deadline (see [`DriverTimer`]).
    timer: T,
    side: D,
    needs_flush: bool,
    stream_failed: bool,
    /// The side was told the end ([`DriverSide::finish`]).
    finished: bool,
}

impl<S, H: Handler, T> Driver<S, Serve<H>, T> {
    /// The driver of an accepted stream whose upgrade request comes next; `link` and `conn`
    /// are [`ServerShared::admit`]'s, made when the socket was accepted, so the handshake
    /// deadline covers TLS. The handler learns `certificate` and `peer` (the peer's address)
    /// from [`Connecting`](crate::Connecting). `timer` is a task's own ([`TaskTimer`]) or the
    /// shard's.
    pub(crate) fn new(
        shared: std::sync::Arc<ServerShared<H>>,
        link: std::sync::Arc<TaskLink>,
        stream: S,
        conn: ocpp_proto::Connection<CallReply>,
        certificate: Option<PeerCertificate>,
        peer: Option<std::net::SocketAddr>,
        timer: T,
    ) -> Self {
        let side = Serve::new(shared, link, certificate, peer);
        Driver::with_side(stream, conn, timer, side)
    }
}

impl<S, D: DriverSide, T> Driver<S, D, T> {
    /// The driver of `conn` on `stream`, for `side`.
    pub(crate) fn with_side(
        stream: S,
        conn: ocpp_proto::Connection<D::Caller>,
        timer: T,
        side: D,
    ) -> Self {
        Driver {
            stream,
            conn,
            timer,
            side,
            needs_flush: false,
            stream_failed: false,
            finished: false,
        }
    }

    /// The stream of this connection (a shard tells it what epoll reports).
    pub(crate) fn stream_mut(&mut self) -> &mut S {
        &mut self.stream
    }

    /// The deadline the driver's next turn would arm if nothing happened before it: the
    /// core's or the side's, whichever comes first (`Some(None)`: none). `None` for a closed
    /// connection, whose linger deadline only a turn knows. A shard moves a timer entry that
    /// came before it there, instead of waking for it.
    #[cfg(unix)]
    pub(crate) fn next_deadline(&self) -> Option<Option<Instant>> {
        (!self.conn.is_closed())
            .then(|| earliest(self.conn.poll_timeout(), self.side.poll_timeout()))
    }

    /// The timer of this connection (a shard reads what was asked of it after each turn).
    pub(crate) fn timer_mut(&mut self) -> &mut T {
        &mut self.timer
    }

    /// Takes every event (the drain contract's step 1); returns whether there was one.
    fn drain_events(&mut self, now: Instant) -> bool {
        let mut any = false;
        while let Some(event) = self.conn.poll_event() {
            any = true;
            self.side.on_event(now, &mut self.conn, event);
        }
        any
    }

    /// The handles are released (once), on the end or the drop.
    fn finish(&mut self) {
        if !self.finished {
            self.finished = true;
            self.side.finish();
        }
    }

    /// The connection is over: handles released, the side's end (once).
    fn end(&mut self) {
        if self.finished {
            return;
        }
        self.finish();
        self.side.on_end();
    }
}

impl<S, D, T> Driver<S, D, T>
where
    S: AsyncRead + AsyncWrite + Unpin + 'static,
    D: DriverSide,
    T: DriverTimer,
{
    /// Writes what the core has (step 2 of the drain contract), then flushes.
    fn poll_write(&mut self, cx: &mut Context<'_>, now: Instant) -> bool {
        let mut progressed = false;
        while !self.stream_failed && !self.conn.pending_transmit().is_empty() {
            match Pin::new(&mut self.stream).poll_write(cx, self.conn.pending_transmit()) {
                Poll::Ready(Ok(0)) | Poll::Ready(Err(_)) => self.fail_stream(now),
                Poll::Ready(Ok(n)) => {
                    self.conn.advance_transmit(n);
                    self.needs_flush = true;
                    progressed = true;
                }
                Poll::Pending => break,
            }
        }
        if self.needs_flush && !self.stream_failed && self.conn.pending_transmit().is_empty() {
            match Pin::new(&mut self.stream).poll_flush(cx) {
                Poll::Ready(Ok(())) => self.needs_flush = false,
                Poll::Ready(Err(_)) => self.fail_stream(now),
                Poll::Pending => {}
            }
        }
        progressed
    }

    /// Reads once into a stack buffer and hands the bytes to the core.
    fn poll_read(&mut self, cx: &mut Context<'_>, now: Instant) -> bool {
        // Uninitialized: zeroing 8 KiB on every read (three or four per CALL) was 73 % of the
        // instructions per Heartbeat, and wrote a quarter of L1d each time. `ReadBuf` tracks
        // what the stream initialized; only `filled()` is read.
        let mut chunk = [MaybeUninit::<u8>::uninit(); READ_CHUNK];
        let mut buf = ReadBuf::uninit(&mut chunk);
        match Pin::new(&mut self.stream).poll_read(cx, &mut buf) {
            Poll::Ready(Ok(())) if buf.filled().is_empty() => {
                self.conn.handle_eof(now);
                true
            }
            Poll::Ready(Ok(())) => {
                self.conn.handle_data(now, buf.filled());
                true
            }
            Poll::Ready(Err(_)) => {
                self.fail_stream(now);
                true
            }
            Poll::Pending => false,
        }
    }

    /// A task of its own whose core deadline is due: what the socket holds now, read past
    /// tokio's readiness, which may lag behind it (`past_readiness.rs`: plain TCP and TLS
    /// over TCP). Whether it read something (bytes, the end or an error).
    fn read_past_readiness(&mut self, now: Instant) -> bool {
        let conn = &mut self.conn;
        match past_readiness::read_now(&mut self.stream as &mut dyn Any, |bytes| {
            conn.handle_data(now, bytes)
        }) {
            Looked::Nothing => false,
            Looked::Read => true,
            Looked::End => {
                self.conn.handle_eof(now);
                true
            }
            Looked::Failed => {
                self.fail_stream(now);
                true
            }
        }
    }

    fn fail_stream(&mut self, now: Instant) {
        self.stream_failed = true;
        self.conn.handle_eof(now);
    }

    /// Drives the connection as far as it goes: ready when it is over. `cx`'s waker is the
    /// connection's own (its task's, or the one its shard made for it) and the same on every
    /// call.
    ///
    /// `looked`: the instant up to which the caller knows what the socket holds (a shard:
    /// when it last read its epoll, which it does before a deadline is judged). The whole
    /// turn runs at it, so a deadline is judged only against input looked for after it: a
    /// pong that came while the thread was descheduled is read before its deadline is
    /// judged, not counted late. `None`, a task of its own: each step runs at the present,
    /// and before a deadline of the core is judged, the socket (plain TCP, or TLS over TCP)
    /// is read past tokio's readiness ([`Driver::read_past_readiness`]).
    pub(crate) fn turn(&mut self, cx: &mut Context<'_>, looked: Option<Instant>) -> Poll<()> {
        let this = self;
        for _ in 0..TURNS_PER_POLL {
            let now = looked.unwrap_or_else(Instant::now);
            let mut busy = false;
            match this.side.poll_commands(cx, now, &mut this.conn) {
                Flow::Idle => {}
                Flow::Busy => busy = true,
                Flow::Abort => {
                    this.conn.handle_eof(now);
                    this.drain_events(now);
                    this.end();
                    return Poll::Ready(());
                }
            }
            // Read, then everything the bytes caused, in this turn: a CALL read is decoded,
            // handed to the handler, answered (a handler that answers at once is ready when
            // first polled) and written before the turn ends. One turn per CALL and a last
            // one to find nothing more (three more turns when each step waited for the next).
            if !this.stream_failed && !this.conn.is_closed() && this.conn.wants_read() {
                busy |= this.poll_read(cx, now);
            }
            busy |= this.drain_events(now);
            if this.side.poll_handlers(cx, now, &mut this.conn) {
                busy = true;
                // An upgrade decided (Connected), an answer written: their events.
                this.drain_events(now);
            }
            if !this.side.holds_output(cx, &this.conn) && this.poll_write(cx, now) {
                busy = true;
                busy |= this.side.on_written(now, &mut this.conn);
            }
            if this.conn.is_closed() {
                this.drain_events(now);
                this.end();
                // Step 3: the last bytes (a close frame) get the close timeout to leave: a
                // peer that does not read is gone (the core's rule), the socket dropped.
                let linger = this.side.linger_until(now, this.conn.config().get_linger());
                if this.stream_failed || this.conn.pending_transmit().is_empty() || now >= linger {
                    if !this.stream_failed {
                        let _ = Pin::new(&mut this.stream).poll_shutdown(cx);
                    }
                    return Poll::Ready(());
                }
                if this.timer.arm(cx, now, linger) {
                    continue;
                }
                return Poll::Pending;
            }
            let core = this.conn.poll_timeout();
            let deadline = earliest(core, this.side.poll_timeout());
            if let Some(deadline) = deadline {
                let core_due = core.is_some_and(|core| core <= now);
                if core_due
                    && looked.is_none()
                    && !this.stream_failed
                    && this.conn.wants_read()
                    && this.read_past_readiness(now)
                {
                    continue; // what came is handled before the deadline is judged
                }
                if deadline <= now {
                    if core_due {
                        this.conn.handle_timeout(now);
                    }
                    this.side.handle_timeout(now, &mut this.conn);
                    busy = true;
                } else {
                    busy |= this.timer.arm(cx, now, deadline);
                }
            }
            if !busy {
                this.side.on_idle();
                return Poll::Pending;
            }
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl<S, D> Future for Driver<S, D, TaskTimer>
where
    S: AsyncRead + AsyncWrite + Unpin + 'static,
    D: DriverSide + Unpin,
    D::Caller: Unpin,
{
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.get_mut().turn(cx, None)
    }
}

impl<S, D: DriverSide, T> Drop for Driver<S, D, T> {
    fn drop(&mut self) {
        // Also when dropped without ending (the runtime shut down): the handles learn it.
        self.finish();
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::handler::Connecting;
    use ocpp_proto::Rejection;

    /// A handler that accepts every identity and answers nothing (the default answers).
    pub(crate) struct Nothing;

    impl Handler for Nothing {
        type State = ();

        async fn on_upgrade(&self, _: Connecting) -> Result<(), Rejection> {
            Ok(())
        }
    }

    /// The task of every connection holds a `Driver`, so its size is memory per connection:
    /// 304 bytes on a plain socket (344 while it kept a table of waiting callers), of which
    /// the core's `Connection` is 168 (the rest: the stream 40, the session 32, the answer
    /// slot 16, five pointers and the flags). tokio rounds a task (its header and trailer, about 100 bytes, around the
    /// future) up to a multiple of 128 bytes: 512 today (768 before `Rare`), 384 below 280
    /// bytes. A regression guard; the heap per connection is measured in
    /// `tests/heap_per_connection.rs`.
    #[test]
    fn the_driver_stays_small() {
        let size = std::mem::size_of::<Driver<tokio::net::TcpStream, Serve<Nothing>>>();
        let core = std::mem::size_of::<ocpp_proto::Connection<CallReply>>();
        eprintln!("Driver: {size} bytes, of which Connection {core}");
        assert!(size <= core + 176, "{size}");
    }
}
