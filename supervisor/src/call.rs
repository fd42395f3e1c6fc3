//! What one tool call carries besides its arguments: the run it belongs to
//! ([`RunContext`]: its deadline and cancel flag), handed explicitly from
//! the session to the provider that runs the call, and the countdown
//! ([`Interrupt`]) builtin tools poll it with.

use lackpy_policy::wire::ToolFailure;
use std::sync::atomic::{AtomicBool, Ordering};
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
}

impl RunContext {
    /// The context of a run ending at `deadline`, cancelled by `cancel`.
    pub fn new(deadline: Instant, cancel: Option<Arc<AtomicBool>>) -> RunContext {
        RunContext {
            deadline: Some(deadline),
            cancel,
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
