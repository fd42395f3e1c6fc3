//! Per-run budgets (fuel, memory, wall clock), kept in thread-local state so
//! every helper that loops in Rust can charge and poll them cheaply.

use std::cell::Cell;
use std::time::Instant;

use super::err::{Exc, InterpResult};
use super::value::mem_used;

thread_local! {
    static FUEL_LEFT: Cell<u64> = const { Cell::new(u64::MAX) };
    static FUEL_TOTAL: Cell<u64> = const { Cell::new(u64::MAX) };
    static MEM_LIMIT: Cell<i64> = const { Cell::new(i64::MAX) };
    static MEM_BASE: Cell<i64> = const { Cell::new(0) };
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
    static WALL_MS: Cell<u64> = const { Cell::new(0) };
    static STACK_BASE: Cell<usize> = const { Cell::new(0) };
    static STACK_LIMIT: Cell<usize> = const { Cell::new(STACK_BUDGET) };
}

/// Stack bytes the interpreter's recursive helpers may use below the point
/// where the run started. Why: test threads get 2 MiB stacks and the worker's
/// main thread 8 MiB; 1 MiB leaves room for the caller and for debug builds'
/// larger frames, and is still thousands of levels in release builds.
const STACK_BUDGET: usize = 1 << 20;

/// Stack bytes a worker's run may use: the worker runs on its main thread,
/// whose stack may grow to 64 MiB (`RLIMIT_STACK`, `jail/plan.rs`). Why
/// 8 MiB: the nesting CPython allows (`repr` of lists ~997 deep) takes
/// ~3 MiB in a debug build, well under 1 MiB in a release build.
pub const WORKER_STACK_BUDGET: usize = 8 << 20;

/// Let the recursive helpers on this thread use `bytes` of stack below the
/// point its runs start ([`start`]); a thread with a small stack keeps the
/// default.
pub fn set_stack_budget(bytes: usize) {
    STACK_LIMIT.with(|l| l.set(bytes));
}

fn stack_addr() -> usize {
    let x = 0u8;
    std::hint::black_box(&x) as *const u8 as usize
}

/// Is there stack left for one more level of recursion?
///
/// # Errors
/// `RecursionError` (as CPython) when the budget is spent.
#[inline]
pub fn stack_check(what: &str) -> InterpResult<()> {
    let base = STACK_BASE.with(|b| b.get());
    if base == 0 {
        return Ok(());
    }
    let here = stack_addr();
    if base.saturating_sub(here) > STACK_LIMIT.with(|l| l.get()) {
        return Err(Exc::py(
            "RecursionError",
            format!("maximum recursion depth exceeded{what}"),
        ));
    }
    Ok(())
}

/// Fuel units between wall-clock and memory polls. Why: reading the clock
/// costs ~20 ns; 4K steps take well under a millisecond, so the timeout is
/// overshot by at most that. Memory growth between polls is bounded because
/// every large single allocation is preflighted with [`mem_check`].
const CLOCK_EVERY: u64 = 1 << 12;

/// Install the budgets of a run on this thread.
pub fn start(fuel: u64, memory_bytes: u64, wall_ms: u64) {
    FUEL_LEFT.with(|f| f.set(fuel));
    STACK_BASE.with(|b| b.set(stack_addr()));
    FUEL_TOTAL.with(|f| f.set(fuel));
    MEM_BASE.with(|b| b.set(mem_used()));
    MEM_LIMIT.with(|m| m.set(i64::try_from(memory_bytes).unwrap_or(i64::MAX)));
    WALL_MS.with(|w| w.set(wall_ms));
    DEADLINE.with(|d| d.set(Instant::now().checked_add(std::time::Duration::from_millis(wall_ms))));
}

/// Remove the budgets (so later code on this thread is unlimited).
pub fn finish() -> u64 {
    let used = FUEL_TOTAL.with(|t| t.get()) - FUEL_LEFT.with(|f| f.get());
    FUEL_LEFT.with(|f| f.set(u64::MAX));
    FUEL_TOTAL.with(|f| f.set(u64::MAX));
    MEM_LIMIT.with(|m| m.set(i64::MAX));
    DEADLINE.with(|d| d.set(None));
    STACK_BASE.with(|b| b.set(0));
    used
}

/// Fuel used so far in this run.
pub fn fuel_used() -> u64 {
    FUEL_TOTAL.with(|t| t.get()) - FUEL_LEFT.with(|f| f.get())
}

/// Consume `n` units of fuel; polls memory and (every so often) the clock.
///
/// # Errors
/// `fuel`, `memory` or `timeout` limit errors.
#[inline]
pub fn tick(n: u64) -> InterpResult<()> {
    let left = FUEL_LEFT.with(|f| f.get());
    if left < n {
        return Err(fuel_err());
    }
    let new = left - n;
    FUEL_LEFT.with(|f| f.set(new));
    // Poll memory and the clock whenever the count crosses a CLOCK_EVERY boundary.
    if (left ^ new) >= CLOCK_EVERY {
        mem_check(0)?;
        check_clock()?;
    }
    Ok(())
}

/// Consume `n` units of fuel where no error can be raised (inside a table
/// operation); the next [`tick`] reports a budget this exhausted.
pub fn spend(n: u64) {
    FUEL_LEFT.with(|f| f.set(f.get().saturating_sub(n)));
}

#[cold]
fn fuel_err() -> Box<Exc> {
    FUEL_LEFT.with(|f| f.set(0));
    let total = FUEL_TOTAL.with(|t| t.get());
    Exc::limit(
        "fuel",
        format!("fuel limit exceeded: the program used all {total} steps of its fuel budget"),
    )
}

#[cold]
fn check_clock() -> InterpResult<()> {
    if let Some(d) = DEADLINE.with(|d| d.get()) {
        if Instant::now() >= d {
            let ms = WALL_MS.with(|w| w.get());
            return Err(Exc::limit(
                "timeout",
                format!("the program ran longer than its wall-clock limit of {ms} ms"),
            ));
        }
    }
    Ok(())
}

/// Check that `extra` more bytes would fit in the memory budget.
///
/// # Errors
/// `memory` limit error.
#[inline]
pub fn mem_check(extra: u64) -> InterpResult<()> {
    let limit = MEM_LIMIT.with(|m| m.get());
    let used = mem_used() - MEM_BASE.with(|b| b.get());
    let extra = i64::try_from(extra).unwrap_or(i64::MAX);
    if used.saturating_add(extra) > limit {
        return Err(mem_err(limit));
    }
    Ok(())
}

#[cold]
fn mem_err(limit: i64) -> Box<Exc> {
    Exc::limit(
        "memory",
        format!("memory limit exceeded: the program's values need more than {limit} bytes"),
    )
}

/// Bytes the memory budget has left (what [`mem_check`] would still accept).
pub fn mem_left() -> u64 {
    let limit = MEM_LIMIT.with(|m| m.get());
    let used = mem_used() - MEM_BASE.with(|b| b.get());
    u64::try_from(limit.saturating_sub(used)).unwrap_or(0)
}

/// Preflight an allocation of `count` items of `size` bytes each.
///
/// # Errors
/// `memory` limit error.
pub fn mem_check_n(count: u64, size: u64) -> InterpResult<()> {
    mem_check(count.saturating_mul(size))
}
