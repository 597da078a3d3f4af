//! MEMORY: a key's size (USAGE), the server's memory figures (STATS, the
//! same accounting as INFO memory, `info::Memory`), Redis's memory doctor,
//! the allocator's own report (MALLOC-STATS) and giving freed memory back
//! to the system (PURGE).

use super::flags::*;
use super::info::{Memory, ratio};
use super::observability::reply_help;
use super::{CmdResult, Command, Ctx, Done, Error, Handler, Keys, int_arg};
use crate::util::eq_ic;

const G: &str = "server";

pub(crate) static MEMORY: &[Command] = &[
    Command::new("doctor", 2, 0, Keys::None, &(memory_doctor as Handler)).doc(
        G,
        "4.0.0",
        "O(1)",
        "Outputs a memory problems report.",
    ),
    Command::new(
        "help",
        2,
        LOADING | STALE,
        Keys::None,
        &(memory_help as Handler),
    )
    .doc(
        G,
        "4.0.0",
        "O(1)",
        "Returns helpful text about the different subcommands.",
    ),
    Command::new(
        "malloc-stats",
        2,
        0,
        Keys::None,
        &(memory_malloc_stats as Handler),
    )
    .doc(
        G,
        "4.0.0",
        "Depends on how much memory is allocated, could be slow",
        "Returns the allocator statistics.",
    ),
    Command::new("purge", 2, 0, Keys::None, &(memory_purge as Handler)).doc(
        G,
        "4.0.0",
        "Depends on how much memory is allocated, could be slow",
        "Asks the allocator to release memory.",
    ),
    Command::new("stats", 2, 0, Keys::None, &(memory_stats as Handler)).doc(
        G,
        "4.0.0",
        "O(1)",
        "Returns details about memory usage.",
    ),
    Command::new(
        "usage",
        -3,
        READONLY,
        Keys::Range {
            first: 2,
            last: 2,
            step: 1,
        },
        &(memory_usage as Handler),
    )
    .doc(
        G,
        "4.0.0",
        "O(N) where N is the number of samples.",
        "Estimates the memory usage of a key.",
    )
    .syntax("key [SAMPLES count]"),
];

/// MEMORY USAGE key [SAMPLES count]: the key's bytes, its entry and its
/// value's own accounting (exact rather than sampled, so SAMPLES is only
/// validated). Options are checked before the key, as Redis does.
fn memory_usage(ctx: &mut Ctx) -> CmdResult {
    let mut i = 3;
    while i < ctx.argc() {
        if eq_ic(ctx.arg(i), "SAMPLES") && i + 1 < ctx.argc() {
            if int_arg(ctx.arg(i + 1))? < 0 {
                return Err(Error::Syntax);
            }
            i += 2;
        } else {
            return Err(Error::Syntax);
        }
    }
    let key = ctx.args.get(2);
    match ctx.ks.peek(key) {
        Some(e) => {
            let usage =
                key.len() + std::mem::size_of::<crate::keyspace::Entry>() + e.value.mem_usage();
            ctx.out.int(usage as i64);
        }
        None => ctx.out.null(),
    }
    Ok(Done)
}

fn memory_help(ctx: &mut Ctx) -> CmdResult {
    reply_help(
        ctx,
        &[
            "DOCTOR",
            "    Return memory problems reports.",
            "MALLOC-STATS",
            "    Return internal statistics report from the memory allocator.",
            "PURGE",
            "    Attempt to purge dirty pages for reclamation by the allocator.",
            "STATS",
            "    Return information about the memory usage of the server.",
            "USAGE <key> [SAMPLES <count>]",
            "    Return memory in bytes used by <key> and its value. Nested values are",
            "    sampled up to <count> times (default: 5, 0 means sample all).",
        ],
    );
    Ok(Done)
}

/// The keyspace's share of the figures: per database with keys, its
/// (id, keys, main table bytes, TTL table bytes).
struct Tables {
    dbs: Vec<(usize, usize, usize, usize)>,
    total: usize,
    keys: usize,
}

fn tables(ctx: &mut Ctx) -> Tables {
    let mut per_db = vec![(0usize, 0usize, 0usize); ctx.shared.store.databases];
    // Through the keyspace: inside EXEC or a script every shard is held.
    ctx.ks.for_each_shard(|shard| {
        for (db, d) in shard.dbs.iter().enumerate() {
            if let Some(slot) = per_db.get_mut(db) {
                slot.0 += d.keys.len();
                slot.1 += d.keys.mem_usage();
                slot.2 += d.expires.mem_usage();
            }
        }
    });
    let mut t = Tables {
        dbs: Vec::new(),
        total: 0,
        keys: 0,
    };
    for (db, (keys, main, expires)) in per_db.into_iter().enumerate() {
        t.total += main + expires;
        if keys > 0 {
            t.keys += keys;
            t.dbs.push((db, keys, main, expires));
        }
    }
    t
}

/// MEMORY STATS: Redis 8.0's fields, in its order.
fn memory_stats(ctx: &mut Ctx) -> CmdResult {
    let t = tables(ctx);
    let m = Memory::gather(ctx.shared, t.total);
    let out = &mut *ctx.out;
    out.map(33 + t.dbs.len());
    let int = |out: &mut crate::protocol::Reply, name: &str, v: i64| {
        out.bulk(name.as_bytes());
        out.int(v);
    };
    let dbl = |out: &mut crate::protocol::Reply, name: &str, v: f64| {
        out.bulk(name.as_bytes());
        out.double(v);
    };
    int(out, "peak.allocated", m.peak as i64);
    int(out, "total.allocated", m.used as i64);
    int(out, "startup.allocated", m.startup as i64);
    int(out, "replication.backlog", 0);
    // A replica's full sync is streamed, never buffered here.
    int(out, "replica.fullsync.buffer", 0);
    int(out, "clients.slaves", 0);
    int(out, "clients.normal", m.clients_normal as i64);
    int(out, "cluster.links", m.cluster_links as i64);
    int(out, "aof.buffer", 0);
    int(out, "lua.caches", m.eval_caches as i64);
    int(out, "functions.caches", m.function_caches as i64);
    // One Lua VM runs EVAL scripts and functions alike.
    int(out, "script.VMs", m.lua as i64);
    for (db, _, main, expires) in &t.dbs {
        out.bulk(format!("db.{db}").as_bytes());
        out.map(2);
        int(out, "overhead.hashtable.main", *main as i64);
        int(out, "overhead.hashtable.expires", *expires as i64);
    }
    // zwindow's tables grow without Redis's incremental rehashing: no
    // second table, nothing in rehash.
    int(out, "overhead.db.hashtable.lut", 0);
    int(out, "overhead.db.hashtable.rehashing", 0);
    int(out, "overhead.total", m.overhead as i64);
    int(out, "db.dict.rehashing.count", 0);
    int(out, "keys.count", t.keys as i64);
    let per_key = if t.keys > 0 { m.net / t.keys as u64 } else { 0 };
    int(out, "keys.bytes-per-key", per_key as i64);
    int(out, "dataset.bytes", m.dataset as i64);
    dbl(out, "dataset.percentage", ratio(m.dataset * 100, m.net));
    dbl(out, "peak.percentage", ratio(m.used * 100, m.peak));
    int(out, "allocator.allocated", m.used as i64);
    int(out, "allocator.active", m.active as i64);
    int(out, "allocator.resident", m.resident as i64);
    // Decayed-but-not-purged pages are jemalloc's; zwindow's allocator
    // (mimalloc) reports none.
    int(out, "allocator.muzzy", 0);
    dbl(
        out,
        "allocator-fragmentation.ratio",
        ratio(m.active, m.used),
    );
    int(
        out,
        "allocator-fragmentation.bytes",
        signed(m.active, m.used),
    );
    dbl(out, "allocator-rss.ratio", ratio(m.resident, m.active));
    int(out, "allocator-rss.bytes", signed(m.resident, m.active));
    dbl(out, "rss-overhead.ratio", ratio(m.rss, m.resident));
    int(out, "rss-overhead.bytes", signed(m.rss, m.resident));
    dbl(out, "fragmentation", ratio(m.rss, m.used));
    int(out, "fragmentation.bytes", signed(m.rss, m.used));
    Ok(Done)
}

fn signed(a: u64, b: u64) -> i64 {
    a as i64 - b as i64
}

/// MEMORY DOCTOR: Redis's `getMemoryDoctorReport`, on zwindow's figures.
fn memory_doctor(ctx: &mut Ctx) -> CmdResult {
    let t = tables(ctx);
    let m = Memory::gather(ctx.shared, t.total);
    let clients = ctx.shared.clients.all().len().max(1) as u64;
    let scripts = ctx
        .shared
        .scripting
        .cached_scripts
        .load(std::sync::atomic::Ordering::Relaxed);
    let report = doctor_report(&m, clients, scripts as u64, &crate::alloc::name());
    ctx.out.verbatim(report.as_bytes());
    Ok(Done)
}

const MB10: u64 = 10 << 20;

fn doctor_report(m: &Memory, clients: u64, scripts: u64, allocator: &str) -> String {
    let mut issues: Vec<String> = Vec::new();
    let empty = m.used < 5 * 1024 * 1024;
    if !empty {
        if ratio(m.peak, m.used) > 1.5 {
            issues.push(" * Peak memory: In the past this instance used more than 150% the memory that is currently using. The allocator is normally not able to release memory after a peak, so you can expect to see a big fragmentation ratio, however this is actually harmless and is only due to the memory peak, and if the Redis instance Resident Set Size (RSS) is currently bigger than expected, the memory will be used as soon as you fill the Redis instance with more data. If the memory peak was only occasional and you want to try to reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is to shutdown and restart the instance.\n\n".into());
        }
        if ratio(m.rss, m.used) > 1.4 && m.rss.saturating_sub(m.used) > MB10 {
            issues.push(format!(" * High total RSS: This instance has a memory fragmentation and RSS overhead greater than 1.4 (this means that the Resident Set Size of the Redis process is much larger than the sum of the logical allocations Redis performed). This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. If the problem is a large peak memory, then there is no issue. Otherwise, make sure you are using the Jemalloc allocator and not the default libc malloc. Note: The currently used allocator is \"{allocator}\".\n\n"));
        }
        if ratio(m.active, m.used) > 1.1 && m.active.saturating_sub(m.used) > MB10 {
            issues.push(" * High allocator fragmentation: This instance has an allocator external fragmentation greater than 1.1. This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. You can try enabling 'activedefrag' config option.\n\n".into());
        }
        if ratio(m.resident, m.active) > 1.1 && m.resident.saturating_sub(m.active) > MB10 {
            issues.push(" * High allocator RSS overhead: This instance has an RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the allocator is much larger than the sum what the allocator actually holds). This problem is usually due to a large peak memory (check if there is a peak memory entry above in the report), you can try the MEMORY PURGE command to reclaim it.\n\n".into());
        }
        if ratio(m.rss, m.resident) > 1.1 && m.rss.saturating_sub(m.resident) > MB10 {
            issues.push(" * High process RSS overhead: This instance has non-allocator RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the Redis process is much larger than the RSS the allocator holds). This problem may be due to Lua scripts or Modules.\n\n".into());
        }
        if m.clients_normal / clients > 1024 * 200 {
            issues.push(" * Big client buffers: The clients output buffers in this instance are greater than 200K per client (on average). This may result from different causes, like Pub/Sub clients subscribed to channels bot not receiving data fast enough, so that data piles on the Redis instance output buffer, or clients sending commands with large replies or very large sequences of commands in the same pipeline. Please use the CLIENT LIST command in order to investigate the issue if it causes problems in your instance, or to understand better why certain clients are using a big amount of memory.\n\n".into());
        }
        if scripts > 1000 {
            issues.push(" * Many scripts: There seem to be many cached scripts in this instance (more than 1000). This may be because scripts are generated and `EVAL`ed, instead of being parameterized (with KEYS and ARGV), `SCRIPT LOAD`ed and `EVALSHA`ed. Unless `SCRIPT FLUSH` is called periodically, the scripts' caches may end up consuming most of your memory.\n\n".into());
        }
    }
    if empty {
        "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n".into()
    } else if issues.is_empty() {
        "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n".into()
    } else {
        let mut s = String::from(
            "Sam, I detected a few issues in this Redis instance memory implants:\n\n",
        );
        for i in issues {
            s.push_str(&i);
        }
        s.push_str("I'm here to keep you safe, Sam. I want to help you.\n");
        s
    }
}

/// MEMORY MALLOC-STATS: mimalloc's own report (Redis prints jemalloc's;
/// built without it, the text below).
fn memory_malloc_stats(ctx: &mut Ctx) -> CmdResult {
    match crate::alloc::stats_text() {
        Some(text) => ctx.out.verbatim(text.as_bytes()),
        None => ctx
            .out
            .bulk(b"Stats not supported for the current allocator"),
    }
    Ok(Done)
}

/// MEMORY PURGE: freed pages go back to the system now.
fn memory_purge(ctx: &mut Ctx) -> CmdResult {
    crate::alloc::release_free_memory();
    ctx.out.ok();
    Ok(Done)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(used: u64, peak: u64, rss: u64) -> Memory {
        Memory {
            used,
            peak,
            startup: 1 << 20,
            rss,
            lua: 0,
            eval_caches: 0,
            function_caches: 0,
            clients_normal: 0,
            cluster_links: 0,
            overhead: 1 << 20,
            dataset: used - (1 << 20),
            net: used - (1 << 20),
            active: used,
            resident: used,
        }
    }

    #[test]
    fn doctor_reports_as_redis() {
        let r = doctor_report(&figures(1 << 20, 1 << 20, 1 << 20), 1, 0, "x");
        assert!(r.starts_with("Hi Sam, this instance is empty"));
        let r = doctor_report(&figures(100 << 20, 100 << 20, 100 << 20), 1, 0, "x");
        assert!(r.starts_with("Hi Sam, I can't find any memory issue"));
        let r = doctor_report(&figures(100 << 20, 200 << 20, 100 << 20), 1, 0, "x");
        assert!(r.starts_with("Sam, I detected a few issues"));
        assert!(r.contains(" * Peak memory:"));
        assert!(r.ends_with("I want to help you.\n"));
    }
}
