//! The values a key can hold, one variant per Redis type.
//!
//! Each family's data structure lives in its own module; this enum is the
//! only place that knows all of them, so `TYPE`, `OBJECT ENCODING` and
//! memory accounting stay in one spot.

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
pub enum Value {
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
    pub fn type_name(&self) -> &'static str {
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
    pub fn encoding(&self) -> &'static str {
        match self {
            Value::Str(s) => s.encoding(),
            Value::Hash(h) => h.encoding(),
            Value::Set(s) => s.encoding(),
            Value::ZSet(z) => z.encoding_name(),
            // Redis 7.0 makes every list a quicklist (7.2 added listpack lists).
            Value::List(_) => "quicklist",
            Value::Stream(_) => "stream",
        }
    }

    /// Approximate heap bytes held by the value.
    pub fn mem_usage(&self) -> usize {
        match self {
            Value::Str(s) => s.data.capacity(),
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
#[derive(Debug, Clone, Default)]
pub struct Str {
    pub data: Vec<u8>,
    pub raw: bool,
    pub plain: bool,
}

/// Longest string Redis stores as `embstr` (`OBJ_ENCODING_EMBSTR_SIZE_LIMIT`).
const EMBSTR_MAX: usize = 44;

impl Str {
    pub fn new(data: &[u8]) -> Str {
        Str {
            data: data.to_vec(),
            raw: false,
            plain: false,
        }
    }

    /// A string Redis creates with `createStringObject` and never tries to
    /// encode as an integer.
    pub fn plain(data: Vec<u8>) -> Str {
        Str {
            data,
            raw: false,
            plain: true,
        }
    }

    /// A string Redis modified in place (always `raw`).
    pub fn raw(data: Vec<u8>) -> Str {
        Str {
            data,
            raw: true,
            plain: false,
        }
    }

    pub fn from_int(n: i64) -> Str {
        Str {
            data: itoa::Buffer::new().format(n).as_bytes().to_vec(),
            raw: false,
            plain: false,
        }
    }

    pub fn encoding(&self) -> &'static str {
        if !self.raw && !self.plain && self.data.len() <= 20 && parse_i64(&self.data).is_some() {
            "int"
        } else if !self.raw && self.data.len() <= EMBSTR_MAX {
            "embstr"
        } else {
            "raw"
        }
    }
}
