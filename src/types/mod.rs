//! Value data structures other than sorted sets: hashes ([`hash::Hash`]),
//! lists ([`list::List`]) and sets ([`set::Set`]). Hashes and sets mirror the
//! two encodings Redis 7.0 reports through `OBJECT ENCODING` — a compact form
//! for small values (listpack, intset) and a hash table
//! ([`crate::dict::Dict`]) for large ones — and convert between them at the
//! same thresholds, because the compact forms fix the order of replies
//! (insertion order, sorted integers) that clients can observe.

pub mod hash;
pub mod list;
pub mod set;
