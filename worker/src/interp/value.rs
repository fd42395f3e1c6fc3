//! Run-time values: the Python objects a lackpy program can hold.
//!
//! Containers are reference-counted (`Rc`) with interior mutability, so
//! aliasing behaves as in CPython (`b = a; b.append(1)` changes `a`).
//! Every heap object records the bytes it was charged against the memory
//! budget and gives them back when dropped ([`mem_charge`]). Dropping a deeply
//! nested value never recurses ([`drop_values`]).

use num_bigint::BigInt;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::err::{Exc, InterpResult};

thread_local! {
    /// Accounted bytes of live values on this thread.
    static MEM: Cell<i64> = const { Cell::new(0) };
    static PEAK: Cell<i64> = const { Cell::new(0) };
    static PEAK_BASE: Cell<i64> = const { Cell::new(0) };
    static DROPPING: Cell<bool> = const { Cell::new(false) };
    static PENDING: RefCell<Vec<Value>> = const { RefCell::new(Vec::new()) };
}

/// Add `bytes` to this thread's accounted memory.
#[inline]
pub fn mem_charge(bytes: usize) {
    let now = MEM.with(|m| {
        let v = m.get().saturating_add(bytes as i64);
        m.set(v);
        v
    });
    PEAK.with(|p| {
        if now > p.get() {
            p.set(now);
            if now >= KEEP_HEAP_AT && !HEAP_KEPT.load(Ordering::Relaxed) {
                keep_freed_memory();
            }
        }
    });
}

/// Accounted bytes past which [`keep_freed_memory`] runs (once a process).
/// Small programs, the common case, never pay for it.
const KEEP_HEAP_AT: i64 = 1 << 20;
static HEAP_KEPT: AtomicBool = AtomicBool::new(false);

/// Ask the C allocator to keep the memory a program frees for reuse instead
/// of giving it back to the kernel and faulting it in again page by page.
///
/// Why: glibc's `free` trims the heap's free top back to the kernel once it
/// exceeds the trim threshold (128 KiB at start), and serves blocks of 128
/// KiB and more with `mmap`/`munmap`, so a program that builds and drops
/// big values (a 20,000-word `split()` and its 1.3 MiB of strs, a list of
/// 100,000 items) page-faults all of that memory in again the next time it
/// grows (profiles: 355 minor faults per run of one `split()`, a third of
/// its time in the kernel). How: mallopt(3) documents that freeing a block
/// that was `mmap`ped raises the mmap threshold to that block's size and the
/// trim threshold to twice it; so one untouched 8 MiB block (no pages
/// faulted in) is reserved and freed. Nothing else changes: the memory
/// budget counts values, not the allocator's free lists, and the kernel's
/// limits on the process still apply. Another allocator just sees one
/// allocation and its free. A failed reservation is ignored (no abort).
#[cold]
#[inline(never)]
fn keep_freed_memory() {
    HEAP_KEPT.store(true, Ordering::Relaxed);
    let mut block: Vec<u8> = Vec::new();
    if block.try_reserve_exact(8 << 20).is_ok() {
        // Keep the reservation from being optimised away.
        std::hint::black_box(&mut block);
    }
}

/// Start measuring peak accounted memory from now.
pub fn mem_peak_reset() {
    let now = mem_used();
    PEAK.with(|p| p.set(now));
    PEAK_BASE.with(|b| b.set(now));
}

/// Peak accounted bytes since [`mem_peak_reset`].
pub fn mem_peak() -> i64 {
    PEAK.with(|p| p.get()) - PEAK_BASE.with(|b| b.get())
}

/// Give `bytes` back.
#[inline]
pub fn mem_release(bytes: usize) {
    MEM.with(|m| m.set(m.get().saturating_sub(bytes as i64)));
}

/// Currently accounted bytes on this thread.
#[inline]
pub fn mem_used() -> i64 {
    MEM.with(|m| m.get())
}

/// Text a str value can be made from.
pub trait IntoPyStr {
    /// Make the str object (charged).
    fn into_rc(self) -> Rc<PyStr>;
}

impl IntoPyStr for String {
    #[inline]
    fn into_rc(self) -> Rc<PyStr> {
        let n = count_chars(&self);
        PyStr::rc_string(self, n)
    }
}

impl IntoPyStr for &str {
    #[inline]
    fn into_rc(self) -> Rc<PyStr> {
        PyStr::rc_copy(self, count_chars(self))
    }
}

impl IntoPyStr for &String {
    #[inline]
    fn into_rc(self) -> Rc<PyStr> {
        PyStr::rc_copy(self, count_chars(self))
    }
}

impl IntoPyStr for char {
    #[inline]
    fn into_rc(self) -> Rc<PyStr> {
        let mut b = [0u8; 4];
        PyStr::rc_copy(self.encode_utf8(&mut b), 1)
    }
}

impl IntoPyStr for i64 {
    /// `str(int)` for an i64, formatted on the stack.
    fn into_rc(self) -> Rc<PyStr> {
        let mut b = [0u8; 21];
        let mut k = decimal_digits(self.unsigned_abs(), &mut b);
        if self < 0 {
            k -= 1;
            b[k] = b'-';
        }
        // ASCII digits (and '-'): at most 20 bytes, always inline.
        let d = &b[k..];
        mem_charge(d.len() + OBJ);
        PyStr::rc_inline(d.len(), d.len(), |out| out.copy_from_slice(d))
    }
}

/// Write `u` in decimal at the end of `buf` (at least 20 bytes long);
/// returns where the digits start.
pub(crate) fn decimal_digits(mut u: u64, buf: &mut [u8]) -> usize {
    let mut k = buf.len();
    loop {
        k -= 1;
        buf[k] = b'0' + (u % 10) as u8;
        u /= 10;
        if u == 0 {
            return k;
        }
    }
}

/// Accounted size of one value slot inside a container.
pub const SLOT: usize = std::mem::size_of::<Value>();

// The layout note on `Value` relies on these.
const _: () = assert!(std::mem::size_of::<Value>() == 16);
const _: () = assert!(std::mem::size_of::<InterpResult<Option<Value>>>() == 16);
/// Fixed overhead charged per heap object.
pub const OBJ: usize = 48;

/// Drop a batch of values without recursing through nested containers.
pub fn drop_values(v: Vec<Value>) {
    if !v.iter().any(Value::is_container) {
        return;
    }
    let nested = DROPPING.with(|d| d.get());
    if nested {
        // An outer drop loop is running: hand containers to it.
        PENDING.with(|p| {
            if let Ok(mut p) = p.try_borrow_mut() {
                for x in v {
                    if x.is_container() {
                        p.push(x);
                    }
                }
            }
        });
        return;
    }
    DROPPING.with(|d| d.set(true));
    let mut stack: Vec<Value> = Vec::new();
    for x in v {
        if x.is_container() {
            stack.push(x);
        }
    }
    while let Some(x) = stack.pop() {
        drop(x);
        PENDING.with(|p| {
            if let Ok(mut p) = p.try_borrow_mut() {
                stack.append(&mut p);
            }
        });
    }
    DROPPING.with(|d| d.set(false));
}

/// Longest text kept inside the `PyStr` itself. Why 22: the inline
/// buffer then makes `Text` 24 bytes, the same as a `String`, so the
/// `Rc<PyStr>` allocation stays within one 64-byte malloc chunk.
pub(crate) const INLINE: usize = 22;
// `str(i64)` (at most 20 bytes) is always built inline.
const _: () = assert!(INLINE >= 20);
// The grown-text variant must not make `Text` larger than a `String`.
const _: () = assert!(std::mem::size_of::<Text>() == 24);

/// A str's bytes: short text inline (one allocation per str, as in
/// CPython, instead of an `Rc` plus a `String` buffer), longer text boxed.
#[derive(Debug)]
enum Text {
    /// Length and bytes. The bytes past the length are always zero (every
    /// inline text starts zeroed and is only ever written within its new
    /// length): [`PyStr::same_text`] compares whole buffers.
    Inline(u8, [u8; INLINE]),
    Heap(Box<str>),
    /// Text grown in place by `s += t` ([`PyStr::append_grow`]): a
    /// `String` with room to spare, so a loop of appends copies each byte
    /// a bounded number of times, as CPython's in-place resize does. Boxed
    /// to keep `Text` at 24 bytes; its capacity is what is charged.
    // A `String` here would make every str 8 bytes larger.
    #[allow(clippy::box_collection)]
    Grow(Box<String>),
}

impl Text {
    fn new(s: &str) -> Text {
        if s.len() <= INLINE {
            let mut b = [0u8; INLINE];
            b[..s.len()].copy_from_slice(s.as_bytes());
            Text::Inline(s.len() as u8, b)
        } else {
            Text::Heap(s.into())
        }
    }
    fn from_string(s: String) -> Text {
        if s.len() <= INLINE {
            Text::new(&s)
        } else {
            Text::Heap(s.into_boxed_str())
        }
    }
}

/// A Python `str`: UTF-8 text plus its length in code points.
pub struct PyStr {
    text: Text,
    /// Number of code points (== the byte length when ASCII).
    pub nchars: usize,
    /// Cached hash (0: not computed yet), as CPython caches str hashes:
    /// a key looked up and then stored is hashed once.
    hash: Cell<u64>,
}

impl std::fmt::Debug for PyStr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

fn count_chars(s: &str) -> usize {
    if s.is_ascii() {
        s.len()
    } else {
        s.chars().count()
    }
}

impl PyStr {
    /// Wrap text whose code-point count is already known (no rescan).
    #[inline]
    pub fn with_nchars(s: String, nchars: usize) -> PyStr {
        PyStr::charged(Text::from_string(s), nchars)
    }
    /// Copy text whose code-point count is already known.
    #[inline]
    pub fn copy_n(s: &str, nchars: usize) -> PyStr {
        PyStr::charged(Text::new(s), nchars)
    }
    /// A str of `text` (`nchars` code points), its bytes charged.
    #[inline]
    fn charged(text: Text, nchars: usize) -> PyStr {
        let s = PyStr {
            text,
            nchars,
            hash: Cell::new(0),
        };
        debug_assert_eq!(nchars, s.as_str().chars().count());
        mem_charge(s.as_bytes().len() + OBJ);
        s
    }
    /// A new str object whose inline text (`n` bytes, `nchars` code
    /// points) `fill` writes in place, inside the allocation (the caller
    /// charges it). Why in place: a buffer filled byte by byte and then
    /// moved into the `Rc` was re-read whole right after the byte stores,
    /// which stalls store-to-load forwarding.
    fn rc_inline(n: usize, nchars: usize, fill: impl FnOnce(&mut [u8])) -> Rc<PyStr> {
        let mut rc = Rc::new(PyStr {
            text: Text::Inline(n.min(INLINE) as u8, [0u8; INLINE]),
            nchars,
            hash: Cell::new(0),
        });
        if let Some(PyStr {
            text: Text::Inline(_, buf),
            ..
        }) = Rc::get_mut(&mut rc)
        {
            if let Some(out) = buf.get_mut(..n) {
                fill(out);
            }
        }
        rc
    }
    /// [`PyStr::with_nchars`], as a new str object.
    #[inline]
    pub fn rc_string(s: String, nchars: usize) -> Rc<PyStr> {
        if s.len() <= INLINE {
            PyStr::rc_copy(&s, nchars)
        } else {
            Rc::new(PyStr::with_nchars(s, nchars))
        }
    }
    /// [`PyStr::copy_n`], as a new str object.
    #[inline]
    pub fn rc_copy(s: &str, nchars: usize) -> Rc<PyStr> {
        debug_assert_eq!(nchars, s.chars().count());
        if s.len() <= INLINE {
            mem_charge(s.len() + OBJ);
            PyStr::rc_inline(s.len(), nchars, |out| out.copy_from_slice(s.as_bytes()))
        } else {
            Rc::new(PyStr::copy_n(s, nchars))
        }
    }
    /// [`PyStr::rc_copy`] for a caller that has already charged the
    /// str's `s.len() + OBJ` bytes, e.g. once for a whole batch of strs
    /// (`str.split()`): the same object, the same accounting when it is
    /// dropped, without a charge per str.
    #[inline]
    pub(crate) fn rc_copy_precharged(s: &str, nchars: usize) -> Rc<PyStr> {
        debug_assert_eq!(nchars, s.chars().count());
        if s.len() <= INLINE {
            PyStr::rc_inline(s.len(), nchars, |out| out.copy_from_slice(s.as_bytes()))
        } else {
            Rc::new(PyStr {
                text: Text::new(s),
                nchars,
                hash: Cell::new(0),
            })
        }
    }
    /// A short ASCII str written straight into its inline buffer by
    /// `fill` (which gets exactly `n` bytes and must write ASCII), or None
    /// when `n` is too long to be inline. No intermediate `String`. (It
    /// returns the finished value: a `PyStr` returned by value and then
    /// moved into its `Rc` was copied twice.)
    pub fn ascii_inline(n: usize, fill: impl FnOnce(&mut [u8])) -> Option<Value> {
        if n > INLINE {
            return None;
        }
        mem_charge(n + OBJ);
        Some(Value::Str(PyStr::rc_inline(n, n, fill)))
    }
    /// Rewrite short inline ASCII text in place, byte by byte, with `f`
    /// (which must map ASCII to ASCII; false, and nothing changed, for heap
    /// or non-ASCII text). For a str nothing else refers to
    /// (`Rc::get_mut`), such as the temporary `w.upper()` in
    /// `w.upper().replace('A', 'x')`.
    pub fn map_ascii_inline(&mut self, f: impl Fn(u8) -> u8) -> bool {
        if !self.is_ascii() {
            return false;
        }
        let Text::Inline(len, buf) = &mut self.text else {
            return false;
        };
        let Some(bytes) = buf.get_mut(..usize::from(*len)) else {
            return false;
        };
        for b in bytes.iter_mut() {
            let c = f(*b);
            // Stays ASCII, so stays UTF-8 with the same code-point count.
            *b = if c.is_ascii() { c } else { *b };
        }
        self.hash.set(0);
        true
    }
    /// Would [`PyStr::append_inline`] of `extra` bytes succeed?
    #[inline]
    pub fn can_append_inline(&self, extra: usize) -> bool {
        matches!(self.text, Text::Inline(..)) && self.len() + extra <= INLINE
    }
    /// `self + b` written into `self`'s inline buffer, when the result
    /// still fits there (false, and nothing changed, otherwise). For a str
    /// nothing else refers to (`Rc::get_mut`), such as the temporary
    /// `str(i) + ':'` in `str(i) + ':' + str(j)`: no allocation, and the
    /// temporary is not freed. Charges the added bytes.
    pub fn append_inline(&mut self, b: &PyStr) -> bool {
        if !self.can_append_inline(b.len()) {
            return false;
        }
        let n = self.len() + b.len();
        let Text::Inline(len, buf) = &mut self.text else {
            return false;
        };
        let Some(dst) = buf.get_mut(usize::from(*len)..n) else {
            return false;
        };
        dst.copy_from_slice(b.as_bytes());
        *len = n as u8;
        self.nchars += b.nchars;
        self.hash.set(0);
        mem_charge(b.len());
        true
    }
    /// `self + b` written into `self`, growing its buffer geometrically:
    /// for `s += t` on a str nothing else refers to (`Rc::get_mut`), where
    /// CPython resizes the str in place. Charges the added capacity; the
    /// caller checks memory and fuel for the added bytes first.
    pub fn append_grow(&mut self, b: &PyStr) {
        if self.append_inline(b) {
            return;
        }
        let before = self.accounted();
        let old = std::mem::replace(&mut self.text, Text::Inline(0, [0u8; INLINE]));
        let mut s = match old {
            Text::Inline(n, buf) => {
                let mut s = String::with_capacity(usize::from(n) + b.len());
                s.push_str(
                    std::str::from_utf8(buf.get(..usize::from(n)).unwrap_or_default())
                        .unwrap_or_default(),
                );
                s
            }
            Text::Heap(h) => h.into_string(),
            Text::Grow(g) => *g,
        };
        s.push_str(b.as_str());
        self.text = Text::Grow(Box::new(s));
        self.nchars += b.nchars;
        self.hash.set(0);
        mem_charge(self.accounted().saturating_sub(before));
    }
    /// The concatenation `a + b` (no intermediate `String` when short).
    pub fn concat(a: &PyStr, b: &PyStr) -> Value {
        let n = a.len() + b.len();
        mem_charge(n + OBJ);
        if n <= INLINE {
            // Two whole UTF-8 texts back to back are UTF-8.
            let (x, y) = (a.as_bytes(), b.as_bytes());
            return Value::Str(PyStr::rc_inline(n, a.nchars + b.nchars, |out| {
                let (l, r) = out.split_at_mut(x.len());
                l.copy_from_slice(x);
                r.copy_from_slice(y);
            }));
        }
        let text = {
            let mut s = String::with_capacity(n);
            s.push_str(a.as_str());
            s.push_str(b.as_str());
            Text::Heap(s.into_boxed_str())
        };
        Value::Str(Rc::new(PyStr {
            text,
            nchars: a.nchars + b.nchars,
            hash: Cell::new(0),
        }))
    }
    /// The text's UTF-8 bytes (no validation: for ==, ordering, hashing
    /// and copying, which mean the same on bytes as on text).
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        match &self.text {
            Text::Inline(n, b) => b.get(..usize::from(*n)).unwrap_or_default(),
            Text::Heap(s) => s.as_bytes(),
            Text::Grow(s) => s.as_bytes(),
        }
    }
    /// The text.
    #[inline]
    pub fn as_str(&self) -> &str {
        match &self.text {
            // Built from a `&str` prefix that ends on a char boundary (the
            // whole text), so this never fails; no `unsafe` needed.
            Text::Inline(n, b) => std::str::from_utf8(&b[..usize::from(*n)]).unwrap_or_default(),
            Text::Heap(s) => s,
            Text::Grow(s) => s,
        }
    }
    /// Length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        match &self.text {
            Text::Inline(n, _) => usize::from(*n),
            Text::Heap(s) => s.len(),
            Text::Grow(s) => s.len(),
        }
    }
    /// Bytes charged for the text: its length, or a grown text's capacity.
    #[inline]
    fn accounted(&self) -> usize {
        match &self.text {
            Text::Grow(s) => s.capacity(),
            _ => self.len(),
        }
    }
    /// Is it the empty string?
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Is the text the same? Two inline texts compare as (length, buffer)
    /// — fixed-size compares, no call into `memcmp` for a short key.
    #[inline]
    pub fn same_text(&self, other: &PyStr) -> bool {
        match (&self.text, &other.text) {
            (Text::Inline(a, x), Text::Inline(b, y)) => a == b && x == y,
            _ => self.as_bytes() == other.as_bytes(),
        }
    }
    /// The str's hash (computed once).
    #[inline]
    pub fn hash(&self) -> u64 {
        let h = self.hash.get();
        if h != 0 {
            return h;
        }
        let h = hash_str(self.as_bytes());
        self.hash.set(h);
        h
    }
    /// Is every code point ASCII?
    #[inline]
    pub fn is_ascii(&self) -> bool {
        self.nchars == self.len()
    }
    /// The code point at index `i` (0-based, in range).
    pub fn char_at(&self, i: usize) -> Option<char> {
        if self.is_ascii() {
            self.as_str().as_bytes().get(i).map(|b| *b as char)
        } else {
            self.as_str().chars().nth(i)
        }
    }
    /// Byte offset of code point `i` (clamped to the end).
    pub fn byte_offset(&self, i: usize) -> usize {
        if self.is_ascii() {
            i.min(self.len())
        } else {
            self.as_str()
                .char_indices()
                .nth(i)
                .map_or(self.len(), |(b, _)| b)
        }
    }
}

impl Drop for PyStr {
    fn drop(&mut self) {
        mem_release(self.accounted() + OBJ);
    }
}

/// A Python `list`.
#[derive(Debug, Default)]
pub struct List {
    /// Items.
    pub v: RefCell<Vec<Value>>,
    charged: Cell<usize>,
}

impl List {
    /// A new list (charged).
    pub fn new(v: Vec<Value>) -> List {
        let c = v.len() * SLOT + OBJ;
        mem_charge(c);
        List {
            v: RefCell::new(v),
            charged: Cell::new(c),
        }
    }
    /// Charge for `n` more slots.
    #[inline]
    pub fn grow(&self, n: usize) {
        let c = n * SLOT;
        mem_charge(c);
        self.charged.set(self.charged.get() + c);
    }
    /// Give back the charge for `n` removed slots.
    #[inline]
    pub fn shrink(&self, n: usize) {
        let c = (n * SLOT).min(self.charged.get().saturating_sub(OBJ));
        mem_release(c);
        self.charged.set(self.charged.get() - c);
    }
}

impl Drop for List {
    fn drop(&mut self) {
        mem_release(self.charged.get());
        drop_values(std::mem::take(self.v.get_mut()));
    }
}

/// A Python `tuple`.
#[derive(Debug)]
pub struct Tuple {
    /// Items.
    pub v: Vec<Value>,
}

impl Tuple {
    /// A new tuple (charged).
    pub fn new(v: Vec<Value>) -> Tuple {
        mem_charge(v.len() * SLOT + OBJ);
        Tuple { v }
    }
}

impl Drop for Tuple {
    fn drop(&mut self) {
        mem_release(self.v.len() * SLOT + OBJ);
        drop_values(std::mem::take(&mut self.v));
    }
}

/// Accounted size of one dict entry.
pub const ENTRY: usize = 2 * SLOT + 16;

/// An insertion-ordered hash table (CPython's compact dict layout): an
/// index table with linear probing into a dense entry vector.
#[derive(Debug, Default)]
pub struct Dict {
    entries: Vec<Option<(u64, Value, Value)>>,
    indices: Vec<u32>,
    live: usize,
    charged: usize,
    /// Deleted slots in `indices` (they count towards the load factor, so
    /// the table always keeps an EMPTY slot and probing terminates).
    tombs: usize,
    /// Every entry before this position is deleted (see `pop_first`).
    head: usize,
    /// Entries added since the last rebuild, live or deleted since: what
    /// CPython's `dk_usable` counts down (a deleted slot is never reused
    /// there), so the table is rebuilt when CPython's is resized.
    added: usize,
    /// The table has held a key that is not a str. CPython 3.11 starts a
    /// table whose first key is a str as a str-only table and resizes it
    /// (compacting the entries) when the first other key is inserted.
    general: bool,
}

const EMPTY: u32 = u32::MAX;
const TOMB: u32 = u32::MAX - 1;

impl Dict {
    /// An empty dict.
    pub fn new() -> Dict {
        Dict::default()
    }
    /// Number of live entries.
    #[inline]
    pub fn len(&self) -> usize {
        self.live
    }
    /// Is it empty?
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }
    /// Entry storage length (live + deleted), for iteration by position.
    #[inline]
    pub fn raw_len(&self) -> usize {
        self.entries.len()
    }
    /// Entry at storage position `i`, if live.
    #[inline]
    pub fn raw_get(&self, i: usize) -> Option<(&Value, &Value)> {
        match self.entries.get(i) {
            Some(Some((_, k, v))) => Some((k, v)),
            _ => None,
        }
    }
    /// Live entries in order.
    pub fn iter(&self) -> impl Iterator<Item = (&Value, &Value)> {
        self.entries
            .iter()
            .filter_map(|e| e.as_ref().map(|(_, k, v)| (k, v)))
    }
    /// Keys in order.
    pub fn keys(&self) -> impl Iterator<Item = &Value> {
        self.iter().map(|(k, _)| k)
    }

    fn find(&self, h: u64, key: &Value) -> Result<usize, usize> {
        // Ok(slot index in `indices` holding the entry) or Err(insert slot).
        let n = self.indices.len();
        if n == 0 {
            return Err(usize::MAX);
        }
        let mask = n - 1;
        let mut i = (h as usize) & mask;
        let mut first_tomb = usize::MAX;
        for _ in 0..n {
            let ix = self.indices[i];
            if ix == EMPTY {
                return Err(if first_tomb != usize::MAX {
                    first_tomb
                } else {
                    i
                });
            }
            if ix == TOMB {
                if first_tomb == usize::MAX {
                    first_tomb = i;
                }
            } else if let Some(Some((eh, ek, _))) = self.entries.get(ix as usize) {
                if *eh == h && key_eq(ek, key) {
                    return Ok(i);
                }
            }
            i = (i + 1) & mask;
        }
        // Unreachable while the load factor holds; never loop forever.
        Err(first_tomb)
    }

    /// The table size CPython 3.11 resizes to for `minsize`
    /// (`calculate_log2_keysize`, quirks included: 6 gives 16, 16 gives 32).
    fn cpython_size(minsize: usize) -> usize {
        let m = ((minsize | 8) - 1) | 7;
        let bits = usize::BITS - m.leading_zeros();
        1usize.checked_shl(bits).unwrap_or(usize::MAX / 2 + 1)
    }

    /// CPython's insertion_resize: GROWTH_RATE is 3 * used.
    fn grow(&mut self) {
        let size = Self::cpython_size(self.live.saturating_mul(3));
        self.rebuild_to(size, self.live + 1);
    }

    fn rebuild(&mut self, cap: usize) {
        let mut size = 8;
        while size * 2 < cap * 3 {
            size *= 2;
        }
        self.rebuild_to(size, cap);
    }

    fn rebuild_to(&mut self, size: usize, cap: usize) {
        let old = std::mem::take(&mut self.entries);
        self.entries = Vec::with_capacity(cap);
        for e in old.into_iter().flatten() {
            self.entries.push(Some(e));
        }
        self.indices = vec![EMPTY; size];
        self.tombs = 0;
        self.added = self.entries.len();
        self.head = 0;
        let mask = size - 1;
        for (pos, e) in self.entries.iter().enumerate() {
            if let Some((h, _, _)) = e {
                let mut i = (*h as usize) & mask;
                while self.indices[i] != EMPTY {
                    i = (i + 1) & mask;
                }
                self.indices[i] = pos as u32;
            }
        }
    }

    /// Look up a key (whose hash is `h`).
    pub fn get_h(&self, h: u64, key: &Value) -> Option<&Value> {
        match self.find(h, key) {
            Ok(i) => match self.entries.get(self.indices[i] as usize) {
                Some(Some((_, _, v))) => Some(v),
                _ => None,
            },
            Err(_) => None,
        }
    }

    /// Look up a key.
    ///
    /// # Errors
    /// TypeError for an unhashable key.
    pub fn get(&self, key: &Value) -> InterpResult<Option<&Value>> {
        let h = hash_value(key)?;
        Ok(self.get_h(h, key))
    }

    /// Insert or replace (hash precomputed). Returns whether a new entry was added.
    pub fn insert_h(&mut self, h: u64, key: Value, val: Value) -> bool {
        match self.find(h, &key) {
            Ok(i) => {
                let ix = self.indices[i] as usize;
                if let Some(Some(e)) = self.entries.get_mut(ix) {
                    // CPython keeps the original key object.
                    e.2 = val;
                }
                false
            }
            Err(_) => {
                let is_str = matches!(key, Value::Str(_));
                if self.indices.is_empty() {
                    self.general = !is_str;
                } else if !self.general && !is_str {
                    // insertion_resize to a general table.
                    self.grow();
                    self.general = true;
                }
                let used = self
                    .added
                    .max(self.entries.len())
                    .max(self.live + self.tombs);
                if (used + 1) * 3 >= self.indices.len() * 2 {
                    // CPython's insertion_resize, so entry positions
                    // (which iteration follows) move when CPython's do.
                    self.grow();
                }
                let mut slot = match self.find(h, &key) {
                    Err(s) => s,
                    Ok(s) => s,
                };
                if slot >= self.indices.len() {
                    self.rebuild((self.live + 1) * 2);
                    slot = match self.find(h, &key) {
                        Err(s) | Ok(s) => s,
                    };
                }
                let Some(cell) = self.indices.get_mut(slot) else {
                    return false;
                };
                if *cell == TOMB {
                    self.tombs -= 1;
                }
                *cell = self.entries.len() as u32;
                self.entries.push(Some((h, key, val)));
                self.live += 1;
                self.added += 1;
                self.charged += ENTRY;
                mem_charge(ENTRY);
                true
            }
        }
    }

    /// Insert or replace.
    ///
    /// # Errors
    /// TypeError for an unhashable key.
    pub fn insert(&mut self, key: Value, val: Value) -> InterpResult<bool> {
        let h = hash_value(&key)?;
        Ok(self.insert_h(h, key, val))
    }

    /// Remove a key, returning its value.
    ///
    /// # Errors
    /// TypeError for an unhashable key.
    pub fn remove(&mut self, key: &Value) -> InterpResult<Option<(Value, Value)>> {
        let h = hash_value(key)?;
        Ok(self.remove_h(h, key))
    }

    fn remove_h(&mut self, h: u64, key: &Value) -> Option<(Value, Value)> {
        match self.find(h, key) {
            Ok(i) => {
                let ix = self.indices[i] as usize;
                self.indices[i] = TOMB;
                self.tombs += 1;
                let e = self.entries.get_mut(ix).and_then(|e| e.take());
                self.live -= 1;
                let give = ENTRY.min(self.charged);
                self.charged -= give;
                mem_release(give);
                e.map(|(_, k, v)| (k, v))
            }
            Err(_) => None,
        }
    }

    /// Remove and return the last entry.
    pub fn pop_last(&mut self) -> Option<(Value, Value)> {
        let (i, h, k) = self
            .entries
            .iter()
            .enumerate()
            .rev()
            .find_map(|(i, e)| e.as_ref().map(|(h, k, _)| (i, *h, k.clone())))?;
        let r = self.remove_h(h, &k);
        // As CPython's popitem (dk_nentries = i): the popped entry and the
        // deleted ones after it are dropped, so repeated pops stay O(1). A
        // plain delete keeps its slot, as CPython's does.
        self.entries.truncate(i);
        r
    }

    /// Remove and return the first entry.
    pub fn pop_first(&mut self) -> Option<(Value, Value)> {
        // `head`: entries before it are known to be deleted, so repeated pops
        // from the front stay amortised O(1).
        if self.head > self.entries.len() {
            self.head = 0;
        }
        while matches!(self.entries.get(self.head), Some(None)) {
            self.head += 1;
        }
        let (h, k) = match self.entries.get(self.head) {
            Some(Some((h, k, _))) => (*h, k.clone()),
            _ => return None,
        };
        self.remove_h(h, &k)
    }

    /// A dict (of a set) holding `keys` (lackpy hash, key) in this order,
    /// values `None`; the keys are distinct.
    pub fn with_keys_in_order(keys: Vec<(u64, Value)>) -> Dict {
        let n = keys.len();
        let charged = n * ENTRY;
        mem_charge(charged);
        let mut d = Dict::new();
        d.entries = keys
            .into_iter()
            .map(|(h, k)| Some((h, k, Value::None)))
            .collect();
        d.charged = charged;
        d.live = n;
        d.rebuild(n.max(1));
        d
    }

    /// Remove everything.
    pub fn clear(&mut self) {
        let old = std::mem::take(&mut self.entries);
        self.indices.clear();
        self.tombs = 0;
        self.added = 0;
        self.head = 0;
        self.live = 0;
        mem_release(self.charged);
        self.charged = 0;
        let mut vals = Vec::with_capacity(old.len() * 2);
        for (_, k, v) in old.into_iter().flatten() {
            vals.push(k);
            vals.push(v);
        }
        drop_values(vals);
    }

    /// A shallow copy.
    pub fn copy(&self) -> Dict {
        // CPython's PyDict_Copy clones the table as it is (deleted entries,
        // insertion room and all) unless over a third of its entries are
        // deleted; then the copy is a merge into a new dict.
        if self.live > 0 && self.live >= self.entries.len() * 2 / 3 {
            return self.clone_table();
        }
        let mut d = Dict::new();
        d.merge_from(self);
        d
    }

    /// The table as it is, deleted entries included (CPython's
    /// clone_combined_dict_keys).
    fn clone_table(&self) -> Dict {
        let charged = self.live * ENTRY;
        mem_charge(charged);
        Dict {
            entries: self.entries.clone(),
            indices: self.indices.clone(),
            live: self.live,
            charged,
            tombs: self.tombs,
            head: self.head,
            added: self.added,
            general: self.general,
        }
    }

    /// Insert every entry of `other` (a different dict), as CPython's
    /// dict_merge does for dict(d), d.update(other) and `{**other}`: an
    /// empty dict takes a clone of a compact `other` whose table is small
    /// or well filled; otherwise a table too small for `other` is resized
    /// once first (estimate_log2_keysize), then the entries go in.
    pub fn merge_from(&mut self, other: &Dict) {
        if other.live == 0 {
            return;
        }
        let slots = other.indices.len();
        if self.live == 0
            && other.live == other.entries.len()
            && (slots == 8 || (slots / 2) * 2 / 3 < other.live)
        {
            let old = std::mem::replace(self, other.clone_table());
            drop(old);
            return;
        }
        if self.indices.len() * 2 / 3 < other.live {
            let want = (3 * (self.live + other.live)).div_ceil(2);
            let was_empty = self.indices.is_empty();
            self.rebuild_to(Self::cpython_size(want), self.live + other.live);
            self.general = if was_empty {
                other.general
            } else {
                self.general || other.general
            };
        }
        for (h, k, v) in other.entries.iter().flatten() {
            self.insert_h(*h, k.clone(), v.clone());
        }
    }

    /// Does it contain the key?
    ///
    /// # Errors
    /// TypeError for an unhashable key.
    pub fn contains(&self, key: &Value) -> InterpResult<bool> {
        Ok(self.get(key)?.is_some())
    }
}

impl Drop for Dict {
    fn drop(&mut self) {
        mem_release(self.charged);
        let old = std::mem::take(&mut self.entries);
        let mut vals = Vec::new();
        for (_, k, v) in old.into_iter().flatten() {
            if v.is_container() {
                vals.push(v);
            }
            if k.is_container() {
                vals.push(k);
            }
        }
        drop_values(vals);
    }
}

/// A Python `dict` object.
#[derive(Debug, Default)]
pub struct DictObj {
    /// The table.
    pub d: RefCell<Dict>,
}

/// A Python `set` object (a dict whose values are unused). Iteration is in
/// CPython's order when CPython's hashes of the elements are the same in
/// every process (ints, floats, tuples of them: [`super::setorder`]), in
/// insertion order otherwise.
#[derive(Debug)]
pub struct SetObj {
    /// The table. Adding through it directly needs [`SetObj::added`];
    /// anything else that changes it needs [`SetObj::materialize`] first and
    /// the model told after; reading it in order needs
    /// [`SetObj::in_order`].
    pub d: RefCell<Dict>,
    /// CPython's table for these keys.
    order: RefCell<Order>,
    /// `d`'s entries are in the model's order.
    ordered: Cell<bool>,
}

/// Most elements a set's order model follows. Why: the model roughly
/// doubles a set's memory; a set that grows past this keeps insertion order
/// from then on (printing such a set unsorted is not something programs
/// compared with CPython do), so large sets cost what they did.
pub const MAX_MODEL_KEYS: usize = 1 << 16;

/// How a set's iteration order is known.
#[derive(Debug)]
enum Order {
    /// Only adds so far: CPython's table is the one adding `d`'s keys in
    /// `d`'s order makes (built when first needed, so a set only used for
    /// membership never pays for it).
    Adds,
    /// CPython's table.
    Model(super::setorder::Model),
    /// A key CPython hashes differently in every process: insertion order.
    Insertion,
}

/// CPython's table after adding `d`'s keys one by one, in order (`None`
/// when a key has no process-independent hash).
pub fn model_adding(d: &Dict) -> Option<super::setorder::Model> {
    if d.len() > MAX_MODEL_KEYS {
        return None;
    }
    model_keys(d).map(super::setorder::Model::from_keys)
}

/// CPython's table after `set_update_internal` of a dict holding `d`'s
/// keys: sized once for all of them, then the keys added in order.
pub fn model_presized(d: &Dict) -> Option<super::setorder::Model> {
    model_keys(d).map(|keys| super::setorder::Model::presized(d.len(), keys))
}

/// The keys of `d` with their CPython and lackpy hashes, when every one
/// has a process-independent hash.
pub fn model_keys(d: &Dict) -> Option<Vec<(i64, u64, Value)>> {
    if d.len() > MAX_MODEL_KEYS {
        return None;
    }
    d.entries
        .iter()
        .flatten()
        .map(|(h, k, _)| super::setorder::cpython_hash(k).map(|c| (c, *h, k.clone())))
        .collect()
}

impl SetObj {
    fn new(d: Dict, order: Order) -> SetObj {
        SetObj {
            d: RefCell::new(d),
            order: RefCell::new(order),
            ordered: Cell::new(false),
        }
    }

    /// Build the model of a set that only had adds (before anything other
    /// than an add changes it).
    pub fn materialize(&self) {
        let (Ok(mut order), Ok(d)) = (self.order.try_borrow_mut(), self.d.try_borrow()) else {
            return;
        };
        if matches!(*order, Order::Adds) {
            *order = match model_adding(&d) {
                Some(m) => Order::Model(m),
                None => Order::Insertion,
            };
        }
    }

    /// Apply `f` to the model of a set that has one (`f` leaving `None`
    /// gives the set insertion order); a set with only adds so far, or in
    /// insertion order, is left as it is.
    fn with_model(&self, f: impl FnOnce(&mut Option<super::setorder::Model>)) {
        let Ok(mut order) = self.order.try_borrow_mut() else {
            return;
        };
        if !matches!(*order, Order::Model(_)) {
            return;
        }
        let Order::Model(m) = std::mem::replace(&mut *order, Order::Insertion) else {
            return;
        };
        let mut model = Some(m);
        f(&mut model);
        if let Some(m) = model {
            *order = Order::Model(m);
        }
    }

    /// Put `d`'s entries in iteration order (a set borrowed elsewhere at
    /// this moment is left as it is).
    ///
    /// # Errors
    /// Fuel (the model's probing, one tick per 8 entries reordered).
    pub fn in_order(&self) -> InterpResult<()> {
        if self.ordered.get() {
            return Ok(());
        }
        self.materialize();
        let (Ok(mut d), Ok(mut order)) = (self.d.try_borrow_mut(), self.order.try_borrow_mut())
        else {
            return Ok(());
        };
        self.ordered.set(true);
        let Order::Model(m) = &mut *order else {
            return Ok(());
        };
        super::budget::tick(d.len() as u64 / 8)?;
        if m.len() != d.len() {
            // Out of step (cannot happen): keep insertion order.
            *order = Order::Insertion;
            return Ok(());
        }
        let keys: Vec<(u64, Value)> = m.keys().map(|(h, k)| (h, k.clone())).collect();
        *d = Dict::with_keys_in_order(keys);
        Ok(())
    }

    /// `key` was just added to `d` (it was not there).
    pub fn added(&self, key: &Value) {
        self.ordered.set(false);
        self.with_model(|m| super::setorder::Model::add_to(m, key));
    }

    /// `key` was just removed from `d` (after [`SetObj::materialize`]).
    pub fn removed(&self, key: &Value) {
        self.with_model(|m| super::setorder::Model::discard_from(m, key));
    }

    /// The key `set.pop()` takes (CPython's: from its table's finger);
    /// `None` when no model orders this set.
    pub fn pop_key(&self) -> Option<Value> {
        self.materialize();
        match &mut *self.order.try_borrow_mut().ok()? {
            Order::Model(m) => m.pop(),
            _ => None,
        }
    }

    /// Everything was removed from `d`.
    pub fn cleared(&self) {
        self.ordered.set(false);
        if let Ok(mut order) = self.order.try_borrow_mut() {
            *order = Order::Adds;
        }
    }

    /// Before `other`'s keys go into `d`: CPython's `set_merge` of a set.
    pub fn merging(&self, other: &SetObj) {
        self.materialize();
        self.ordered.set(false);
        let theirs = other.model_raw();
        let Ok(d) = self.d.try_borrow() else {
            return;
        };
        self.with_model(|m| {
            super::setorder::Model::merge_into(m, theirs.as_ref(), |k| {
                d.contains(k).unwrap_or(true)
            })
        });
    }

    /// This set's model as it is.
    pub fn model_raw(&self) -> Option<super::setorder::Model> {
        self.materialize();
        match &*self.order.try_borrow().ok()? {
            Order::Model(m) => Some(m.clone()),
            _ => None,
        }
    }

    /// The model of a copy (`set(s)`, `s.copy()`, the start of a union).
    pub fn model_copy(&self) -> Option<super::setorder::Model> {
        self.materialize();
        match &*self.order.try_borrow().ok()? {
            Order::Model(m) => Some(m.copied()),
            _ => None,
        }
    }

    /// Replace the model (after the table was replaced).
    pub fn set_model(&self, m: Option<super::setorder::Model>) {
        self.ordered.set(false);
        if let Ok(mut order) = self.order.try_borrow_mut() {
            *order = match m {
                Some(m) if m.len() <= MAX_MODEL_KEYS => Order::Model(m),
                _ => Order::Insertion,
            };
        }
    }
}

/// A `range`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeV {
    /// Start.
    pub start: i128,
    /// Stop.
    pub stop: i128,
    /// Step (never 0).
    pub step: i128,
}

/// Largest magnitude of a range bound. Why: bounds are kept in i128 so that
/// `range(10**20)` works as in CPython; 2^100 leaves headroom so that length
/// and element arithmetic can never overflow i128.
pub const RANGE_BOUND: i128 = 1 << 100;

impl RangeV {
    /// Number of elements, exactly.
    pub fn len128(&self) -> i128 {
        let (lo, hi, st) = (self.start, self.stop, self.step);
        if st > 0 {
            if hi > lo {
                (hi - lo + st - 1) / st
            } else {
                0
            }
        } else if lo > hi {
            (lo - hi - st - 1) / (-st)
        } else {
            0
        }
    }
    /// Number of elements (saturating at usize::MAX).
    pub fn len(&self) -> usize {
        self.len128().clamp(0, usize::MAX as i128) as usize
    }
    /// Is it empty?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Element `i` (in range).
    pub fn at(&self, i: usize) -> Value {
        Value::from_i128(self.start + self.step * i as i128)
    }
}

/// A `dict.values()` view object (of this dict).
#[derive(Debug)]
pub struct ValuesView(pub Rc<DictObj>);

/// Which view of a dict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewKind {
    /// `dict.keys()`.
    Keys,
    /// `dict.values()`.
    Values,
    /// `dict.items()`.
    Items,
}

/// Something callable that may be a value only as a `key=` argument.
#[derive(Debug)]
pub enum Func {
    /// A lambda: parameter slot and body (index into the code's lambda table).
    Lambda(usize),
    /// A builtin function used as a key (`key=len`).
    Builtin(super::compile::Builtin),
    /// A bound method (`key=counts.get`).
    Method(Value, super::methods::Method),
}

/// A Python value.
///
/// `repr(u64)`: the tag is a whole word and every payload one word, so a
/// value is two plain words with no padding. With the default layout (a
/// one-byte tag, and some payloads packed next to it) values were copied
/// piecewise and re-read whole, and every hand-over of a value between
/// functions stalled on store-to-load forwarding; measured at ~30% of the
/// time of simple loops. Still 16 bytes, and `Option<Value>`/`InterpResult<Value>`
/// still fit in 16 (the spare tag values are the niche).
#[derive(Debug)]
#[repr(u64)]
pub enum Value {
    /// `None`.
    None,
    /// `bool`.
    Bool(bool),
    /// `int` in the i64 range.
    Int(i64),
    /// `int` outside the i64 range (never holds a value that fits i64).
    Big(Rc<BigInt>),
    /// `float`.
    Float(f64),
    /// `str`.
    Str(Rc<PyStr>),
    /// `list`.
    List(Rc<List>),
    /// `tuple`.
    Tuple(Rc<Tuple>),
    /// `dict`.
    Dict(Rc<DictObj>),
    /// `set`.
    Set(Rc<SetObj>),
    /// `range`.
    Range(Rc<RangeV>),
    /// `dict.keys()` (the view kind is part of the variant so that every
    /// variant's payload is one word: see the `repr` note on [`Value`]).
    Keys(Rc<DictObj>),
    /// `dict.values()`: its own object, because values views compare and
    /// hash by identity (CPython), so `v == v` holds while
    /// `d.values() == d.values()` does not.
    Values(Rc<ValuesView>),
    /// `dict.items()`.
    Items(Rc<DictObj>),
    /// An iterator (enumerate, zip, reversed, generator, ...).
    Iter(Rc<RefCell<super::iter::Iter>>),
    /// A key function.
    Func(Rc<Func>),
}

impl Clone for Value {
    /// As the derived impl, but inlined: values are cloned on every load of
    /// a variable or constant, and an out-of-line call showed in profiles.
    #[inline]
    fn clone(&self) -> Value {
        match self {
            Value::None => Value::None,
            Value::Bool(b) => Value::Bool(*b),
            Value::Int(i) => Value::Int(*i),
            Value::Float(f) => Value::Float(*f),
            Value::Big(x) => Value::Big(Rc::clone(x)),
            Value::Str(x) => Value::Str(Rc::clone(x)),
            Value::List(x) => Value::List(Rc::clone(x)),
            Value::Tuple(x) => Value::Tuple(Rc::clone(x)),
            Value::Dict(x) => Value::Dict(Rc::clone(x)),
            Value::Set(x) => Value::Set(Rc::clone(x)),
            Value::Range(x) => Value::Range(Rc::clone(x)),
            Value::Keys(x) => Value::Keys(Rc::clone(x)),
            Value::Values(x) => Value::Values(Rc::clone(x)),
            Value::Items(x) => Value::Items(Rc::clone(x)),
            Value::Iter(x) => Value::Iter(Rc::clone(x)),
            Value::Func(x) => Value::Func(Rc::clone(x)),
        }
    }
}

thread_local! {
    static NAN_SEQ: std::cell::Cell<u64> = const { std::cell::Cell::new(1) };
}

/// A NaN with a payload unique on this thread, so that two `float('nan')`
/// objects are not `is`-identical while one object is identical to itself
/// (floats are unboxed; the payload stands in for the object identity).
pub fn fresh_nan() -> f64 {
    let n = NAN_SEQ.with(|c| {
        let v = c.get();
        c.set(v.wrapping_add(1));
        v
    });
    f64::from_bits(0x7ff8_0000_0000_0000 | (n & 0x0007_ffff_ffff_ffff))
}

impl Value {
    /// A float computed by arithmetic: a new object in CPython, so a NaN
    /// result gets a fresh payload (not `is`-identical to any other NaN).
    #[inline]
    pub fn new_float(f: f64) -> Value {
        Value::Float(if f.is_nan() { fresh_nan() } else { f })
    }

    /// A dict view of the given kind.
    pub fn view(d: Rc<DictObj>, kind: ViewKind) -> Value {
        match kind {
            ViewKind::Keys => Value::Keys(d),
            ViewKind::Values => Value::Values(Rc::new(ValuesView(d))),
            ViewKind::Items => Value::Items(d),
        }
    }
    /// The dict and kind of a dict (iterated as its keys) or a view (None for anything else).
    #[inline]
    pub fn dict_or_view(&self) -> Option<(&Rc<DictObj>, ViewKind)> {
        match self {
            Value::Dict(d) => Some((d, ViewKind::Keys)),
            _ => self.as_view(),
        }
    }
    /// The dict and kind of a view (None for anything else).
    #[inline]
    pub fn as_view(&self) -> Option<(&Rc<DictObj>, ViewKind)> {
        match self {
            Value::Keys(d) => Some((d, ViewKind::Keys)),
            Value::Values(v) => Some((&v.0, ViewKind::Values)),
            Value::Items(d) => Some((d, ViewKind::Items)),
            _ => None,
        }
    }
    /// A new str value (from a `String`, moved, or a `&str`, copied —
    /// short text then needs no intermediate `String`).
    #[inline]
    pub fn str(s: impl IntoPyStr) -> Value {
        Value::Str(s.into_rc())
    }
    /// A new list value.
    pub fn list(v: Vec<Value>) -> Value {
        Value::List(Rc::new(List::new(v)))
    }
    /// A new tuple value.
    pub fn tuple(v: Vec<Value>) -> Value {
        Value::Tuple(Rc::new(Tuple::new(v)))
    }
    /// A new dict value.
    pub fn dict(d: Dict) -> Value {
        Value::Dict(Rc::new(DictObj { d: RefCell::new(d) }))
    }
    /// A new set value: ordered as CPython orders a set that had `d`'s
    /// keys added one by one, in `d`'s order.
    pub fn set(d: Dict) -> Value {
        Value::Set(Rc::new(SetObj::new(d, Order::Adds)))
    }
    /// A new set value with CPython's table `model` (`None`: insertion
    /// order).
    pub fn set_with(d: Dict, model: Option<super::setorder::Model>) -> Value {
        let order = match model {
            Some(m) if d.len() <= MAX_MODEL_KEYS => Order::Model(m),
            _ => Order::Insertion,
        };
        Value::Set(Rc::new(SetObj::new(d, order)))
    }
    /// A new set value for a display of 3 or more constants (`{3, 1, 2}`).
    pub fn set_display(d: Dict) -> Value {
        let model = model_keys(&d).map(super::setorder::Model::display);
        Self::set_with(d, model)
    }
    /// An int from a BigInt, normalised to the i64 fast path when it fits.
    pub fn from_big(b: BigInt) -> Value {
        use num_traits::ToPrimitive;
        match b.to_i64() {
            Some(i) => Value::Int(i),
            None => {
                mem_charge(b.bits() as usize / 8 + OBJ);
                Value::Big(Rc::new(b))
            }
        }
    }

    /// An int from an i128.
    #[inline]
    pub fn from_i128(v: i128) -> Value {
        match i64::try_from(v) {
            Ok(i) => Value::Int(i),
            Err(_) => Value::from_big(BigInt::from(v)),
        }
    }

    /// Could dropping this value recurse?
    #[inline]
    pub fn is_container(&self) -> bool {
        matches!(
            self,
            Value::List(_)
                | Value::Tuple(_)
                | Value::Dict(_)
                | Value::Set(_)
                | Value::Iter(_)
                | Value::Keys(_)
                | Value::Values(_)
                | Value::Items(_)
                | Value::Func(_)
        )
    }

    /// Python type name, as in error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::None => "NoneType",
            Value::Bool(_) => "bool",
            Value::Int(_) | Value::Big(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "str",
            Value::List(_) => "list",
            Value::Tuple(_) => "tuple",
            Value::Dict(_) => "dict",
            Value::Set(_) => "set",
            Value::Range(_) => "range",
            Value::Keys(_) => "dict_keys",
            Value::Values(_) => "dict_values",
            Value::Items(_) => "dict_items",
            Value::Iter(it) => match it.try_borrow() {
                Ok(i) => i.type_name(),
                Err(_) => "generator",
            },
            Value::Func(f) => match &**f {
                Func::Lambda(_) => "function",
                Func::Builtin(_) => "builtin_function_or_method",
                Func::Method(..) => "builtin_function_or_method",
            },
        }
    }

    /// Python truthiness.
    pub fn truthy(&self) -> bool {
        match self {
            Value::None => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Big(_) => true,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::List(l) => !l.v.borrow().is_empty(),
            Value::Tuple(t) => !t.v.is_empty(),
            Value::Dict(d) | Value::Keys(d) | Value::Items(d) => !d.d.borrow().is_empty(),
            Value::Values(v) => !v.0.d.borrow().is_empty(),
            Value::Set(s) => !s.d.borrow().is_empty(),
            Value::Range(r) => !r.is_empty(),
            Value::Iter(_) | Value::Func(_) => true,
        }
    }

    /// Identity (`is`).
    pub fn is(&self, o: &Value) -> bool {
        match (self, o) {
            (Value::None, Value::None) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            // Small ints are cached in CPython; be pragmatic for all i64.
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Big(a), Value::Big(b)) => Rc::ptr_eq(a, b),
            (Value::Float(a), Value::Float(b)) => a.to_bits() == b.to_bits(),
            (Value::Str(a), Value::Str(b)) => {
                Rc::ptr_eq(a, b) || (a.len() <= 1 && a.as_str() == b.as_str())
            }
            (Value::List(a), Value::List(b)) => Rc::ptr_eq(a, b),
            (Value::Tuple(a), Value::Tuple(b)) => {
                Rc::ptr_eq(a, b) || (a.v.is_empty() && b.v.is_empty())
            }
            (Value::Dict(a), Value::Dict(b)) => Rc::ptr_eq(a, b),
            (Value::Set(a), Value::Set(b)) => Rc::ptr_eq(a, b),
            (Value::Range(a), Value::Range(b)) => Rc::ptr_eq(a, b),
            // Each `d.values()` call makes a new view object in CPython, and values
            // views compare by identity only; views are unboxed here, so they are never `is`.
            (Value::Keys(a), Value::Keys(b)) | (Value::Items(a), Value::Items(b)) => {
                Rc::ptr_eq(a, b)
            }
            (Value::Values(a), Value::Values(b)) => Rc::ptr_eq(a, b),
            (Value::Iter(a), Value::Iter(b)) => Rc::ptr_eq(a, b),
            (Value::Func(a), Value::Func(b)) => Rc::ptr_eq(a, b),
            _ => false,
        }
    }
}

/// Deepest nesting `==`, `<` (and the other orderings) and `hash` follow
/// before raising RecursionError. Why 998: CPython's recursion limit is
/// 1000 calls, the program's own frame included: comparing two lists built
/// by `x = [0]` and then 998 times `x = [x]` is the deepest that works in a
/// script (the innermost list is at depth 998 here; its int items compare
/// without a level of their own). CPython's tuple hash has no bound; this
/// one has the comparison's, so keys that hash also compare.
pub const MAX_REC: usize = 998;

/// Deepest nesting `repr`/`str` (and so `print` and f-strings) follow.
/// Why 997: as in CPython, `repr` of `x = [0]` then 996 times `x = [x]`
/// works (its int at depth 997 is a level too), once more does not.
pub const MAX_REPR_REC: usize = 997;

thread_local! {
    /// Per-thread hash seed. Why: a program must not be able to pick keys
    /// that all land in one probe chain (quadratic dict/set operations that
    /// no fuel tick sees). The seed comes from ASLR'd addresses of a stack
    /// and a heap object, so no syscall is needed inside the jail.
    static SEED: u64 = {
        let stack = 0u8;
        let heap = Box::new(0u8);
        let a = std::hint::black_box(&stack) as *const u8 as u64;
        let b = std::hint::black_box(&*heap) as *const u8 as u64;
        splitmix(a.rotate_left(32) ^ b ^ 0x243F_6A88_85A3_08D3)
    };
}

fn splitmix(h: u64) -> u64 {
    let mut z = h.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[inline]
fn seed() -> u64 {
    SEED.with(|s| *s)
}

fn mix(h: u64) -> u64 {
    // A keyed 64-bit finaliser (splitmix64) so probing sees well-spread bits.
    let mut z = (h ^ seed()).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn hash_big(b: &BigInt) -> u64 {
    let (sign, digits) = b.to_u64_digits();
    let mut h: u64 = if sign == num_bigint::Sign::Minus {
        0x5555
    } else {
        0xAAAA
    };
    for d in digits {
        h = mix(h ^ d);
    }
    h
}

fn hash_str(bytes: &[u8]) -> u64 {
    // Keyed multiply-rotate over 8-byte words, then mixed.
    let mut h: u64 = seed() ^ (bytes.len() as u64).wrapping_mul(0xcbf2_9ce4_8422_2325);
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = (h ^ u64::from_le_bytes(w))
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(29);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = (h ^ u64::from_le_bytes(w))
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(29);
    }
    mix(h)
}

/// Hash a hashable value; equal numbers hash equal across int/float/bool.
///
/// # Errors
/// `TypeError: unhashable type: 'list'` and friends.
#[inline]
pub fn hash_value(v: &Value) -> InterpResult<u64> {
    // Strings (most dict keys) carry their hash: no call into the general case.
    match v {
        Value::Str(s) => Ok(s.hash()),
        _ => hash_rec(v, 0),
    }
}

fn hash_rec(v: &Value, depth: usize) -> InterpResult<u64> {
    Ok(match v {
        Value::None => 0x1234_5678,
        Value::Bool(b) => mix(*b as u64),
        Value::Int(i) => mix(*i as u64),
        Value::Big(b) => hash_big(b),
        Value::Float(f) => {
            if f.fract() == 0.0 && f.is_finite() {
                if *f >= -9.223_372_036_854_776e18 && *f < 9.223_372_036_854_776e18 {
                    mix(*f as i64 as u64)
                } else {
                    match float_to_big(*f) {
                        Some(b) => hash_big(&b),
                        None => 0,
                    }
                }
            } else if f.is_nan() {
                mix(f.to_bits())
            } else {
                mix(f.to_bits() ^ 0xf1f1)
            }
        }
        Value::Str(s) => s.hash(),
        Value::Tuple(t) => {
            if depth > MAX_REC {
                return Err(Exc::py(
                    "RecursionError",
                    "maximum recursion depth exceeded while calling a Python object",
                ));
            }
            super::budget::stack_check(" while calling a Python object")?;
            let mut h: u64 = 0x345678;
            for x in &t.v {
                h = mix(h ^ hash_rec(x, depth + 1)?);
            }
            h
        }
        // Equal ranges hash equal: as CPython, hash (len, start, step) with
        // start dropped when empty and step dropped when shorter than 2.
        Value::Range(r) => {
            let n = r.len128();
            let start = if n == 0 { 0 } else { r.start };
            let step = if n < 2 { 0 } else { r.step };
            mix(n as u64 ^ mix(start as u64 ^ mix(step as u64 ^ 0x7261_6e67)))
        }
        // Functions, iterators and values views hash by identity, as in
        // CPython (their `==` is identity too).
        Value::Values(v) => mix(Rc::as_ptr(v) as usize as u64),
        Value::Func(f) => mix(Rc::as_ptr(f) as *const u8 as usize as u64),
        Value::Iter(i) => mix(Rc::as_ptr(i) as *const u8 as usize as u64),
        other => {
            return Err(Exc::py(
                "TypeError",
                format!("unhashable type: '{}'", other.type_name()),
            ))
        }
    })
}

/// Exact conversion of an integral finite float to a BigInt.
pub fn float_to_big(f: f64) -> Option<BigInt> {
    use num_traits::FromPrimitive;
    if !f.is_finite() {
        return None;
    }
    BigInt::from_f64(f.trunc())
}

/// Equality of hashable keys (cannot fail; depth is bounded by hashing first).
pub fn key_eq(a: &Value, b: &Value) -> bool {
    if let (Value::Str(x), Value::Str(y)) = (a, b) {
        return Rc::ptr_eq(x, y) || x.same_text(y);
    }
    a.is(b) || super::ops::eq(a, b).unwrap_or(false)
}
