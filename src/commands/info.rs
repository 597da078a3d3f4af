//! INFO: the sections and fields of redis-server 7.0's `INFO`, built from
//! the server's statistics.

use std::fmt::Write as _;
use std::sync::atomic::Ordering::Relaxed;

use super::{CmdResult, Ctx, all_commands};

pub(crate) fn info(ctx: &mut Ctx) -> CmdResult {
    let wanted: Vec<String> = ctx
        .args
        .iter()
        .skip(1)
        .map(|a| String::from_utf8_lossy(a).to_lowercase())
        .collect();
    // Redis 7.0's selectors: no argument or `default` is the default
    // sections; `all` and `everything` add commandstats (and modules'
    // own sections, which zwindow has none of); names can be combined.
    let mut sections: Vec<&str> = Vec::new();
    if wanted.is_empty() {
        sections.extend(INFO_DEFAULT);
    }
    for w in &wanted {
        match w.as_str() {
            "default" => sections.extend(INFO_DEFAULT),
            "all" | "everything" => {
                sections.extend(INFO_DEFAULT);
                sections.push("commandstats");
            }
            other => sections.push(other),
        }
    }
    let want = |s: &str| sections.contains(&s);
    let text = info_text(ctx, &want);
    ctx.out.verbatim(text.as_bytes());
    Ok(())
}

/// INFO's default sections (zwindow's `windows` among them).
const INFO_DEFAULT: [&str; 12] = [
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "errorstats",
    "cluster",
    "windows",
    "keyspace",
];

/// CPU seconds (user, system) of this process and of its waited-for
/// children, from /proc (zeros where unavailable).
fn cpu_times() -> [f64; 4] {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name, which may itself hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = rest
        .split_whitespace()
        .skip(11)
        .take(4)
        .map(|v| v.parse::<f64>().unwrap_or(0.0) / 100.0)
        .collect();
    let at = |i: usize| f.get(i).copied().unwrap_or(0.0);
    [at(0), at(1), at(2), at(3)]
}

/// The INFO text, in Redis's `field:value` format with the fields tools read.
fn info_text(ctx: &mut Ctx, want: &dyn Fn(&str) -> bool) -> String {
    let shared = ctx.shared.clone();
    let mut s = String::new();
    let uptime = shared.started.elapsed().as_secs();
    let rss = rss_bytes();
    if want("server") {
        let _ = write!(
            s,
            "# Server\r\nredis_version:{}\r\nzwindow_version:{}\r\nredis_git_sha1:00000000\r\nredis_git_dirty:0\r\nredis_build_id:0\r\nredis_mode:standalone\r\nos:{} {}\r\narch_bits:64\r\nmultiplexing_api:epoll\r\nprocess_id:{}\r\nrun_id:{}\r\ntcp_port:{}\r\nserver_time_usec:{}\r\nuptime_in_seconds:{}\r\nuptime_in_days:{}\r\nhz:{}\r\nconfigured_hz:{}\r\nexecutable:{}\r\nconfig_file:\r\n\r\n",
            crate::server::REDIS_VERSION,
            crate::server::VERSION,
            std::env::consts::OS,
            std::env::consts::ARCH,
            std::process::id(),
            shared.run_id,
            shared.config.port.load(Relaxed),
            shared.clock.now_us(),
            uptime,
            uptime / 86400,
            shared.config.hz(),
            shared.config.hz(),
            std::env::current_exe()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
        );
    }
    if want("clients") {
        let _ = write!(
            s,
            "# Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\nblocked_clients:{}\r\ntracking_clients:0\r\n\r\n",
            shared.clients.count(),
            shared.config.maxclients(),
            shared.blocking.waiting(),
        );
    }
    if want("memory") {
        let _ = write!(
            s,
            "# Memory\r\nused_memory:{rss}\r\nused_memory_human:{}\r\nused_memory_rss:{rss}\r\nused_memory_rss_human:{}\r\nused_memory_peak:{rss}\r\nmaxmemory:0\r\nmaxmemory_human:0B\r\nmaxmemory_policy:noeviction\r\nmem_allocator:mimalloc\r\n",
            human(rss),
            human(rss)
        );
        let sc = &shared.scripting;
        let (lua, eval, fns) = (
            sc.lua_memory.load(Relaxed),
            sc.scripts_bytes.load(Relaxed),
            sc.functions_bytes.load(Relaxed),
        );
        let _ = write!(
            s,
            "used_memory_lua:{lua}\r\nused_memory_lua_human:{}\r\nused_memory_scripts_eval:{eval}\r\nnumber_of_cached_scripts:{}\r\nnumber_of_functions:{}\r\nnumber_of_libraries:{}\r\nused_memory_vm_functions:{lua}\r\nused_memory_functions:{fns}\r\nused_memory_scripts:{}\r\nused_memory_scripts_human:{}\r\n\r\n",
            human(lua as u64),
            sc.cached_scripts.load(Relaxed),
            sc.functions_count.load(Relaxed),
            sc.libraries_count.load(Relaxed),
            eval + fns,
            human((eval + fns) as u64),
        );
    }
    if want("persistence") {
        // What a redis-server that has never saved shows: zwindow keeps
        // its data in memory only (until persistence lands).
        let _ = write!(
            s,
            "# Persistence\r\nloading:0\r\nasync_loading:0\r\ncurrent_cow_peak:0\r\ncurrent_cow_size:0\r\ncurrent_cow_size_age:0\r\ncurrent_fork_perc:0.00\r\ncurrent_save_keys_processed:0\r\ncurrent_save_keys_total:0\r\nrdb_changes_since_last_save:0\r\nrdb_bgsave_in_progress:0\r\nrdb_last_save_time:{}\r\nrdb_last_bgsave_status:ok\r\nrdb_last_bgsave_time_sec:-1\r\nrdb_current_bgsave_time_sec:-1\r\nrdb_saves:0\r\nrdb_last_cow_size:0\r\nrdb_last_load_keys_expired:0\r\nrdb_last_load_keys_loaded:0\r\naof_enabled:0\r\naof_rewrite_in_progress:0\r\naof_rewrite_scheduled:0\r\naof_last_rewrite_time_sec:-1\r\naof_current_rewrite_time_sec:-1\r\naof_last_bgrewrite_status:ok\r\naof_rewrites:0\r\naof_rewrites_consecutive_failures:0\r\naof_last_write_status:ok\r\naof_last_cow_size:0\r\nmodule_fork_in_progress:0\r\nmodule_fork_last_cow_size:0\r\n\r\n",
            shared.last_save.load(Relaxed)
        );
    }
    let mut totals = crate::store::ShardStats::default();
    let mut per_db = vec![(0usize, 0usize); shared.store.databases];
    let mut windowed = 0;
    // Through the keyspace: inside EXEC or a script every shard is already held.
    ctx.ks.for_each_shard(|shard| {
        windowed += shard.schedule.len();
        totals.hits += shard.stats.hits;
        totals.misses += shard.stats.misses;
        totals.expired_keys += shard.stats.expired_keys;
        for (db, d) in shard.dbs.iter().enumerate() {
            if let Some(slot) = per_db.get_mut(db) {
                slot.0 += d.keys.len();
                slot.1 += d.expires.len();
            }
        }
    });
    if want("stats") {
        let st = &shared.stats;
        let _ = write!(
            s,
            "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\ninstantaneous_ops_per_sec:0\r\ntotal_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\nrejected_connections:{}\r\nexpired_keys:{}\r\nevicted_keys:0\r\nkeyspace_hits:{}\r\nkeyspace_misses:{}\r\npubsub_channels:{}\r\npubsub_patterns:{}\r\ntotal_error_replies:{}\r\n\r\n",
            shared.clients.total_connections.load(Relaxed),
            st.commands_processed.load(Relaxed),
            st.net_input_bytes.load(Relaxed),
            st.net_output_bytes.load(Relaxed),
            st.rejected_connections.load(Relaxed),
            totals.expired_keys,
            totals.hits,
            totals.misses,
            shared.pubsub.channels(None).len(),
            shared.pubsub.numpat(),
            st.error_replies.load(Relaxed),
        );
    }
    if want("replication") {
        let _ = write!(
            s,
            "# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_failover_state:no-failover\r\nmaster_replid:{}\r\nmaster_replid2:0000000000000000000000000000000000000000\r\nmaster_repl_offset:0\r\nsecond_repl_offset:-1\r\nrepl_backlog_active:0\r\nrepl_backlog_size:1048576\r\nrepl_backlog_first_byte_offset:0\r\nrepl_backlog_histlen:0\r\n\r\n",
            shared.run_id
        );
    }
    if want("cpu") {
        let [user, sys, cuser, csys] = cpu_times();
        // One process does all the work: its totals stand for the main thread.
        let _ = write!(
            s,
            "# CPU\r\nused_cpu_sys:{sys:.6}\r\nused_cpu_user:{user:.6}\r\nused_cpu_sys_children:{csys:.6}\r\nused_cpu_user_children:{cuser:.6}\r\nused_cpu_sys_main_thread:{sys:.6}\r\nused_cpu_user_main_thread:{user:.6}\r\n\r\n"
        );
    }
    if want("modules") {
        s.push_str("# Modules\r\n\r\n");
    }
    if want("commandstats") {
        s.push_str("# Commandstats\r\n");
        for c in all_commands() {
            let subs = c
                .subcommands
                .iter()
                .map(|sub| (format!("{}|{}", c.name, sub.name), sub));
            for (name, cmd) in std::iter::once((c.name.to_string(), c)).chain(subs) {
                let st = super::CallStats::of(cmd);
                let (calls, usec) = (st.calls.load(Relaxed), st.usec.load(Relaxed));
                let (rejected, failed) = (st.rejected.load(Relaxed), st.failed.load(Relaxed));
                if calls + rejected + failed == 0 {
                    continue;
                }
                let per_call = if calls == 0 {
                    0.0
                } else {
                    usec as f64 / calls as f64
                };
                let _ = write!(
                    s,
                    "cmdstat_{name}:calls={calls},usec={usec},usec_per_call={per_call:.2},rejected_calls={rejected},failed_calls={failed}\r\n"
                );
            }
        }
        s.push_str("\r\n");
    }
    if want("errorstats") {
        s.push_str("# Errorstats\r\n");
        for (code, n) in shared.error_stats.lock().iter() {
            let _ = write!(s, "errorstat_{code}:count={n}\r\n");
        }
        s.push_str("\r\n");
    }
    if want("cluster") {
        s.push_str("# Cluster\r\ncluster_enabled:0\r\n\r\n");
    }
    if want("windows") {
        shared.windows.info(&mut s, windowed);
    }
    if want("keyspace") {
        s.push_str("# Keyspace\r\n");
        for (db, (keys, expires)) in per_db.iter().enumerate() {
            if *keys > 0 {
                let _ = write!(s, "db{db}:keys={keys},expires={expires},avg_ttl=0\r\n");
            }
        }
        s.push_str("\r\n");
    }
    // Redis ends the text without the final blank line.
    while s.ends_with("\r\n\r\n") {
        s.truncate(s.len() - 2);
    }
    s
}

fn human(bytes: u64) -> String {
    let b = bytes as f64;
    if b < 1024.0 {
        format!("{bytes}B")
    } else if b < 1024.0 * 1024.0 {
        format!("{:.2}K", b / 1024.0)
    } else if b < 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2}M", b / 1024.0 / 1024.0)
    } else {
        format!("{:.2}G", b / 1024.0 / 1024.0 / 1024.0)
    }
}

/// Resident set size from /proc (0 where unavailable).
pub fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u64>().ok())
        })
        .map_or(0, |pages| pages * 4096)
}
