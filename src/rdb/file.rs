//! Whole RDB files: writing the dataset (SAVE, BGSAVE, SHUTDOWN, DEBUG
//! RELOAD) and loading one (startup, DEBUG RELOAD).
//!
//! A file is `REDIS0010`, the AUX fields Redis 7.0 writes (`redis-ver`,
//! `redis-bits`, `ctime`, `used-mem`, `aof-base`), the function libraries
//! (`FUNCTION2`), then per non-empty database `SELECTDB`, `RESIZEDB` and
//! its keys (each optionally preceded by `EXPIRETIME_MS`), `EOF`, and the
//! CRC-64 of everything before it (zero with `rdbchecksum no`).
//!
//! zwindow's own state rides in AUX records, which redis-server skips
//! (`Unrecognized RDB AUX field`): `zwindow-rule` (a window rule, before
//! the databases) and, right after a key, `zwindow-zttl` (its sorted-set
//! member TTLs), `zwindow-sttl` (its set member TTLs) or, in a version 10
//! file only, `zwindow-httl` (its hash field TTLs). The key itself is an
//! ordinary Redis value, so redis-server loads the file and simply sees no
//! TTLs on members. Hash field TTLs have Redis 7.4's own types, so a file
//! holding one is version 12 whatever `rdb-version` says (see [`write`]);
//! `zwindow-httl` is read for files written before that rule (and written
//! only should a hash with field TTLs be missed by [`Source::field_ttls`]).

use std::io::Write;
use std::sync::Arc;

use super::codec::{CRC64, Reader, put_len, put_ms, put_string};
use super::types::*;
use super::{Limits, RDB_VERSION_12, RDB_VERSION_MAX_READ, RdbError, value};
use crate::keyspace::windows::{Rule, Unit};
use crate::keyspace::{Entry, Keyspace, Value};

const AUX_RULE: &[u8] = b"zwindow-rule";
const AUX_MEMBER_TTLS: &[u8] = b"zwindow-zttl";
const AUX_FIELD_TTLS: &[u8] = b"zwindow-httl";
/// A set's member TTLs, after the set: the record `zwindow-zttl` holds for
/// a sorted set (`member, deadline` pairs), so both kinds read alike.
const AUX_SET_TTLS: &[u8] = b"zwindow-sttl";

/// How a file is written (`rdbcompression`, `rdbchecksum`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SaveOptions<'a> {
    pub(crate) compress: bool,
    pub(crate) checksum: bool,
    /// `rdb-version`: the version written, unless a hash field TTL needs
    /// 12 (see [`write`]).
    pub(crate) version: u16,
    /// `rdb-key-save-delay` when the save started (see
    /// [`crate::util::debug_delay`]).
    pub(crate) key_save_delay: i32,
    /// Set while the save runs: it stops, failing (a background save that
    /// became useless, as Redis kills its child).
    pub(crate) abort: Option<&'a std::sync::atomic::AtomicBool>,
}

impl SaveOptions<'_> {
    fn aborted(&self) -> std::io::Result<()> {
        match self.abort {
            Some(a) if a.load(std::sync::atomic::Ordering::Relaxed) => {
                Err(std::io::Error::other("the save was stopped"))
            }
            _ => Ok(()),
        }
    }

    /// One key's `rdb-key-save-delay`. A save that can be stopped sleeps
    /// it in slices, so a stop is seen within milliseconds even when a
    /// test asks for seconds per key (Redis kills its child at once).
    fn key_delay(&self) -> std::io::Result<()> {
        self.aborted()?;
        if self.key_save_delay <= 0 || self.abort.is_none() {
            crate::util::debug_delay(self.key_save_delay);
            return Ok(());
        }
        let slice = std::time::Duration::from_millis(10);
        let mut left = std::time::Duration::from_micros(self.key_save_delay as u64);
        while !left.is_zero() {
            self.aborted()?;
            let step = left.min(slice);
            std::thread::sleep(step);
            left -= step;
        }
        Ok(())
    }
}

/// What a [`Source`] calls with each key: key, value, expiry (0: none).
pub(crate) type KeyFn<'f> = crate::keyspace::snapshot::Visit<'f>;
/// What a [`Source`] calls between batches of keys.
pub(crate) type FlushFn<'f> = crate::keyspace::snapshot::Flush<'f>;

/// Where a file's keys come from: the locked shards (SAVE) or a snapshot
/// of them (BGSAVE).
pub(crate) trait Source {
    fn databases(&self) -> usize;
    /// (keys, keys with a TTL) of database `db`.
    fn sizes(&self, db: usize) -> (usize, usize);
    /// Whether some hash has a field with a TTL.
    fn field_ttls(&self) -> bool;
    /// Calls `f` with every key of `db`: key, value, expiry (0: none), and
    /// `flush` now and then with no lock held (the file is written there,
    /// so a slow disk never stalls a shard).
    fn for_each(
        &self,
        db: usize,
        f: &mut KeyFn<'_>,
        flush: &mut FlushFn<'_>,
    ) -> std::io::Result<()>;
}

/// Locked shards, read in place.
pub(crate) struct Shards<'a>(pub(crate) Vec<&'a crate::keyspace::Shard>);

impl Source for Shards<'_> {
    fn databases(&self) -> usize {
        self.0.first().map_or(0, |s| s.dbs.len())
    }

    fn sizes(&self, db: usize) -> (usize, usize) {
        self.0.iter().fold((0, 0), |(k, e), s| {
            (k + s.dbs[db].keys.len(), e + s.dbs[db].expires.len())
        })
    }

    fn field_ttls(&self) -> bool {
        self.0.iter().any(|s| s.has_field_ttls())
    }

    fn for_each(
        &self,
        db: usize,
        f: &mut KeyFn<'_>,
        flush: &mut FlushFn<'_>,
    ) -> std::io::Result<()> {
        for s in &self.0 {
            for (i, (k, e)) in s.dbs[db].keys.iter().enumerate() {
                f(k, &e.value, e.expire_at)?;
                if i % 128 == 127 {
                    flush()?;
                }
            }
        }
        flush()
    }
}

/// A writer that keeps the running CRC-64 of what passed through it.
struct CrcWriter<W: Write> {
    inner: W,
    digest: crc::Digest<'static, u64>,
}

impl<W: Write> CrcWriter<W> {
    fn put(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.digest.update(b);
        self.inner.write_all(b)
    }
}

fn aux(out: &mut Vec<u8>, k: &[u8], v: &[u8]) {
    out.push(OP_AUX);
    put_string(out, k, false);
    put_string(out, v, false);
}

/// What the file carries beside the keys.
pub(crate) struct Extras {
    pub(crate) functions: Vec<Vec<u8>>,
    pub(crate) rules: Vec<Arc<Rule>>,
    pub(crate) used_mem: u64,
    pub(crate) ctime_secs: u64,
    /// Replication's `repl-stream-db`, `repl-id` and `repl-offset`, when
    /// this server is in a replication chain (Redis's `rsi`).
    pub(crate) repl: Option<(usize, String, u64)>,
}

/// Writes a whole RDB file of `src` to `w`, in `opts.version` — or in 12
/// if a hash has field TTLs: RDB 10 has no type for them, and a file a
/// version-10 reader refuses is safer than one it loads with the TTLs
/// silently gone (the hash's fields would never expire there).
pub(crate) fn write(
    w: impl Write,
    src: &dyn Source,
    extras: &Extras,
    opts: SaveOptions<'_>,
) -> std::io::Result<()> {
    let version = if src.field_ttls() {
        opts.version.max(RDB_VERSION_12)
    } else {
        opts.version
    };
    let mut w = CrcWriter {
        inner: w,
        digest: CRC64.digest(),
    };
    let mut b = Vec::with_capacity(1 << 16);
    b.extend_from_slice(format!("REDIS{version:04}").as_bytes());
    aux(
        &mut b,
        b"redis-ver",
        crate::version::REDIS_VERSION.as_bytes(),
    );
    aux(&mut b, b"redis-bits", b"64");
    b.push(OP_AUX);
    put_string(&mut b, b"ctime", false);
    super::codec::put_int_string(&mut b, extras.ctime_secs as i64);
    b.push(OP_AUX);
    put_string(&mut b, b"used-mem", false);
    super::codec::put_int_string(&mut b, extras.used_mem as i64);
    b.push(OP_AUX);
    put_string(&mut b, b"aof-base", false);
    super::codec::put_int_string(&mut b, 0);
    // Redis writes them between `aof-base` and the functions.
    if let Some((db, replid, offset)) = &extras.repl {
        b.push(OP_AUX);
        put_string(&mut b, b"repl-stream-db", false);
        super::codec::put_int_string(&mut b, *db as i64);
        aux(&mut b, b"repl-id", replid.as_bytes());
        b.push(OP_AUX);
        put_string(&mut b, b"repl-offset", false);
        super::codec::put_int_string(&mut b, *offset as i64);
    }
    for r in &extras.rules {
        aux(&mut b, AUX_RULE, &encode_rule(r));
    }
    for code in &extras.functions {
        b.push(OP_FUNCTION2);
        put_string(&mut b, code, opts.compress);
    }
    w.put(&b)?;
    for db in 0..src.databases() {
        let (keys, expires) = src.sizes(db);
        if keys == 0 {
            continue;
        }
        b.clear();
        b.push(OP_SELECTDB);
        put_len(&mut b, db as u64);
        b.push(OP_RESIZEDB);
        put_len(&mut b, keys as u64);
        put_len(&mut b, expires as u64);
        w.put(&b)?;
        write_keys(
            src,
            db,
            &opts,
            |b| w.put(b),
            |b, key, v, expire_at| write_key(b, key, v, expire_at, opts.compress, version),
        )?;
    }
    b.clear();
    b.push(OP_EOF);
    w.digest.update(&b);
    let crc = if opts.checksum {
        w.digest.clone().finalize()
    } else {
        0
    };
    b.extend_from_slice(&crc.to_le_bytes());
    w.inner.write_all(&b)?;
    w.inner.flush()
}

/// Walks database `db` of `src`: `encode` appends each key to a buffer
/// (under the source's locks), `put` writes the buffer out between
/// batches (outside them), where `opts`' abort flag is checked and its
/// per-key delay slept (a background save holds no shard lock there).
pub(crate) fn write_keys(
    src: &dyn Source,
    db: usize,
    opts: &SaveOptions<'_>,
    mut put: impl FnMut(&[u8]) -> std::io::Result<()>,
    mut encode: impl FnMut(&mut Vec<u8>, &[u8], &Value, u64),
) -> std::io::Result<()> {
    let pending = std::cell::RefCell::new(Vec::with_capacity(1 << 16));
    let unslept = std::cell::Cell::new(0u32);
    src.for_each(
        db,
        &mut |key, v, expire_at| {
            encode(&mut pending.borrow_mut(), key, v, expire_at);
            unslept.set(unslept.get() + 1);
            Ok(())
        },
        &mut || {
            opts.aborted()?;
            let mut p = pending.borrow_mut();
            put(&p)?;
            p.clear();
            if opts.key_save_delay != 0 {
                for _ in 0..unslept.take() {
                    opts.key_delay()?;
                }
            }
            Ok(())
        },
    )
}

/// One key: its TTL, type, name and value, then zwindow's AUX records.
/// Under version 12 a hash's field TTLs are in the value, as Redis 7.4+
/// writes them.
fn write_key(b: &mut Vec<u8>, key: &[u8], v: &Value, expire_at: u64, compress: bool, version: u16) {
    if expire_at != 0 {
        b.push(OP_EXPIRETIME_MS);
        put_ms(b, expire_at);
    }
    let at = b.len();
    b.push(0);
    put_string(b, key, compress);
    b[at] = value::encode_as(v, compress, version, b);
    match v {
        Value::ZSet(z) => {
            if let Some(rec) = value::member_ttls(z) {
                aux(b, AUX_MEMBER_TTLS, &rec);
            }
        }
        Value::Hash(h) if version < RDB_VERSION_12 => {
            if let Some(rec) = value::field_ttls(h) {
                aux(b, AUX_FIELD_TTLS, &rec);
            }
        }
        Value::Set(s) => {
            if let Some(rec) = value::set_member_ttls(s) {
                aux(b, AUX_SET_TTLS, &rec);
            }
        }
        _ => {}
    }
}

fn encode_rule(r: &Rule) -> Vec<u8> {
    let mut out = Vec::new();
    put_string(&mut out, &r.pattern, false);
    put_len(&mut out, r.duration_ms);
    put_string(&mut out, r.unit.name().as_bytes(), false);
    put_string(&mut out, r.moveto.as_deref().unwrap_or_default(), false);
    out
}

fn decode_rule(v: &[u8]) -> Result<Rule, RdbError> {
    let mut r = Reader::new(v);
    let pattern = r.string()?;
    let ms = r.len()?;
    let unit =
        Unit::parse(&r.string()?).ok_or_else(|| RdbError::corrupt("bad window rule unit"))?;
    let moveto = r.string()?;
    Ok(Rule::new(
        &pattern,
        ms,
        unit,
        (!moveto.is_empty()).then_some(moveto.as_slice()),
    ))
}

/// Whether a decoded collection is empty (Redis skips such keys).
pub(crate) fn is_empty_value(v: &Value) -> bool {
    match v {
        Value::Str(_) | Value::Stream(_) => false,
        Value::Hash(h) => h.is_empty(),
        Value::Set(s) => s.is_empty(),
        Value::ZSet(z) => z.is_empty(),
        Value::List(l) => l.is_empty(),
    }
}

/// What loading found.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct LoadStats {
    pub(crate) keys_loaded: u64,
    pub(crate) keys_expired: u64,
    pub(crate) empty_keys_skipped: u64,
    /// Bytes the image took (what follows is an old-style AOF's tail).
    pub(crate) bytes: usize,
    /// The replication info the file carried (`repl-stream-db`,
    /// `repl-id`, `repl-offset`), when all three were there and valid.
    pub(crate) repl: Option<ReplInfo>,
}

/// A file's replication info (Redis's `rdbSaveInfo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReplInfo {
    pub(crate) stream_db: usize,
    pub(crate) replid: [u8; 40],
    pub(crate) offset: u64,
}

/// What the replication AUX fields said so far.
#[derive(Default)]
struct ReplAux {
    stream_db: Option<usize>,
    replid: Option<[u8; 40]>,
    offset: Option<u64>,
}

impl ReplAux {
    fn take(&mut self, k: &[u8], v: &[u8]) -> bool {
        let num = || std::str::from_utf8(v).ok()?.parse::<i64>().ok();
        match k {
            b"repl-stream-db" => self.stream_db = num().and_then(|n| usize::try_from(n).ok()),
            b"repl-id" => self.replid = v.try_into().ok(),
            b"repl-offset" => self.offset = num().and_then(|n| u64::try_from(n).ok()),
            _ => return false,
        }
        true
    }

    fn info(&self) -> Option<ReplInfo> {
        Some(ReplInfo {
            stream_db: self.stream_db?,
            replid: self.replid?,
            offset: self.offset?,
        })
    }
}

/// What a load needs from the layers above the data: a home for the
/// function libraries (the script engine), and an ear for its progress
/// (INFO's `loading_*`, and serving clients during a long load).
pub(crate) trait Host {
    /// Loads one library's code; `replace`: one of that name goes.
    fn load_library(&self, code: &[u8], replace: bool) -> Result<(), RdbError>;
    /// `bytes` more of the file were read.
    fn progress(&self, bytes: u64);
    /// The load must stop (a replica's rdb-channel sync failed midway):
    /// checked after each key, as Redis's aborted rio fails its next read.
    fn aborted(&self) -> bool {
        false
    }
}

/// Loads an RDB image into the keyspace, whose every shard `ks` holds.
/// Keys whose TTL has passed are skipped, as a Redis master does. A key or
/// function library that already exists is an error unless `allow_dup`
/// (`DEBUG RELOAD MERGE`), which replaces it.
pub(crate) fn load(
    data: &[u8],
    ks: &mut Keyspace<'_>,
    host: &dyn Host,
    allow_dup: bool,
) -> Result<LoadStats, RdbError> {
    let mut r = Reader::new(data);
    let magic = r
        .bytes(9)
        .map_err(|_| RdbError::corrupt("Wrong signature trying to load DB from file"))?;
    if &magic[..5] != b"REDIS" {
        return Err(RdbError::corrupt(
            "Wrong signature trying to load DB from file",
        ));
    }
    let version: u16 = std::str::from_utf8(&magic[5..])
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|v| (1..=RDB_VERSION_MAX_READ).contains(v))
        .ok_or_else(|| {
            RdbError::new(format!(
                "Can't handle RDB format version {}",
                String::from_utf8_lossy(&magic[5..])
            ))
        })?;
    let config = ks.env.config;
    let lim = Limits::from_config(config);
    let mut stats = LoadStats::default();
    let mut expire_at = 0u64;
    // The key loaded last, for the AUX records that follow it.
    let mut last: Option<Vec<u8>> = None;
    let db0 = ks.db;
    // What INFO's `loading_loaded_bytes` counts, advanced per key.
    let mut progress = 0;
    let mut repl = ReplAux::default();
    let result = (|| loop {
        let op = r.byte()?;
        match op {
            OP_EXPIRETIME_MS => {
                expire_at = r.ms()?;
                continue;
            }
            OP_EXPIRETIME => {
                expire_at = r.u32_le()? as u64 * 1000;
                continue;
            }
            OP_IDLE => {
                r.len()?;
                continue;
            }
            OP_FREQ => {
                r.byte()?;
                continue;
            }
            OP_SELECTDB => {
                let db = r.len()?;
                if db >= config.databases as u64 {
                    return Err(RdbError::new(format!(
                        "Data file was created with a Redis server configured to handle more than {} databases",
                        config.databases
                    )));
                }
                ks.db = db as usize;
                last = None;
            }
            OP_RESIZEDB => {
                r.len()?;
                r.len()?;
            }
            OP_SLOT_INFO => {
                r.len()?;
                r.len()?;
                r.len()?;
            }
            OP_AUX => {
                let k = r.string()?;
                let v = r.string()?;
                if !repl.take(&k, &v) {
                    apply_aux(ks, &k, &v, last.as_deref())?;
                }
            }
            OP_MODULE_AUX => {
                return Err(RdbError::corrupt(
                    "The RDB file contains AUX module data I can't load: no modules are loaded",
                ));
            }
            OP_FUNCTION_PRE_GA => {
                return Err(RdbError::corrupt(
                    "Pre-release function format not supported",
                ));
            }
            OP_FUNCTION2 => {
                let code = r.string()?;
                host.load_library(&code, allow_dup)?;
            }
            OP_EOF => {
                if version >= 5 {
                    let body = r.consumed();
                    let expected = r.ms()?;
                    let got = CRC64.checksum(body);
                    if expected != 0 && expected != got && !config.skip_checksum_validation() {
                        return Err(RdbError::new(format!(
                            "Wrong RDB checksum expected: ({expected:x}) got ({got:x})"
                        )));
                    }
                }
                return Ok(());
            }
            ty => {
                let key = r.string()?;
                let (v, extra) = value::decode(ty, &mut r, &lim).inspect_err(|e| {
                    // Redis's `rdbReportError`, whatever the load is for.
                    if let Some(line) = e.report_line(progress as u64) {
                        tracing::warn!("{line}");
                    }
                })?;
                host.progress((r.pos - progress) as u64);
                progress = r.pos;
                if host.aborted() {
                    return Err(RdbError::truncated());
                }
                let delay = config.key_load_delay();
                if delay != 0 {
                    crate::util::debug_delay(delay);
                }
                let at = std::mem::take(&mut expire_at);
                last = None;
                if is_empty_value(&v) {
                    // Redis skips them (old versions wrote some), naming
                    // the first ten.
                    if stats.empty_keys_skipped < 10 {
                        tracing::warn!(
                            "rdbLoadObject skipping empty key: {}",
                            String::from_utf8_lossy(&key)
                        );
                    }
                    stats.empty_keys_skipped += 1;
                    continue;
                }
                // An AOF's base keeps them: the commands after it may
                // still touch them (Redis loads preambles so too). So does
                // a replica: its primary's DEL deletes them (Redis's
                // `iAmMaster()` test).
                if at != 0
                    && at <= ks.now_ms
                    && !ks.loading()
                    && !ks.env.store.is_replica()
                    && ks.env.config.replicaof().is_none()
                {
                    stats.keys_expired += 1;
                    // A primary restarting logs the deletion to its
                    // backlog, for the replicas that continue from it.
                    if ks.propagating() {
                        let del = crate::keyspace::propagate::del_name(
                            ks.env.config.lazyfree_lazy_expire(),
                        );
                        let op = crate::keyspace::propagate::Op {
                            db: ks.db,
                            argv: vec![del.to_vec(), key.to_vec()],
                            target: crate::keyspace::propagate::Target::All,
                        };
                        ks.env.events.feed(&[op], false);
                    }
                    continue;
                }
                if !allow_dup && ks.peek_raw(&key).is_some() {
                    return Err(RdbError::new(format!(
                        "RDB has duplicated key '{}' in DB {}",
                        String::from_utf8_lossy(&key),
                        ks.db
                    )));
                }
                if extra.field_ttls {
                    ks.env
                        .store
                        .field_ttls
                        .store(true, std::sync::atomic::Ordering::Relaxed);
                }
                let mut e = Entry::new(v);
                e.expire_at = at;
                ks.set_entry(&key, e);
                crate::keyspace::windows::reschedule(ks, &key);
                stats.keys_loaded += 1;
                last = Some(key);
            }
        }
        expire_at = 0;
    })();
    ks.db = db0;
    host.progress((r.pos - progress) as u64);
    result.map_err(|e| match e.report_line(progress as u64) {
        // As `redis-check-rdb` words it.
        Some(line) => RdbError(format!("[offset {}] {line}", r.pos), e.1),
        None => RdbError::new(format!("{} (at offset {})", e.0, r.pos)),
    })?;
    stats.bytes = r.pos;
    stats.repl = repl.info();
    Ok(stats)
}

fn apply_aux(
    ks: &mut Keyspace<'_>,
    k: &[u8],
    v: &[u8],
    last: Option<&[u8]>,
) -> Result<(), RdbError> {
    use std::sync::atomic::Ordering::Relaxed;
    if k == AUX_RULE {
        crate::keyspace::windows::set_rule(ks, decode_rule(v)?);
        return Ok(());
    }
    let Some(key) = last else {
        return Ok(());
    };
    if k == AUX_MEMBER_TTLS {
        if let Some(Entry {
            value: Value::ZSet(z),
            ..
        }) = ks.peek_raw(key)
        {
            value::apply_member_ttls(z, v)?;
            ks.env.store.member_ttls.store(true, Relaxed);
        }
    } else if k == AUX_FIELD_TTLS {
        if let Some(Entry {
            value: Value::Hash(h),
            ..
        }) = ks.peek_raw(key)
        {
            value::apply_field_ttls(h, v)?;
            ks.env.store.field_ttls.store(true, Relaxed);
        }
    } else if k == AUX_SET_TTLS {
        if let Some(Entry {
            value: Value::Set(s),
            ..
        }) = ks.peek_raw(key)
        {
            value::apply_set_member_ttls(s, v)?;
            ks.env.store.set_ttls.store(true, Relaxed);
        }
    } else {
        return Ok(());
    }
    crate::keyspace::windows::reschedule(ks, key);
    Ok(())
}
