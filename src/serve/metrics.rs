//! Prometheus-format metrics of `lackpy serve`, kept as atomics so the
//! hot path never takes a lock.

use crate::mcp::session::{Refusal, Usage};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

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
    /// MCP POSTs over HTTP read and not yet answered in full (their reply
    /// body still being written). The drain waits for these as well as
    /// for runs: a run's reply must be written before the sessions end,
    /// and a `tools/call` read just before SIGTERM has not started its run.
    pub http_posts_open: AtomicU64,
    /// Connections open now.
    pub connections: AtomicU64,
    /// Connections refused by peer credentials.
    pub refused_connections: AtomicU64,
    /// Connections refused because their client had `max_connections` open.
    pub refused_client_connections: AtomicU64,
    /// Connections refused because the server had `max_connections` open.
    pub refused_server_connections: AtomicU64,
    /// Connections closed after `idle_timeout_seconds` without activity.
    pub idle_closed: AtomicU64,
    /// Sessions refused: [client count, server count, client bytes, server bytes].
    pub session_refusals: [AtomicU64; 4],
    /// Sessions and bytes kept now, all clients together (the server-wide
    /// session budget's usage).
    pub sessions: Arc<Usage>,
    /// Tool calls made by all runs.
    pub tool_calls: AtomicU64,
    /// HTTP requests refused with 401 (no token, or no rule for it).
    pub http_unauthorized: AtomicU64,
    /// HTTP requests or connections refused before MCP: body too large,
    /// too slow, TCP connection cap, draining.
    pub http_rejected: AtomicU64,
}

impl Metrics {
    /// Count a session refusal by a client's (`server == false`) or the
    /// server's budget.
    pub fn session_refused(&self, server: bool, what: Refusal) {
        let i = match (what, server) {
            (Refusal::Sessions, false) => 0,
            (Refusal::Sessions, true) => 1,
            (Refusal::Bytes, false) => 2,
            (Refusal::Bytes, true) => 3,
        };
        self.session_refusals[i].fetch_add(1, Ordering::Relaxed);
    }

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
                "lackpy_http_posts_open",
                "MCP POSTs over HTTP being answered now (read, reply not yet written in full).",
                self.http_posts_open.load(Ordering::Relaxed),
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
            (
                "lackpy_sessions",
                "Notebook sessions kept now, all clients.",
                self.sessions.sessions() as u64,
            ),
            (
                "lackpy_session_bytes",
                "Approximate bytes of variables all sessions keep now.",
                self.sessions.bytes() as u64,
            ),
        ];
        for (name, help, v) in gauges {
            let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
        }
        let _ = writeln!(
            s,
            "# HELP lackpy_refused_connections_total Connections refused, by reason (peer: not allowed by credentials; client_max_connections / server_max_connections: over the cap).\n# TYPE lackpy_refused_connections_total counter"
        );
        for (reason, c) in [
            ("peer", &self.refused_connections),
            ("client_max_connections", &self.refused_client_connections),
            ("server_max_connections", &self.refused_server_connections),
        ] {
            let _ = writeln!(
                s,
                "lackpy_refused_connections_total{{reason=\"{reason}\"}} {}",
                c.load(Ordering::Relaxed)
            );
        }
        let _ = writeln!(
            s,
            "# HELP lackpy_refused_sessions_total Notebook sessions refused, by the limit that refused them.\n# TYPE lackpy_refused_sessions_total counter"
        );
        for (reason, c) in [
            "client_max_sessions",
            "server_max_sessions",
            "client_max_session_bytes",
            "server_max_session_bytes",
        ]
        .iter()
        .zip(&self.session_refusals)
        {
            let _ = writeln!(
                s,
                "lackpy_refused_sessions_total{{reason=\"{reason}\"}} {}",
                c.load(Ordering::Relaxed)
            );
        }
        let counters = [
            (
                "lackpy_idle_connections_closed_total",
                "Connections closed after idle_timeout_seconds without a request or a run.",
                self.idle_closed.load(Ordering::Relaxed),
            ),
            (
                "lackpy_tool_calls_total",
                "Tool calls made by all runs.",
                self.tool_calls.load(Ordering::Relaxed),
            ),
            (
                "lackpy_http_unauthorized_total",
                "HTTP requests refused with 401 (no bearer token, or no rule for it).",
                self.http_unauthorized.load(Ordering::Relaxed),
            ),
            (
                "lackpy_http_rejected_total",
                "HTTP requests or connections refused before MCP (body too large, too slow, connection cap, draining).",
                self.http_rejected.load(Ordering::Relaxed),
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
        m.refused_client_connections.fetch_add(2, Ordering::Relaxed);
        m.session_refused(true, Refusal::Bytes);
        m.idle_closed.fetch_add(1, Ordering::Relaxed);
        let text = m.render(3, 8);
        assert!(text.contains("lackpy_refused_connections_total{reason=\"peer\"} 0"));
        assert!(
            text.contains("lackpy_refused_connections_total{reason=\"client_max_connections\"} 2")
        );
        assert!(
            text.contains("lackpy_refused_sessions_total{reason=\"server_max_session_bytes\"} 1")
        );
        assert!(text.contains("lackpy_refused_sessions_total{reason=\"client_max_sessions\"} 0"));
        assert!(text.contains("lackpy_idle_connections_closed_total 1"));
        assert!(text.contains("lackpy_sessions 0"));
    }
}
