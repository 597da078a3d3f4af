//! COMMAND INFO metadata for the commands zwindow has that the generated
//! [`meta`](super::meta) (Redis 8.0.2's) lacks: Garnet's sorted-set member
//! TTL commands (ZEXPIRE … ZPERSIST, ZCOLLECT), which no Redis has,
//! described as Redis would describe them, in the `sorted-set` group with
//! ZADD's categories for the writers and ZSCORE's for the readers, key
//! specs as their HEXPIRE/HTTL twins (ACL categories in Redis's order;
//! tips lowercased). Commands of Redis releases after 8.0 go here too,
//! transcribed from their command JSON or, where no binary or JSON is
//! at hand, from redis.io's pages: Redis 8.12's set member TTL commands
//! (SADDEX, SEXPIRE … SPERSIST: arity, flags, categories, key specs; the
//! readers' tips as HTTL's) and Redis 8.2's XACKDEL and XDELEX (their
//! `xackdel.json`/`xdelex.json` metadata as the pages give it), Redis
//! 8.4's DELEX, DIGEST and MSETEX and Redis 8.8's INCREX. Sorted by name.

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
const ZWCAT: &[&str] = &["@write", "@sortedset", "@fast"];
const XWCAT: &[&str] = &["@write", "@stream", "@fast"];
const ZRCAT: &[&str] = &["@read", "@sortedset", "@fast"];
const SWCAT: &[&str] = &["@write", "@set", "@fast"];
const SRCAT: &[&str] = &["@read", "@set", "@fast"];

const STR_W: &[&str] = &["@write", "@string", "@fast"];

pub(crate) static META_LATER: &[Meta] = &[
    meta!(
        "delex",
        -2,
        W,
        STR_W,
        &[],
        one(RW | DELETE | VARIABLE_FLAGS, None)
    ),
    meta!(
        "digest",
        2,
        R,
        &["@read", "@string", "@fast"],
        &[],
        one(RO | ACCESS, None)
    ),
    meta!(
        "increx",
        -2,
        &["write", "denyoom", "fast"],
        STR_W,
        &[],
        one(RW | ACCESS | UPDATE, None)
    ),
    Meta {
        name: "msetex",
        arity: -4,
        flags: &["write", "denyoom"],
        movablekeys: true,
        range: [0, 0, 0],
        acl: &["@write", "@string", "@slow"],
        tips: &[
            "request_policy:multi_shard",
            "response_policy:all_succeeded",
        ],
        getkeys: None,
        key_specs: &[KeySpec {
            notes: None,
            flags: OW | UPDATE,
            begin: B::Index(1),
            find: F::Keynum {
                keynumidx: 0,
                firstkey: 1,
                keystep: 2,
            },
        }],
    },
    meta!(
        "saddex",
        -5,
        &["write", "denyoom", "fast"],
        SWCAT,
        &[],
        one(RW | INSERT | UPDATE, None)
    ),
    meta!("sexpire", -6, W, SWCAT, &[], one(RW | UPDATE, None)),
    meta!("sexpireat", -6, W, SWCAT, &[], one(RW | UPDATE, None)),
    meta!("sexpiretime", -5, R, SRCAT, &[], one(RO | ACCESS, None)),
    meta!("spersist", -5, W, SWCAT, &[], one(RW | UPDATE, None)),
    meta!("spexpire", -6, W, SWCAT, &[], one(RW | UPDATE, None)),
    meta!("spexpireat", -6, W, SWCAT, &[], one(RW | UPDATE, None)),
    meta!("spexpiretime", -5, R, SRCAT, &[], one(RO | ACCESS, None)),
    meta!(
        "spttl",
        -5,
        R,
        SRCAT,
        &["nondeterministic_output"],
        one(RO | ACCESS, None)
    ),
    meta!(
        "sttl",
        -5,
        R,
        SRCAT,
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
