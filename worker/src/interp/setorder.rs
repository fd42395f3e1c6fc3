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
//! hash (so a program cannot choose colliding keys to slow lookups down).
//! Beside it, a [`Model`] of CPython 3.11's table (`Objects/setobject.c`:
//! `set_add_entry` with its reuse of the last deleted slot passed,
//! `set_discard_entry`, `set_pop`'s finger, `set_table_resize`,
//! `set_merge`'s one-time sizing and table copy, `set_insert_clean`) holds
//! the same keys with CPython's hash values and follows every operation the
//! way CPython performs it; when the set is next read in order, its entries
//! are put in the model's order. A set that is only added to builds its
//! model the first time it is read in order or changed otherwise, so sets
//! used for membership pay nothing. The model never answers a lookup;
//! its probing is charged as fuel, so keys whose CPython hashes collide
//! cost the run fuel, as they cost CPython time.

use super::err::InterpResult;
use super::value::{Dict, Value};

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

/// The smallest table size above `minused` (`set_table_resize`).
fn size_above(minused: usize) -> usize {
    let mut size = MIN_SIZE;
    while size <= minused {
        size <<= 1;
    }
    size
}

/// A free slot of the [`Model`] table.
const FREE: u32 = u32::MAX;
/// A deleted slot (`dummy` in CPython).
const DELETED: u32 = u32::MAX - 1;

/// CPython 3.11's set table (`PySetObject`), holding the same keys as a
/// lackpy set, for its iteration order only: the set's own table answers
/// every lookup. Operations mirror `Objects/setobject.c`. Slots hold
/// positions in `keys` (CPython hash, lackpy's hash, key).
#[derive(Debug)]
pub struct Model {
    slots: Vec<u32>,
    keys: Vec<Option<(i64, u64, Value)>>,
    fill: usize,
    used: usize,
    finger: usize,
    /// Probe steps not yet charged as fuel (keys whose CPython hashes
    /// collide make probing long, as in CPython).
    work: u64,
    /// Bytes charged to the run's memory account.
    charged: usize,
}

impl Clone for Model {
    fn clone(&self) -> Model {
        let mut m = Model {
            slots: self.slots.clone(),
            keys: self.keys.clone(),
            fill: self.fill,
            used: self.used,
            finger: self.finger,
            work: 0,
            charged: 0,
        };
        m.recharge();
        m
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        super::value::mem_release(self.charged);
    }
}

impl Default for Model {
    fn default() -> Self {
        Self::with_size(MIN_SIZE)
    }
}

impl Model {
    fn with_size(size: usize) -> Model {
        let mut m = Model {
            slots: vec![FREE; size],
            keys: Vec::new(),
            fill: 0,
            used: 0,
            finger: 0,
            work: 0,
            charged: 0,
        };
        m.recharge();
        m
    }

    /// Charge the table's size to the run's memory account.
    fn recharge(&mut self) {
        let want = self.slots.len() * 4
            + self.keys.capacity() * std::mem::size_of::<Option<(i64, u64, Value)>>();
        if want > self.charged {
            super::value::mem_charge(want - self.charged);
        } else {
            super::value::mem_release(self.charged - want);
        }
        self.charged = want;
    }

    /// Charge the probe steps taken so far as fuel (four steps a unit).
    fn settle(&mut self) {
        super::budget::spend(std::mem::take(&mut self.work) / 4);
    }

    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    fn hash_at(&self, id: u32) -> Option<i64> {
        self.keys.get(id as usize)?.as_ref().map(|e| e.0)
    }

    /// The keys in iteration order, with lackpy's hashes.
    pub fn keys(&self) -> impl Iterator<Item = (u64, &Value)> {
        self.slots.iter().filter_map(|&id| {
            if id >= DELETED {
                return None;
            }
            self.keys.get(id as usize)?.as_ref().map(|e| (e.1, &e.2))
        })
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.used
    }

    /// `set_insert_clean` of `id` (hash `h`) into a table without dummies.
    fn insert_clean(slots: &mut [u32], h: i64, id: u32) -> u64 {
        let mask = slots.len() - 1;
        let hu = h as u64 as usize;
        let mut perturb = hu;
        let mut i = hu & mask;
        let mut steps = 0u64;
        loop {
            steps += 1;
            if slots[i] == FREE {
                slots[i] = id;
                return steps;
            }
            if i + LINEAR_PROBES <= mask {
                for j in 1..=LINEAR_PROBES {
                    if slots[i + j] == FREE {
                        slots[i + j] = id;
                        return steps;
                    }
                }
            }
            perturb >>= PERTURB_SHIFT;
            i = i.wrapping_mul(5).wrapping_add(1).wrapping_add(perturb) & mask;
        }
    }

    /// `set_table_resize`: the live keys, in table order, into the
    /// smallest table above `minused` (the key list is compacted).
    fn resize(&mut self, minused: usize) {
        let old_slots = std::mem::replace(&mut self.slots, vec![FREE; size_above(minused)]);
        let mut old_keys = std::mem::take(&mut self.keys);
        self.keys.reserve(self.used);
        for id in old_slots {
            if id >= DELETED {
                continue;
            }
            if let Some(e) = old_keys.get_mut(id as usize).and_then(Option::take) {
                let new_id = self.keys.len() as u32;
                let h = e.0;
                self.keys.push(Some(e));
                self.work += Self::insert_clean(&mut self.slots, h, new_id);
            }
        }
        self.fill = self.used;
        self.recharge();
    }

    /// `set_add_entry` of a key the set does not hold (the caller's table
    /// decided that): the last deleted slot on its probe path, else the
    /// empty slot ending it; then a resize when 3/5 are filled. `dh` is
    /// lackpy's hash of the key.
    pub fn add_new(&mut self, h: i64, dh: u64, key: Value) {
        let mask = self.mask();
        let hu = h as u64 as usize;
        let mut perturb = hu;
        let mut i = hu & mask;
        let mut freeslot = None;
        let at = 'search: loop {
            self.work += 1;
            let probes = if i + LINEAR_PROBES <= mask {
                LINEAR_PROBES
            } else {
                0
            };
            for j in 0..=probes {
                match self.slots[i + j] {
                    FREE => break 'search i + j,
                    // CPython keeps the last deleted slot it passed.
                    DELETED => freeslot = Some(i + j),
                    _ => {}
                }
            }
            perturb >>= PERTURB_SHIFT;
            i = i.wrapping_mul(5).wrapping_add(1).wrapping_add(perturb) & mask;
        };
        if self.keys.len() >= 2 * self.used + 16 {
            self.compact();
        }
        let id = self.keys.len() as u32;
        self.keys.push(Some((h, dh, key)));
        self.used += 1;
        if let Some(f) = freeslot {
            self.slots[f] = id;
        } else {
            self.slots[at] = id;
            self.fill += 1;
            if self.fill * 5 >= mask * 3 {
                self.resize(if self.used > 50_000 {
                    self.used * 2
                } else {
                    self.used * 4
                });
            }
        }
        self.recharge();
        self.settle();
    }

    /// Drop the removed keys' entries from `keys` (the slots keep their
    /// places): adds into deleted slots never resize, so without this a
    /// loop of removals and adds would grow `keys` without bound.
    fn compact(&mut self) {
        let mut new_id = vec![FREE; self.keys.len()];
        let mut keys = Vec::with_capacity(self.used + 1);
        for (old, e) in std::mem::take(&mut self.keys).into_iter().enumerate() {
            if let Some(e) = e {
                new_id[old] = keys.len() as u32;
                keys.push(Some(e));
            }
        }
        for slot in &mut self.slots {
            if *slot < DELETED {
                *slot = new_id.get(*slot as usize).copied().unwrap_or(DELETED);
            }
        }
        self.work += new_id.len() as u64;
        self.keys = keys;
    }

    /// `set_discard_entry` of a key the set holds (`eq` compares keys).
    pub fn discard(&mut self, h: i64, key: &Value, eq: impl Fn(&Value, &Value) -> bool) {
        self.discard_entry(h, key, eq);
        self.settle();
    }

    fn discard_entry(&mut self, h: i64, key: &Value, eq: impl Fn(&Value, &Value) -> bool) {
        let mask = self.mask();
        let hu = h as u64 as usize;
        let mut perturb = hu;
        let mut i = hu & mask;
        for _ in 0..=self.slots.len() {
            self.work += 1;
            let probes = if i + LINEAR_PROBES <= mask {
                LINEAR_PROBES
            } else {
                0
            };
            for j in 0..=probes {
                let id = self.slots[i + j];
                if id == FREE {
                    return;
                }
                if id == DELETED || self.hash_at(id) != Some(h) {
                    continue;
                }
                let found = matches!(self.keys.get(id as usize), Some(Some(e)) if eq(&e.2, key));
                if found {
                    self.slots[i + j] = DELETED;
                    if let Some(e) = self.keys.get_mut(id as usize) {
                        *e = None;
                    }
                    self.used -= 1;
                    return;
                }
            }
            perturb >>= PERTURB_SHIFT;
            i = i.wrapping_mul(5).wrapping_add(1).wrapping_add(perturb) & mask;
        }
    }

    /// `set_pop`: the key at or after the finger, its slot made deleted.
    pub fn pop(&mut self) -> Option<Value> {
        if self.used == 0 {
            return None;
        }
        let mask = self.mask();
        let mut i = self.finger & mask;
        for _ in 0..self.slots.len() {
            let id = self.slots[i];
            if id < DELETED {
                self.slots[i] = DELETED;
                self.used -= 1;
                self.finger = i + 1;
                return self.keys.get_mut(id as usize)?.take().map(|e| e.2);
            }
            i = (i + 1) & mask;
        }
        None
    }

    /// The live entries in table order.
    fn live(&self) -> impl Iterator<Item = &(i64, u64, Value)> {
        self.slots.iter().filter_map(|&id| {
            if id >= DELETED {
                return None;
            }
            self.keys.get(id as usize)?.as_ref()
        })
    }

    /// `set_merge` of `other` into this table; `holds` says whether this
    /// set already holds a key (CPython compares; a held key is skipped).
    pub fn merge(&mut self, other: &Model, holds: impl Fn(&Value) -> bool) {
        self.merge_entries(other, holds);
        self.settle();
    }

    fn merge_entries(&mut self, other: &Model, holds: impl Fn(&Value) -> bool) {
        if other.used == 0 {
            return;
        }
        if (self.fill + other.used) * 5 >= self.mask() * 3 {
            self.resize((self.used + other.used) * 2);
        }
        if self.fill == 0 && self.slots.len() == other.slots.len() && other.fill == other.used {
            self.slots = other.slots.clone();
            self.keys = other.keys.clone();
            self.fill = other.fill;
            self.used = other.used;
            self.recharge();
            return;
        }
        if self.fill == 0 {
            self.keys.clear();
            self.keys.reserve(other.used);
            for e in other.live() {
                let id = self.keys.len() as u32;
                self.keys.push(Some(e.clone()));
                self.work += Self::insert_clean(&mut self.slots, e.0, id);
            }
            self.fill = other.used;
            self.used = other.used;
            self.recharge();
            return;
        }
        for e in other.live() {
            if !holds(&e.2) {
                self.add_new(e.0, e.1, e.2.clone());
            }
        }
    }

    /// A copy as `set(s)`/`s.copy()` makes it (`set_merge` into a new set).
    pub fn copied(&self) -> Model {
        let mut m = Model::default();
        m.merge(self, |_| false);
        m
    }

    /// The table after `set_difference_update`'s removals: resized when
    /// more than a quarter of the slots are deleted ones.
    pub fn after_removals(&mut self) {
        if self.fill - self.used > self.mask() / 4 {
            self.resize(if self.used > 50_000 {
                self.used * 2
            } else {
                self.used * 4
            });
        }
        self.settle();
    }

    /// A table built by adding `keys` (distinct: CPython hash, lackpy's
    /// hash, key) in order.
    pub fn from_keys(keys: impl IntoIterator<Item = (i64, u64, Value)>) -> Model {
        let mut m = Model::default();
        for (h, dh, k) in keys {
            m.add_new(h, dh, k);
        }
        m
    }

    /// A table sized once for `n` keys, then given `keys` in order, as
    /// `set_update_internal` does with a dict.
    pub fn presized(n: usize, keys: impl IntoIterator<Item = (i64, u64, Value)>) -> Model {
        let mut m = Model::default();
        if n * 5 >= m.mask() * 3 {
            m.resize(n * 2);
            m.settle();
        }
        for (h, dh, k) in keys {
            m.add_new(h, dh, k);
        }
        m
    }

    /// The table of a display of 3 or more constants (`{3, 1, 2}`):
    /// CPython 3.11 compiles it to a frozenset constant (built by adding
    /// the items, then built again from its own order when the compiler
    /// merges constants) merged into a new set.
    pub fn display(keys: Vec<(i64, u64, Value)>) -> Model {
        let first = Model::from_keys(keys);
        let again = Model::from_keys(first.live().cloned());
        again.copied()
    }

    /// Add `key`, or give up ordering (`None`) when it has no
    /// process-independent hash.
    pub fn add_to(model: &mut Option<Model>, key: &Value) {
        match (
            model.as_mut(),
            cpython_hash(key),
            super::value::hash_value(key),
        ) {
            (Some(m), Some(h), Ok(dh)) if m.len() < super::value::MAX_MODEL_KEYS => {
                m.add_new(h, dh, key.clone())
            }
            _ => *model = None,
        }
    }

    /// Discard `key` (held by the set).
    pub fn discard_from(model: &mut Option<Model>, key: &Value) {
        if let (Some(m), Some(h)) = (model.as_mut(), cpython_hash(key)) {
            m.discard(h, key, super::value::key_eq);
        }
    }

    /// `set_merge` of `other` into `model`; `holds` says whether the set
    /// already holds a key. `None` (insertion order) when either side has
    /// no model or the merged table would pass the bound.
    pub fn merge_into(
        model: &mut Option<Model>,
        other: Option<&Model>,
        holds: impl Fn(&Value) -> bool,
    ) {
        match (model.as_mut(), other) {
            (Some(m), Some(o)) if m.len() + o.len() <= super::value::MAX_MODEL_KEYS => {
                m.merge(o, holds)
            }
            _ => *model = None,
        }
    }
}

/// Remove `key` from a set's table `d` and from its `model`
/// (`set_discard_key`); whether it was there. After a run of removals,
/// call [`Model::after_removals`] where CPython does.
///
/// # Errors
/// TypeError for an unhashable key.
pub fn remove_key(d: &mut Dict, model: &mut Option<Model>, key: &Value) -> InterpResult<bool> {
    match d.remove(key)? {
        Some((held, _)) => {
            Model::discard_from(model, &held);
            Ok(true)
        }
        None => Ok(false),
    }
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

    fn model_of(xs: &[i64]) -> Model {
        Model::from_keys(xs.iter().map(|x| (int_hash(*x), 0, Value::Int(*x))))
    }

    fn ints(m: &Model) -> Vec<i64> {
        m.keys()
            .map(|(_, k)| match k {
                Value::Int(i) => *i,
                _ => i64::MIN,
            })
            .collect()
    }

    /// Orders printed by CPython 3.11 (`list(s)`).
    #[test]
    fn orders_are_cpythons() {
        assert_eq!(ints(&model_of(&[3, 1, 2])), [1, 2, 3]);
        assert_eq!(ints(&model_of(&[10, 3, 8])), [8, 10, 3]);
        assert_eq!(ints(&model_of(&[-1, -2, 5])), [5, -1, -2]);
        assert_eq!(ints(&model_of(&[100, 7, 33, 64, 9])), [64, 33, 100, 7, 9]);
        // `s = set(); s.update([2, -2, -1, -3, 1, 0, 3])`
        assert_eq!(
            ints(&model_of(&[2, -2, -1, -3, 1, 0, 3])),
            [0, 1, 2, 3, -1, -3, -2]
        );
        // The display `{2, -2, -1, -3, 1, 0, 3}`.
        let keys = [2i64, -2, -1, -3, 1, 0, 3].map(|x| (int_hash(x), 0, Value::Int(x)));
        assert_eq!(
            ints(&Model::display(keys.to_vec())),
            [0, 1, 2, 3, -1, -3, -2]
        );
        // `a = set([1, 9]); a.discard(1); a.add(17)`: the deleted slot is
        // reused.
        let mut m = model_of(&[1, 9]);
        m.discard(int_hash(1), &Value::Int(1), super::super::value::key_eq);
        m.add_new(int_hash(17), 0, Value::Int(17));
        assert_eq!(ints(&m), [17, 9]);
        // `pop` from the finger.
        let mut m = model_of(&[5, 3, 9]);
        assert!(matches!(m.pop(), Some(Value::Int(9))));
        assert!(matches!(m.pop(), Some(Value::Int(3))));
    }
}
