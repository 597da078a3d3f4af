//! The values a key can hold, one variant per Redis type.
//!
//! Each family's data structure lives in its own module; this enum is the
//! only place that knows all of them, so `TYPE`, `OBJECT ENCODING` and
//! memory accounting stay in one spot.

use compact_bytes::CompactBytes;

use crate::types::hash::Hash;
use crate::types::list::List;
use crate::types::set::Set;
use crate::types::stream::Stream;
use crate::util::parse_i64;

/// Inline in every key's entry, so its size is paid per key: 40 bytes, set
/// by the string and the sorted set (whose compact encoding is the common
/// small value). Types whose header is larger, and whose values are large
/// anyway, are boxed (as Redis's robj points at a separate quicklist or
/// stream header).
#[derive(Clone)]
pub(crate) enum Value {
    Str(Str),
    Hash(Hash),
    Set(Set),
    ZSet(crate::types::zset::ZSet),
    /// Boxed: a list's deque and byte count take 40 bytes.
    List(Box<List>),
    /// Boxed: a stream's header is much larger than the other variants.
    Stream(Box<Stream>),
}

impl Value {
    /// The name `TYPE` answers.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::Hash(_) => "hash",
            Value::Set(_) => "set",
            Value::ZSet(_) => "zset",
            Value::List(_) => "list",
            Value::Stream(_) => "stream",
        }
    }

    /// The name `OBJECT ENCODING` answers.
    pub(crate) fn encoding(&self) -> &'static str {
        match self {
            Value::Str(s) => s.encoding(),
            Value::Hash(h) => h.encoding(),
            Value::Set(s) => s.encoding(),
            Value::ZSet(z) => z.encoding_name(),
            Value::List(l) => l.encoding(),
            Value::Stream(_) => "stream",
        }
    }

    /// Approximate heap bytes held by the value.
    pub(crate) fn mem_usage(&self) -> usize {
        match self {
            Value::Str(s) => s.heap_bytes(),
            Value::Hash(h) => h.mem_usage(),
            Value::Set(s) => s.mem_usage(),
            Value::ZSet(z) => z.mem_usage(),
            Value::List(l) => l.mem_usage(),
            Value::Stream(s) => s.mem_usage(),
        }
    }
}

/// A string value. Redis reports `int`, `embstr` or `raw` depending on how
/// the value was made; `raw` records that it was modified in place (APPEND,
/// SETRANGE), which Redis never re-encodes, and `plain` that it was stored
/// without Redis's `tryObjectEncoding` (INCRBYFLOAT results), so even an
/// integer-looking value reports `embstr`.
///
/// The bytes are a `compact_bytes::CompactBytes`: the size of a `Vec`, but
/// a value of up to 23 bytes (a counter, a flag, a short token) sits inline
/// in the key's entry, with no allocation of its own; a longer one is a
/// heap buffer that grows as a `Vec` does.
#[derive(Debug, Clone, Default)]
pub(crate) struct Str {
    pub(crate) data: CompactBytes,
    pub(crate) raw: bool,
    pub(crate) plain: bool,
}

/// Longest string Redis stores as `embstr` (`OBJ_ENCODING_EMBSTR_SIZE_LIMIT`).
const EMBSTR_MAX: usize = 44;

/// `v`'s bytes, inline when they fit (copied, and `v`'s buffer freed),
/// else in `v`'s own buffer.
fn compact(v: Vec<u8>) -> CompactBytes {
    if v.len() <= CompactBytes::MAX_INLINE {
        CompactBytes::new(&v)
    } else {
        CompactBytes::from(v)
    }
}

impl Str {
    pub(crate) fn new(data: &[u8]) -> Str {
        Str {
            data: CompactBytes::new(data),
            raw: false,
            plain: false,
        }
    }

    /// A string Redis creates with `createStringObject` and never tries to
    /// encode as an integer.
    pub(crate) fn plain(data: Vec<u8>) -> Str {
        Str {
            data: compact(data),
            raw: false,
            plain: true,
        }
    }

    /// A string Redis modified in place (always `raw`).
    pub(crate) fn raw(data: Vec<u8>) -> Str {
        Str {
            data: compact(data),
            raw: true,
            plain: false,
        }
    }

    pub(crate) fn from_int(n: i64) -> Str {
        Str::new(itoa::Buffer::new().format(n).as_bytes())
    }

    /// Runs `f` on the bytes as a `Vec` (the HyperLogLog code grows and
    /// rewrites them in place) and stores the result back whatever `f`
    /// returns, so an error part-way loses nothing. A heap value moves out
    /// and back without a copy.
    pub(crate) fn with_vec<R>(&mut self, f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
        let mut v = std::mem::take(&mut self.data).into_vec();
        let r = f(&mut v);
        self.data = compact(v);
        r
    }

    /// Grows the string to `len` bytes with zeros (SETRANGE, SETBIT).
    pub(crate) fn zero_extend(&mut self, len: usize) {
        const ZEROS: [u8; 4096] = [0; 4096];
        let mut missing = len.saturating_sub(self.data.len());
        self.data.reserve(missing);
        while missing > 0 {
            let n = missing.min(ZEROS.len());
            self.data.extend_from_slice(&ZEROS[..n]);
            missing -= n;
        }
    }

    /// Heap bytes held: none while the value is inline.
    pub(crate) fn heap_bytes(&self) -> usize {
        if self.data.spilled() {
            self.data.capacity()
        } else {
            0
        }
    }

    pub(crate) fn encoding(&self) -> &'static str {
        if !self.raw && !self.plain && self.data.len() <= 20 && parse_i64(&self.data).is_some() {
            "int"
        } else if !self.raw && self.data.len() <= EMBSTR_MAX {
            "embstr"
        } else {
            "raw"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_strings_are_inline_and_long_ones_on_the_heap() {
        for n in [0usize, 1, 22, 23, 24, 100, 5000] {
            let bytes: Vec<u8> = (0..n).map(|i| i as u8).collect();
            for s in [
                Str::new(&bytes),
                Str::plain(bytes.clone()),
                Str::raw(bytes.clone()),
            ] {
                assert_eq!(&s.data[..], &bytes[..]);
                assert_eq!(s.heap_bytes() == 0, n <= CompactBytes::MAX_INLINE, "{n}");
                assert_eq!(s.clone().data.to_vec(), bytes);
            }
        }
        assert_eq!(&Str::from_int(-1234567890123).data[..], b"-1234567890123");
        assert_eq!(Str::from_int(42).heap_bytes(), 0);
    }

    #[test]
    fn growing_keeps_every_byte() {
        // From inline across the inline limit, then far into the heap.
        let mut s = Str::new(b"abc");
        s.zero_extend(2);
        assert_eq!(&s.data[..], b"abc");
        s.zero_extend(30);
        assert_eq!(&s.data[..3], b"abc");
        assert!(s.data[3..].iter().all(|&b| b == 0) && s.data.len() == 30);
        s.zero_extend(10_000);
        assert_eq!(s.data.len(), 10_000);
        s.data[9_999] = 7;
        // `with_vec` hands the bytes out and takes them back, even when the
        // closure fails part-way.
        let r: Result<(), ()> = s.with_vec(|v| {
            v.extend_from_slice(b"xyz");
            Err(())
        });
        assert!(r.is_err());
        assert_eq!(s.data.len(), 10_003);
        assert_eq!(&s.data[9_999..], b"\x07xyz");
        let mut small = Str::new(b"12");
        small.with_vec(|v| v.push(b'3'));
        assert_eq!(&small.data[..], b"123");
        assert_eq!(small.heap_bytes(), 0);
    }
}
