//! Prometheus-format metrics of `lackpy serve`, kept as atomics so the
//! hot path never takes a lock.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

/// Upper bounds (seconds) of the run latency histogram's buckets.
pub const LATENCY_BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0, 30.0,
];

/// Outcomes a run is counted under: `ok` or the contract's error kind, plus
/// `refused` for quota and backpressure refusals.
pub const OUTCOMES: [&str; 7] = [
    "ok",
    "validation",
    "runtime",
    "limit",
    "tool",
    "internal",
    "refused",
];

/// All counters and gauges of one server.
#[derive(Default)]
pub struct Metrics {
    runs: [AtomicU64; 7],
    buckets: [AtomicU64; 12],
    latency_count: AtomicU64,
    latency_sum_us: AtomicU64,
    /// Runs executing now.
    pub in_flight: AtomicU64,
    /// Connections open now.
    pub connections: AtomicU64,
    /// Connections refused by peer credentials.
    pub refused_connections: AtomicU64,
    /// Tool calls made by all runs.
    pub tool_calls: AtomicU64,
}

impl Metrics {
    /// Count one finished (or refused) run.
    pub fn record(&self, outcome: &str, seconds: f64, tool_calls: u64) {
        let i = OUTCOMES.iter().position(|o| *o == outcome).unwrap_or(5);
        self.runs[i].fetch_add(1, Ordering::Relaxed);
        self.tool_calls.fetch_add(tool_calls, Ordering::Relaxed);
        if outcome == "refused" {
            return;
        }
        for (b, bound) in self.buckets.iter().zip(LATENCY_BUCKETS) {
            if seconds <= bound {
                b.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.latency_count.fetch_add(1, Ordering::Relaxed);
        // Saturating: a u64 of microseconds lasts 584,000 years.
        self.latency_sum_us
            .fetch_add((seconds * 1e6) as u64, Ordering::Relaxed);
    }

    /// The Prometheus text exposition; `pool_ready` is the warm workers now.
    pub fn render(&self, pool_ready: usize, max_in_flight: usize) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "# HELP lackpy_runs_total Runs by outcome (ok or error kind; refused = quota/backpressure).");
        let _ = writeln!(s, "# TYPE lackpy_runs_total counter");
        for (o, c) in OUTCOMES.iter().zip(&self.runs) {
            let _ = writeln!(
                s,
                "lackpy_runs_total{{outcome=\"{o}\"}} {}",
                c.load(Ordering::Relaxed)
            );
        }
        let _ = writeln!(
            s,
            "# HELP lackpy_run_duration_seconds Wall time of runs, validation to report."
        );
        let _ = writeln!(s, "# TYPE lackpy_run_duration_seconds histogram");
        for (b, bound) in self.buckets.iter().zip(LATENCY_BUCKETS) {
            let _ = writeln!(
                s,
                "lackpy_run_duration_seconds_bucket{{le=\"{bound}\"}} {}",
                b.load(Ordering::Relaxed)
            );
        }
        let count = self.latency_count.load(Ordering::Relaxed);
        let _ = writeln!(
            s,
            "lackpy_run_duration_seconds_bucket{{le=\"+Inf\"}} {count}"
        );
        let _ = writeln!(
            s,
            "lackpy_run_duration_seconds_sum {}",
            self.latency_sum_us.load(Ordering::Relaxed) as f64 / 1e6
        );
        let _ = writeln!(s, "lackpy_run_duration_seconds_count {count}");
        let gauges = [
            (
                "lackpy_runs_in_flight",
                "Runs executing now (the queue depth).",
                self.in_flight.load(Ordering::Relaxed),
            ),
            (
                "lackpy_runs_in_flight_max",
                "Bound of the run queue.",
                max_in_flight as u64,
            ),
            (
                "lackpy_pool_ready_workers",
                "Warm jailed workers ready now.",
                pool_ready as u64,
            ),
            (
                "lackpy_connections",
                "Client connections open now.",
                self.connections.load(Ordering::Relaxed),
            ),
        ];
        for (name, help, v) in gauges {
            let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
        }
        let counters = [
            (
                "lackpy_refused_connections_total",
                "Connections refused by peer credentials.",
                self.refused_connections.load(Ordering::Relaxed),
            ),
            (
                "lackpy_tool_calls_total",
                "Tool calls made by all runs.",
                self.tool_calls.load(Ordering::Relaxed),
            ),
        ];
        for (name, help, v) in counters {
            let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counts_and_histogram() {
        let m = Metrics::default();
        m.record("ok", 0.0007, 3);
        m.record("runtime", 2.0, 0);
        m.record("refused", 0.0, 0);
        let text = m.render(3, 8);
        assert!(text.contains("lackpy_runs_total{outcome=\"ok\"} 1"));
        assert!(text.contains("lackpy_runs_total{outcome=\"refused\"} 1"));
        assert!(text.contains("lackpy_run_duration_seconds_bucket{le=\"0.001\"} 1"));
        assert!(text.contains("lackpy_run_duration_seconds_bucket{le=\"5\"} 2"));
        assert!(text.contains("lackpy_run_duration_seconds_count 2"));
        assert!(text.contains("lackpy_pool_ready_workers 3"));
        assert!(text.contains("lackpy_tool_calls_total 3"));
    }
}
