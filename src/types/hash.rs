//! The hash value: Redis 7.0's `listpack` / `hashtable` pair of encodings.
//!
//! A small hash is a `Vec` of (field, value) pairs in insertion order, as a
//! listpack keeps them, so HGETALL, HKEYS, HSCAN and a whole-hash HRANDFIELD
//! answer in exactly Redis's order; lookups are linear, which is what Redis
//! pays too and is cheap under the `hash-max-listpack-*` limits. A hash that
//! gets more than `hash-max-listpack-entries` fields, or any field or value
//! longer than `hash-max-listpack-value` bytes, becomes a [`Dict`] for good:
//! like Redis it never converts back, even when it shrinks.

use rand::Rng;

use crate::types::dict::Dict;

type Bytes = Box<[u8]>;

/// The `hash-max-listpack-*` settings in force for one write.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub entries: usize,
    pub value: usize,
}

#[derive(Debug, Clone)]
pub enum Hash {
    Listpack(Vec<(Bytes, Bytes)>),
    Table(Dict<Bytes, Bytes>),
}

impl Default for Hash {
    fn default() -> Self {
        Hash::Listpack(Vec::new())
    }
}

impl Hash {
    pub fn new() -> Hash {
        Hash::default()
    }

    pub fn len(&self) -> usize {
        match self {
            Hash::Listpack(v) => v.len(),
            Hash::Table(d) => d.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn encoding(&self) -> &'static str {
        match self {
            Hash::Listpack(_) => "listpack",
            Hash::Table(_) => "hashtable",
        }
    }

    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match self {
            Hash::Listpack(v) => v.iter().find(|(f, _)| &**f == field).map(|(_, v)| &**v),
            Hash::Table(d) => d.get(field).map(|v| &**v),
        }
    }

    pub fn contains(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Converts to a hash table (Redis's `hashTypeConvert`).
    fn convert(&mut self) {
        if let Hash::Listpack(v) = self {
            let mut d = Dict::with_capacity(v.len());
            for (f, val) in v.drain(..) {
                d.insert(f, val);
            }
            *self = Hash::Table(d);
        }
    }

    /// Sets `field` to `value`; true if the field is new. Converts first if
    /// either is too long for a listpack, and after if there are now too
    /// many fields (Redis's `hashTypeSet`).
    pub fn set(&mut self, field: &[u8], value: &[u8], limits: Limits) -> bool {
        if matches!(self, Hash::Listpack(_))
            && (field.len() > limits.value || value.len() > limits.value)
        {
            self.convert();
        }
        let new = match self {
            Hash::Listpack(v) => match v.iter_mut().find(|(f, _)| &**f == field) {
                Some((_, old)) => {
                    *old = value.into();
                    false
                }
                None => {
                    v.push((field.into(), value.into()));
                    true
                }
            },
            Hash::Table(d) => d.insert(field.into(), value.into()).is_none(),
        };
        if matches!(self, Hash::Listpack(_)) && self.len() > limits.entries {
            self.convert();
        }
        new
    }

    /// Removes `field`; true if it was there. The listpack keeps the order
    /// of the remaining fields.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match self {
            Hash::Listpack(v) => match v.iter().position(|(f, _)| &**f == field) {
                Some(i) => {
                    v.remove(i);
                    true
                }
                None => false,
            },
            Hash::Table(d) => d.remove(field).is_some(),
        }
    }

    /// Every (field, value), in listpack order or table order.
    pub fn iter(&self) -> Box<dyn Iterator<Item = (&[u8], &[u8])> + '_> {
        match self {
            Hash::Listpack(v) => Box::new(v.iter().map(|(f, v)| (&**f, &**v))),
            Hash::Table(d) => Box::new(d.iter().map(|(f, v)| (&**f, &**v))),
        }
    }

    /// A uniformly random (field, value).
    pub fn random(&self, rng: &mut impl Rng) -> Option<(&[u8], &[u8])> {
        match self {
            Hash::Listpack(v) if v.is_empty() => None,
            Hash::Listpack(v) => {
                let (f, val) = &v[rng.random_range(0..v.len())];
                Some((f, val))
            }
            Hash::Table(d) => d.random(rng).map(|(f, v)| (&**f, &**v)),
        }
    }

    /// Calls `f` on `min(count, len)` distinct random entries.
    pub fn sample(&self, rng: &mut impl Rng, count: usize, mut f: impl FnMut(&[u8], &[u8])) {
        match self {
            Hash::Listpack(v) => {
                let n = v.len();
                for i in rand::seq::index::sample(rng, n, count.min(n)) {
                    f(&v[i].0, &v[i].1);
                }
            }
            Hash::Table(d) => d.sample(rng, count, |k, v| f(k, v)),
        }
    }

    /// One HSCAN step: a listpack is returned whole with cursor 0, a table
    /// walks from `cursor` (Redis's `scanGenericCommand`).
    pub fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(&[u8], &[u8])) -> u64 {
        match self {
            Hash::Listpack(v) => {
                v.iter().for_each(|(k, val)| f(k, val));
                0
            }
            Hash::Table(d) => d.scan(cursor, count, |k, v| f(k, v)),
        }
    }

    /// Approximate heap bytes.
    pub fn mem_usage(&self) -> usize {
        let data: usize = self.iter().map(|(f, v)| f.len() + v.len()).sum();
        data + match self {
            Hash::Listpack(v) => v.capacity() * std::mem::size_of::<(Bytes, Bytes)>(),
            Hash::Table(d) => d.mem_usage(),
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
}
