//! CPython's iteration order for sets whose elements CPython hashes the
//! same in every process: ints, bools, floats (not NaN) and tuples of
//! those.
//!
//! Why: CPython iterates a set in the order of its hash table, so
//! `list({3, 1, 2})` is `[1, 2, 3]` in every run, and programs (and the
//! tests that compare them with CPython) print such sets unsorted. For
//! strings, `None` and NaN CPython's hashes change from process to
//! process, so no order can be matched; those sets keep insertion order.
//!
//! How: lackpy's set stays an insertion-ordered table with its own keyed
//! hash (so a program cannot choose colliding keys). When a set is read in
//! order after it changed, [`table_order`] replays the insertion of its
//! live elements, in their current order, into a model of CPython 3.11's
//! table (`Objects/setobject.c`: `set_add_entry`, `set_table_resize`,
//! `set_insert_clean`: 8 slots to start, linear probing over 10 slots
//! then perturbation, a resize to the smallest power of two above 4×used
//! once 3/5 of the slots are filled) with CPython's hash values, and the
//! set's entries are put in the order of that table. A set that only grew
//! (literals, comprehensions, `set(list)`, `add`, `update`) gets CPython's
//! exact order; after removals, or for results of set operations, the
//! order is the replay's, which CPython's table history can differ from.
//! The model only orders: it never looks a key up, so CPython's weak hash
//! for ints gives a program no way to slow the interpreter down beyond the
//! linear cost of one replay.

use super::value::Value;

/// CPython's `_PyHASH_MODULUS` (2**61 - 1).
const MODULUS: u64 = (1 << 61) - 1;
/// `_PyHASH_BITS`.
const HASH_BITS: i32 = 61;
/// `sys.hash_info.inf`.
const HASH_INF: i64 = 314_159;
/// `PySet_MINSIZE`.
const MIN_SIZE: usize = 8;
/// `LINEAR_PROBES`.
const LINEAR_PROBES: usize = 9;
/// `PERTURB_SHIFT`.
const PERTURB_SHIFT: u32 = 5;
/// Deepest tuple nesting hashed here (deeper: no CPython order).
const MAX_DEPTH: usize = 64;

fn fix_minus_one(h: i64) -> i64 {
    if h == -1 {
        -2
    } else {
        h
    }
}

/// CPython's hash of an int given as sign and magnitude (`long_hash`).
fn int_hash_mag(negative: bool, mag: u64) -> i64 {
    let x = (mag % MODULUS) as i64;
    fix_minus_one(if negative { -x } else { x })
}

fn int_hash(i: i64) -> i64 {
    int_hash_mag(i < 0, i.unsigned_abs())
}

fn big_hash(b: &num_bigint::BigInt) -> i64 {
    use num_traits::ToPrimitive;
    let negative = b.sign() == num_bigint::Sign::Minus;
    let m = num_bigint::BigUint::from(MODULUS);
    let r = (b.magnitude() % m).to_u64().unwrap_or(0);
    int_hash_mag(negative, r)
}

/// CPython's `_Py_HashDouble` for a finite or infinite float; `None` for
/// NaN (hashed by identity in CPython 3.10+).
fn float_hash(v: f64) -> Option<i64> {
    if v.is_nan() {
        return None;
    }
    if v.is_infinite() {
        return Some(if v > 0.0 { HASH_INF } else { -HASH_INF });
    }
    let (mut m, mut e) = frexp(v);
    let mut sign = 1i64;
    if m < 0.0 {
        sign = -1;
        m = -m;
    }
    let mut x: u64 = 0;
    while m != 0.0 {
        x = ((x << 28) & MODULUS) | (x >> (HASH_BITS - 28));
        m *= 268_435_456.0;
        e -= 28;
        let y = m as u64;
        m -= y as f64;
        x += y;
        if x >= MODULUS {
            x -= MODULUS;
        }
    }
    let e = if e >= 0 {
        e % HASH_BITS
    } else {
        HASH_BITS - 1 - ((-1 - e) % HASH_BITS)
    };
    let e = e as u32;
    x = ((x << e) & MODULUS) | (x >> (HASH_BITS as u32 - e));
    Some(fix_minus_one((x as i64).wrapping_mul(sign)))
}

/// C's `frexp`: `v = m * 2**e` with `0.5 <= |m| < 1` (`v` finite, non-zero
/// or zero).
fn frexp(v: f64) -> (f64, i32) {
    if v == 0.0 {
        return (v, 0);
    }
    let bits = v.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    if exp == 0 {
        // Subnormal: scale into the normal range first.
        let (m, e) = frexp(v * f64::from_bits(0x4350_0000_0000_0000)); // 2**54
        return (m, e - 54);
    }
    let m = f64::from_bits((bits & !(0x7ff << 52)) | (1022 << 52));
    (m, exp - 1022)
}

/// CPython 3.11's `tuplehash` (xxHash-based) over item hashes.
fn tuple_hash(items: &[i64]) -> i64 {
    const P1: u64 = 11_400_714_785_074_694_791;
    const P2: u64 = 14_029_467_366_897_019_727;
    const P5: u64 = 2_870_177_450_012_600_261;
    let mut acc = P5;
    for &lane in items {
        acc = acc.wrapping_add((lane as u64).wrapping_mul(P2));
        acc = acc.rotate_left(31);
        acc = acc.wrapping_mul(P1);
    }
    acc = acc.wrapping_add((items.len() as u64) ^ (P5 ^ 3_527_539));
    if acc == u64::MAX {
        return 1_546_275_796;
    }
    acc as i64
}

/// CPython's hash of `v` when it is the same in every CPython process;
/// `None` for strings, `None`, NaN and anything else.
pub fn cpython_hash(v: &Value) -> Option<i64> {
    hash_rec(v, 0)
}

fn hash_rec(v: &Value, depth: usize) -> Option<i64> {
    match v {
        Value::Bool(b) => Some(i64::from(*b)),
        Value::Int(i) => Some(int_hash(*i)),
        Value::Big(b) => Some(big_hash(b)),
        Value::Float(f) => float_hash(*f),
        Value::Tuple(t) if depth < MAX_DEPTH => {
            let mut hs = Vec::with_capacity(t.v.len());
            for x in t.v.iter() {
                hs.push(hash_rec(x, depth + 1)?);
            }
            Some(tuple_hash(&hs))
        }
        _ => None,
    }
}

const EMPTY: usize = usize::MAX;

/// Put `idx` (hash `h`) in the first free slot of its probe sequence
/// (`set_insert_clean`; with no deleted slots and distinct keys,
/// `set_add_entry` probes the same slots).
fn insert_clean(table: &mut [usize], hashes: &[i64], idx: usize) {
    let mask = table.len() - 1;
    let h = hashes[idx] as u64 as usize;
    let mut perturb = h;
    let mut i = h & mask;
    loop {
        if table[i] == EMPTY {
            table[i] = idx;
            return;
        }
        if i + LINEAR_PROBES <= mask {
            for j in 1..=LINEAR_PROBES {
                if table[i + j] == EMPTY {
                    table[i + j] = idx;
                    return;
                }
            }
        }
        perturb >>= PERTURB_SHIFT;
        i = (i.wrapping_mul(5).wrapping_add(1).wrapping_add(perturb)) & mask;
    }
}

/// The smallest table size above `minused` (`set_table_resize`).
fn size_above(minused: usize) -> usize {
    let mut size = MIN_SIZE;
    while size <= minused {
        size <<= 1;
    }
    size
}

/// CPython's table size after `set_merge` of `n` elements into an empty
/// set (a copy, `set(a_set)`): one resize up front when they would fill
/// 3/5 of the 8 slots.
pub fn merged_size(n: usize) -> usize {
    if n * 5 >= (MIN_SIZE - 1) * 3 {
        size_above(n * 2)
    } else {
        MIN_SIZE
    }
}

/// The order (indices into `hashes`) in which CPython iterates a set after
/// the elements with these hashes were added in this order to a set whose
/// table had `start` slots (8 for a new set; see [`merged_size`]).
pub fn table_order(hashes: &[i64], start: usize) -> Vec<usize> {
    let mut table = vec![EMPTY; start.max(MIN_SIZE).next_power_of_two()];
    let mut used = 0usize;
    for idx in 0..hashes.len() {
        insert_clean(&mut table, hashes, idx);
        used += 1;
        let mask = table.len() - 1;
        if used * 5 >= mask * 3 {
            let minused = if used > 50_000 { used * 2 } else { used * 4 };
            let old = std::mem::replace(&mut table, vec![EMPTY; size_above(minused)]);
            for slot in old {
                if slot != EMPTY {
                    insert_clean(&mut table, hashes, slot);
                }
            }
        }
    }
    table.into_iter().filter(|s| *s != EMPTY).collect()
}

/// Like [`table_order`], with the size of the final table.
fn table_order_sized(hashes: &[i64], start: usize) -> (Vec<usize>, usize) {
    let order = table_order(hashes, start);
    let mut size = start.max(MIN_SIZE).next_power_of_two();
    let mut used = 0usize;
    for _ in hashes {
        used += 1;
        if used * 5 >= (size - 1) * 3 {
            size = size_above(if used > 50_000 { used * 2 } else { used * 4 });
        }
    }
    (order, size)
}

/// `xs` permuted by `order`.
fn permuted(xs: &[i64], order: &[usize]) -> Vec<i64> {
    order.iter().map(|&i| xs[i]).collect()
}

/// `order` applied after `inner` (indices into the original items).
fn compose(inner: &[usize], order: &[usize]) -> Vec<usize> {
    order.iter().map(|&i| inner[i]).collect()
}

/// The iteration order of a set display whose items are 3 or more
/// constants (`{3, 1, 2}`; `hashes` of its distinct items, in order).
/// CPython 3.11 compiles it to a frozenset constant merged into a new set
/// (`SET_UPDATE`): the frozenset is built by adding the items, then built
/// again from its own iteration order when the compiler merges constants,
/// and the merge into the empty set sizes the table once
/// ([`merged_size`]) and copies the frozenset's table when the sizes
/// agree, else inserts its items in its order.
pub fn display_order(hashes: &[i64]) -> Vec<usize> {
    let (o1, _) = table_order_sized(hashes, MIN_SIZE);
    let h1 = permuted(hashes, &o1);
    let (o2, size2) = table_order_sized(&h1, MIN_SIZE);
    let both = compose(&o1, &o2);
    let size = merged_size(hashes.len());
    if size == size2 {
        return both;
    }
    let h2 = permuted(hashes, &both);
    let o3 = table_order(&h2, size);
    compose(&both, &o3)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values printed by CPython 3.11 (`hash(x)`).
    #[test]
    fn hashes_are_cpythons() {
        assert_eq!(int_hash(-1), -2);
        assert_eq!(int_hash(1 << 61), 1);
        assert_eq!(int_hash(-(1 << 62)), -2);
        assert_eq!(float_hash(1.5), Some(1_152_921_504_606_846_977));
        assert_eq!(float_hash(-0.5), Some(-1_152_921_504_606_846_976));
        assert_eq!(float_hash(2.0), Some(2));
        assert_eq!(float_hash(f64::INFINITY), Some(314_159));
        assert_eq!(float_hash(1e-300), Some(482_449_582_752_280_463));
        assert_eq!(float_hash(f64::NAN), None);
        assert_eq!(tuple_hash(&[]), 5_740_354_900_026_072_187);
        assert_eq!(tuple_hash(&[1, 2]), -3_550_055_125_485_641_917);
    }

    /// Orders printed by CPython 3.11 (`list(s)`).
    #[test]
    fn orders_are_cpythons() {
        let order = |xs: &[i64]| -> Vec<i64> {
            let hs: Vec<i64> = xs.iter().map(|x| int_hash(*x)).collect();
            table_order(&hs, MIN_SIZE)
                .into_iter()
                .map(|i| xs[i])
                .collect()
        };
        assert_eq!(order(&[3, 1, 2]), [1, 2, 3]);
        assert_eq!(order(&[10, 3, 8]), [8, 10, 3]);
        assert_eq!(order(&[-1, -2, 5]), [5, -1, -2]);
        assert_eq!(order(&[100, 7, 33, 64, 9]), [64, 33, 100, 7, 9]);
        // A display of constants: `list({2, -2, -1, -3, 1, 0, 3})`.
        let xs = [2i64, -2, -1, -3, 1, 0, 3];
        let hs: Vec<i64> = xs.iter().map(|x| int_hash(*x)).collect();
        let got: Vec<i64> = display_order(&hs).into_iter().map(|i| xs[i]).collect();
        assert_eq!(got, [0, 1, 2, 3, -1, -3, -2]);
        // The same items added one by one: `s = set(); s.update(...)`.
        let added: Vec<i64> = table_order(&hs, MIN_SIZE)
            .into_iter()
            .map(|i| xs[i])
            .collect();
        assert_eq!(added, [0, 1, 2, 3, -1, -3, -2]);
    }
}
