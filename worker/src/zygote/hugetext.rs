//! The zygote's program text moved into anonymous (huge-page) memory, so
//! forked workers start with it mapped instead of faulting it in.
//!
//! Why: `fork` copies no page-table entries of a file-backed mapping that
//! has no private pages (the child can fault them back from the page
//! cache), so every forked worker used to fault the binary's text in again:
//! ~36 instruction-fetch faults per pooled worker (each mapping up to 16
//! pages around it), 14 of them between `Run` and `Done`. The faults were
//! the largest item of a pooled worker's CPU time after `fork` itself.
//! Anonymous memory is copied by reference at fork (its page-table entries
//! are, and a 2 MiB huge page is one entry), so with the text in anonymous
//! memory a forked worker takes no text fault at all.
//!
//! How (once, in the zygote, before its jail: its seccomp filter allows no
//! new executable memory afterwards): a private anonymous mapping at the
//! same 2 MiB phase as the text, asked for huge pages, receives a copy of
//! the text; it is made read + execute (never writable and executable at
//! once) and moved over the text with `mremap(MREMAP_FIXED)`, which
//! replaces the file mapping in one step with identical bytes at identical
//! addresses. Anything unexpected (the text segment is not exactly one
//! `r-xp` mapping of `/proc/self/maps`, a call fails) leaves the file
//! mapping as it is: workers then fault as before.
//!
//! Cost: the zygote's resident memory grows by the size of the text
//! (~17 MiB, shared by every worker it forks). Profilers cannot name
//! functions in anonymous memory: to profile pooled workers, run with the
//! jail level's zygote off, or profile exec'd workers.

/// Huge page size on x86-64 and the common arm64 configuration.
const HUGE: usize = 2 << 20;

/// Largest text moved. Why 256 MiB: the binary's text is ~17 MiB; this
/// only bounds the copy if something reports nonsense.
const MAX_TEXT: usize = 256 << 20;

/// The main program's executable segment, rounded out to pages.
fn main_text(page: usize) -> Option<(usize, usize)> {
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: the loader passes a valid dl_phdr_info for the duration of
        // this call; `data` is the `&mut Option<(usize, usize)>` passed below.
        let (info, out) = unsafe { (&*info, &mut *(data as *mut Option<(usize, usize)>)) };
        if info.dlpi_phdr.is_null() {
            return 1;
        }
        // SAFETY: dlpi_phdr points to dlpi_phnum program headers.
        let phdrs = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum.into()) };
        let base = info.dlpi_addr as usize;
        *out = phdrs
            .iter()
            .find(|ph| ph.p_type == libc::PT_LOAD && ph.p_flags & libc::PF_X != 0)
            .map(|ph| {
                let lo = base.wrapping_add(ph.p_vaddr as usize);
                (lo, lo.wrapping_add(ph.p_memsz as usize))
            });
        // The first object is the main program: stop after it.
        1
    }
    let mut found: Option<(usize, usize)> = None;
    // SAFETY: `each` follows dl_iterate_phdr's callback contract and writes
    // only the Option it is given.
    unsafe {
        libc::dl_iterate_phdr(Some(each), std::ptr::addr_of_mut!(found).cast());
    }
    let (lo, hi) = found?;
    let lo = lo & !(page - 1);
    let hi = hi.checked_add(page - 1)? & !(page - 1);
    (hi > lo && hi - lo <= MAX_TEXT).then_some((lo, hi))
}

/// Whether `[lo, hi)` is exactly one private read + execute mapping of
/// `/proc/self/maps` (so moving memory over it replaces that and nothing
/// else).
fn is_one_text_mapping(lo: usize, hi: usize) -> bool {
    // Field 5 is the inode: 0 for anonymous memory.
    text_mapping(lo, hi).is_some_and(|l| l.split_whitespace().nth(4).is_some_and(|i| i != "0"))
}

/// The line of `/proc/self/maps` that is exactly `[lo, hi)` and `r-xp`.
fn text_mapping(lo: usize, hi: usize) -> Option<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .find(|l| {
            let mut f = l.split_whitespace();
            let (Some(range), Some(perms)) = (f.next(), f.next()) else {
                return false;
            };
            let Some((a, b)) = range.split_once('-') else {
                return false;
            };
            let parse = |s: &str| usize::from_str_radix(s, 16).ok();
            perms == "r-xp" && parse(a) == Some(lo) && parse(b) == Some(hi)
        })
        .map(str::to_string)
}

/// Move the program text into anonymous memory (see the module docs).
/// Returns whether it was moved.
pub(crate) fn move_text() -> bool {
    let Some((lo, hi)) = main_text(super::prefault::page_size()) else {
        return false;
    };
    if !is_one_text_mapping(lo, hi) {
        return false;
    }
    let len = hi - lo;
    let Some(span) = len.checked_add(HUGE) else {
        return false;
    };
    // SAFETY: a fresh private anonymous mapping; no existing memory changes.
    let raw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            span,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        return false;
    }
    let raw = raw as usize;
    // The copy starts at the text's phase modulo 2 MiB, so the huge pages
    // it gets stay huge when moved.
    let off = (lo % HUGE + HUGE - raw % HUGE) % HUGE;
    let copy = raw + off;
    // SAFETY: `copy..copy+len` lies inside the mapping made
    // above, `lo..hi` is the readable text segment; they do not overlap.
    // madvise only advises; mprotect and munmap touch only our mapping;
    // mremap replaces `lo..hi` (exactly the text mapping, checked above)
    // with a byte-identical copy at the same addresses, so code running
    // from it (this function included) continues unchanged.
    let moved = unsafe {
        libc::madvise(copy as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        std::ptr::copy_nonoverlapping(lo as *const u8, copy as *mut u8, len);
        libc::mprotect(
            copy as *mut libc::c_void,
            len,
            libc::PROT_READ | libc::PROT_EXEC,
        ) == 0
            && libc::mremap(
                copy as *mut libc::c_void,
                len,
                len,
                libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                lo as *mut libc::c_void,
            ) as usize
                == lo
    };
    // SAFETY: only the parts of our own mapping that were not moved.
    unsafe {
        if off > 0 {
            libc::munmap(raw as *mut libc::c_void, off);
        }
        if !moved {
            libc::munmap(copy as *mut libc::c_void, len);
        }
        if HUGE - off > 0 {
            libc::munmap((copy + len) as *mut libc::c_void, HUGE - off);
        }
    }
    moved
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text segment is found, and in a forked child moving it leaves
    /// every function working (the child runs code from the moved text,
    /// then reports the mapping's new kind).
    #[test]
    fn text_moves_and_code_still_runs() {
        let page = 4096;
        let (lo, hi) = main_text(page).expect("the program has a text segment");
        assert!(hi > lo && lo % page == 0, "{lo:#x}..{hi:#x}");
        assert!(is_one_text_mapping(lo, hi), "{lo:#x}..{hi:#x}");
        // SAFETY: the child only moves its text, formats a string, and
        // leaves with _exit (no locks another test thread could hold are
        // taken: read_to_string allocates, which the test harness's
        // threads may hold the allocator lock for — glibc resets it in
        // the child after fork).
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            // Moved: the same range, now anonymous (no file, inode 0).
            let ok = move_text()
                && text_mapping(lo, hi).is_some_and(|l| l.split_whitespace().nth(4) == Some("0"));
            let v: Vec<String> = (0..100).map(|i| format!("{i}")).collect();
            let code = if ok && v.len() == 100 { 0 } else { 1 };
            // SAFETY: ends the child without running the parent's destructors.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: waits for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "{status:#x}"
        );
    }
}
