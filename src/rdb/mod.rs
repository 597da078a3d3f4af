//! Redis's RDB format: the snapshot file (`SAVE`, `BGSAVE`, loading at
//! startup, `DEBUG RELOAD`) and the `DUMP`/`RESTORE` payload.
//!
//! - [`codec`]: lengths, strings (integer and LZF encodings), doubles, CRC-64.
//! - [`blobs`]: listpacks (written and read), ziplists, intsets, zipmaps.
//! - [`value`]: one value per type and encoding.
//! - [`file`]: whole files: header, AUX fields, functions, databases, keys
//!   with TTLs, checksum; and zwindow's own state in AUX records.

//!
//! zwindow writes RDB version 10 by default, as Redis 7.0 does, so
//! redis-server 7.0 (and every later one, and Valkey) loads its files and
//! payloads; `rdb-version 12` writes Redis 7.4/8.0's version instead, and a
//! hash with field TTLs, which only 12 can carry, makes a file or payload
//! 12 whatever the setting. It reads versions 1 to 12. Every byte read
//! is untrusted: a corrupt file or a hostile RESTORE payload fails with an
//! error, never a panic or an allocation larger than the input. Every value
//! is checked as Redis's deep sanitization checks it, whatever
//! `sanitize-dump-payload` says (Redis checks only headers under `no`, and
//! may assert later on what it let through); a failed check carries
//! Redis's report text and `rdb.c` line, which RESTORE logs at verbose
//! level and a load logs as a warning.

pub(crate) mod blobs;
pub(crate) mod codec;
pub(crate) mod file;

pub(crate) mod value;

use crate::config::Config;

/// The version zwindow writes by default (Redis 7.0's): see `rdb-version`.
pub(crate) const RDB_VERSION: u16 = 10;
/// Redis 7.4's version, the first with hash field TTLs, which Redis 8.0
/// writes too: the other version zwindow writes.
pub(crate) const RDB_VERSION_12: u16 = 12;
/// The newest version zwindow reads.
pub(crate) const RDB_VERSION_MAX_READ: u16 = 12;

/// Value types and opcodes (`rdb.h`).
#[allow(dead_code)]
pub(crate) mod types {
    pub(crate) const TYPE_STRING: u8 = 0;
    pub(crate) const TYPE_LIST: u8 = 1;
    pub(crate) const TYPE_SET: u8 = 2;
    pub(crate) const TYPE_ZSET: u8 = 3;
    pub(crate) const TYPE_HASH: u8 = 4;
    pub(crate) const TYPE_ZSET_2: u8 = 5;
    pub(crate) const TYPE_MODULE_PRE_GA: u8 = 6;
    pub(crate) const TYPE_MODULE_2: u8 = 7;
    pub(crate) const TYPE_HASH_ZIPMAP: u8 = 9;
    pub(crate) const TYPE_LIST_ZIPLIST: u8 = 10;
    pub(crate) const TYPE_SET_INTSET: u8 = 11;
    pub(crate) const TYPE_ZSET_ZIPLIST: u8 = 12;
    pub(crate) const TYPE_HASH_ZIPLIST: u8 = 13;
    pub(crate) const TYPE_LIST_QUICKLIST: u8 = 14;
    pub(crate) const TYPE_STREAM_LISTPACKS: u8 = 15;
    pub(crate) const TYPE_HASH_LISTPACK: u8 = 16;
    pub(crate) const TYPE_ZSET_LISTPACK: u8 = 17;
    pub(crate) const TYPE_LIST_QUICKLIST_2: u8 = 18;
    pub(crate) const TYPE_STREAM_LISTPACKS_2: u8 = 19;
    pub(crate) const TYPE_SET_LISTPACK: u8 = 20;
    pub(crate) const TYPE_STREAM_LISTPACKS_3: u8 = 21;
    pub(crate) const TYPE_HASH_METADATA_PRE_GA: u8 = 22;
    pub(crate) const TYPE_HASH_LISTPACK_EX_PRE_GA: u8 = 23;
    pub(crate) const TYPE_HASH_METADATA: u8 = 24;
    pub(crate) const TYPE_HASH_LISTPACK_EX: u8 = 25;

    pub(crate) const QUICKLIST_NODE_PLAIN: u64 = 1;
    pub(crate) const QUICKLIST_NODE_PACKED: u64 = 2;

    pub(crate) const OP_SLOT_INFO: u8 = 244;
    pub(crate) const OP_FUNCTION2: u8 = 245;
    pub(crate) const OP_FUNCTION_PRE_GA: u8 = 246;
    pub(crate) const OP_MODULE_AUX: u8 = 247;
    pub(crate) const OP_IDLE: u8 = 248;
    pub(crate) const OP_FREQ: u8 = 249;
    pub(crate) const OP_AUX: u8 = 250;
    pub(crate) const OP_RESIZEDB: u8 = 251;
    pub(crate) const OP_EXPIRETIME_MS: u8 = 252;
    pub(crate) const OP_EXPIRETIME: u8 = 253;
    pub(crate) const OP_SELECTDB: u8 = 254;
    pub(crate) const OP_EOF: u8 = 255;
}

/// Why reading RDB bytes failed: the reason, and the line of Redis 7.0.15's
/// `rdb.c` whose `rdbReportCorruptRDB` reports the same check (0 when Redis
/// reports none: a short read, an empty key, zwindow's own stricter checks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RdbError(pub(crate) String, pub(crate) u32);

impl RdbError {
    pub(crate) fn new(what: String) -> RdbError {
        RdbError(what, 0)
    }

    pub(crate) fn corrupt(what: &str) -> RdbError {
        RdbError(what.to_string(), 0)
    }

    /// A check Redis reports with `rdbReportCorruptRDB` at `rdb.c:line`,
    /// in its words.
    pub(crate) fn report(line: u32, what: &str) -> RdbError {
        RdbError(what.to_string(), line)
    }

    pub(crate) fn truncated() -> RdbError {
        RdbError::corrupt("Unexpected EOF reading RDB file")
    }

    /// Redis's `rdbReportError` line for this error, if Redis reports it.
    pub(crate) fn report_line(&self, offset: u64) -> Option<String> {
        (self.1 != 0).then(|| {
            format!(
                "Internal error in RDB reading offset {offset}, function at rdb.c:{} -> {}",
                self.1, self.0
            )
        })
    }
}

impl std::fmt::Display for RdbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RdbError {}

/// The encoding thresholds a loaded value is built under.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    zset: crate::types::zset::Limits,
    pub(crate) hash: crate::types::hash::Limits,
    set: crate::types::set::SetLimits,
    /// `list-max-listpack-size`: the encoding a loaded list settles in.
    list_fill: i64,
    pub(crate) stream: crate::types::stream::NodeLimits,
    /// Whether Redis would check this value deeply (`sanitize-dump-payload`
    /// and who sends it): only counted, as zwindow always does.
    pub(crate) deep: bool,
}

impl Limits {
    pub(crate) fn from_config(c: &Config) -> Limits {
        Limits {
            zset: crate::types::zset::Limits {
                max_entries: c.zset_max_listpack_entries(),
                max_value: c.zset_max_listpack_value(),
            },
            hash: crate::types::hash::Limits {
                entries: c.hash_max_listpack_entries(),
                value: c.hash_max_listpack_value(),
            },
            set: c.set_limits(),
            list_fill: c.list_max_listpack_size(),
            stream: crate::types::stream::NodeLimits {
                max_bytes: c.stream_node_max_bytes(),
                max_entries: c.stream_node_max_entries(),
            },
            // Loading a file: deep only under `yes`.
            deep: c.sanitize_dump_payload() == "yes",
        }
    }
}

/// `DUMP`'s payload: the value, the RDB version, the CRC-64 of both.
///
/// A sorted set's member TTLs, which RDB has no place for, follow the
/// value: [`MEMBER_TTLS`] and the record an RDB file's `zwindow-zttl` AUX
/// field holds. redis-server reads the value and ignores what follows it
/// (`restoreCommand` does not check that the payload is used up), so the
/// payload stays a valid one for it; zwindow's RESTORE (and MIGRATE's)
/// gives the members their TTLs back.
///
/// `version` is `rdb-version`'s: the payload's version and how its value is
/// encoded, except that a hash with field TTLs is always in RDB 12's form
/// and its payload says 12 (an older reader refuses it rather than dropping
/// the TTLs).
pub(crate) fn dump(value: &crate::keyspace::Value, version: u16) -> Vec<u8> {
    let mut out = vec![0];
    out[0] = value::encode(value, true, version, &mut out);
    if let crate::keyspace::Value::ZSet(z) = value
        && let Some(record) = value::member_ttls(z)
    {
        out.extend_from_slice(MEMBER_TTLS);
        out.extend_from_slice(&record);
    }
    if let crate::keyspace::Value::Set(s) = value
        && let Some(record) = value::set_member_ttls(s)
    {
        out.extend_from_slice(SET_MEMBER_TTLS);
        out.extend_from_slice(&record);
    }
    // A hash with field TTLs is in Redis 7.4's form, which only RDB 12
    // readers know.
    let version = if matches!(
        out[0],
        types::TYPE_HASH_METADATA | types::TYPE_HASH_LISTPACK_EX
    ) {
        version.max(RDB_VERSION_12)
    } else {
        version
    };
    out.extend_from_slice(&version.to_le_bytes());
    let crc = codec::CRC64.checksum(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The RDB version a [`dump`] payload says it is in.
pub(crate) fn payload_version(payload: &[u8]) -> u16 {
    match payload
        .len()
        .checked_sub(10)
        .and_then(|at| payload.get(at..at + 2))
    {
        Some(v) => u16::from_le_bytes([v[0], v[1]]),
        None => RDB_VERSION,
    }
}

/// Why a RESTORE payload was refused.
pub(crate) enum RestoreError {
    /// Version or checksum wrong (Redis's `verifyDumpPayload`).
    Footer,
    /// The body does not decode.
    Data,
}

/// What follows a sorted set's value in a DUMP payload when its members
/// have TTLs (see [`dump`]).
const MEMBER_TTLS: &[u8] = b"zwindow-zttl";

/// What follows a set's value in a DUMP payload when its members have TTLs.
const SET_MEMBER_TTLS: &[u8] = b"zwindow-sttl";

/// A decoded `RESTORE` payload.
pub(crate) struct Restored {
    pub(crate) value: crate::keyspace::Value,
    /// Hash field TTLs the keyspace must schedule.
    pub(crate) field_ttls: bool,
    /// Sorted-set member TTLs the keyspace must schedule.
    pub(crate) member_ttls: bool,
    /// Set member TTLs the keyspace must schedule.
    pub(crate) set_ttls: bool,
    /// Blobs Redis would have checked deeply (INFO's
    /// `dump_payload_sanitizations`).
    pub(crate) sanitizations: u64,
}

/// Decodes a `RESTORE` payload (see [`dump`]); `deep`: Redis would check it
/// in full (zwindow always does; this only counts).
pub(crate) fn restore(
    payload: &[u8],
    config: &Config,
    deep: bool,
) -> Result<Restored, RestoreError> {
    if payload.len() < 10 {
        return Err(RestoreError::Footer);
    }
    let (body, footer) = payload.split_at(payload.len() - 10);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    let crc = u64::from_le_bytes(footer[2..].try_into().map_err(|_| RestoreError::Footer)?);
    if version > RDB_VERSION_MAX_READ
        || (!config.skip_checksum_validation()
            && codec::CRC64.checksum(&payload[..payload.len() - 8]) != crc)
    {
        return Err(RestoreError::Footer);
    }
    let mut r = codec::Reader::new(body);
    let ty = r.byte().map_err(|_| RestoreError::Data)?;
    let lim = Limits {
        deep,
        ..Limits::from_config(config)
    };
    let (mut v, extra) = value::decode(ty, &mut r, &lim).map_err(|e| {
        // In a RESTORE Redis logs the report at verbose level and replies.
        if let Some(line) = e.report_line(0) {
            tracing::info!("{line}");
        }
        RestoreError::Data
    })?;
    let (mut member_ttls, mut set_ttls) = (false, false);
    if !r.is_empty() {
        let rest = &body[r.pos..];
        match (&mut v, rest.strip_prefix(MEMBER_TTLS)) {
            (crate::keyspace::Value::ZSet(z), Some(record)) => {
                value::apply_member_ttls(z, record).map_err(|_| RestoreError::Data)?;
                member_ttls = z.has_ttls();
            }
            (crate::keyspace::Value::Set(s), _) => {
                let record = rest
                    .strip_prefix(SET_MEMBER_TTLS)
                    .ok_or(RestoreError::Data)?;
                value::apply_set_member_ttls(s, record).map_err(|_| RestoreError::Data)?;
                set_ttls = s.has_ttls();
            }
            _ => return Err(RestoreError::Data),
        }
    }
    if file::is_empty_value(&v) {
        return Err(RestoreError::Data);
    }
    Ok(Restored {
        value: v,
        field_ttls: extra.field_ttls,
        member_ttls,
        set_ttls,
        sanitizations: extra.sanitizations,
    })
}
