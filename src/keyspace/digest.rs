//! DEBUG DIGEST and DEBUG DIGEST-VALUE: Redis's dataset digest (debug.c),
//! computed the same way so a digest taken on zwindow compares with one
//! taken on redis-server holding the same data.
//!
//! Two SHA1 steps build it: `xor` folds the SHA1 of some bytes into a
//! digest (order-free: set members, hash fields, keys), `mix` does that and
//! then replaces the digest by its own SHA1 (order-bound: list elements,
//! stream entries). Values are digested from their logical contents (an
//! intset member or a listpack integer as its decimal text, a score as
//! Redis 8.0's `fpconv_dtoa` prints it), so the encoding chosen for a value never changes its digest.

use sha1_smol::Sha1;

use super::{Entry, Value};
use crate::types::hash::NO_TTL;
use crate::types::stream::StreamId;

/// A 20-byte SHA1-sized digest.
type Digest = [u8; 20];

/// Redis's object type numbers (`OBJ_STRING` …), which the digest mixes in.
fn type_code(v: &Value) -> u32 {
    match v {
        Value::Str(_) => 0,
        Value::List(_) => 1,
        Value::Set(_) => 2,
        Value::ZSet(_) => 3,
        Value::Hash(_) => 4,
        Value::Stream(_) => 6,
    }
}

fn sha1(data: &[u8]) -> Digest {
    Sha1::from(data).digest().bytes()
}

/// Redis's `xorDigest`: `digest ^= SHA1(data)`.
fn xor(digest: &mut Digest, data: &[u8]) {
    for (d, h) in digest.iter_mut().zip(sha1(data)) {
        *d ^= h;
    }
}

/// Redis's `mixDigest`: `digest = SHA1(digest ^ SHA1(data))`.
fn mix(digest: &mut Digest, data: &[u8]) {
    xor(digest, data);
    *digest = sha1(digest);
}

/// Redis's `xorObjectDigest`: folds a value (and whether its key has a
/// TTL) into `digest`.
pub(crate) fn value(digest: &mut Digest, entry: &Entry) {
    mix(digest, &type_code(&entry.value).to_be_bytes());
    match &entry.value {
        Value::Str(s) => mix(digest, &s.data),
        Value::List(l) => {
            for e in l.iter() {
                mix(digest, e);
            }
        }
        Value::Set(s) => {
            let volatile = s.has_ttls();
            for m in s.iter() {
                let m = m.to_bytes();
                match s.expire_at(&m).filter(|&at| volatile && at != NO_TTL) {
                    None => xor(digest, &m),
                    // A member with a TTL (Redis marks a hash field's as
                    // `!!hexpire!!`): its element carries its deadline too.
                    Some(at) => {
                        let mut element = [0u8; 20];
                        mix(&mut element, &m);
                        mix(&mut element, b"!!sexpire!!");
                        mix(&mut element, at.to_string().as_bytes());
                        xor(digest, &element);
                    }
                }
            }
        }
        Value::ZSet(z) => {
            let mut scratch = Vec::new();
            for (member, score) in z.iter() {
                let mut element = [0u8; 20];
                mix(&mut element, member.joined(&mut scratch));
                // Redis 8.0 digests a score as `fpconv_dtoa` prints it,
                // whole numbers included (7.0: `%.17g`).
                let mut tmp = [0u8; crate::protocol::fpconv::MAX_LEN];
                let n = crate::protocol::fpconv::fpconv_dtoa(score, &mut tmp);
                mix(&mut element, &tmp[..n]);
                xor(digest, &element);
            }
        }
        Value::Hash(h) => {
            let volatile = h.volatile_fields() != 0;
            for (field, val) in h.iter() {
                let mut element = [0u8; 20];
                mix(&mut element, field);
                mix(&mut element, val);
                // Redis 7.4 marks a field with a TTL (not its deadline).
                if volatile && h.expire_at(field).is_some_and(|at| at != NO_TTL) {
                    xor(&mut element, b"!!hexpire!!");
                }
                xor(digest, &element);
            }
        }
        Value::Stream(s) => {
            s.range(StreamId::MIN, StreamId::MAX, false, |id, fields| {
                mix(digest, format!("{}.{}", id.ms, id.seq).as_bytes());
                fields.for_each(|elem| mix(digest, elem));
                true
            });
        }
    }
    if entry.expire_at != 0 {
        xor(digest, b"!!expire!!");
    }
}

/// Redis's `computeDatasetDigest`, fed database by database: each
/// non-empty database's number, then every key with its value. `dbs`
/// yields each database's number and its keys.
pub(crate) fn dataset<'a, D, K>(dbs: D) -> Digest
where
    D: IntoIterator<Item = (usize, K)>,
    K: IntoIterator<Item = (&'a [u8], &'a Entry)>,
{
    let mut all = [0u8; 20];
    for (db, keys) in dbs {
        let mut keys = keys.into_iter().peekable();
        if keys.peek().is_none() {
            continue;
        }
        mix(&mut all, &(db as u32).to_be_bytes());
        for (key, entry) in keys {
            let mut one = [0u8; 20];
            mix(&mut one, key);
            value(&mut one, entry);
            xor(&mut all, &one);
        }
    }
    all
}

/// The digest as DEBUG prints it: 40 lowercase hex digits.
pub(crate) fn hex(digest: &Digest) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::Str;

    #[test]
    fn matches_redis_digests() {
        // From redis-server 7.0.15: SET k v; DEBUG DIGEST-VALUE k; DEBUG DIGEST.
        let e = Entry::new(Value::Str(Str::new(b"v")));
        let mut d = [0u8; 20];
        value(&mut d, &e);
        assert_eq!(hex(&d), "d79ee9fe5d5ad902d7f6620efc3b07b75ddd742f");
        let all = dataset([(0, [(&b"k"[..], &e)])]);
        assert_eq!(hex(&all), "264ccf65edec66bccfa7cc659414ccca432057d2");
        let no_keys: Vec<(&[u8], &Entry)> = Vec::new();
        assert_eq!(hex(&dataset([(0, no_keys)])), "0".repeat(40));
    }
}
