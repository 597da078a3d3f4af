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
//! and deadline together. Plus, per `Ex` hash, its [`Deadlines`]: a lower bound
//! on the earliest deadline, which is what the keyspace schedules the hash
//! by (made exact whenever expired fields are removed), and the count of
//! fields that have one (INFO's volatile fields).
//!
//! A hash table has no deadline order, so removing its expired fields means
//! looking at its fields. Lazily (a command is about to see the hash) that is
//! one whole pass, as every expired field must be gone first; the sweeper
//! instead scans a bounded number of fields per visit, resuming where the
//! last visit stopped (a SCAN cursor, so a table resized in between is still
//! covered), and makes the bound exact only when a pass completes.
//!
//! As in Redis's `listpackex`, a compact `Ex` hash keeps the fields that
//! have a TTL first, ordered by deadline, and the others after them in
//! insertion order (so HGETALL's order matches Redis's), and its expired
//! fields are always a prefix.

use rand::Rng;

use crate::types::dict::Dict;

/// Members, fields and values: inline up to 15 bytes, so a small
/// value's short strings cost no allocation each.
type Bytes = crate::types::small_bytes::SmallBytes;

/// No deadline.
pub(crate) const NO_TTL: u64 = 0;

/// The `hash-max-listpack-*` settings in force for one write.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) entries: usize,
    pub(crate) value: usize,
}

/// A value with its deadline (Unix ms; [`NO_TTL`]: none), in `Ex` hashes.
#[derive(Debug, Clone)]
pub(crate) struct Slot {
    pub(crate) value: Bytes,
    at: u64,
}

/// What both kinds of stored value give the generic code.
pub(crate) trait Val: Clone {
    fn value(&self) -> &[u8];
    fn set_value(&mut self, v: &[u8]);
    fn from_value(v: &[u8]) -> Self;
}

impl Val for Bytes {
    fn value(&self) -> &[u8] {
        self
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
pub(crate) enum Fields<V> {
    Listpack(Vec<(Bytes, V)>),
    /// Boxed: the table is twice the size of the listpack's `Vec`, and
    /// every key's entry is as large as its largest inline value.
    Table(Box<Dict<Bytes, V>>),
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
            *self = Fields::Table(Box::new(d));
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
        let data: usize = self
            .iter()
            .map(|(f, v)| Bytes::heap_for(f.len()) + Bytes::heap_for(v.value().len()))
            .sum();
        data + match self {
            Fields::Listpack(v) => v.capacity() * std::mem::size_of::<(Bytes, V)>(),
            Fields::Table(d) => d.mem_usage(),
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) enum Hash {
    /// A hash that never had a field TTL.
    Plain(Fields<Bytes>),
    /// A hash that has (or had) field TTLs.
    Ex {
        fields: Fields<Slot>,
        /// Boxed: only hashes that had a field TTL have one.
        ttl: Box<Deadlines>,
    },
}

/// What an `Ex` hash (or a set with member TTLs, [`crate::types::set`])
/// knows about its entries' deadlines.
#[derive(Debug, Clone)]
pub(crate) struct Deadlines {
    /// A lower bound on the earliest deadline (`u64::MAX`: none).
    min: u64,
    /// Fields that have a deadline.
    volatile: usize,
    /// Hash tables: where the sweeper's bounded pass resumes (0: a new
    /// pass), and the earliest deadline that pass has kept so far.
    cursor: u64,
    pass_min: u64,
}

impl Deadlines {
    pub(crate) const NONE: Deadlines = Deadlines {
        min: u64::MAX,
        volatile: 0,
        cursor: 0,
        pass_min: u64::MAX,
    };

    /// A field's deadline went from `old` to `new`.
    pub(crate) fn changed(&mut self, old: u64, new: u64) {
        self.volatile = self.volatile + usize::from(new != NO_TTL) - usize::from(old != NO_TTL);
        if new != NO_TTL {
            self.min = self.min.min(new);
            self.pass_min = self.pass_min.min(new);
        }
    }

    /// The lower bound on the earliest deadline; None if none is known.
    pub(crate) fn min(&self) -> Option<u64> {
        (self.min != u64::MAX).then_some(self.min)
    }

    /// How many entries have a deadline.
    pub(crate) fn volatile(&self) -> usize {
        self.volatile
    }

    /// `count` entries with a deadline were removed by an expiry pass.
    pub(crate) fn expired(&mut self, count: usize) {
        self.volatile -= count;
        if self.volatile == 0 {
            *self = Deadlines::NONE;
        }
    }
}

/// The bounded expiry pass over a hash table whose entries carry deadlines
/// (`at_of`): removes up to `max` entries due at `now`, telling `removed`
/// each, and keeps `ttl`'s bound (exact once a whole pass completes). Hash
/// fields and set members share it. Returns the number removed; the caller
/// then calls [`Deadlines::expired`].
pub(crate) fn expire_table<V>(
    d: &mut Dict<Bytes, V>,
    ttl: &mut Deadlines,
    now: u64,
    max: usize,
    at_of: impl Fn(&V) -> u64,
    mut removed: impl FnMut(&[u8]),
) -> usize {
    let due = |at: u64| at != NO_TTL && at <= now;
    let whole = max == usize::MAX;
    if whole || ttl.cursor == 0 {
        ttl.cursor = 0;
        ttl.pass_min = u64::MAX;
    }
    let step = if whole {
        usize::MAX
    } else {
        max.saturating_mul(SCAN_PER_REMOVAL)
    };
    let mut gone: Vec<Bytes> = Vec::new();
    let mut looked = 0usize;
    loop {
        let pass_min = &mut ttl.pass_min;
        ttl.cursor = d.scan(ttl.cursor, step.min(1024), |f, v| {
            looked += 1;
            let at = at_of(v);
            if due(at) && gone.len() < max {
                gone.push(f.clone());
            } else if at != NO_TTL {
                *pass_min = (*pass_min).min(at);
            }
        });
        if ttl.cursor == 0 || looked >= step || gone.len() >= max {
            break;
        }
    }
    for f in &gone {
        d.remove(f);
        removed(f);
    }
    if ttl.cursor == 0 {
        // A whole pass: every kept deadline was seen.
        ttl.min = ttl.pass_min;
        ttl.pass_min = u64::MAX;
    }
    gone.len()
}

/// Fields a table hash's bounded expiry pass looks at per field it may
/// remove: a visit costs O(`max` × this) at most.
const SCAN_PER_REMOVAL: usize = 8;

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
    /// The hash table's figures (DEBUG HTSTATS-KEY), when the hash is one.
    pub(crate) fn dict_stats(&self, full: bool) -> Option<crate::types::dict::DictStats> {
        match self {
            Hash::Plain(Fields::Table(d)) => Some(d.stats(full)),
            Hash::Ex {
                fields: Fields::Table(d),
                ..
            } => Some(d.stats(full)),
            _ => None,
        }
    }

    pub(crate) fn new() -> Hash {
        Hash::default()
    }

    pub(crate) fn len(&self) -> usize {
        each!(self, f => f.len())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Room for exactly `pairs` fields in a new, empty small hash, which one
    /// HSET usually fills whole (a job's or a session's fields): pushed one
    /// by one, five fields would sit in a `Vec` of eight. Bounded by the
    /// listpack limit, whatever the client sent.
    pub(crate) fn reserve_new(&mut self, pairs: usize, limits: Limits) {
        if let Hash::Plain(Fields::Listpack(v)) = self
            && v.is_empty()
        {
            v.reserve_exact(pairs.min(limits.entries));
        }
    }

    /// The name OBJECT ENCODING answers (Redis 8.0's).
    pub(crate) fn encoding(&self) -> &'static str {
        match self {
            Hash::Plain(Fields::Listpack(_)) => "listpack",
            Hash::Ex {
                fields: Fields::Listpack(_),
                ..
            } => "listpackex",
            _ => "hashtable",
        }
    }

    pub(crate) fn get(&self, field: &[u8]) -> Option<&[u8]> {
        each!(self, f => f.get(field).map(|v| v.value()))
    }

    pub(crate) fn contains(&self, field: &[u8]) -> bool {
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
    pub(crate) fn set(&mut self, field: &[u8], value: &[u8], limits: Limits) -> bool {
        self.set_with(field, value, limits, false)
    }

    /// Like [`set`](Self::set), keeping the TTL of an existing field
    /// (`HASH_SET_KEEP_TTL`).
    pub(crate) fn set_keep_ttl(&mut self, field: &[u8], value: &[u8], limits: Limits) -> bool {
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
                ttl,
            } => match v.iter().position(|(f, _)| &**f == field) {
                Some(i) => {
                    v[i].1.value = value.into();
                    if !keep_ttl && v[i].1.at != NO_TTL {
                        // Persisted: it moves behind the fields with TTLs.
                        let mut e = v.remove(i);
                        ttl.changed(e.1.at, NO_TTL);
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
            Hash::Ex { fields, ttl } => {
                let new = set_in(fields, field, value);
                if !keep_ttl && let Some(s) = fields.get_mut(field) {
                    ttl.changed(s.at, NO_TTL);
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
    pub(crate) fn remove(&mut self, field: &[u8]) -> bool {
        match self {
            Hash::Plain(f) => f.remove(field).is_some(),
            Hash::Ex { fields, ttl } => match fields.remove(field) {
                Some(s) => {
                    ttl.changed(s.at, NO_TTL);
                    true
                }
                None => false,
            },
        }
    }

    /// Every (field, value), in listpack order or table order.
    pub(crate) fn iter(&self) -> Box<dyn Iterator<Item = (&[u8], &[u8])> + '_> {
        each!(self, f => Box::new(f.iter().map(|(k, v)| (k, v.value()))))
    }

    /// A uniformly random (field, value).
    pub(crate) fn random(&self, rng: &mut impl Rng) -> Option<(&[u8], &[u8])> {
        each!(self, f => f.random(rng))
    }

    /// Calls `f` on `min(count, len)` distinct random entries.
    pub(crate) fn sample(&self, rng: &mut impl Rng, count: usize, f: impl FnMut(&[u8], &[u8])) {
        each!(self, fields => fields.sample(rng, count, f))
    }

    /// One HSCAN step: a listpack is returned whole with cursor 0, a table
    /// walks from `cursor` (Redis's `scanGenericCommand`).
    pub(crate) fn scan(&self, cursor: u64, count: usize, f: impl FnMut(&[u8], &[u8])) -> u64 {
        each!(self, fields => fields.scan(cursor, count, f))
    }

    /// Approximate heap bytes.
    pub(crate) fn mem_usage(&self) -> usize {
        each!(self, f => f.mem_usage())
    }

    /// `field`'s deadline: None if there is no such field, `Some(NO_TTL)`
    /// if it has none.
    pub(crate) fn expire_at(&self, field: &[u8]) -> Option<u64> {
        match self {
            Hash::Plain(f) => f.get(field).map(|_| NO_TTL),
            Hash::Ex { fields, .. } => fields.get(field).map(|s| s.at),
        }
    }

    /// Makes the hash able to hold field TTLs (Redis's `hashTypeSetExInit`
    /// converting a `listpack` to a `listpackex`); for good.
    pub(crate) fn make_ex(&mut self) {
        if let Hash::Plain(f) = self {
            let fields = match std::mem::replace(f, Fields::Listpack(Vec::new())) {
                Fields::Listpack(v) => Fields::Listpack(
                    v.into_iter()
                        .map(|(k, value)| (k, Slot { value, at: NO_TTL }))
                        .collect(),
                ),
                Fields::Table(d) => {
                    let mut t = Dict::with_capacity(d.len());
                    for (k, value) in *d {
                        t.insert(k, Slot { value, at: NO_TTL });
                    }
                    Fields::Table(Box::new(t))
                }
            };
            *self = Hash::Ex {
                fields,
                ttl: Box::new(Deadlines::NONE),
            };
        }
    }

    /// Sets (or with [`NO_TTL`] clears) an existing field's deadline; false
    /// if there is no such field. Makes the hash an `Ex` hash first.
    pub(crate) fn set_expire(&mut self, field: &[u8], at: u64) -> bool {
        self.make_ex();
        let Hash::Ex { fields, ttl } = self else {
            return false;
        };
        match fields {
            Fields::Listpack(v) => {
                let Some(i) = v.iter().position(|(f, _)| &**f == field) else {
                    return false;
                };
                let mut e = v.remove(i);
                ttl.changed(e.1.at, at);
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
                Some(s) => {
                    ttl.changed(s.at, at);
                    s.at = at;
                }
                None => return false,
            },
        }
        true
    }

    /// How many fields have a deadline.
    pub(crate) fn volatile_fields(&self) -> usize {
        match self {
            Hash::Plain(_) => 0,
            Hash::Ex { ttl, .. } => ttl.volatile,
        }
    }

    /// A lower bound on the earliest field deadline; None if no field has
    /// one (as far as the bound knows).
    pub(crate) fn min_deadline(&self) -> Option<u64> {
        match self {
            Hash::Ex { ttl, .. } if ttl.min != u64::MAX => Some(ttl.min),
            _ => None,
        }
    }

    /// Removes up to `max` fields whose deadline is at or before `now`.
    /// Returns the number removed. `usize::MAX` (a command is about to see
    /// the hash) removes every due field and makes the earliest-deadline
    /// bound exact; a smaller `max` (the sweeper) bounds the work: a table
    /// hash then looks at about `max` × [`SCAN_PER_REMOVAL`] fields, and
    /// its bound becomes exact once a pass over the whole table completes.
    #[cfg(test)]
    fn expire_fields(&mut self, now: u64, max: usize) -> usize {
        self.expire_fields_with(now, max, |_| {})
    }

    /// [`expire_fields`](Self::expire_fields), telling `removed` each
    /// field it removes (what the AOF logs as HDEL).
    pub(crate) fn expire_fields_with(
        &mut self,
        now: u64,
        max: usize,
        mut removed: impl FnMut(&[u8]),
    ) -> usize {
        let Hash::Ex { fields, ttl } = self else {
            return 0;
        };
        if ttl.min > now {
            return 0;
        }
        let due = |at: u64| at != NO_TTL && at <= now;
        let count = match fields {
            Fields::Listpack(v) => {
                // Fields with TTLs come first, by deadline.
                let n = v.iter().take_while(|(_, s)| due(s.at)).count().min(max);
                for (f, _) in v.drain(..n) {
                    removed(&f);
                }
                ttl.min = v
                    .first()
                    .map(|(_, s)| s.at)
                    .filter(|&at| at != NO_TTL)
                    .unwrap_or(u64::MAX);
                n
            }
            Fields::Table(d) => expire_table(d, ttl, now, max, |s: &Slot| s.at, removed),
        };
        ttl.expired(count);
        count
    }

    /// True if every field has a deadline at or before `now` (the hash is
    /// logically gone; KEYS, SCAN and DBSIZE skip it).
    pub(crate) fn all_expired(&self, now: u64) -> bool {
        match self {
            Hash::Ex { fields, ttl } if ttl.min <= now => {
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

    #[test]
    fn table_sweeps_are_bounded_and_resume_where_they_stopped() {
        let mut h = Hash::new();
        let n = 5000u64;
        for i in 0..n {
            let f = format!("f{i}");
            h.set(f.as_bytes(), b"v", L);
            // Every other field expires at 100 + i, the rest never.
            if i % 2 == 0 {
                h.set_expire(f.as_bytes(), 100 + i);
            }
        }
        assert_eq!(h.volatile_fields(), n as usize / 2);
        assert_eq!(h.min_deadline(), Some(100));
        // Due at 1100: fields 0, 2, …, 1000 (501 of them).
        let now = 1100;
        let mut removed = 0;
        let mut visits = 0;
        while h.min_deadline().is_some_and(|m| m <= now) {
            let r = h.expire_fields(now, 4);
            assert!(r <= 4);
            removed += r;
            visits += 1;
            assert!(visits < 10_000, "a pass must end");
        }
        assert_eq!(removed, 501);
        assert_eq!(h.len(), n as usize - 501);
        assert_eq!(h.volatile_fields(), n as usize / 2 - 501);
        assert_eq!(h.min_deadline(), Some(1102), "exact after a whole pass");
        // A field given an earlier deadline mid-pass is not missed.
        assert!(h.expire_fields(1200, 4) <= 4);
        h.set_expire(b"f1", 1150);
        while h.min_deadline().is_some_and(|m| m <= 1200) {
            h.expire_fields(1200, 4);
        }
        assert_eq!(h.get(b"f1"), None);
        assert_eq!(h.expire_at(b"f1102"), Some(1202));
        // The lazy path removes every due field at once.
        let before = h.volatile_fields();
        assert_eq!(h.expire_fields(2000, usize::MAX), 400);
        assert_eq!(h.volatile_fields(), before - 400);
        assert_eq!(h.min_deadline(), Some(2002));
        // Persisting every field leaves no deadline to schedule.
        let fields: Vec<Vec<u8>> = h.iter().map(|(f, _)| f.to_vec()).collect();
        for f in &fields {
            h.set(f, b"w", L);
        }
        assert_eq!(h.volatile_fields(), 0);
        assert_eq!(h.expire_fields(u64::MAX - 1, usize::MAX), 0);
        assert_eq!(h.min_deadline(), None);
    }
}
