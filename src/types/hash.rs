//! The hash value: Redis 8.0's `listpack` / `listpackex` / `hashtable`
//! encodings.
//!
//! A small hash is a `Vec` of (field, value) pairs in insertion order, as a
//! listpack keeps them, so HGETALL, HKEYS, HSCAN and a whole-hash HRANDFIELD
//! answer in exactly Redis's order; lookups are linear, which is what Redis
//! pays too and is cheap under the `hash-max-listpack-*` limits. A hash that
//! gets more than `hash-max-listpack-entries` fields, or any field or value
//! longer than `hash-max-listpack-value` bytes, becomes a [`Dict`] for good:
//! like Redis it never converts back, even when it shrinks.
//!
//! Field TTLs (Redis 7.4's hash field expiration). Layout: a hash that has
//! never had a field TTL is [`Hash::Plain`] and pays nothing for the feature;
//! the first TTL-setting command turns it into [`Hash::Ex`] for good (as Redis
//! turns a `listpack` into a `listpackex`), whose values are [`Slot`]s: the
//! value plus an 8-byte deadline (0: none). That is 8 bytes per field of such
//! a hash, whether the field has a TTL or not — cheaper than a side map of
//! field → deadline, which would hold each field name a second time (16+ bytes
//! of box plus the name plus the map's own slot) — and a lookup finds value
//! and deadline together. Plus one 8-byte lower bound on the earliest deadline
//! per `Ex` hash, which is what the keyspace schedules the hash by; it is
//! made exact whenever expired fields are removed.
//!
//! As in Redis's `listpackex`, a compact `Ex` hash keeps the fields that
//! have a TTL first, ordered by deadline, and the others after them in
//! insertion order (so HGETALL's order matches Redis's), and its expired
//! fields are always a prefix.

use rand::Rng;

use crate::types::dict::Dict;

type Bytes = Box<[u8]>;

/// No deadline.
pub const NO_TTL: u64 = 0;

/// The `hash-max-listpack-*` settings in force for one write.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub entries: usize,
    pub value: usize,
}

/// A value with its deadline (Unix ms; [`NO_TTL`]: none), in `Ex` hashes.
#[derive(Debug, Clone)]
pub struct Slot {
    pub value: Bytes,
    pub at: u64,
}

/// What both kinds of stored value give the generic code.
pub trait Val: Clone {
    fn value(&self) -> &[u8];
    fn at(&self) -> u64;
    fn set_value(&mut self, v: &[u8]);
    fn from_value(v: &[u8]) -> Self;
}

impl Val for Bytes {
    fn value(&self) -> &[u8] {
        self
    }
    fn at(&self) -> u64 {
        NO_TTL
    }
    fn set_value(&mut self, v: &[u8]) {
        *self = v.into();
    }
    fn from_value(v: &[u8]) -> Self {
        v.into()
    }
}

impl Val for Slot {
    fn value(&self) -> &[u8] {
        &self.value
    }
    fn at(&self) -> u64 {
        self.at
    }
    fn set_value(&mut self, v: &[u8]) {
        self.value = v.into();
    }
    fn from_value(v: &[u8]) -> Self {
        Slot {
            value: v.into(),
            at: NO_TTL,
        }
    }
}

/// The two layouts, over either kind of value.
#[derive(Debug, Clone)]
pub enum Fields<V> {
    Listpack(Vec<(Bytes, V)>),
    Table(Dict<Bytes, V>),
}

impl<V: Val> Fields<V> {
    fn len(&self) -> usize {
        match self {
            Fields::Listpack(v) => v.len(),
            Fields::Table(d) => d.len(),
        }
    }

    fn get(&self, field: &[u8]) -> Option<&V> {
        match self {
            Fields::Listpack(v) => v.iter().find(|(f, _)| &**f == field).map(|(_, v)| v),
            Fields::Table(d) => d.get(field),
        }
    }

    fn get_mut(&mut self, field: &[u8]) -> Option<&mut V> {
        match self {
            Fields::Listpack(v) => v.iter_mut().find(|(f, _)| &**f == field).map(|(_, v)| v),
            Fields::Table(d) => d.get_mut(field),
        }
    }

    fn is_listpack(&self) -> bool {
        matches!(self, Fields::Listpack(_))
    }

    /// Converts to a hash table (Redis's `hashTypeConvert`).
    fn convert(&mut self) {
        if let Fields::Listpack(v) = self {
            let mut d = Dict::with_capacity(v.len());
            for (f, val) in v.drain(..) {
                d.insert(f, val);
            }
            *self = Fields::Table(d);
        }
    }

    fn remove(&mut self, field: &[u8]) -> Option<V> {
        match self {
            Fields::Listpack(v) => {
                let i = v.iter().position(|(f, _)| &**f == field)?;
                Some(v.remove(i).1)
            }
            Fields::Table(d) => d.remove(field).map(|(_, v)| v),
        }
    }

    fn iter(&self) -> Box<dyn Iterator<Item = (&[u8], &V)> + '_> {
        match self {
            Fields::Listpack(v) => Box::new(v.iter().map(|(f, v)| (&**f, v))),
            Fields::Table(d) => Box::new(d.iter().map(|(f, v)| (&**f, v))),
        }
    }

    fn random(&self, rng: &mut impl Rng) -> Option<(&[u8], &[u8])> {
        match self {
            Fields::Listpack(v) if v.is_empty() => None,
            Fields::Listpack(v) => {
                let (f, val) = &v[rng.random_range(0..v.len())];
                Some((f, val.value()))
            }
            Fields::Table(d) => d.random(rng).map(|(f, v)| (&**f, v.value())),
        }
    }

    fn sample(&self, rng: &mut impl Rng, count: usize, mut f: impl FnMut(&[u8], &[u8])) {
        match self {
            Fields::Listpack(v) => {
                let n = v.len();
                for i in rand::seq::index::sample(rng, n, count.min(n)) {
                    f(&v[i].0, v[i].1.value());
                }
            }
            Fields::Table(d) => d.sample(rng, count, |k, v| f(k, v.value())),
        }
    }

    fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(&[u8], &[u8])) -> u64 {
        match self {
            Fields::Listpack(v) => {
                v.iter().for_each(|(k, val)| f(k, val.value()));
                0
            }
            Fields::Table(d) => d.scan(cursor, count, |k, v| f(k, v.value())),
        }
    }

    fn mem_usage(&self) -> usize {
        let data: usize = self.iter().map(|(f, v)| f.len() + v.value().len()).sum();
        data + match self {
            Fields::Listpack(v) => v.capacity() * std::mem::size_of::<(Bytes, V)>(),
            Fields::Table(d) => d.mem_usage(),
        }
    }
}

#[derive(Debug, Clone)]
pub enum Hash {
    /// A hash that never had a field TTL.
    Plain(Fields<Bytes>),
    /// A hash that has (or had) field TTLs; `min` is a lower bound on the
    /// earliest deadline (`u64::MAX`: none).
    Ex { fields: Fields<Slot>, min: u64 },
}

impl Default for Hash {
    fn default() -> Self {
        Hash::Plain(Fields::Listpack(Vec::new()))
    }
}

/// Runs `$body` with `$f` bound to the hash's fields, whichever value kind.
macro_rules! each {
    ($h:expr, $f:ident => $body:expr) => {
        match $h {
            Hash::Plain($f) => $body,
            Hash::Ex { fields: $f, .. } => $body,
        }
    };
}

impl Hash {
    pub fn new() -> Hash {
        Hash::default()
    }

    pub fn len(&self) -> usize {
        each!(self, f => f.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The name OBJECT ENCODING answers (Redis 8.0's).
    pub fn encoding(&self) -> &'static str {
        match self {
            Hash::Plain(Fields::Listpack(_)) => "listpack",
            Hash::Ex {
                fields: Fields::Listpack(_),
                ..
            } => "listpackex",
            _ => "hashtable",
        }
    }

    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        each!(self, f => f.get(field).map(|v| v.value()))
    }

    pub fn contains(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    fn is_listpack(&self) -> bool {
        each!(self, f => f.is_listpack())
    }

    fn convert(&mut self) {
        each!(self, f => f.convert())
    }

    /// Sets `field` to `value`, dropping any TTL it had; true if the field
    /// is new. Converts first if either is too long for a listpack, and
    /// after if there are now too many fields (Redis's `hashTypeSet`).
    pub fn set(&mut self, field: &[u8], value: &[u8], limits: Limits) -> bool {
        self.set_with(field, value, limits, false)
    }

    /// Like [`set`](Self::set), keeping the TTL of an existing field
    /// (`HASH_SET_KEEP_TTL`).
    pub fn set_keep_ttl(&mut self, field: &[u8], value: &[u8], limits: Limits) -> bool {
        self.set_with(field, value, limits, true)
    }

    fn set_with(&mut self, field: &[u8], value: &[u8], limits: Limits, keep_ttl: bool) -> bool {
        if self.is_listpack() && (field.len() > limits.value || value.len() > limits.value) {
            self.convert();
        }
        let new = match self {
            Hash::Plain(f) => set_in(f, field, value),
            Hash::Ex {
                fields: Fields::Listpack(v),
                ..
            } => match v.iter().position(|(f, _)| &**f == field) {
                Some(i) => {
                    v[i].1.value = value.into();
                    if !keep_ttl && v[i].1.at != NO_TTL {
                        // Persisted: it moves behind the fields with TTLs.
                        let mut e = v.remove(i);
                        e.1.at = NO_TTL;
                        v.push(e);
                    }
                    false
                }
                None => {
                    v.push((field.into(), Slot::from_value(value)));
                    true
                }
            },
            Hash::Ex { fields, .. } => {
                let new = set_in(fields, field, value);
                if !keep_ttl && let Some(s) = fields.get_mut(field) {
                    s.at = NO_TTL;
                }
                new
            }
        };
        if self.is_listpack() && self.len() > limits.entries {
            self.convert();
        }
        new
    }

    /// Removes `field`; true if it was there. The listpack keeps the order
    /// of the remaining fields.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        each!(self, f => f.remove(field).is_some())
    }

    /// Every (field, value), in listpack order or table order.
    pub fn iter(&self) -> Box<dyn Iterator<Item = (&[u8], &[u8])> + '_> {
        each!(self, f => Box::new(f.iter().map(|(k, v)| (k, v.value()))))
    }

    /// A uniformly random (field, value).
    pub fn random(&self, rng: &mut impl Rng) -> Option<(&[u8], &[u8])> {
        each!(self, f => f.random(rng))
    }

    /// Calls `f` on `min(count, len)` distinct random entries.
    pub fn sample(&self, rng: &mut impl Rng, count: usize, f: impl FnMut(&[u8], &[u8])) {
        each!(self, fields => fields.sample(rng, count, f))
    }

    /// One HSCAN step: a listpack is returned whole with cursor 0, a table
    /// walks from `cursor` (Redis's `scanGenericCommand`).
    pub fn scan(&self, cursor: u64, count: usize, f: impl FnMut(&[u8], &[u8])) -> u64 {
        each!(self, fields => fields.scan(cursor, count, f))
    }

    /// Approximate heap bytes.
    pub fn mem_usage(&self) -> usize {
        each!(self, f => f.mem_usage())
    }

    /// `field`'s deadline: None if there is no such field, `Some(NO_TTL)`
    /// if it has none.
    pub fn expire_at(&self, field: &[u8]) -> Option<u64> {
        match self {
            Hash::Plain(f) => f.get(field).map(|_| NO_TTL),
            Hash::Ex { fields, .. } => fields.get(field).map(|s| s.at),
        }
    }

    /// Makes the hash able to hold field TTLs (Redis's `hashTypeSetExInit`
    /// converting a `listpack` to a `listpackex`); for good.
    pub fn make_ex(&mut self) {
        if let Hash::Plain(f) = self {
            let fields = match std::mem::replace(f, Fields::Listpack(Vec::new())) {
                Fields::Listpack(v) => Fields::Listpack(
                    v.into_iter()
                        .map(|(k, value)| (k, Slot { value, at: NO_TTL }))
                        .collect(),
                ),
                Fields::Table(d) => {
                    let mut t = Dict::with_capacity(d.len());
                    for (k, value) in d {
                        t.insert(k, Slot { value, at: NO_TTL });
                    }
                    Fields::Table(t)
                }
            };
            *self = Hash::Ex {
                fields,
                min: u64::MAX,
            };
        }
    }

    /// Sets (or with [`NO_TTL`] clears) an existing field's deadline; false
    /// if there is no such field. Makes the hash an `Ex` hash first.
    pub fn set_expire(&mut self, field: &[u8], at: u64) -> bool {
        self.make_ex();
        let Hash::Ex { fields, min } = self else {
            return false;
        };
        match fields {
            Fields::Listpack(v) => {
                let Some(i) = v.iter().position(|(f, _)| &**f == field) else {
                    return false;
                };
                let mut e = v.remove(i);
                e.1.at = at;
                // Redis's `listpackExAddInternal`: a field without TTL goes
                // last, one with a TTL before the first field that has none
                // or a later-or-equal deadline.
                let pos = if at == NO_TTL {
                    v.len()
                } else {
                    v.iter()
                        .position(|(_, s)| s.at == NO_TTL || s.at >= at)
                        .unwrap_or(v.len())
                };
                v.insert(pos, e);
            }
            Fields::Table(d) => match d.get_mut(field) {
                Some(s) => s.at = at,
                None => return false,
            },
        }
        if at != NO_TTL {
            *min = (*min).min(at);
        }
        true
    }

    /// A lower bound on the earliest field deadline; None if no field has
    /// one (as far as the bound knows).
    pub fn min_deadline(&self) -> Option<u64> {
        match self {
            Hash::Ex { min, .. } if *min != u64::MAX => Some(*min),
            _ => None,
        }
    }

    /// Removes up to `max` fields whose deadline is at or before `now`
    /// and makes the earliest-deadline bound exact (if fewer than `max` were
    /// due). Returns the number removed.
    pub fn expire_fields(&mut self, now: u64, max: usize) -> usize {
        let Hash::Ex { fields, min } = self else {
            return 0;
        };
        if *min > now {
            return 0;
        }
        let due = |at: u64| at != NO_TTL && at <= now;
        match fields {
            Fields::Listpack(v) => {
                // Fields with TTLs come first, by deadline.
                let n = v.iter().take_while(|(_, s)| due(s.at)).count().min(max);
                v.drain(..n);
                *min = v
                    .first()
                    .map(|(_, s)| s.at)
                    .filter(|&at| at != NO_TTL)
                    .unwrap_or(u64::MAX);
                n
            }
            Fields::Table(d) => {
                let mut gone: Vec<Bytes> = Vec::new();
                let mut next = u64::MAX;
                for (f, s) in d.iter() {
                    if s.at == NO_TTL {
                        continue;
                    }
                    if due(s.at) && gone.len() < max {
                        gone.push(f.clone());
                    } else {
                        next = next.min(s.at);
                    }
                }
                for f in &gone {
                    d.remove(f);
                }
                *min = next;
                gone.len()
            }
        }
    }

    /// True if every field has a deadline at or before `now` (the hash is
    /// logically gone; KEYS, SCAN and DBSIZE skip it).
    pub fn all_expired(&self, now: u64) -> bool {
        match self {
            Hash::Ex { fields, min } if *min <= now => {
                fields.iter().all(|(_, s)| s.at != NO_TTL && s.at <= now)
            }
            _ => false,
        }
    }
}

/// Sets a field in either layout; true if it is new.
fn set_in<V: Val>(fields: &mut Fields<V>, field: &[u8], value: &[u8]) -> bool {
    match fields.get_mut(field) {
        Some(v) => {
            v.set_value(value);
            false
        }
        None => {
            match fields {
                Fields::Listpack(v) => v.push((field.into(), V::from_value(value))),
                Fields::Table(d) => {
                    d.insert(field.into(), V::from_value(value));
                }
            }
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: Limits = Limits {
        entries: 4,
        value: 8,
    };

    #[test]
    fn listpack_keeps_insertion_order_and_updates_in_place() {
        let mut h = Hash::new();
        assert!(h.set(b"b", b"1", L));
        assert!(h.set(b"a", b"2", L));
        assert!(!h.set(b"b", b"3", L));
        let pairs: Vec<_> = h.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect();
        assert_eq!(
            pairs,
            vec![
                (b"b".to_vec(), b"3".to_vec()),
                (b"a".to_vec(), b"2".to_vec())
            ]
        );
        assert!(h.remove(b"b"));
        assert!(!h.remove(b"b"));
        assert_eq!(h.len(), 1);
        assert_eq!(h.encoding(), "listpack");
    }

    #[test]
    fn converts_above_entry_limit_and_never_back() {
        let mut h = Hash::new();
        for i in 0..4 {
            h.set(format!("f{i}").as_bytes(), b"v", L);
        }
        assert_eq!(
            h.encoding(),
            "listpack",
            "exactly at the limit stays compact"
        );
        h.set(b"f4", b"v", L);
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(h.len(), 5);
        for i in 0..5 {
            h.remove(format!("f{i}").as_bytes());
        }
        assert!(h.is_empty());
        assert_eq!(h.encoding(), "hashtable", "Redis never converts back");
    }

    #[test]
    fn converts_on_long_field_or_value() {
        let mut h = Hash::new();
        h.set(b"f", b"12345678", L);
        assert_eq!(h.encoding(), "listpack", "value of exactly the limit");
        h.set(b"123456789", b"v", L);
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(h.get(b"f"), Some(&b"12345678"[..]));
        let mut h = Hash::new();
        h.set(b"f", b"v", L);
        h.set(b"f", b"123456789", L);
        assert_eq!(h.encoding(), "hashtable", "an update converts too");
        assert_eq!(h.len(), 1);
    }

    #[test]
    fn listpack_scan_is_whole_and_sample_is_distinct() {
        let mut h = Hash::new();
        for i in 0..4 {
            h.set(format!("f{i}").as_bytes(), b"v", L);
        }
        let mut seen = Vec::new();
        assert_eq!(h.scan(12345, 1, |f, _| seen.push(f.to_vec())), 0);
        assert_eq!(seen.len(), 4);
        let mut rng = rand::rng();
        let mut got = std::collections::HashSet::new();
        h.sample(&mut rng, 3, |f, _| {
            got.insert(f.to_vec());
        });
        assert_eq!(got.len(), 3);
    }

    fn fields(h: &Hash) -> Vec<String> {
        h.iter()
            .map(|(f, _)| String::from_utf8_lossy(f).into_owned())
            .collect()
    }

    #[test]
    fn listpackex_orders_ttl_fields_first_by_deadline() {
        let mut h = Hash::new();
        for f in ["a", "b", "c", "d"] {
            h.set(f.as_bytes(), b"v", L);
        }
        h.make_ex();
        assert_eq!(h.encoding(), "listpackex");
        assert!(h.set_expire(b"c", 50));
        assert!(h.set_expire(b"d", 40));
        assert!(h.set_expire(b"b", 50));
        assert!(!h.set_expire(b"zz", 10));
        assert_eq!(
            fields(&h),
            ["d", "b", "c", "a"],
            "equal deadlines: newest first"
        );
        assert_eq!(h.min_deadline(), Some(40));
        // HSET drops the TTL and moves the field behind the TTL fields.
        h.set(b"d", b"w", L);
        assert_eq!(fields(&h), ["b", "c", "a", "d"]);
        assert_eq!(h.expire_at(b"d"), Some(NO_TTL));
        // A stale bound is made exact by the next expiry pass.
        assert_eq!(h.expire_fields(45, usize::MAX), 0);
        assert_eq!(h.min_deadline(), Some(50));
        assert!(!h.all_expired(50));
        assert_eq!(h.expire_fields(50, 1), 1);
        assert_eq!(h.min_deadline(), Some(50), "one due field left");
        assert_eq!(h.expire_fields(50, 10), 1);
        assert_eq!(fields(&h), ["a", "d"]);
        assert_eq!(h.min_deadline(), None);
    }

    #[test]
    fn table_expiry_is_bounded_and_keeps_ttl_through_conversion() {
        let mut h = Hash::new();
        h.set(b"a", b"v", L);
        h.set_expire(b"a", 10);
        for i in 0..6 {
            h.set(format!("f{i}").as_bytes(), b"v", L);
            h.set_expire(format!("f{i}").as_bytes(), 20 + i);
        }
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(h.expire_at(b"a"), Some(10));
        h.set_keep_ttl(b"a", b"w", L);
        assert_eq!(h.expire_at(b"a"), Some(10));
        assert_eq!(h.expire_fields(100, 3), 3);
        assert!(h.min_deadline().is_some_and(|m| m <= 100));
        assert!(h.all_expired(100));
        assert_eq!(h.expire_fields(100, 100), 4);
        assert!(h.is_empty());
    }
}
