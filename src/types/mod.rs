//! The value data structures: sorted sets ([`zset`]), streams ([`stream`]), hashes
//! ([`hash::Hash`]), lists ([`list::List`]) and sets ([`set::Set`]), with
//! the hash table they share ([`dict`]) and the long-double arithmetic
//! ZINCRBY and INCRBYFLOAT need ([`ldouble`]), HyperLogLog's byte format
//! ([`hll`]) and GEO's geohash arithmetic ([`geo`]). They know nothing of keys,
//! commands or clients, and each is tested alone. Hashes and sets mirror the
//! two encodings Redis 7.0 reports through `OBJECT ENCODING` — a compact form
//! for small values (listpack, intset) and a hash table
//! ([`crate::types::dict::Dict`]) for large ones — and convert between them at the
//! same thresholds, because the compact forms fix the order of replies
//! (insertion order, sorted integers) that clients can observe.

pub(crate) mod bitmap;
pub(crate) mod dict;
pub(crate) mod geo;
pub(crate) mod hash;
pub(crate) mod hll;
pub(crate) mod key;
pub(crate) mod ldouble;
pub(crate) mod list;
pub(crate) mod set;
pub(crate) mod small_bytes;
pub(crate) mod stream;
pub(crate) mod window_rule;
pub mod zset;
