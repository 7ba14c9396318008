//! What one phase of a run counted: counters, latency histograms and times, in a form that
//! worker processes send to the coordinator as one JSON line and that merges exactly.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde_json::{json, Map, Value};

/// Latencies are recorded in nanoseconds, from 1 ns to 10 minutes, 3 significant digits.
const HIGHEST_NS: u64 = 600 * 1_000_000_000;

/// A latency histogram in nanoseconds.
pub(crate) fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIGHEST_NS, 3).unwrap_or_else(|_| unreachable!("valid bounds"))
}

/// One phase of one worker, or of all of them merged.
#[derive(Debug, Clone)]
pub(crate) struct PhaseStats {
    /// `connect`, `idle`, `heartbeat`, `push` or `reconnect`.
    pub(crate) name: String,
    /// Wall-clock start and end (Unix nanoseconds): the earliest start and the latest end when
    /// merged.
    pub(crate) started_ns: u128,
    pub(crate) ended_ns: u128,
    /// Counters by name (summed when merged).
    pub(crate) counters: BTreeMap<String, u64>,
    /// Latency histograms by name (merged).
    pub(crate) histograms: BTreeMap<String, Histogram<u64>>,
    /// Instants by name, Unix nanoseconds (the earliest kept when merged for `first_*`, the
    /// latest for anything else).
    pub(crate) instants: BTreeMap<String, u128>,
}

impl PhaseStats {
    pub(crate) fn new(name: &str, started_ns: u128) -> Self {
        PhaseStats {
            name: name.into(),
            started_ns,
            ended_ns: started_ns,
            counters: BTreeMap::new(),
            histograms: BTreeMap::new(),
            instants: BTreeMap::new(),
        }
    }

    pub(crate) fn add(&mut self, counter: &str, n: u64) {
        *self.counters.entry(counter.into()).or_default() += n;
    }

    pub(crate) fn counter(&self, counter: &str) -> u64 {
        self.counters.get(counter).copied().unwrap_or(0)
    }

    /// Records a latency in nanoseconds (0 is recorded as 1, past the top as the top).
    pub(crate) fn record(&mut self, name: &str, nanos: u64) {
        let hist = self.histograms.entry(name.into()).or_insert_with(histogram);
        hist.saturating_record(nanos.clamp(1, HIGHEST_NS));
    }

    #[cfg(test)]
    pub(crate) fn histogram(&self, name: &str) -> Option<&Histogram<u64>> {
        self.histograms.get(name).filter(|h| !h.is_empty())
    }

    /// Keeps `at` for `name`: the earliest for names starting with `first_`, else the latest.
    pub(crate) fn mark(&mut self, name: &str, at: u128) {
        let first = name.starts_with("first_");
        self.instants
            .entry(name.into())
            .and_modify(|t| *t = if first { (*t).min(at) } else { (*t).max(at) })
            .or_insert(at);
    }

    /// Merges another worker's stats of the same phase.
    pub(crate) fn merge(&mut self, other: &PhaseStats) {
        self.started_ns = self.started_ns.min(other.started_ns);
        self.ended_ns = self.ended_ns.max(other.ended_ns);
        for (name, n) in &other.counters {
            self.add(name, *n);
        }
        for (name, hist) in &other.histograms {
            let mine = self
                .histograms
                .entry(name.clone())
                .or_insert_with(histogram);
            // Both have the same bounds, so adding cannot fail.
            let _ = mine.add(hist);
        }
        for (name, at) in &other.instants {
            self.mark(name, *at);
        }
    }

    /// Seconds the phase lasted.
    pub(crate) fn seconds(&self) -> f64 {
        (self.ended_ns.saturating_sub(self.started_ns)) as f64 / 1e9
    }

    /// The wire form: histograms as `[value, count]` pairs of their recorded values.
    pub(crate) fn to_wire(&self) -> Value {
        let histograms: Map<String, Value> = self
            .histograms
            .iter()
            .map(|(name, h)| {
                let pairs: Vec<Value> = h
                    .iter_recorded()
                    .map(|v| json!([v.value_iterated_to(), v.count_at_value()]))
                    .collect();
                (name.clone(), Value::Array(pairs))
            })
            .collect();
        json!({
            "name": self.name,
            "started_ns": self.started_ns.to_string(),
            "ended_ns": self.ended_ns.to_string(),
            "counters": self.counters,
            "histograms": histograms,
            "instants": self.instants.iter().map(|(k, v)| (k.clone(), v.to_string())).collect::<BTreeMap<_, _>>(),
        })
    }

    /// Reads [`PhaseStats::to_wire`].
    pub(crate) fn from_wire(value: &Value) -> Option<Self> {
        let number = |v: &Value| v.as_str().and_then(|s| s.parse::<u128>().ok());
        let mut stats = PhaseStats::new(value["name"].as_str()?, number(&value["started_ns"])?);
        stats.ended_ns = number(&value["ended_ns"])?;
        for (name, n) in value["counters"].as_object()? {
            stats.add(name, n.as_u64()?);
        }
        for (name, pairs) in value["histograms"].as_object()? {
            let hist = stats
                .histograms
                .entry(name.clone())
                .or_insert_with(histogram);
            for pair in pairs.as_array()? {
                hist.record_n(pair[0].as_u64()?, pair[1].as_u64()?).ok()?;
            }
        }
        for (name, at) in value["instants"].as_object()? {
            stats.instants.insert(name.clone(), number(at)?);
        }
        Some(stats)
    }
}

/// The summary of a latency histogram, in microseconds.
pub(crate) fn summary(hist: &Histogram<u64>) -> Value {
    let us = |ns: u64| (ns as f64 / 1000.0 * 10.0).round() / 10.0;
    json!({
        "count": hist.len(),
        "p50_us": us(hist.value_at_quantile(0.5)),
        "p90_us": us(hist.value_at_quantile(0.9)),
        "p99_us": us(hist.value_at_quantile(0.99)),
        "p99_9_us": us(hist.value_at_quantile(0.999)),
        "max_us": us(hist.max()),
        "mean_us": (hist.mean() / 100.0).round() / 10.0,
    })
}

/// Points of the percentile curve (quantile, microseconds) for plots: 0.5, 0.75, 0.9, 0.95,
/// 0.99, ..., 0.99999 and the max.
pub(crate) fn curve(hist: &Histogram<u64>) -> Value {
    let quantiles = [
        0.0, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9995, 0.9999, 0.99999, 1.0,
    ];
    Value::Array(
        quantiles
            .iter()
            .map(|&q| json!([q, hist.value_at_quantile(q) as f64 / 1000.0]))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_round_trip_and_merge() {
        let mut a = PhaseStats::new("push", 10);
        a.ended_ns = 20;
        a.add("pushes", 3);
        a.record("push", 1_000);
        a.record("push", 2_000_000);
        a.mark("first_drop", 15);
        let back = PhaseStats::from_wire(&serde_json::from_str(&a.to_wire().to_string()).unwrap())
            .unwrap();
        assert_eq!(back.counter("pushes"), 3);
        assert_eq!(back.histogram("push").unwrap().len(), 2);
        let mut b = PhaseStats::new("push", 5);
        b.ended_ns = 30;
        b.add("pushes", 1);
        b.record("push", 500);
        b.mark("first_drop", 12);
        b.merge(&back);
        assert_eq!((b.started_ns, b.ended_ns), (5, 30));
        assert_eq!(b.counter("pushes"), 4);
        assert_eq!(b.histogram("push").unwrap().len(), 3);
        assert_eq!(b.instants["first_drop"], 12);
        let s = summary(b.histogram("push").unwrap());
        assert_eq!(s["count"], 3);
        assert!(s["max_us"].as_f64().unwrap() >= 1999.0);
    }
}
