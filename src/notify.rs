//! Keyspace notification classes: the letters of `notify-keyspace-events`
//! as flag bits, parsed and formatted as Redis does. A leaf: the setting
//! (`config`) stores them, the keyspace tests them on every change, pub/sub
//! names the channels they publish to.

pub(crate) const KEYSPACE: u32 = 1 << 0; // K
pub(crate) const KEYEVENT: u32 = 1 << 1; // E
pub(crate) const GENERIC: u32 = 1 << 2; // g
pub(crate) const STRING: u32 = 1 << 3; // $
pub(crate) const LIST: u32 = 1 << 4; // l
pub(crate) const SET: u32 = 1 << 5; // s
pub(crate) const HASH: u32 = 1 << 6; // h
pub(crate) const ZSET: u32 = 1 << 7; // z
pub(crate) const EXPIRED: u32 = 1 << 8; // x
pub(crate) const EVICTED: u32 = 1 << 9; // e
pub(crate) const STREAM: u32 = 1 << 10; // t
const KEY_MISS: u32 = 1 << 11; // m
const MODULE: u32 = 1 << 12; // d
pub(crate) const NEW: u32 = 1 << 13; // n
/// `A`: every class except key-miss and new.
const ALL: u32 = GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;

/// Parses Redis's flag letters; None on an unknown letter.
pub(crate) fn parse(s: &[u8]) -> Option<u32> {
    let mut flags = 0;
    for &c in s {
        flags |= match c {
            b'A' => ALL,
            b'g' => GENERIC,
            b'$' => STRING,
            b'l' => LIST,
            b's' => SET,
            b'h' => HASH,
            b'z' => ZSET,
            b'x' => EXPIRED,
            b'e' => EVICTED,
            b'K' => KEYSPACE,
            b'E' => KEYEVENT,
            b't' => STREAM,
            b'm' => KEY_MISS,
            b'd' => MODULE,
            b'n' => NEW,
            _ => return None,
        };
    }
    Some(flags)
}

/// Formats flags as Redis's `keyspaceEventsFlagsToString` does.
pub(crate) fn to_string(flags: u32) -> String {
    let mut s = String::new();
    if flags & ALL == ALL {
        s.push('A');
    } else {
        for (bit, c) in [
            (GENERIC, 'g'),
            (STRING, '$'),
            (LIST, 'l'),
            (SET, 's'),
            (HASH, 'h'),
            (ZSET, 'z'),
            (EXPIRED, 'x'),
            (EVICTED, 'e'),
            (STREAM, 't'),
            (MODULE, 'd'),
        ] {
            if flags & bit != 0 {
                s.push(c);
            }
        }
    }
    for (bit, c) in [
        (KEYSPACE, 'K'),
        (KEYEVENT, 'E'),
        (KEY_MISS, 'm'),
        (NEW, 'n'),
    ] {
        if flags & bit != 0 {
            s.push(c);
        }
    }
    s
}
