//! INFO: redis-server 8.0's sections, with its fields in its order, built
//! from the server's statistics.
//!
//! A field of a feature zwindow has carries zwindow's own figure; a field
//! of a feature it lacks (replication, persistence, defragmentation, client
//! tracking, …) carries what a Redis that does not use the feature reports,
//! so tools that parse INFO find every field they expect. zwindow adds one
//! section of its own, `# Windows`, among the default ones.

use std::fmt::{Display, Write as _};
use std::sync::OnceLock;
use std::sync::atomic::Ordering::Relaxed;

use super::{CallStats, CmdResult, Command, Ctx, Done, all_commands};
use crate::clients::ClientHandle;
use crate::commands::Services;
use crate::keyspace::Value;
use crate::keyspace::keysizes::Totals;
use crate::stats::Metric;

/// INFO [section ...].
pub(crate) fn info(ctx: &mut Ctx) -> CmdResult {
    let wanted: Vec<String> = ctx
        .args
        .iter()
        .skip(1)
        .map(|a| String::from_utf8_lossy(a).to_lowercase())
        .collect();
    let selection = Selection::parse(&wanted);
    let text = info_text(ctx, &selection);
    ctx.out.verbatim(text.as_bytes());
    Ok(Done)
}

/// The default sections: Redis's (it names modules `module_list` there)
/// and zwindow's `windows`.
const DEFAULT: [&str; 14] = [
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "threads",
    "cpu",
    "module_list",
    "errorstats",
    "cluster",
    "windows",
    "keyspace",
    "keysizes",
];

/// Which sections to print, as Redis's `genInfoSectionDict`: no argument
/// or `default` means the default sections, `all` and `everything` every
/// section (they differ only for modules' own sections, which zwindow has
/// none of), anything else names one section; names add up.
struct Selection {
    all: bool,
    names: Vec<String>,
}

impl Selection {
    fn parse(args: &[String]) -> Selection {
        let mut sel = Selection {
            all: false,
            names: Vec::new(),
        };
        let defaults = || DEFAULT.iter().map(|s| s.to_string());
        if args.is_empty() {
            sel.names.extend(defaults());
        }
        for a in args {
            match a.as_str() {
                "default" => sel.names.extend(defaults()),
                "all" | "everything" => sel.all = true,
                other => sel.names.push(other.to_string()),
            }
        }
        sel
    }

    fn wants(&self, section: &str) -> bool {
        // Redis 8's `debug` section only when named, not in `all` or
        // `everything`.
        if section == "debug" {
            return self.names.iter().any(|n| n == "debug");
        }
        self.all
            || self.names.iter().any(|n| n == section)
            || (section == "modules" && self.names.iter().any(|n| n == "module_list"))
    }
}

/// The text being built: sections separated by a blank line, none after
/// the last (as Redis).
struct Text {
    s: String,
    sections: usize,
}

impl Text {
    fn section(&mut self, title: &str) {
        if self.sections > 0 {
            self.s.push_str("\r\n");
        }
        self.sections += 1;
        let _ = write!(self.s, "# {title}\r\n");
    }

    fn field(&mut self, name: &str, value: impl Display) {
        let _ = write!(self.s, "{name}:{value}\r\n");
    }

    /// A byte count and its `_human` twin.
    fn bytes(&mut self, name: &str, value: u64) {
        self.field(name, value);
        self.field(&format!("{name}_human"), human(value));
    }
}

/// What one pass over the shards gathers.
#[derive(Default)]
struct Keyspace {
    hits: u64,
    misses: u64,
    expired_keys: u64,
    windowed: usize,
    /// (keys, keys with a TTL, keys with member or field TTLs) per database.
    per_db: Vec<(usize, usize, usize)>,
    volatile_members: usize,
    volatile_fields: usize,
    /// The hash tables' own bytes (Redis counts them as overhead).
    tables: usize,
    /// Keys some client WATCHes; keys clients are blocked on, and those of
    /// them a waiter is woken on when deleted (XREADGROUP's).
    watched_keys: usize,
    blocking_keys: usize,
    blocking_keys_on_nokey: usize,
    /// The key size histograms (when `# Keysizes` is wanted).
    sizes: Option<Totals>,
}

fn keyspace(ctx: &mut Ctx, keysizes: bool) -> Keyspace {
    let mut k = Keyspace {
        per_db: vec![(0, 0, 0); ctx.shared.store.databases],
        sizes: keysizes.then(Totals::default),
        ..Keyspace::default()
    };
    let windows = &ctx.shared.windows;
    // Through the keyspace: inside EXEC or a script every shard is already held.
    ctx.ks.for_each_shard(|shard| {
        // The schedule holds every windowed key and every key with member
        // or field TTLs: no need to walk the whole keyspace.
        for (db, key) in shard.schedule.keys() {
            let (windowed, members, fields, set_members) =
                match shard.dbs[db].keys.get(key).map(|e| &e.value) {
                    Some(Value::ZSet(z)) => (windows.resolve(key).is_some(), z.ttl_count(), 0, 0),
                    Some(Value::Hash(h)) => (false, 0, h.volatile_fields(), 0),
                    // Set member TTLs count in `subexpiry` only.
                    Some(Value::Set(s)) => (false, 0, 0, s.volatile_members()),
                    _ => continue,
                };
            k.windowed += usize::from(windowed);
            k.volatile_members += members;
            k.volatile_fields += fields;
            if members + fields + set_members > 0
                && let Some(slot) = k.per_db.get_mut(db)
            {
                slot.2 += 1;
            }
        }
        k.watched_keys += shard.watched.len();
        k.blocking_keys += shard.blocked.len();
        k.blocking_keys_on_nokey += shard
            .blocked
            .values()
            .filter(|q| q.iter().any(|w| w.unblock_on_nokey))
            .count();
        k.hits += shard.stats.hits;
        k.misses += shard.stats.misses;
        k.expired_keys += shard.stats.expired_keys;
        for (db, d) in shard.dbs.iter().enumerate() {
            if let Some(slot) = k.per_db.get_mut(db) {
                slot.0 += d.keys.len();
                slot.1 += d.expires.len();
            }
            if let Some(total) = &mut k.sizes {
                total.add(db, &d.sizes);
            }
            k.tables += d.keys.mem_usage() + d.expires.mem_usage();
        }
    });
    k
}

/// The INFO text for `sel`.
fn info_text(ctx: &mut Ctx, sel: &Selection) -> String {
    let shared = ctx.shared.clone();
    let mut t = Text {
        s: String::new(),
        sections: 0,
    };
    // One pass over the shards, only for the sections that read it; none
    // while the dataset loads (the loader holds every shard: INFO answers
    // at once, as Redis answers it between two chunks of its load).
    let ks = if [
        "clients", "memory", "stats", "windows", "keyspace", "keysizes",
    ]
    .iter()
    .any(|s| sel.wants(s))
        && !shared.persistence.loading.active()
    {
        keyspace(ctx, sel.wants("keysizes"))
    } else {
        Keyspace::default()
    };
    if sel.wants("server") {
        server(&mut t, &shared);
    }
    if sel.wants("clients") {
        clients(&mut t, &shared, &ks);
    }
    if sel.wants("memory") {
        memory(&mut t, &shared, &ks);
    }
    if sel.wants("persistence") {
        persistence(&mut t, &shared);
    }
    if sel.wants("threads") {
        // Redis's I/O threads each serve some clients; zwindow's runtime
        // threads share them all, the figures are reported as one thread's:
        // every client, and every socket read and write (the same counts
        // as `total_reads_processed` and `total_writes_processed`).
        t.section("Threads");
        let st = &shared.stats;
        t.field(
            "io_thread_0",
            format_args!(
                "clients={},reads={},writes={}",
                shared.clients.count(),
                st.reads_processed.load(Relaxed),
                st.writes_processed.load(Relaxed)
            ),
        );
    }
    if sel.wants("stats") {
        stats(&mut t, &shared, &ks);
    }
    if sel.wants("replication") {
        replication(&mut t, &shared);
    }
    if sel.wants("cpu") {
        cpu(&mut t);
    }
    if sel.wants("modules") {
        t.section("Modules");
    }
    if sel.wants("commandstats") {
        t.section("Commandstats");
        commandstats(&mut t);
    }
    if sel.wants("errorstats") {
        t.section("Errorstats");
        for (code, n) in shared.error_stats.lock().iter() {
            t.field(&format!("errorstat_{code}"), format_args!("count={n}"));
        }
    }
    if sel.wants("latencystats") {
        t.section("Latencystats");
        if shared.config.latency_tracking() {
            latencystats(&mut t, &shared.config.latency_percentiles());
        }
    }
    if sel.wants("cluster") {
        t.section("Cluster");
        t.field("cluster_enabled", u8::from(shared.cluster.is_some()));
    }
    if sel.wants("windows") {
        t.section("Windows");
        t.field("zwindow_version", crate::version::VERSION);
        shared.windows.info(&mut t.s, ks.windowed);
        let per_db = ks.per_db.iter().map(|d| d.2).sum::<usize>();
        t.field("volatile_keys", per_db);
        t.field("volatile_members", ks.volatile_members);
        t.field("volatile_fields", ks.volatile_fields);
        t.field(
            "expired_members",
            shared.store.stats_expired_members.load(Relaxed),
        );
        t.field(
            "expired_fields",
            shared.store.stats_expired_fields.load(Relaxed),
        );
    }
    if sel.wants("keyspace") {
        t.section("Keyspace");
        let avg_ttl = shared.stats.expire.get().avg_ttl;
        for (db, (keys, expires, sub)) in ks.per_db.iter().enumerate() {
            if *keys > 0 || *expires > 0 {
                let ttl = avg_ttl.get(db).copied().unwrap_or(0);
                // `subexpiry` as Redis 7.4+: keys with field (here also
                // member) TTLs.
                t.field(
                    &format!("db{db}"),
                    format_args!("keys={keys},expires={expires},avg_ttl={ttl},subexpiry={sub}"),
                );
            }
        }
    }
    if sel.wants("keysizes") {
        // Redis 8.0's: a line per database with keys and type with keys.
        t.section("Keysizes");
        if let Some(total) = &ks.sizes {
            for (db, d) in ks.per_db.iter().enumerate() {
                if d.0 > 0 {
                    total.write_lines(db, &mut t.s);
                }
            }
        }
    }
    if sel.wants("debug") {
        let st = &shared.stats;
        t.section("Debug");
        t.field(
            "eventloop_duration_aof_sum",
            st.el_aof_ns.load(Relaxed) / 1000,
        );
        t.field(
            "eventloop_duration_cron_sum",
            st.el_cron_ns.load(Relaxed) / 1000,
        );
        t.field("eventloop_duration_max", st.el_max_ns.load(Relaxed) / 1000);
        t.field("eventloop_cmd_per_cycle_max", st.el_cmds_max.load(Relaxed));
        // Redis fills these from jemalloc's own arena for Lua (0 with any
        // other allocator); zwindow's Lua allocates from the one
        // allocator, its bytes in `used_memory_lua`.
        for name in [
            "allocator_allocated_lua",
            "allocator_active_lua",
            "allocator_resident_lua",
            "allocator_frag_bytes_lua",
        ] {
            t.field(name, 0);
        }
    }
    t.s
}

fn server(t: &mut Text, shared: &Services) {
    let uptime = shared.started.elapsed().as_secs();
    let now_us = shared.clock.now_us();
    t.section("Server");
    t.field("redis_version", crate::version::REDIS_VERSION);
    t.field("redis_git_sha1", "00000000");
    t.field("redis_git_dirty", 0);
    t.field("redis_build_id", build_id());
    let mode = if shared.cluster.is_some() {
        "cluster"
    } else {
        "standalone"
    };
    t.field("redis_mode", mode);
    t.field("os", uname());
    t.field("arch_bits", usize::BITS);
    // std's Instant reads CLOCK_MONOTONIC.
    t.field("monotonic_clock", "POSIX clock_gettime");
    t.field(
        "multiplexing_api",
        if cfg!(any(target_os = "linux", target_os = "android")) {
            "epoll"
        } else {
            "kqueue"
        },
    );
    // Rust's atomics are the C11 memory model's.
    t.field("atomicvar_api", "c11-builtin");
    // Built by rustc, not GCC: what Redis prints without __GNUC__.
    t.field("gcc_version", "0.0.0");
    t.field("process_id", std::process::id());
    t.field("process_supervised", "no");
    t.field("run_id", &shared.run_id);
    t.field("tcp_port", shared.config.port.load(Relaxed));
    t.field("server_time_usec", now_us);
    t.field("uptime_in_seconds", uptime);
    t.field("uptime_in_days", uptime / 86400);
    t.field("hz", shared.config.hz());
    t.field("configured_hz", shared.config.hz());
    // Redis's LRU clock: seconds, 24 bits.
    t.field("lru_clock", (now_us / 1_000_000) & ((1 << 24) - 1));
    t.field(
        "executable",
        std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
    );
    t.field(
        "config_file",
        shared
            .config
            .config_file
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
    );
    // Redis's I/O threads only read and write; zwindow has none such.
    t.field("io_threads_active", 0);
    if let Some(ms) = shared.shutdown.remaining_ms(shared.clock.now_ms()) {
        t.field("shutdown_in_milliseconds", ms);
    }
    listeners(t, shared);
}

/// Redis's `getListensInfoString`: a line per kind of listener, numbered
/// by Redis's connection types (tcp 0, unix 1, tls 2), with the `bind`
/// addresses as configured and the port.
fn listeners(t: &mut Text, shared: &Services) {
    let config = &shared.config;
    let binds: String = crate::config::bind_addrs(&config.bind())
        .iter()
        .map(|a| format!(",bind={a}"))
        .collect();
    let port = config.port.load(Relaxed);
    if port != 0 {
        t.field("listener0", format_args!("name=tcp{binds},port={port}"));
    }
    if !config.unixsocket.is_empty() {
        t.field(
            "listener1",
            format_args!("name=unix,bind={}", config.unixsocket),
        );
    }
    let tls_port = config.tls_port();
    if tls_port != 0 {
        t.field("listener2", format_args!("name=tls{binds},port={tls_port}"));
    }
}

/// Identifies the build (Redis hashes its version and build host): here
/// the version, target and profile.
fn build_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        let what = format!(
            "zwindow {} {} {} {}",
            crate::version::VERSION,
            std::env::consts::OS,
            std::env::consts::ARCH,
            if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            }
        );
        sha1_smol::Sha1::from(what).digest().to_string()[..16].to_string()
    })
}

/// `sysname release machine`, as Redis prints `uname(2)`.
fn uname() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| {
        // SAFETY: uname fills the zeroed struct; its fields are
        // NUL-terminated C strings.
        unsafe {
            let mut u: libc::utsname = std::mem::zeroed();
            if libc::uname(&mut u) != 0 {
                return format!("{} {}", std::env::consts::OS, std::env::consts::ARCH);
            }
            let field = |f: &[libc::c_char]| {
                std::ffi::CStr::from_ptr(f.as_ptr())
                    .to_string_lossy()
                    .into_owned()
            };
            format!(
                "{} {} {}",
                field(&u.sysname),
                field(&u.release),
                field(&u.machine)
            )
        }
    })
}

fn clients(t: &mut Text, shared: &Services, ks: &Keyspace) {
    let st = &shared.stats;
    t.section("Clients");
    // Redis counts its replicas' connections apart (`connected_slaves`).
    let replicas = shared.replication.replicas().len();
    t.field(
        "connected_clients",
        shared.clients.count().saturating_sub(replicas),
    );
    t.field("cluster_connections", 0);
    t.field("maxclients", shared.config.maxclients());
    t.field("client_recent_max_input_buffer", st.recent_max_input.get());
    t.field(
        "client_recent_max_output_buffer",
        st.recent_max_output.get(),
    );
    // Clients held by CLIENT PAUSE count as blocked, as in Redis.
    let paused = shared.pause.waiting.load(Relaxed) as usize;
    let waiting_acks = shared.replication.waiting.load(Relaxed);
    t.field(
        "blocked_clients",
        shared.blocking.waiting() + paused + waiting_acks + shared.shutdown.waiters(),
    );
    t.field("tracking_clients", shared.tracking.clients());
    t.field("pubsub_clients", shared.pubsub.clients());
    let watching = shared
        .clients
        .all()
        .iter()
        .filter(|c| c.watching.load(Relaxed) > 0)
        .count();
    t.field("watching_clients", watching);
    t.field(
        "clients_in_timeout_table",
        st.clients_in_timeout_table.load(Relaxed),
    );
    t.field("total_watched_keys", ks.watched_keys);
    t.field("total_blocking_keys", ks.blocking_keys);
    t.field("total_blocking_keys_on_nokey", ks.blocking_keys_on_nokey);
}

/// `a / b`, or 0 when `b` is (Redis would print inf or nan).
pub(crate) fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// The memory figures INFO memory, MEMORY STATS and MEMORY DOCTOR report
/// (Redis's `getMemoryOverheadData`).
pub(crate) struct Memory {
    pub(crate) used: u64,
    pub(crate) peak: u64,
    pub(crate) startup: u64,
    pub(crate) rss: u64,
    pub(crate) lua: u64,
    pub(crate) eval_caches: u64,
    pub(crate) function_caches: u64,
    pub(crate) clients_normal: u64,
    /// The cluster bus's links (`mem_cluster_links`).
    pub(crate) cluster_links: u64,
    pub(crate) overhead: u64,
    pub(crate) dataset: u64,
    /// Bytes used beyond those at startup (at least 1).
    pub(crate) net: u64,
    pub(crate) active: u64,
    pub(crate) resident: u64,
}

impl Memory {
    pub(crate) fn gather(shared: &Services, tables: usize) -> Memory {
        let used = crate::stats::note_peak_memory(&shared.stats);
        let peak = shared.stats.peak_memory.load(Relaxed).max(used);
        let startup = shared.stats.startup_memory.load(Relaxed);
        let rss = rss_bytes();
        let sc = &shared.scripting;
        let lua = sc.lua_memory.load(Relaxed) as u64;
        let eval_caches = sc.scripts_bytes.load(Relaxed) as u64;
        let function_caches = sc.functions_bytes.load(Relaxed) as u64;
        // Each client's state, its buffers and its pushes not yet written.
        let per_client = size_of::<crate::commands::session::Client>() + size_of::<ClientHandle>();
        let clients_normal: u64 = shared
            .clients
            .all()
            .iter()
            .map(|c| {
                (per_client + c.buffer_bytes.load(Relaxed) + c.push_bytes.load(Relaxed)) as u64
            })
            .sum();
        let cluster_links = shared
            .cluster
            .as_ref()
            .map_or(0, |c| c.stats.links_memory() as u64);
        let histograms: usize = every_command()
            .map(|(_, c)| CallStats::of(c).latency.heap_bytes())
            .sum();
        // Redis's getMemoryOverheadData: what is not the data. zwindow's Lua
        // allocates through the counted allocator (Redis's does not), so its
        // VM counts here too, and so do the latency histograms (Redis leaves
        // them in the dataset).
        let overhead = startup
            + clients_normal
            + cluster_links
            + shared.replication.buffer_memory().total as u64
            + eval_caches
            + function_caches
            + lua
            + (tables + histograms) as u64;
        let dataset = used.saturating_sub(overhead);
        let net = if used > startup { used - startup } else { 1 };
        // mimalloc's committed pages stand for jemalloc's active and resident
        // memory; without them, Redis's fallback (RSS less Lua's, which its
        // allocator does not hold).
        let resident = crate::alloc::committed().unwrap_or_else(|| rss.saturating_sub(lua));
        Memory {
            used,
            peak,
            startup,
            rss,
            lua,
            eval_caches,
            function_caches,
            clients_normal,
            cluster_links,
            overhead,
            dataset,
            net,
            active: resident,
            resident,
        }
    }
}

fn memory(t: &mut Text, shared: &Services, ks: &Keyspace) {
    let Memory {
        used,
        peak,
        startup,
        rss,
        lua,
        eval_caches,
        function_caches,
        clients_normal,
        cluster_links,
        overhead,
        dataset,
        net,
        active,
        resident,
    } = Memory::gather(shared, ks.tables);
    let sc = &shared.scripting;
    let signed = |a: u64, b: u64| a as i64 - b as i64;
    t.section("Memory");
    t.bytes("used_memory", used);
    t.bytes("used_memory_rss", rss);
    t.bytes("used_memory_peak", peak);
    t.field(
        "used_memory_peak_perc",
        format_args!("{:.2}%", ratio(used * 100, peak)),
    );
    t.field("used_memory_overhead", overhead);
    t.field("used_memory_startup", startup);
    t.field("used_memory_dataset", dataset);
    t.field(
        "used_memory_dataset_perc",
        format_args!("{:.2}%", ratio(dataset * 100, net)),
    );
    t.field("allocator_allocated", used);
    t.field("allocator_active", active);
    t.field("allocator_resident", resident);
    // jemalloc's pages purged lazily (MADV_FREE) and not yet reclaimed:
    // mimalloc reports no such figure, its resets count as not committed.
    t.field("allocator_muzzy", 0);
    t.bytes("total_system_memory", total_system_memory());
    // One Lua VM serves both EVAL and functions: the libraries' part of
    // it is reported as the functions' VM, the rest as eval's.
    let vm_functions = (sc.functions_vm.load(Relaxed) as u64).min(lua);
    let vm_eval = lua - vm_functions;
    t.field("used_memory_lua", vm_eval);
    t.field("used_memory_vm_eval", vm_eval);
    t.field("used_memory_lua_human", human(vm_eval));
    t.field("used_memory_scripts_eval", eval_caches);
    t.field("number_of_cached_scripts", sc.cached_scripts.load(Relaxed));
    t.field("number_of_functions", sc.functions_count.load(Relaxed));
    t.field("number_of_libraries", sc.libraries_count.load(Relaxed));
    t.field("used_memory_vm_functions", vm_functions);
    t.bytes("used_memory_vm_total", lua);
    t.field("used_memory_functions", function_caches);
    t.bytes("used_memory_scripts", eval_caches + function_caches);
    t.bytes("maxmemory", shared.config.maxmemory());
    t.field("maxmemory_policy", shared.config.maxmemory_policy().name());
    t.field(
        "allocator_frag_ratio",
        format_args!("{:.2}", ratio(active, used)),
    );
    t.field("allocator_frag_bytes", active.saturating_sub(used));
    t.field(
        "allocator_rss_ratio",
        format_args!("{:.2}", ratio(resident, active)),
    );
    t.field("allocator_rss_bytes", signed(resident, active));
    t.field(
        "rss_overhead_ratio",
        format_args!("{:.2}", ratio(rss, resident)),
    );
    t.field("rss_overhead_bytes", signed(rss, resident));
    t.field(
        "mem_fragmentation_ratio",
        format_args!("{:.2}", ratio(rss, used)),
    );
    t.field("mem_fragmentation_bytes", signed(rss, used));
    // The replication buffer that the backlog and replicas' output share
    // (Redis 7.0's); no AOF buffer outlives a batch.
    let repl = shared.replication.buffer_memory();
    t.field("mem_not_counted_for_evict", repl.not_counted);
    t.field("mem_replication_backlog", repl.backlog);
    // With Redis 8's buffer of a replica loading over an rdb channel.
    let full_sync_buffer = shared.replication.full_sync_buffer.load(Relaxed) as usize;
    t.field(
        "mem_total_replication_buffers",
        repl.total + full_sync_buffer,
    );
    t.field("mem_replica_full_sync_buffer", full_sync_buffer);
    t.field("mem_clients_slaves", repl.replicas);
    t.field("mem_clients_normal", clients_normal);
    t.field("mem_cluster_links", cluster_links);
    t.field("mem_aof_buffer", 0);
    t.field("mem_allocator", crate::alloc::name());
    // Tables being rehashed keep a second table meanwhile: zwindow's
    // tables never rehash incrementally (see `types::dict`).
    t.field("mem_overhead_db_hashtable_rehashing", 0);
    t.field("active_defrag_running", 0);
    t.field("lazyfree_pending_objects", shared.lazyfree.pending());
    t.field("lazyfreed_objects", shared.lazyfree.freed());
}

fn persistence(t: &mut Text, shared: &Services) {
    let p = &shared.persistence;
    let last_save = p.last_save.load(Relaxed);
    let bgsave = p.bgsave_in_progress.load(Relaxed);
    t.section("Persistence");
    let loading = p.loading.active();
    t.field("loading", u8::from(loading));
    t.field("async_loading", u8::from(p.loading.asynchronous()));
    for (name, value) in [
        ("current_cow_peak", "0"),
        ("current_cow_size", "0"),
        ("current_cow_size_age", "0"),
        ("current_fork_perc", "0.00"),
        ("current_save_keys_processed", "0"),
        ("current_save_keys_total", "0"),
    ] {
        t.field(name, value);
    }
    t.field(
        "rdb_changes_since_last_save",
        shared.stats.dirty.load(Relaxed),
    );
    t.field("rdb_bgsave_in_progress", u8::from(bgsave));
    t.field("rdb_last_save_time", last_save);
    t.field(
        "rdb_last_bgsave_status",
        if p.last_bgsave_ok.load(Relaxed) {
            "ok"
        } else {
            "err"
        },
    );
    t.field(
        "rdb_last_bgsave_time_sec",
        p.last_bgsave_time_sec.load(Relaxed),
    );
    let current = if bgsave {
        (shared.clock.now_ms() / 1000).saturating_sub(p.bgsave_started.load(Relaxed)) as i64
    } else {
        -1
    };
    t.field("rdb_current_bgsave_time_sec", current);
    t.field("rdb_saves", p.saves.load(Relaxed));
    t.field("rdb_last_cow_size", "0");
    let load = *p.last_load.lock();
    t.field("rdb_last_load_keys_expired", load.keys_expired);
    t.field("rdb_last_load_keys_loaded", load.keys_loaded);
    for (name, value) in crate::aof::info_fields(&shared.aof, &shared.clock) {
        t.field(name, value);
    }
    if loading {
        for (name, value) in p.loading.info_fields(shared.clock.now_ms() / 1000) {
            t.field(name, value);
        }
    }
}

fn stats(t: &mut Text, shared: &Services, ks: &Keyspace) {
    let st = &shared.stats;
    let expire = st.expire.get();
    let kbps = |m: Metric| format!("{:.2}", st.instantaneous.get(m) as f64 / 1024.0);
    t.section("Stats");
    t.field(
        "total_connections_received",
        shared.clients.total_connections.load(Relaxed),
    );
    t.field(
        "total_commands_processed",
        st.commands_processed.load(Relaxed),
    );
    t.field(
        "instantaneous_ops_per_sec",
        st.instantaneous.get(Metric::Commands),
    );
    t.field("total_net_input_bytes", st.net_input_bytes.load(Relaxed));
    t.field("total_net_output_bytes", st.net_output_bytes.load(Relaxed));
    t.field(
        "total_net_repl_input_bytes",
        st.net_repl_input_bytes.load(Relaxed),
    );
    t.field(
        "total_net_repl_output_bytes",
        st.net_repl_output_bytes.load(Relaxed),
    );
    t.field("instantaneous_input_kbps", kbps(Metric::NetInput));
    t.field("instantaneous_output_kbps", kbps(Metric::NetOutput));
    t.field("instantaneous_input_repl_kbps", "0.00");
    t.field("instantaneous_output_repl_kbps", "0.00");
    t.field(
        "rejected_connections",
        st.rejected_connections.load(Relaxed),
    );
    let repl = &shared.replication;
    t.field("sync_full", repl.sync_full.load(Relaxed));
    t.field("sync_partial_ok", repl.sync_partial_ok.load(Relaxed));
    t.field("sync_partial_err", repl.sync_partial_err.load(Relaxed));
    // Redis 7.4+'s count of expired hash fields; members count here too.
    t.field(
        "expired_subkeys",
        shared.store.stats_expired_fields.load(Relaxed)
            + shared.store.stats_expired_members.load(Relaxed),
    );
    t.field("expired_keys", ks.expired_keys);
    t.field(
        "expired_stale_perc",
        format_args!("{:.2}", expire.stale_perc * 100.0),
    );
    t.field("expired_time_cap_reached_count", expire.time_cap_reached);
    t.field("expire_cycle_cpu_milliseconds", expire.cycle_usec / 1000);
    let ev = &shared.evictor;
    t.field("evicted_keys", ev.evicted_keys.load(Relaxed));
    t.field("evicted_clients", shared.clients.evicted.load(Relaxed));
    t.field(
        "evicted_scripts",
        shared.scripting.evicted_scripts.load(Relaxed),
    );
    let over_since = ev.over_since_ms.load(Relaxed);
    let current = if over_since == 0 {
        0
    } else {
        shared.clock.now_ms().saturating_sub(over_since)
    };
    t.field(
        "total_eviction_exceeded_time",
        ev.over_total_ms.load(Relaxed) + current,
    );
    t.field("current_eviction_exceeded_time", current);
    t.field("keyspace_hits", ks.hits);
    t.field("keyspace_misses", ks.misses);
    t.field("pubsub_channels", shared.pubsub.channels(false, None).len());
    t.field("pubsub_patterns", shared.pubsub.numpat());
    // Shard channels (SSUBSCRIBE) are not implemented.
    t.field(
        "pubsubshard_channels",
        shared.pubsub.channels(true, None).len(),
    );
    // The child processes of background saves and rewrites (see
    // `util::child`).
    let (forks, fork_usec) = crate::util::child::fork_stats();
    t.field("latest_fork_usec", fork_usec);
    t.field("total_forks", forks);
    t.field("migrate_cached_sockets", shared.migrate.len());
    for name in [
        "slave_expires_tracked_keys",
        "active_defrag_hits",
        "active_defrag_misses",
        "active_defrag_key_hits",
        "active_defrag_key_misses",
        "total_active_defrag_time",
        "current_active_defrag_time",
    ] {
        t.field(name, 0);
    }
    let (keys, items, prefixes) = shared.tracking.totals();
    t.field("tracking_total_keys", keys);
    t.field("tracking_total_items", items);
    t.field("tracking_total_prefixes", prefixes);
    // Errors in what a master or the AOF sends: neither exists.
    t.field("unexpected_error_replies", 0);
    t.field("total_error_replies", st.error_replies.load(Relaxed));
    t.field(
        "dump_payload_sanitizations",
        st.dump_payload_sanitizations.load(Relaxed),
    );
    t.field("total_reads_processed", st.reads_processed.load(Relaxed));
    t.field("total_writes_processed", st.writes_processed.load(Relaxed));
    t.field("io_threaded_reads_processed", 0);
    t.field("io_threaded_writes_processed", 0);
    t.field(
        "client_query_buffer_limit_disconnections",
        st.query_limit_disconnections.load(Relaxed),
    );
    t.field(
        "client_output_buffer_limit_disconnections",
        shared.clients.output_limit_disconnections.load(Relaxed),
    );
    t.field(
        "reply_buffer_shrinks",
        st.reply_buffer_shrinks.load(Relaxed),
    );
    t.field(
        "reply_buffer_expands",
        st.reply_buffer_expands.load(Relaxed),
    );
    t.field("eventloop_cycles", st.el_cycles.load(Relaxed));
    t.field("eventloop_duration_sum", st.el_ns.load(Relaxed) / 1000);
    t.field("eventloop_duration_cmd_sum", st.el_cmd_usec.load(Relaxed));
    t.field(
        "instantaneous_eventloop_cycles_per_sec",
        st.instantaneous.get(Metric::ElCycles),
    );
    t.field(
        "instantaneous_eventloop_duration_usec",
        st.instantaneous.get(Metric::ElDuration),
    );
    let [auth, cmd, key, channel] = shared.acl.log.lock().denied();
    t.field("acl_access_denied_auth", auth);
    t.field("acl_access_denied_cmd", cmd);
    t.field("acl_access_denied_key", key);
    t.field("acl_access_denied_channel", channel);
    if shared.cluster.is_none() && shared.config.cluster_compat_sample_ratio() > 0 {
        t.field(
            "cluster_incompatible_ops",
            st.cluster_incompatible_ops.load(Relaxed),
        );
    }
}

/// INFO replication, as Redis 7.0 prints it for either role.
fn replication(t: &mut Text, shared: &Services) {
    use crate::replication::LinkState;
    let r = &shared.replication;
    let f = r.figures();
    let config = &shared.config;
    let now_ms = shared.clock.now_ms();
    let now = now_ms / 1000;
    t.section("Replication");
    t.field(
        "role",
        if f.primary.is_some() {
            "slave"
        } else {
            "master"
        },
    );
    if let Some(p) = &f.primary {
        t.field("master_host", &p.host);
        t.field("master_port", p.port);
        let up = f.link == LinkState::Connected;
        t.field("master_link_status", if up { "up" } else { "down" });
        let last_io = r.link_last_io_ms.load(Relaxed);
        let ago = if matches!(f.link, LinkState::Connected | LinkState::Transfer) && last_io > 0 {
            (now_ms.saturating_sub(last_io) / 1000) as i64
        } else {
            -1
        };
        t.field("master_last_io_seconds_ago", ago);
        t.field(
            "master_sync_in_progress",
            u8::from(f.link == LinkState::Transfer),
        );
        t.field(
            "slave_read_repl_offset",
            r.read_offset.load(Relaxed).max(f.offset),
        );
        t.field("slave_repl_offset", f.offset);
        t.field(
            "replica_full_sync_buffer_size",
            r.full_sync_buffer.load(Relaxed),
        );
        t.field(
            "replica_full_sync_buffer_peak",
            r.full_sync_buffer_peak.load(Relaxed),
        );
        if f.link == LinkState::Transfer {
            let size = r.transfer_size.load(Relaxed);
            let read = r.transfer_read.load(Relaxed) as i64;
            let perc = if size > 0 {
                read as f64 / size as f64 * 100.0
            } else {
                0.0
            };
            t.field("master_sync_total_bytes", size);
            t.field("master_sync_read_bytes", read);
            t.field("master_sync_left_bytes", size - read);
            t.field("master_sync_perc", format!("{perc:.2}"));
            t.field(
                "master_sync_last_io_seconds_ago",
                (now_ms.saturating_sub(last_io) / 1000) as i64,
            );
        }
        if !up {
            let since = r.link_down_since.load(Relaxed);
            let down = if since > 0 {
                now.saturating_sub(since) as i64
            } else {
                -1
            };
            t.field("master_link_down_since_seconds", down);
        }
        t.field("slave_priority", config.replica_priority());
        t.field("slave_read_only", u8::from(config.replica_read_only()));
        t.field("replica_announced", u8::from(config.replica_announced()));
    }
    t.field("connected_slaves", f.replicas.len());
    let (min_n, min_lag) = config.min_replicas();
    if min_n > 0 && min_lag > 0 {
        t.field("min_slaves_good_slaves", r.good_replicas());
    }
    for (i, rep) in f.replicas.iter().enumerate() {
        let state = rep.state();
        let lag = rep.lag_secs(now);
        let ip = rep.shown_ip();
        t.field(
            &format!("slave{i}"),
            format!(
                "ip={ip},port={},state={},offset={},lag={lag}",
                rep.port.load(Relaxed),
                state.name(),
                rep.ack_offset.load(Relaxed),
            ),
        );
    }
    t.field("master_failover_state", r.failover_state());
    t.field("master_replid", &f.replid);
    t.field("master_replid2", &f.replid2);
    t.field("master_repl_offset", f.offset);
    t.field("second_repl_offset", f.second_offset);
    t.field("repl_backlog_active", u8::from(f.backlog.is_some()));
    t.field("repl_backlog_size", config.repl_backlog_size());
    let (first, histlen) = f.backlog.unwrap_or((0, 0));
    t.field("repl_backlog_first_byte_offset", first);
    t.field("repl_backlog_histlen", histlen);
}

/// CPU time in Redis's `%ld.%06ld` form.
struct CpuTime(libc::timeval);

impl Display for CpuTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{:06}", self.0.tv_sec, self.0.tv_usec)
    }
}

fn rusage(who: libc::c_int) -> (CpuTime, CpuTime) {
    // SAFETY: getrusage fills the zeroed struct (left zero on failure).
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut ru);
        ru
    };
    (CpuTime(ru.ru_stime), CpuTime(ru.ru_utime))
}

fn cpu(t: &mut Text) {
    let (sys, user) = rusage(libc::RUSAGE_SELF);
    let (csys, cuser) = rusage(libc::RUSAGE_CHILDREN);
    t.section("CPU");
    t.field("used_cpu_sys", sys);
    t.field("used_cpu_user", user);
    t.field("used_cpu_sys_children", csys);
    t.field("used_cpu_user_children", cuser);
    // Redis's main thread runs the commands: here, the thread running
    // this one (the connection worker, or the script runner for scripts).
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let (msys, muser) = rusage(libc::RUSAGE_THREAD);
        t.field("used_cpu_sys_main_thread", msys);
        t.field("used_cpu_user_main_thread", muser);
    }
}

/// Every command and subcommand, with its `parent|sub` name.
pub(crate) fn every_command() -> impl Iterator<Item = (String, &'static Command)> {
    all_commands().flat_map(|c| {
        let subs = c
            .subcommands
            .iter()
            .map(move |sub| (format!("{}|{}", c.name, sub.name), sub));
        std::iter::once((c.name.to_string(), c)).chain(subs)
    })
}

fn commandstats(t: &mut Text) {
    for (name, cmd) in every_command() {
        let st = CallStats::of(cmd);
        let (calls, usec) = (st.calls.load(Relaxed), st.usec.load(Relaxed));
        let (rejected, failed) = (st.rejected.load(Relaxed), st.failed.load(Relaxed));
        if calls + rejected + failed == 0 {
            continue;
        }
        let per_call = ratio(usec, calls);
        t.field(
            &format!("cmdstat_{name}"),
            format_args!("calls={calls},usec={usec},usec_per_call={per_call:.2},rejected_calls={rejected},failed_calls={failed}"),
        );
    }
}

/// `latency_percentiles_usec_<cmd>:p50=…,p99=…` for every command called
/// since the start (or CONFIG RESETSTAT).
fn latencystats(t: &mut Text, percentiles: &[f64]) {
    for (name, cmd) in every_command() {
        let Some(values) = CallStats::of(cmd).latency.percentiles(percentiles) else {
            continue;
        };
        let parts: Vec<String> = percentiles
            .iter()
            .zip(values)
            .map(|(p, ns)| {
                format!(
                    "p{}={:.3}",
                    crate::config::fmt_percentile(*p),
                    ns as f64 / 1000.0
                )
            })
            .collect();
        t.field(&format!("latency_percentiles_usec_{name}"), parts.join(","));
    }
}

/// Redis's `bytesToHuman`.
fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["K", "M", "G", "T", "P"];
    if bytes < 1024 {
        return format!("{bytes}B");
    }
    let mut scaled = bytes as f64 / 1024.0;
    for unit in UNITS {
        if scaled < 1024.0 {
            return format!("{scaled:.2}{unit}");
        }
        scaled /= 1024.0;
    }
    format!("{bytes}B")
}

fn page_size() -> u64 {
    // SAFETY: a plain query.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 { n as u64 } else { 4096 }
}

/// Physical memory, as Redis's `getPhysicalMemory` (0 if unknown).
fn total_system_memory() -> u64 {
    // SAFETY: a plain query.
    let pages = unsafe { libc::sysconf(libc::_SC_PHYS_PAGES) };
    if pages > 0 {
        pages as u64 * page_size()
    } else {
        0
    }
}

/// Resident set size from /proc/self/statm (0 where unavailable).
fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u64>().ok())
        })
        .map_or(0, |pages| pages * page_size())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_as_redis() {
        assert_eq!(human(0), "0B");
        assert_eq!(human(1023), "1023B");
        assert_eq!(human(965744), "943.11K");
        assert_eq!(human(12263424), "11.70M");
        assert_eq!(human(25276502016), "23.54G");
        assert_eq!(human(3 << 40), "3.00T");
    }

    #[test]
    fn selection_as_redis() {
        let sel = |args: &[&str]| {
            Selection::parse(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        };
        let s = sel(&[]);
        assert!(s.wants("server") && s.wants("modules") && !s.wants("commandstats"));
        let s = sel(&["cpu", "memory"]);
        assert!(s.wants("cpu") && s.wants("memory") && !s.wants("server"));
        let s = sel(&["cpu", "all"]);
        assert!(s.wants("latencystats") && s.wants("server"));
        let s = sel(&["default", "latencystats"]);
        assert!(s.wants("latencystats") && s.wants("keyspace") && !s.wants("commandstats"));
    }
}
