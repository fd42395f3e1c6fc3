//! Copy-on-write faults taken before `Ready` instead of during the run.
//!
//! A forked worker shares every written page of the zygote (heap, stack,
//! the loaded objects' data and bss, thread-local storage) read-only; the
//! first write to each one in the worker is a copy-on-write fault. A run
//! writes the same few dozen pages every time (the allocator's free chunks
//! and its arena, the frames below `serve_one`), so those faults used to be
//! taken on the run's critical path (`loop+dict`: 18 of the 35 page faults
//! between `Run` and `Done`). This module breaks the sharing of those ranges
//! with `MADV_POPULATE_WRITE` right after the worker's jail is complete and
//! before it says `Ready`, while it waits in the pool.
//!
//! Only `madvise` is used (already in the executor's seccomp filter, for the
//! allocator); nothing here reads or changes a page's contents, and a range
//! that cannot be populated (a kernel before 5.14, a range not mapped) is
//! skipped: the run then takes those faults itself, as before.

/// How far below the current frame the stack is populated.
/// Why 16 KiB: a warm `loop+dict` run writes 3 pages below the frame that
/// calls `serve_one`; deeper programs take their own faults further down.
const STACK_BELOW: usize = 16 * 1024;

/// Largest heap range populated. Why 8 MiB: a zygote's heap after its
/// warm-up run is ~60 KiB in use; this only bounds the work if it grows.
const HEAP_MAX: usize = 8 << 20;

/// Largest writable segment populated (data + bss of one loaded object).
/// Why 1 MiB: the largest here is ~60 KiB; this only bounds the work.
const SEGMENT_MAX: usize = 1 << 20;

/// The page size (4096 if the system says something unusable).
pub(super) fn page_size() -> usize {
    // SAFETY: sysconf has no memory effects.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(p)
        .ok()
        .filter(|p| p.is_power_of_two())
        .unwrap_or(4096)
}

/// Break copy-on-write sharing for `[lo, hi)` (rounded out to pages).
/// Returns whether the kernel did it.
fn populate_write(lo: usize, hi: usize, page: usize) -> bool {
    let lo = lo & !(page - 1);
    let hi = hi.saturating_add(page - 1) & !(page - 1);
    if hi <= lo {
        return true;
    }
    // SAFETY: MADV_POPULATE_WRITE only faults in pages of existing
    // writable mappings as if written (copy-on-write broken, contents
    // unchanged); it fails with an errno for an unmapped or read-only range
    // and touches nothing then. No Rust object's memory changes.
    unsafe { libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_POPULATE_WRITE) == 0 }
}

/// Populate the heap in use, the stack just below this frame, the loaded
/// objects' writable segments (outside RELRO) and this thread's TLS block.
pub(super) fn shared_writable() {
    let page = page_size();
    heap(page);
    stack(page);
    segments(page);
    tls(page);
}

/// The main arena's heap up to its top chunk (the part ever handed out):
/// `[brk - arena, brk - keepcost)`.
fn heap(page: usize) {
    // SAFETY: sbrk(0) only reads the current break; mallinfo2 only reads
    // the allocator's counters (this process is single-threaded here).
    let (brk, info) = unsafe { (libc::sbrk(0) as usize, libc::mallinfo2()) };
    let (arena, top) = (info.arena, info.keepcost);
    if brk == usize::MAX || arena == 0 || arena > brk || top > arena {
        return;
    }
    let lo = brk - arena;
    let hi = (brk - top).min(lo.saturating_add(HEAP_MAX));
    populate_write(lo, hi, page);
}

/// The stack pages a run's frames will use, below this one.
fn stack(page: usize) {
    let here = 0u8;
    let sp = std::ptr::addr_of!(here) as usize;
    let top = sp.saturating_add(page);
    // The stack mapping ends somewhere below; if the full range is not
    // mapped, a shorter one is.
    let mut below = STACK_BELOW;
    while below >= page {
        if populate_write(sp.saturating_sub(below), top, page) {
            return;
        }
        below /= 2;
    }
}

/// This thread's static TLS block (Rust's thread-locals and libc's live in
/// one mapping next to the thread's descriptor).
fn tls(page: usize) {
    thread_local! {
        static MARK: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
    }
    let at = MARK.with(|m| m.as_ptr() as usize);
    populate_write(at, at.saturating_add(1), page);
}

/// Writable `PT_LOAD` segments of every loaded object, minus `PT_GNU_RELRO`
/// (read-only after relocation, and already private).
fn segments(page: usize) {
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: the loader passes a valid dl_phdr_info for the duration of
        // this call, whose dlpi_phdr points to dlpi_phnum program headers;
        // `data` is the `&mut usize` page size passed below.
        let (info, page) = unsafe { (&*info, *(data as *const usize)) };
        if info.dlpi_phdr.is_null() {
            return 0;
        }
        // SAFETY: as above.
        let phdrs = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum.into()) };
        let base = info.dlpi_addr as usize;
        let at = |ph: &libc::Elf64_Phdr| {
            let lo = base.wrapping_add(ph.p_vaddr as usize);
            (lo, lo.wrapping_add(ph.p_filesz as usize))
        };
        let relro = phdrs
            .iter()
            .find(|ph| ph.p_type == libc::PT_GNU_RELRO)
            .map(&at);
        for ph in phdrs {
            if ph.p_type != libc::PT_LOAD || ph.p_flags & libc::PF_W == 0 {
                continue;
            }
            let (mut lo, hi) = at(ph);
            if hi <= lo || hi - lo > SEGMENT_MAX {
                continue;
            }
            // RELRO is a prefix of the first writable segment.
            if let Some((rlo, rhi)) = relro {
                if rlo <= lo && rhi > lo {
                    lo = (rhi.saturating_add(page - 1) & !(page - 1)).min(hi);
                }
            }
            populate_write(lo, hi, page);
        }
        0
    }
    let mut page = page;
    // SAFETY: `each` follows dl_iterate_phdr's callback contract and only
    // reads `data` as the usize it is.
    unsafe {
        libc::dl_iterate_phdr(Some(each), std::ptr::addr_of_mut!(page).cast());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU8, Ordering};

    /// In `.data` (non-zero initial value), written before the fork: the
    /// child shares its page copy-on-write.
    static SHARED: AtomicU8 = AtomicU8::new(1);

    fn minflt() -> i64 {
        let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: getrusage writes one rusage struct.
        unsafe { libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr()) };
        // SAFETY: zero-initialised and filled in by the kernel.
        unsafe { ru.assume_init() }.ru_minflt
    }

    /// Minor faults taken while storing into `at`.
    #[inline(never)]
    fn faults_storing(at: &AtomicU8) -> i64 {
        let before = minflt();
        at.store(3, Ordering::SeqCst);
        minflt() - before
    }

    /// Page faults a forked child takes writing `SHARED` (after
    /// `shared_writable()` when `prefault`).
    fn faults_writing_shared_data(prefault: bool) -> i32 {
        SHARED.store(2, Ordering::SeqCst);
        // SAFETY: the child runs only the code below on its one thread
        // (no allocation, no lock another test thread could hold) and
        // leaves with _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            if prefault {
                shared_writable();
            }
            // A first pass over a byte this child already wrote faults in
            // the code and stack pages the measurement itself uses
            // (fork copies no page-table entries for program text).
            let own = AtomicU8::new(0);
            own.store(1, Ordering::SeqCst);
            let _ = faults_storing(&own);
            let n = faults_storing(&SHARED);
            // SAFETY: ends the child without running the test harness's state.
            unsafe { libc::_exit(n.clamp(0, 100) as i32) };
        }
        let mut status = 0;
        // SAFETY: waits for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(libc::WIFEXITED(status), "child died: {status:#x}");
        libc::WEXITSTATUS(status)
    }

    #[test]
    fn a_forked_child_writes_prefaulted_data_without_a_fault() {
        // Control: without pre-faulting, the write is a copy-on-write fault
        // (so this test can fail).
        assert!(faults_writing_shared_data(false) >= 1);
        assert_eq!(faults_writing_shared_data(true), 0);
    }
}
