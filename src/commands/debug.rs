//! DEBUG's subcommands (behind `enable-debug-command`, as Redis 7.0): the
//! ones Redis's test suite and client libraries' suites use, answered as
//! redis-server 7.0.15 answers them (`debug.c`), plus zwindow's own test
//! hooks (CLOCK, SHARD, ACTIVE-EXPIRE-CYCLE).
//!
//! ```text
//! DEBUG HELP | SLEEP seconds | ERROR message | OBJECT key | DIGEST
//! DEBUG HTSTATS dbid [FULL] | HTSTATS-KEY key [FULL]
//! DEBUG DIGEST-VALUE [key ...] | PROTOCOL type | SET-ACTIVE-EXPIRE 0|1 |
//! SET-SKIP-CHECKSUM-VALIDATION 0|1
//! DEBUG SET-DISABLE-DENY-SCRIPTS 0|1
//! DEBUG QUICKLIST-PACKED-THRESHOLD size | CHANGE-REPL-ID | REPLICATE cmd … | STRINGMATCH-TEST
//! DEBUG LISTPACK key | QUICKLIST key [0|1] | RELOAD [MERGE] [NOFLUSH] [NOSAVE]
//! DEBUG REPLYBUFFER RESIZING 0|1 | LOADAOF | AOF-FLUSH-SLEEP microseconds | DICT-RESIZING 0|1
//! ```
//!
//! DEBUG declares no keys, so the subcommands that read the keyspace lock
//! every shard (a debugging command may be slow).

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use rand::Rng;

use super::{CmdResult, Ctx, Done, Error, int_arg};
use crate::keyspace::digest;
use crate::keyspace::{Entry, Value};
use crate::persistence::with_all_shards;
use crate::util::eq_ic;

/// Whether connections give back reply buffers past their keep size after
/// a write (`DEBUG REPLYBUFFER RESIZING 0|1`; process-wide, as Redis's
/// switch). DEBUG sets it; the network layer reads it.
pub(crate) static REPLY_BUFFER_RESIZING: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(true);

pub(crate) fn debug(ctx: &mut Ctx) -> CmdResult {
    let config = &ctx.shared.config;
    let allowed =
        config.debug_command || (config.debug_command_local && ctx.client.handle.is_local());
    if !allowed {
        return Err(Error::Static(
            "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.",
        ));
    }
    let sub = ctx.arg(1);
    let argc = ctx.argc();
    if eq_ic(sub, "HELP") && argc == 2 {
        help(ctx);
    } else if eq_ic(sub, "SLEEP") && argc == 3 {
        // Redis reads the time with strtod: anything else sleeps 0.
        // (At most an hour here.)
        let secs = crate::util::parse_f64(ctx.arg(2))
            .filter(|s| s.is_finite())
            .unwrap_or(0.0)
            .clamp(0.0, 3600.0);
        ctx.shared.sleeping.fetch_add(1, Relaxed);
        std::thread::sleep(Duration::from_secs_f64(secs));
        ctx.shared.sleeping.fetch_sub(1, Relaxed);
        ctx.out.ok();
    } else if eq_ic(sub, "ERROR") && argc == 3 {
        error(ctx);
    } else if eq_ic(sub, "OBJECT") && argc == 3 {
        object(ctx)?;
    } else if eq_ic(sub, "HTSTATS") && argc >= 3 {
        htstats(ctx)?;
    } else if eq_ic(sub, "HTSTATS-KEY") && argc >= 3 {
        htstats_key(ctx)?;
    } else if eq_ic(sub, "DIGEST") && argc == 2 {
        let d = with_all_shards(ctx.ks, |ks| {
            let dbs = ks.env.config.databases;
            let shards: Vec<&crate::keyspace::Shard> = ks.shards_mut().map(|s| &*s).collect();
            Ok(digest::dataset((0..dbs).map(|db| {
                (
                    db,
                    shards
                        .iter()
                        .flat_map(move |s| s.dbs[db].keys.iter())
                        .map(|(k, e)| (&**k, e)),
                )
            })))
        })
        .map_err(Error::Owned)?;
        ctx.out.simple(&digest::hex(&d));
    } else if eq_ic(sub, "DIGEST-VALUE") {
        let keys: Vec<Vec<u8>> = (2..argc).map(|i| ctx.arg(i).to_vec()).collect();
        // Redis reads the value as stored, logically expired or not.
        let digests = with_all_shards(ctx.ks, |ks| {
            Ok(keys
                .iter()
                .map(|k| {
                    let mut d = [0u8; 20];
                    if let Some(e) = ks.peek_raw(k) {
                        digest::value(&mut d, e);
                    }
                    d
                })
                .collect::<Vec<_>>())
        })
        .map_err(Error::Owned)?;
        ctx.out.array(digests.len());
        for d in &digests {
            ctx.out.simple(&digest::hex(d));
        }
    } else if eq_ic(sub, "PROTOCOL") && argc == 3 {
        protocol(ctx)?;
    } else if eq_ic(sub, "SET-ACTIVE-EXPIRE") && argc == 3 {
        let on = crate::spec::metadata::c_atoi(ctx.arg(2)) != 0;
        ctx.shared.store.active_expire.store(on, Relaxed);
        ctx.out.ok();
    } else if eq_ic(sub, "DICT-RESIZING") && argc == 3 {
        // Any integer but 0 lets them resize (Redis reads it with atoi).
        let on = crate::spec::metadata::c_atoi(ctx.arg(2)) != 0;
        crate::types::key::set_keyspace_resizing(on);
        if on {
            with_all_shards(ctx.ks, |ks| {
                ks.resize_tables();
                Ok(())
            })
            .map_err(Error::Owned)?;
        }
        ctx.out.ok();
    } else if eq_ic(sub, "PAUSE-CRON") && argc == 3 {
        // Any integer but 0 pauses (Redis reads it with atoi).
        let on = crate::util::parse_i64(ctx.arg(2)).unwrap_or(0) != 0;
        ctx.shared.cron_paused.store(on, Relaxed);
        ctx.out.ok();
    } else if eq_ic(sub, "SET-SKIP-CHECKSUM-VALIDATION") && argc == 3 {
        let on = crate::spec::metadata::c_atoi(ctx.arg(2)) != 0;
        ctx.shared.config.set_skip_checksum_validation(on);
        ctx.out.ok();
    } else if eq_ic(sub, "SET-DISABLE-DENY-SCRIPTS") && argc == 3 {
        let on = crate::spec::metadata::c_atoi(ctx.arg(2)) != 0;
        ctx.shared.scripting.allow_noscript.store(on, Relaxed);
        ctx.out.ok();
    } else if eq_ic(sub, "QUICKLIST-PACKED-THRESHOLD") && argc == 3 {
        let size = crate::config::parse_memory(ctx.arg(2))
            .and_then(|n| u64::try_from(n).ok())
            .filter(|&n| crate::types::list::set_packed_threshold(n));
        if size.is_none() {
            return Err(Error::Static(
                "ERR argument must be a memory value bigger than 1 and smaller than 4gb",
            ));
        }
        ctx.out.ok();
    } else if eq_ic(sub, "DROP-CLUSTER-PACKET-FILTER") && argc == 3 {
        let Some(t) = crate::util::parse_i64(ctx.arg(2)) else {
            return Err(Error::Static("ERR value is not an integer or out of range"));
        };
        if let Some(cluster) = &ctx.shared.cluster {
            cluster.stats.drop_filter.store(t, Relaxed);
        }
        ctx.out.ok();
    } else if eq_ic(sub, "CLUSTERLINK") && argc == 5 && eq_ic(ctx.arg(2), "KILL") {
        return cluster_link_kill(ctx);
    } else if eq_ic(sub, "INTERNAL_SECRET") && argc == 2 {
        // Redis 8.0: the cluster's internal secret, hashed with CRC16.
        let Some(cluster) = ctx.shared.cluster.as_ref() else {
            return Err(Error::Static("ERR Internal secret is missing"));
        };
        let secret = cluster.read().state.bus.internal_secret;
        ctx.out
            .int(i64::from(crate::keyspace::slots::crc16(&secret)));
    } else if eq_ic(sub, "CHANGE-REPL-ID") && argc == 2 {
        tracing::warn!("Changing replication IDs after receiving DEBUG change-repl-id");
        ctx.shared.replication.change_replid();
        ctx.out.ok();
    } else if eq_ic(sub, "REPLICATE") && argc >= 3 {
        // Into the replicas' stream only, with no SELECT: the test hook
        // Redis 7.0 has for diverging a replica on purpose.
        let argv: Vec<&[u8]> = (2..argc).map(|i| ctx.arg(i)).collect();
        ctx.shared.replication.feed_command(&argv);
        ctx.out.ok();
    } else if eq_ic(sub, "REPL-PAUSE") && argc == 3 {
        use crate::replication as r;
        let point = ctx.arg(2);
        let pause = &ctx.shared.replication.debug_pause;
        let bit = if eq_ic(point, "clear") {
            pause.store(0, Relaxed);
            0
        } else if eq_ic(point, "after-fork") {
            r::PAUSE_AFTER_FORK
        } else if eq_ic(point, "before-rdb-channel") {
            r::PAUSE_BEFORE_RDB_CHANNEL
        } else if eq_ic(point, "on-streaming-repl-buf") {
            r::PAUSE_ON_STREAMING_REPL_BUF
        } else {
            return Err(unknown_subcommand(sub));
        };
        pause.fetch_or(bit, Relaxed);
        ctx.out.ok();
    } else if eq_ic(sub, "CONFIG-REWRITE-FORCE-ALL") && argc == 2 {
        if let Err(e) = super::server::rewrite_config(ctx.shared, true) {
            let why = e
                .strip_prefix("ERR Rewriting config file: ")
                .or_else(|| e.strip_prefix("ERR "))
                .unwrap_or(&e);
            return Err(Error::Owned(format!(
                "ERR CONFIG-REWRITE-FORCE-ALL failed: {why}"
            )));
        }
        ctx.out.ok();
    } else if eq_ic(sub, "SEGFAULT") && argc == 2 {
        // The crash report names this client and its command: its name
        // and keywords stay visible under `hide-user-data-from-log` (DEBUG
        // has no subcommands in the table and no keywords in its grammar:
        // `segfault` is redacted, as in Redis).
        let info = super::connection::client_info_line(ctx.shared, &ctx.client.handle);
        let argv: Vec<&[u8]> = ctx.args.iter().collect();
        let hide = ctx.shared.config.hide_user_data_from_log();
        let tokens = super::docs::tokens(ctx.cmd);
        let shown = |j: usize, a: &[u8]| j == 0 || tokens.iter().any(|t| eq_ic(a, t));
        crate::crash::set_current_client(&info, &argv, shown, hide);
        crate::crash::segfault();
    } else if eq_ic(sub, "STRINGMATCH-TEST") && argc == 2 {
        stringmatch_test();
        ctx.out
            .simple("Apparently Redis did not crash: test passed");
    } else if eq_ic(sub, "LISTPACK") && argc == 3 {
        encoding_dump(ctx, &["listpack", "listpackex"], "listpack")?;
    } else if eq_ic(sub, "QUICKLIST") && (argc == 3 || argc == 4) {
        encoding_dump(ctx, &["quicklist"], "quicklist")?;
    } else if eq_ic(sub, "RELOAD") {
        reload(ctx)?;
    } else if eq_ic(sub, "POPULATE") && (3..=5).contains(&argc) {
        populate(ctx)?;
    } else if eq_ic(sub, "LOADAOF") && argc == 2 {
        let (shared, dispatch) = (ctx.shared, ctx.dispatch);
        with_all_shards(ctx.ks, |ks| {
            crate::aof::debug_loadaof(&**shared, ks, dispatch)
        })
        .map_err(|e| Error::Owned(format!("ERR {e}")))?;
        ctx.out.ok();
    } else if eq_ic(sub, "AOF-FLUSH-SLEEP") && argc == 3 {
        // Delays the next AOF write by this many microseconds (Redis's test
        // hook for a slow disk).
        let us = crate::util::parse_i64(ctx.arg(2)).ok_or(Error::NotInteger)?;
        ctx.shared
            .aof
            .flush_sleep_us
            .store(us.max(0) as u64, Relaxed);
        ctx.out.ok();
    } else if eq_ic(sub, "REPLYBUFFER") && argc == 4 && eq_ic(ctx.arg(2), "RESIZING") {
        let on = crate::spec::metadata::c_atoi(ctx.arg(3)) != 0;
        REPLY_BUFFER_RESIZING.store(on, Relaxed);
        ctx.out.ok();
    } else if eq_ic(sub, "CLOCK") && argc >= 3 {
        clock(ctx)?;
    } else if eq_ic(sub, "SHARD") && argc == 3 {
        // DEBUG SHARD <key>: the shard owning a key (the hash seed is random
        // per process), so tests can spread keys over shards on purpose.
        ctx.out.int(ctx.shared.store.shard_of(ctx.arg(2)) as i64);
    } else if eq_ic(sub, "ACTIVE-EXPIRE-CYCLE") && argc == 2 {
        if ctx.client.in_exec {
            // The cycle locks shards one by one; EXEC already holds them all.
            return Err(Error::Static(
                "ERR DEBUG ACTIVE-EXPIRE-CYCLE is not allowed inside a transaction",
            ));
        }
        // Runs one unbounded active-expiry pass now (tests use it instead of waiting).
        let n = crate::keyspace::expire::cycle(ctx.shared.env(), Duration::from_secs(3600));
        ctx.out.int(n as i64);
    } else {
        return Err(unknown_subcommand(sub));
    }
    Ok(Done)
}

/// DEBUG RELOAD and DEBUG LOADAOF, which the execution layer runs off the
/// connection workers so that other clients are answered meanwhile.
pub(crate) fn reloads_dataset(cmd: &super::Command, args: &super::Args<'_>) -> bool {
    cmd.name == "debug"
        && args.len() >= 2
        && (eq_ic(args.get(1), "RELOAD") || eq_ic(args.get(1), "LOADAOF"))
}

/// DEBUG POPULATE count [prefix] [size]: `count` keys `prefix:N` (`key`
/// by default) holding `value:N`, cut or zero-padded to `size` bytes;
/// existing keys are left alone. Like Redis's, not propagated (DEBUG is
/// no write command).
fn populate(ctx: &mut Ctx) -> Result<(), Error> {
    let positive = |a: &[u8]| {
        crate::util::parse_i64(a)
            .filter(|&n| n >= 0)
            .ok_or(Error::Static("ERR value is out of range, must be positive"))
    };
    let count = positive(ctx.arg(2))?;
    let size = if ctx.argc() == 5 {
        positive(ctx.arg(4))? as usize
    } else {
        0
    };
    let prefix = if ctx.argc() >= 4 {
        ctx.arg(3).to_vec()
    } else {
        b"key".to_vec()
    };
    with_all_shards(ctx.ks, |ks| {
        for j in 0..count {
            let mut key = prefix.clone();
            key.push(b':');
            key.extend_from_slice(j.to_string().as_bytes());
            if ks.peek(&key[..]).is_some() {
                continue;
            }
            let mut value = format!("value:{j}").into_bytes();
            if size > 0 {
                value.resize(size, 0);
            }
            ks.set(&key[..], Value::Str(crate::keyspace::Str::new(&value)));
        }
        Ok(())
    })
    .map_err(Error::Owned)?;
    ctx.out.ok();
    Ok(())
}

fn help(ctx: &mut Ctx) {
    super::scripting::help_lines(
        ctx,
        &[
            "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "AOF-FLUSH-SLEEP <microsec>",
            "    Server will sleep before flushing the AOF, this is used for testing.",
            "CHANGE-REPL-ID",
            "    Change the replication IDs of the instance.",
            "    Dangerous: should be used only for testing the replication subsystem.",
            "DIGEST",
            "    Output a hex signature representing the current DB content.",
            "DIGEST-VALUE <key> [<key> ...]",
            "    Output a hex signature of the values of all the specified keys.",
            "ERROR <string>",
            "    Return a Redis protocol error with <string> as message. Useful for clients",
            "    unit tests to simulate Redis errors.",
            "HTSTATS <dbid> [full]",
            "    Return hash table statistics of the specified Redis database.",
            "HTSTATS-KEY <key> [full]",
            "    Like HTSTATS but for the hash table stored at <key>'s value.",
            "LOADAOF",
            "    Flush the AOF buffers on disk and reload the AOF in memory.",
            "OBJECT <key>",
            "    Show low level info about `key` and associated value.",
            "PROTOCOL <type>",
            "    Reply with a test value of the specified type. <type> can be: string,",
            "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
            "    true, false.",
            "RELOAD [option ...]",
            "    Save the RDB on disk and reload it back to memory. Valid <option> values:",
            "    * MERGE: conflicting keys will be loaded from RDB.",
            "    * NOFLUSH: the existing database will not be removed before load, but",
            "      conflicting keys will generate an exception and kill the server.",
            "    * NOSAVE: the database will be loaded from an existing RDB file.",
            "SET-ACTIVE-EXPIRE <0|1>",
            "    Setting it to 0 disables expiring keys in background when they are not",
            "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
            "    default.",
            "QUICKLIST-PACKED-THRESHOLD <size>",
            "    Sets the threshold for elements to be inserted as plain vs packed nodes",
            "    Default value is 1GB, allows values up to 4GB. Setting to 0 restores to default.",
            "SET-SKIP-CHECKSUM-VALIDATION <0|1>",
            "    Enables or disables checksum checks for RDB files and RESTORE's payload.",
            "SLEEP <seconds>",
            "    Stop the server for <seconds>. Decimals allowed.",
            "STRINGMATCH-TEST",
            "    Run a fuzz tester against the stringmatchlen() function.",
            "LISTPACK <key>",
            "    Show low level info about the listpack encoding of <key>.",
            "QUICKLIST <key> [<0|1>]",
            "    Show low level info about the quicklist encoding of <key>.",
            "    The optional argument (0 by default) sets the level of detail",
            "REPLYBUFFER RESIZING <0|1>",
            "    Enable or disable the reply buffer resize cron job",
            "DICT-RESIZING <0|1>",
            "    Enable or disable the main dict and expire dict resizing.",
            "CLOCK FREEZE <unix-ms>|NOW, CLOCK ADVANCE <ms>, CLOCK RESUME, CLOCK GET",
            "    zwindow's test clock.",
            "SHARD <key>",
            "    zwindow: the shard that holds <key>.",
            "ACTIVE-EXPIRE-CYCLE",
            "    zwindow: run one full active expiry pass now.",
            "HELP",
            "    Print this help.",
        ],
    );
}

/// DEBUG ERROR: the message verbatim as an error reply (line breaks become
/// spaces). Redis writes it as raw protocol, so it is not counted in
/// `errorstats` or as a failed call.
fn error(ctx: &mut Ctx) {
    let mut line = Vec::with_capacity(ctx.arg(2).len() + 3);
    line.push(b'-');
    line.extend(ctx.arg(2).iter().map(|&b| match b {
        b'\r' | b'\n' => b' ',
        b => b,
    }));
    line.extend_from_slice(b"\r\n");
    ctx.out.raw(&line);
}

/// DEBUG OBJECT: Redis's one-line summary of a value as stored (expired or
/// not): its address, refcount, encoding, RDB length and LRU clock, and for
/// lists the quicklist's shape.
/// Redis's answer to a DEBUG subcommand it does not know (or given the
/// wrong number of arguments).
fn unknown_subcommand(sub: &[u8]) -> Error {
    Error::Owned(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try DEBUG HELP.",
        String::from_utf8_lossy(sub)
    ))
}

/// DEBUG HTSTATS dbid [FULL]: the database's key and expiry tables, each
/// shard's summed (as Redis sums its per-slot tables), in Redis's words.
fn htstats(ctx: &mut Ctx) -> CmdResult {
    let db = crate::util::parse_i64(ctx.arg(2)).ok_or(Error::NotInteger)?;
    if db < 0 || db >= ctx.shared.config.databases as i64 {
        return Err(Error::Static("ERR Out of range database"));
    }
    let db = db as usize;
    let full = ctx.argc() >= 4 && eq_ic(ctx.arg(3), "full");
    let text = with_all_shards(ctx.ks, |ks| {
        let mut keys: Option<crate::types::dict::DictStats> = None;
        let mut expires: Option<crate::types::dict::DictStats> = None;
        for shard in ks.shards_mut() {
            let d = &shard.dbs[db];
            for (sum, st) in [
                (&mut keys, d.keys.stats(full)),
                (&mut expires, d.expires.stats(full)),
            ] {
                // A table never used has no buckets: Redis has no dict
                // for it yet.
                if st.size == 0 {
                    continue;
                }
                match sum {
                    Some(s) => s.combine(&st),
                    None => *sum = Some(st),
                }
            }
        }
        let msg = |s: Option<crate::types::dict::DictStats>| {
            s.map(|s| s.message(full)).unwrap_or_default()
        };
        Ok(format!(
            "[Dictionary HT]\n{}[Expires HT]\n{}",
            msg(keys),
            msg(expires)
        ))
    })
    .map_err(Error::Owned)?;
    ctx.out.verbatim(text.as_bytes());
    Ok(Done)
}

/// DEBUG HTSTATS-KEY key [FULL]: the hash table of a set or hash stored
/// as one.
fn htstats_key(ctx: &mut Ctx) -> CmdResult {
    let key = ctx.arg(2).to_vec();
    let full = ctx.argc() >= 4 && eq_ic(ctx.arg(3), "full");
    let found = with_all_shards(ctx.ks, |ks| {
        Ok(ks.peek(&key).map(|e| match &e.value {
            Value::Set(s) => s.dict_stats(full),
            Value::Hash(h) => h.dict_stats(full),
            _ => None,
        }))
    })
    .map_err(Error::Owned)?;
    match found {
        None => Err(Error::Static("ERR no such key")),
        Some(None) => Err(Error::Static(
            "ERR The value stored at the specified key is not represented using an hash table",
        )),
        Some(Some(st)) => {
            ctx.out.verbatim(st.message(full).as_bytes());
            Ok(Done)
        }
    }
}

fn object(ctx: &mut Ctx) -> CmdResult {
    let key = ctx.arg(2).to_vec();
    let now = ctx.ks.now_ms;
    let config = &ctx.shared.config;
    let compressed = config.list_compress_depth() != 0;
    let compress = config.rdbcompression();
    let shared = ctx.shared;
    let line = with_all_shards(ctx.ks, |ks| {
        let Some(e) = ks.peek_raw(&key) else {
            return Ok(None);
        };
        let refcount = super::keys::refcount(shared, &e.value);
        Ok(Some(object_line(e, refcount, now, compressed, compress)))
    })
    .map_err(Error::Owned)?;
    match line {
        Some(l) => ctx.out.simple(&l),
        None => return Err(Error::Static("ERR no such key")),
    }
    Ok(Done)
}

fn object_line(
    e: &Entry,
    refcount: i64,
    now_ms: u64,
    ql_compressed: bool,
    compress: bool,
) -> String {
    let mut rdb = Vec::new();
    // Redis 8.0's serialized length: its own RDB version's forms (a set
    // listpack as type 20, field TTLs inline).
    crate::rdb::value::encode_as(&e.value, compress, crate::rdb::RDB_VERSION_12, &mut rdb);
    let idle = crate::keyspace::evict::idle_ms(e.lru(), now_ms) / 1000;
    let mut line = format!(
        "Value at:{:p} refcount:{} encoding:{} serializedlength:{} lru:{} lru_seconds_idle:{}",
        &e.value,
        refcount,
        e.value.encoding(),
        rdb.len(),
        e.lru(),
        idle
    );
    // Redis adds the quicklist's shape for a quicklist only.
    if let Value::List(l) = &e.value
        && !l.is_listpack()
    {
        let nodes = l.nodes();
        let fill = l.quicklist_fill();
        let avg = l.len() as f64 / nodes.len() as f64;
        let bytes: usize = nodes.iter().map(|n| n.bytes).sum();
        line.push_str(&format!(
            " ql_nodes:{} ql_avg_node:{avg:.2} ql_listpack_max:{fill} ql_compressed:{} ql_uncompressed_size:{bytes}",
            nodes.len(),
            u8::from(ql_compressed)
        ));
    }
    line
}

/// DEBUG PROTOCOL: one reply of each RESP3 type, as Redis writes it (RESP2
/// clients get Redis's downgrades).
fn protocol(ctx: &mut Ctx) -> CmdResult {
    let name = ctx.args.get(2);
    let out = &mut *ctx.out;
    let resp3 = out.resp3;
    if eq_ic(name, "string") {
        out.bulk(b"Hello World");
    } else if eq_ic(name, "integer") {
        out.int(12345);
    } else if eq_ic(name, "double") {
        // Redis's own value, not an approximation of pi.
        #[allow(clippy::approx_constant)]
        out.double(3.141);
    } else if eq_ic(name, "bignum") {
        let n = b"1234567999999999999999999999999999999";
        if resp3 {
            out.raw(b"(");
            out.raw(n);
            out.raw(b"\r\n");
        } else {
            out.bulk(n);
        }
    } else if eq_ic(name, "null") {
        out.null();
    } else if eq_ic(name, "array") || eq_ic(name, "set") {
        if eq_ic(name, "set") {
            out.set(3);
        } else {
            out.array(3);
        }
        for j in 0..3 {
            out.int(j);
        }
    } else if eq_ic(name, "map") {
        out.map(3);
        for j in 0..3 {
            out.int(j);
            out.boolean(j == 1);
        }
    } else if eq_ic(name, "attrib") {
        if resp3 {
            out.raw(b"|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n");
        }
        // An attribute is not a reply: a real one follows it.
        out.bulk(b"Some real reply following the attribute");
    } else if eq_ic(name, "push") {
        if !resp3 {
            return Err(Error::Static("ERR RESP2 is not supported by this command"));
        }
        // A push is not a reply either: the real one is sent too, and
        // goes first, as Redis 7.2+ defers pushes to the running client
        // until its reply is written.
        out.bulk(b"Some real reply following the push reply");
        out.push(2);
        out.bulk(b"server-cpu-usage");
        out.int(42);
    } else if eq_ic(name, "true") {
        out.boolean(true);
    } else if eq_ic(name, "false") {
        out.boolean(false);
    } else if eq_ic(name, "verbatim") {
        out.verbatim(b"This is a verbatim\nstring");
    } else {
        return Err(Error::Static(
            "ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false",
        ));
    }
    Ok(Done)
}

/// DEBUG STRINGMATCH-TEST: Redis's fuzz test of its glob matcher (random
/// patterns against random strings, both under 32 bytes), run on
/// zwindow's; surviving it is the result. Redis runs ten million rounds;
/// a hundred thousand keep the command under a second in a debug build.
fn stringmatch_test() {
    let mut rng = rand::rng();
    let (mut pat, mut s) = ([0u8; 32], [0u8; 32]);
    for _ in 0..100_000 {
        let (pl, sl) = (rng.random_range(0..32), rng.random_range(0..32));
        for b in &mut pat[..pl] {
            *b = rng.random_range(0..128);
        }
        for b in &mut s[..sl] {
            *b = rng.random_range(0..128);
        }
        std::hint::black_box(crate::util::glob_match(&pat[..pl], &s[..sl], false));
    }
}

/// DEBUG LISTPACK / QUICKLIST: Redis prints the structure on its stdout;
/// zwindow logs the value's encoding and length at debug level instead.
fn encoding_dump(ctx: &mut Ctx, encodings: &[&str], what: &str) -> CmdResult {
    let key = ctx.args.get(2);
    let encoding = with_all_shards(ctx.ks, |ks| Ok(ks.peek(key).map(|e| e.value.encoding())))
        .map_err(Error::Owned)?;
    match encoding {
        None => return Err(Error::Static("ERR no such key")),
        Some(enc) if !encodings.contains(&enc) => {
            return Err(Error::Owned(format!("ERR Not a {what} encoded object.")));
        }
        Some(enc) => {
            tracing::debug!(key = %String::from_utf8_lossy(key), encoding = enc, "DEBUG {what}");
        }
    }
    let mut first = what.to_string();
    first[..1].make_ascii_uppercase();
    ctx.out
        .simple(&format!("{first} structure printed on stdout"));
    Ok(Done)
}

fn reload(ctx: &mut Ctx) -> CmdResult {
    if ctx.shared.persistence.bgsave_in_progress.load(Relaxed) {
        return Err(Error::Static("ERR Background save already in progress"));
    }
    let (mut save, mut flush, mut merge) = (true, true, false);
    for a in ctx.args.iter().skip(2) {
        if eq_ic(a, "NOSAVE") {
            save = false;
        } else if eq_ic(a, "NOFLUSH") {
            flush = false;
        } else if eq_ic(a, "MERGE") {
            merge = true;
        } else {
            return Err(Error::Static(
                "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.",
            ));
        }
    }
    let shared = ctx.shared;
    with_all_shards(ctx.ks, |ks| {
        crate::persistence::reload(&**shared, ks, save, flush, merge)
    })
    .map_err(Error::Owned)?;
    ctx.out.ok();
    Ok(Done)
}

/// zwindow's controllable clock for tests:
/// `DEBUG CLOCK FREEZE <unix-ms>|NOW`, `ADVANCE <ms>`, `RESUME`, `GET`.
fn clock(ctx: &mut Ctx) -> CmdResult {
    let op = ctx.arg(2);
    let clock = &ctx.shared.clock;
    if eq_ic(op, "FREEZE") && ctx.argc() == 4 {
        let at = if eq_ic(ctx.arg(3), "NOW") {
            clock.now_ms()
        } else {
            int_arg(ctx.arg(3))?.max(1) as u64
        };
        clock.freeze_at(at);
    } else if eq_ic(op, "ADVANCE") && ctx.argc() == 4 {
        clock.advance(int_arg(ctx.arg(3))?);
    } else if eq_ic(op, "RESUME") && ctx.argc() == 3 {
        clock.freeze_at(0);
    } else if !(eq_ic(op, "GET") && ctx.argc() == 3) {
        return Err(Error::Syntax);
    }
    ctx.out.int(clock.now_ms() as i64);
    Ok(Done)
}

/// DEBUG CLUSTERLINK KILL to|from|all <node-id>: frees a node's bus links
/// (the bus closes them; the cron reconnects).
fn cluster_link_kill(ctx: &mut Ctx) -> CmdResult {
    let Some(cluster) = ctx.shared.cluster.as_ref() else {
        return Err(Error::Static(
            "ERR Debug option only available for cluster mode enabled setup!",
        ));
    };
    let id = ctx.arg(4);
    let mut inner = cluster.write();
    let Some(node) =
        crate::cluster::wire::NodeName::from_slice(id).filter(|n| inner.state.node(n).is_some())
    else {
        return Err(Error::Owned(format!(
            "ERR Unknown node {}",
            String::from_utf8_lossy(id)
        )));
    };
    let dir = ctx.arg(3);
    let (to, from) = if eq_ic(dir, "from") {
        (false, true)
    } else if eq_ic(dir, "to") {
        (true, false)
    } else if eq_ic(dir, "all") {
        (true, true)
    } else {
        return Err(Error::Owned(format!(
            "ERR Unknown direction {}",
            String::from_utf8_lossy(dir)
        )));
    };
    let actions = inner.state.kill_links(&node, to, from);
    drop(inner);
    cluster.submit(actions);
    ctx.out.ok();
    Ok(Done)
}
