//! Counters of all simulated charge points, and the summary line printed on exit.
//!
//! Every charge point's tasks share one `Arc<Mutex<Stats>>`.

use std::fmt;

use hdrhistogram::Histogram;

/// What happened, summed over all charge points.
#[derive(Debug)]
pub(crate) struct Stats {
    /// Charge points simulated.
    pub(crate) stations: usize,
    /// Connection attempts.
    pub(crate) attempts: u64,
    /// WebSocket connections that opened.
    pub(crate) connections: u64,
    /// Connections open right now.
    pub(crate) connected_now: u64,
    /// Attempts that did not open a connection: upgrades the CSMS refused (401, 404...), and
    /// TCP or TLS failures (the client does not tell them apart).
    pub(crate) refused: u64,
    /// BootNotifications answered Accepted.
    pub(crate) boots: u64,
    /// Charge points accepted at least once.
    pub(crate) booted_stations: u64,
    /// Our CALLs put on the connection: accepted or not BootNotifications, and the simulator's
    /// own (the client's Heartbeats are not seen).
    pub(crate) calls_sent: u64,
    /// Our CALLs answered with a CALLRESULT.
    pub(crate) calls_answered: u64,
    /// Our CALLs answered with a CALLERROR or an unreadable result.
    pub(crate) call_errors: u64,
    /// Our CALLs with no answer in time.
    pub(crate) call_timeouts: u64,
    /// CALLs of the CSMS (commands) received.
    pub(crate) commands: u64,
    /// Transactions ended.
    pub(crate) transactions: u64,
    /// Latency of bench DataTransfer messages, in microseconds.
    pub(crate) latency_us: Histogram<u64>,
    /// Missing sequence numbers of bench DataTransfer messages.
    pub(crate) sequence_gaps: u64,
}

impl Stats {
    pub(crate) fn new(stations: usize) -> Self {
        Stats {
            stations,
            attempts: 0,
            connections: 0,
            connected_now: 0,
            refused: 0,
            boots: 0,
            booted_stations: 0,
            calls_sent: 0,
            calls_answered: 0,
            call_errors: 0,
            call_timeouts: 0,
            commands: 0,
            transactions: 0,
            // 1 µs to 1 hour, 3 significant digits; cannot fail with these bounds.
            latency_us: Histogram::new_with_bounds(1, 3_600_000_000, 3)
                .unwrap_or_else(|_| Histogram::new(3).unwrap_or_else(|_| unreachable!())),
            sequence_gaps: 0,
        }
    }

    /// Records one bench latency (saturating into the histogram's range).
    pub(crate) fn record_latency_us(&mut self, micros: u64) {
        self.latency_us.saturating_record(micros.max(1));
    }
}

impl fmt::Display for Stats {
    /// One line, `key=value` pairs, for people and for scripts.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "summary: stations={} attempts={} connections={} connected_now={} refused={} \
             booted={} boots={} calls_sent={} calls_answered={} call_errors={} \
             call_timeouts={} commands={} transactions={}",
            self.stations,
            self.attempts,
            self.connections,
            self.connected_now,
            self.refused,
            self.booted_stations,
            self.boots,
            self.calls_sent,
            self.calls_answered,
            self.call_errors,
            self.call_timeouts,
            self.commands,
            self.transactions,
        )?;
        let h = &self.latency_us;
        if h.is_empty() {
            write!(f, " datatransfer_n=0")?;
        } else {
            write!(
                f,
                " datatransfer_n={} latency_us_p50={} p90={} p99={} max={}",
                h.len(),
                h.value_at_quantile(0.50),
                h.value_at_quantile(0.90),
                h.value_at_quantile(0.99),
                h.max(),
            )?;
        }
        write!(f, " sequence_gaps={}", self.sequence_gaps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_line() {
        let mut stats = Stats::new(2);
        assert!(stats
            .to_string()
            .ends_with("datatransfer_n=0 sequence_gaps=0"));
        for us in 1..=100 {
            stats.record_latency_us(us * 10);
        }
        stats.sequence_gaps = 3;
        let line = stats.to_string();
        assert!(line.starts_with("summary: stations=2 "), "{line}");
        assert!(line.contains("datatransfer_n=100 latency_us_p50=500 p90=900 p99=990 max=1000"));
        assert!(line.ends_with("sequence_gaps=3"), "{line}");
    }
}
