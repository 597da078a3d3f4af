//! COMMAND INFO metadata for the commands zwindow has from Redis releases
//! after 7.0 (so absent from the generated [`meta`](super::meta), which is
//! Redis 7.0.15's): Redis 7.4's hash field TTL commands and Redis 8.0's
//! HGETEX, HSETEX and HGETDEL, transcribed from Redis 8.0.2's
//! `src/commands/*.json` (ACL categories in the order redis-server 8.0
//! prints them; tips lowercased). Sorted by name; `tests/hash_ttl.rs`
//! compares the COMMAND INFO entries with redis-server 8.0's.
//!
//! Redis 8.2's XACKDEL and XDELEX, from redis.io's command pages (their
//! `xackdel.json`/`xdelex.json` metadata).
//!
//! Also Garnet's sorted-set member TTL commands (ZEXPIRE … ZPERSIST,
//! ZCOLLECT), which no Redis has: described as Redis would describe them,
//! in the `sorted-set` group with ZADD's categories for the writers and
//! ZSCORE's for the readers, key specs as their HEXPIRE/HTTL twins.

use super::metadata::{Begin as B, Find as F, KeySpec, Meta, ks::*};

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
const ZWCAT: &[&str] = &["@write", "@sortedset", "@fast"];
const XWCAT: &[&str] = &["@write", "@stream", "@fast"];
const ZRCAT: &[&str] = &["@read", "@sortedset", "@fast"];

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
    meta!(
        "xackdel",
        -6,
        W,
        XWCAT,
        &[],
        one(RW | UPDATE | DELETE, None)
    ),
    meta!("xdelex", -5, W, XWCAT, &[], one(RW | DELETE, None)),
    Meta {
        name: "zcollect",
        arity: -2,
        flags: &["write"],
        movablekeys: false,
        range: [1, -1, 1],
        acl: &["@write", "@sortedset", "@slow"],
        tips: &[
            "request_policy:multi_shard",
            "response_policy:all_succeeded",
        ],
        getkeys: None,
        key_specs: &[KeySpec {
            notes: None,
            flags: RW | DELETE,
            begin: B::Index(1),
            find: F::Range {
                lastkey: -1,
                keystep: 1,
                limit: 0,
            },
        }],
    },
    meta!("zexpire", -6, W, ZWCAT, &[], one(RW | UPDATE, None)),
    meta!("zexpireat", -6, W, ZWCAT, &[], one(RW | UPDATE, None)),
    meta!("zexpiretime", -5, R, ZRCAT, &[], one(RO | ACCESS, None)),
    meta!("zpersist", -5, W, ZWCAT, &[], one(RW | UPDATE, None)),
    meta!("zpexpire", -6, W, ZWCAT, &[], one(RW | UPDATE, None)),
    meta!("zpexpireat", -6, W, ZWCAT, &[], one(RW | UPDATE, None)),
    meta!("zpexpiretime", -5, R, ZRCAT, &[], one(RO | ACCESS, None)),
    meta!(
        "zpttl",
        -5,
        R,
        ZRCAT,
        &["nondeterministic_output"],
        one(RO | ACCESS, None)
    ),
    meta!(
        "zttl",
        -5,
        R,
        ZRCAT,
        &["nondeterministic_output"],
        one(RO | ACCESS, None)
    ),
];
