//! COMMAND INFO metadata for the commands zwindow has from Redis releases
//! after 7.0 (so absent from the generated [`meta`](super::meta), which is
//! Redis 7.0.15's): Redis 7.4's hash field TTL commands and Redis 8.0's
//! HGETEX, HSETEX and HGETDEL, transcribed from Redis 8.0.2's
//! `src/commands/*.json` (ACL categories in the order redis-server 8.0
//! prints them; tips lowercased). Sorted by name; `tests/hash_ttl.rs`
//! compares the COMMAND INFO entries with redis-server 8.0's.

use super::server::{Begin as B, Find as F, KeySpec, Meta, ks::*};

const fn one(flags: u16, notes: Option<&'static str>) -> KeySpec {
    KeySpec {
        notes,
        flags,
        begin: B::Index(1),
        find: F::Range {
            lastkey: 0,
            keystep: 1,
            limit: 0,
        },
    }
}

macro_rules! meta {
    ($name:expr, $arity:expr, $flags:expr, $acl:expr, $tips:expr, $spec:expr) => {
        Meta {
            name: $name,
            arity: $arity,
            flags: $flags,
            movablekeys: false,
            range: [1, 1, 1],
            acl: $acl,
            tips: $tips,
            getkeys: None,
            key_specs: &[$spec],
        }
    };
}

const W: &[&str] = &["write", "fast"];
const R: &[&str] = &["readonly", "fast"];
const WCAT: &[&str] = &["@write", "@hash", "@fast"];
const RCAT: &[&str] = &["@read", "@hash", "@fast"];

pub(crate) static META_LATER: &[Meta] = &[
    meta!("hexpire", -6, W, WCAT, &[], one(RW | UPDATE, None)),
    meta!("hexpireat", -6, W, WCAT, &[], one(RW | UPDATE, None)),
    meta!("hexpiretime", -5, R, RCAT, &[], one(RO | ACCESS, None)),
    meta!("hgetdel", -5, W, WCAT, &[], one(RW | ACCESS | DELETE, None)),
    meta!(
        "hgetex",
        -5,
        W,
        WCAT,
        &[],
        one(
            RW | ACCESS | UPDATE,
            Some("RW and UPDATE because it changes the TTL")
        )
    ),
    meta!("hpersist", -5, W, WCAT, &[], one(RW | UPDATE, None)),
    meta!("hpexpire", -6, W, WCAT, &[], one(RW | UPDATE, None)),
    meta!("hpexpireat", -6, W, WCAT, &[], one(RW | UPDATE, None)),
    meta!("hpexpiretime", -5, R, RCAT, &[], one(RO | ACCESS, None)),
    meta!(
        "hpttl",
        -5,
        R,
        RCAT,
        &["nondeterministic_output"],
        one(RO | ACCESS, None)
    ),
    meta!(
        "hsetex",
        -6,
        &["write", "denyoom", "fast"],
        &["@write", "@hash", "@fast"],
        &[],
        one(RW | UPDATE, None)
    ),
    meta!(
        "httl",
        -5,
        R,
        RCAT,
        &["nondeterministic_output"],
        one(RO | ACCESS, None)
    ),
];
