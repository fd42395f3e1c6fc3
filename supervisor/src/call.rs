//! What one tool call carries besides its arguments: the run it belongs to
//! ([`RunContext`]: its deadline and cancel flag), handed explicitly from
//! the session to the provider that runs the call, and the countdown
//! ([`Interrupt`]) builtin tools poll it with.

use lackpy_policy::wire::{ToolFailure, WRITE_BLOCK};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How many units of work (directory entries, files, matches) a builtin
/// tool does between two looks at the run's deadline and cancel flag
/// ([`Interrupt::tick`]). Why 256: a look costs a clock read (tens of ns);
/// 256 entries of a directory walk or files of an index take well under a
/// millisecond, so a tool stops within about a millisecond of the deadline
/// (one file's parse excepted, see `codeintel`).
pub const CHECK_EVERY: u32 = 256;

/// The run a tool call belongs to, as far as tools need to know: when it
/// must end and whether its client gave up. Passed to every provider with
/// the call; cheap to clone (an `Instant` and an `Arc`).
#[derive(Debug, Clone, Default)]
pub struct RunContext {
    /// The run's wall-clock deadline (`None`: no limit, outside a run).
    pub deadline: Option<Instant>,
    /// The run's cancel flag (`None` when the run cannot be cancelled).
    pub cancel: Option<Arc<AtomicBool>>,
    /// What the run's builtin writes may still write (`None`: no bound,
    /// outside a run).
    pub writes: Option<Arc<WriteBudget>>,
}

/// The run's budget of bytes written by the builtin `write_file` and
/// `edit_file` ([`lackpy_policy::wire::Limits::write_bytes`]): each write
/// is charged before anything is written, its content rounded up to a
/// [`WRITE_BLOCK`] (at least one), and each directory it creates one
/// block. A charge past the limit is refused, and the budget remembers it,
/// so the session ends the run with the `write_bytes` limit (a flag the
/// session reads, not a failure type a provider could forge).
#[derive(Debug)]
pub struct WriteBudget {
    limit: u64,
    used: AtomicU64,
    exceeded: AtomicBool,
}

impl WriteBudget {
    /// A budget of `limit` bytes, nothing used.
    pub fn new(limit: u64) -> WriteBudget {
        WriteBudget {
            limit,
            used: AtomicU64::new(0),
            exceeded: AtomicBool::new(false),
        }
    }

    /// The bound, in bytes.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Bytes charged so far.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::SeqCst)
    }

    /// Whether a charge was refused.
    pub fn exceeded(&self) -> bool {
        self.exceeded.load(Ordering::SeqCst)
    }

    /// What a file of `len` bytes is charged: whole blocks, at least one.
    pub fn file_cost(len: u64) -> u64 {
        len.div_ceil(WRITE_BLOCK).max(1).saturating_mul(WRITE_BLOCK)
    }

    /// Charge `bytes`, or refuse (charging nothing) when they would take
    /// the total past the limit.
    ///
    /// # Errors
    /// A `TooLarge` tool failure naming the limit and how to raise it.
    pub fn charge(&self, bytes: u64, what: &str) -> Result<(), ToolFailure> {
        let mut used = self.used.load(Ordering::SeqCst);
        loop {
            let next = used.saturating_add(bytes);
            if next > self.limit {
                self.exceeded.store(true, Ordering::SeqCst);
                return Err(ToolFailure::new(
                    "TooLarge",
                    self.refusal(used, bytes, what),
                ));
            }
            match self
                .used
                .compare_exchange(used, next, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => return Ok(()),
                Err(now) => used = now,
            }
        }
    }

    /// The message of a refused charge (also the run's `limit` error).
    fn refusal(&self, used: u64, bytes: u64, what: &str) -> String {
        format!(
            "{what} would take the run's writes to {} bytes, past its write_bytes limit of {} bytes ({used} written so far; a file's content counts in whole {WRITE_BLOCK}-byte blocks, at least one, and each directory created one block); it was not written. Raise it with write_mb (or write_bytes) under [sandbox] or [profiles.NAME.sandbox] in .lackpy/config.toml",
            used.saturating_add(bytes),
            self.limit
        )
    }
}

impl RunContext {
    /// The context of a run ending at `deadline`, cancelled by `cancel`,
    /// with no write budget (see [`RunContext::with_writes`]).
    pub fn new(deadline: Instant, cancel: Option<Arc<AtomicBool>>) -> RunContext {
        RunContext {
            deadline: Some(deadline),
            cancel,
            writes: None,
        }
    }

    /// This context with the write budget `writes`.
    pub fn with_writes(mut self, writes: Arc<WriteBudget>) -> RunContext {
        self.writes = Some(writes);
        self
    }

    /// Charge `bytes` of writing to the run's write budget, if it has one.
    ///
    /// # Errors
    /// As [`WriteBudget::charge`].
    pub fn charge_write(&self, bytes: u64, what: &str) -> Result<(), ToolFailure> {
        match &self.writes {
            Some(b) => b.charge(bytes, what),
            None => Ok(()),
        }
    }

    /// `Err(Timeout)` once the deadline has passed or the cancel flag is set.
    ///
    /// # Errors
    /// A `Timeout` tool failure saying which.
    pub fn check(&self) -> Result<(), ToolFailure> {
        if self
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
        {
            return Err(ToolFailure::new("Timeout", "the run was cancelled"));
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(ToolFailure::new(
                "Timeout",
                "the run's wall-clock limit was reached",
            ));
        }
        Ok(())
    }

    /// A provider's per-call timeout `own`, cut to the time left before
    /// the run's deadline (at least 1 ms, so the call fails fast with the
    /// provider's own timeout error rather than not being tried): a slow
    /// or hung tool cannot keep a run alive past its wall-clock limit.
    pub fn clamp_timeout(&self, own: Duration) -> Duration {
        let left = self.deadline.map(|d| {
            d.saturating_duration_since(Instant::now())
                .max(Duration::from_millis(1))
        });
        left.map_or(own, |l| own.min(l))
    }

    /// [`RunContext::clamp_timeout`] for timeouts in seconds.
    pub fn clamp_timeout_secs(&self, own: f64) -> f64 {
        match Duration::try_from_secs_f64(own) {
            Ok(d) => self.clamp_timeout(d).as_secs_f64(),
            Err(_) => own,
        }
    }
}

/// A countdown for loops in tools: [`Interrupt::tick`] once per unit of
/// work looks at the run's deadline and cancel flag every [`CHECK_EVERY`]
/// units (and on the first).
#[derive(Debug, Default)]
pub struct Interrupt {
    left: u32,
    run: RunContext,
}

impl Interrupt {
    /// A countdown for `run` that checks on its first tick.
    pub fn new(run: &RunContext) -> Interrupt {
        Interrupt {
            left: 0,
            run: run.clone(),
        }
    }

    /// One unit of work done.
    ///
    /// # Errors
    /// A `Timeout` tool failure once the run is out of time or cancelled.
    pub fn tick(&mut self) -> Result<(), ToolFailure> {
        self.spend(1)
    }

    /// `units` units of work done (a step that costs more than one).
    ///
    /// # Errors
    /// A `Timeout` tool failure once the run is out of time or cancelled.
    pub fn spend(&mut self, units: u32) -> Result<(), ToolFailure> {
        if self.left <= units {
            self.left = CHECK_EVERY;
            return self.run.check();
        }
        self.left -= units;
        Ok(())
    }

    /// Look at the clock now (before a costly step).
    ///
    /// # Errors
    /// As [`Interrupt::tick`].
    pub fn check(&self) -> Result<(), ToolFailure> {
        self.run.check()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_write_budget_charges_whole_blocks_and_refuses_past_its_limit() {
        assert_eq!(WriteBudget::file_cost(0), WRITE_BLOCK);
        assert_eq!(WriteBudget::file_cost(1), WRITE_BLOCK);
        assert_eq!(WriteBudget::file_cost(WRITE_BLOCK + 1), 2 * WRITE_BLOCK);
        assert_eq!(WriteBudget::file_cost(u64::MAX), u64::MAX);
        let b = WriteBudget::new(3 * WRITE_BLOCK);
        assert!(b.charge(2 * WRITE_BLOCK, "a").is_ok());
        let e = b
            .charge(2 * WRITE_BLOCK, "writing 5 bytes to \"x\"")
            .unwrap_err();
        assert_eq!(e.type_name, "TooLarge");
        assert!(
            e.message.contains("write_bytes limit of 12288 bytes"),
            "{}",
            e.message
        );
        assert!(e.message.contains("[sandbox]"), "{}", e.message);
        assert!(b.exceeded());
        // A refused charge charges nothing; what fits still fits.
        assert_eq!(b.used(), 2 * WRITE_BLOCK);
        assert!(b.charge(WRITE_BLOCK, "b").is_ok());
        assert!(b.charge(u64::MAX, "c").is_err());
        let run = RunContext::default();
        assert!(run.charge_write(u64::MAX, "unbounded").is_ok());
    }
}
