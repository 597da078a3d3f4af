//! Settings: the command line (clap) and the runtime registry behind
//! `CONFIG GET/SET`.
//!
//! The registry lists only settings the server really has, each with its
//! Redis name (and old alias, e.g. `zset-max-ziplist-entries`). Settings read
//! on hot paths (notification flags, listpack thresholds) are atomics so
//! commands read them without a lock.

use std::sync::atomic::{
    AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed,
};

use clap::Parser;
use parking_lot::RwLock;

use crate::keyspace::notify;
use crate::util::{eq_ic, glob_match, parse_i64};

/// zwindow: a Redis-compatible server built around time-windowed sorted sets.
#[derive(Parser, Debug, Clone)]
#[command(version, about, args_override_self = true)]
pub struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: String,
    /// TCP port; 0 picks a free one (the log says which).
    #[arg(long, default_value_t = 6379)]
    pub port: u16,
    /// Number of databases (SELECT 0..N-1).
    #[arg(long, default_value_t = 16)]
    pub databases: usize,
    /// Keyspace shards (default: 4 per core, at most 128).
    #[arg(long)]
    pub shards: Option<usize>,
    /// Threads serving connections (default: 1).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Require clients to AUTH with this password.
    #[arg(long)]
    pub requirepass: Option<String>,
    /// Log filter (error, warn, info, debug, trace or a tracing filter).
    #[arg(long, default_value = "info")]
    pub log_level: String,
    /// Background task frequency (active expiry), as Redis's `hz`.
    #[arg(long, default_value_t = 10)]
    pub hz: u32,
    /// Keyspace notification classes, as Redis's `notify-keyspace-events`.
    #[arg(long, default_value = "")]
    pub notify_keyspace_events: String,
    /// Allow the DEBUG command (needed by tests for the controllable clock).
    #[arg(long, default_value = "no")]
    pub enable_debug_command: String,
    /// A window rule, `PATTERN=DURATION[:s|:ms]` (repeatable), e.g.
    /// `news.published:*=24h` or `heartbeats:*=65s:ms`.
    #[arg(long)]
    pub zwindow: Vec<String>,
    /// A config file of `directive value...` lines (redis.conf style);
    /// command-line flags override it.
    #[arg(long)]
    pub config: Option<String>,
    /// Accepted for redis-server compatibility; zwindow does not persist.
    #[arg(long, hide = true)]
    pub save: Option<String>,
    /// Accepted for redis-server compatibility; zwindow does not persist.
    #[arg(long, hide = true)]
    pub appendonly: Option<String>,
    /// Redis's protected mode (yes|no): without a password, only loopback
    /// clients (127.0.0.1, ::1) are served; others get `-DENIED`.
    #[arg(long, default_value = "yes")]
    pub protected_mode: String,
    /// Most clients connected at once (more are refused at accept).
    #[arg(long)]
    pub maxclients: Option<usize>,
    /// Seconds between TCP keepalive probes on client sockets (0: off).
    #[arg(long)]
    pub tcp_keepalive: Option<u64>,
    /// Close clients idle for this many seconds (0: never).
    #[arg(long)]
    pub timeout: Option<u64>,
    /// The listen backlog.
    #[arg(long)]
    pub tcp_backlog: Option<u32>,
    /// Accepted for redis-server compatibility; use --log-level.
    #[arg(long, hide = true)]
    pub loglevel: Option<String>,
}

impl Args {
    /// Parses the command line, reading `--config FILE` first so that the
    /// flags given on the command line win over the file.
    pub fn load() -> Result<Args, String> {
        let argv: Vec<String> = std::env::args().collect();
        let cli = Args::try_parse_from(&argv).map_err(|e| e.to_string())?;
        let Some(path) = &cli.config else {
            return Ok(cli);
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read config file {path}: {e}"))?;
        let mut merged = vec![argv[0].clone()];
        merged.extend(config_file_flags(&text)?);
        merged.extend(argv.into_iter().skip(1));
        Args::try_parse_from(merged).map_err(|e| e.to_string())
    }

    /// Tokio worker threads serving connections. One by default, chosen by
    /// measurement (`benches/vs_redis.rs` on 2 cores shared with the load
    /// generator): with two workers every request pays for cross-thread
    /// wakeups, work stealing and contended shard locks, which cost more
    /// server CPU per request than a second core wins back (geometric mean
    /// over the sorted-set workloads at pipeline depth 1: 0.90 of Redis's
    /// CPU per request with one worker, 1.03 with two). More workers still
    /// raise throughput on many-core machines that are not CPU-starved.
    pub fn worker_threads(&self) -> usize {
        self.threads.unwrap_or(1).clamp(1, 256)
    }

    pub fn shard_count(&self) -> usize {
        self.shards.unwrap_or_else(|| {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            (cores * 4).clamp(4, crate::keyspace::MAX_SHARDS)
        })
    }
}

/// Turns redis.conf-style lines into flags: `port 6380` → `--port 6380`,
/// `zwindow news:* 24h s` → `--zwindow news:*=24h:s`.
pub fn config_file_flags(text: &str) -> Result<Vec<String>, String> {
    let mut flags = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace();
        let name = words.next().unwrap_or_default().to_ascii_lowercase();
        let rest: Vec<&str> = words.map(|w| w.trim_matches('"')).collect();
        if name == "zwindow" {
            match rest.as_slice() {
                [pattern, duration] => flags.push(format!("--zwindow={pattern}={duration}")),
                [pattern, duration, unit] => {
                    flags.push(format!("--zwindow={pattern}={duration}:{unit}"))
                }
                [pattern, duration, unit, kw, dest] if kw.eq_ignore_ascii_case("moveto") => flags
                    .push(format!(
                        "--zwindow={pattern}={duration}:{unit}:moveto={dest}"
                    )),
                _ => {
                    return Err(format!(
                        "config line {}: expected `zwindow PATTERN DURATION [s|ms] [moveto DEST]`",
                        n + 1
                    ));
                }
            }
        } else {
            flags.push(format!("--{name}={}", rest.join(" ")));
        }
    }
    Ok(flags)
}

/// The runtime settings.
pub struct Config {
    pub bind: String,
    pub port: AtomicU32,
    pub databases: usize,
    pub debug_command: bool,
    requirepass: RwLock<Option<Vec<u8>>>,
    hz: AtomicU32,
    notify: AtomicU32,
    zset_max_listpack_entries: AtomicUsize,
    zset_max_listpack_value: AtomicUsize,
    /// Size above which a sparse HyperLogLog turns dense.
    hll_sparse_max_bytes: AtomicUsize,
    set_max_intset_entries: AtomicUsize,
    /// Stored and reported only: zwindow's lists are not LZF-compressed,
    /// which changes memory, never replies.
    list_compress_depth: AtomicUsize,
    hash_max_listpack_entries: AtomicUsize,
    hash_max_listpack_value: AtomicUsize,
    list_max_listpack_size: AtomicI64,
    /// Where a stream starts a new node (Redis's listpack limits), which
    /// decides what `MAXLEN ~` / `MINID ~` trim.
    stream_node_max_bytes: AtomicUsize,
    stream_node_max_entries: AtomicUsize,
    proto_max_bulk_len: AtomicI64,
    /// `client-query-buffer-limit`: a client whose unprocessed request
    /// bytes pass it is closed.
    client_query_buffer_limit: AtomicU64,
    /// `tracking-table-max-keys` (0: unbounded).
    tracking_table_max_keys: AtomicUsize,
    maxclients: AtomicUsize,
    protected_mode: AtomicBool,
    /// `tcp-keepalive` and `timeout`, in seconds (0: off).
    tcp_keepalive: AtomicU64,
    timeout: AtomicU64,
    /// `tcp-backlog` (read at startup only, as in Redis).
    pub tcp_backlog: u32,
    /// `min-replicas-to-write` / `min-replicas-max-lag`: zwindow has no
    /// replicas, so with both set every write is refused as by a Redis
    /// master that lost its replicas.
    min_replicas_to_write: AtomicUsize,
    min_replicas_max_lag: AtomicUsize,
    busy_reply_threshold: AtomicI64,
    has_password: AtomicBool,
    /// `client-output-buffer-limit`: (hard bytes, soft bytes, soft seconds)
    /// for the normal, replica and pubsub classes, in that order.
    obuf_limits: [[AtomicU64; 3]; 3],
    /// `latency-tracking`: per-command latency histograms (read per call).
    latency_tracking: AtomicBool,
    /// `latency-tracking-info-percentiles`, as INFO latencystats prints them.
    latency_percentiles: RwLock<Vec<f64>>,
    /// The `--config` file, absolute (INFO server's `config_file`).
    pub config_file: String,
}

/// Client classes of `client-output-buffer-limit`, in Redis's order.
const OBUF_CLASSES: [&str; 3] = ["normal", "slave", "pubsub"];

/// An output buffer limit: disconnect past `hard` bytes, or after staying
/// past `soft` bytes for more than `soft_secs` seconds (0 = no limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputLimit {
    pub hard: u64,
    pub soft: u64,
    pub soft_secs: u64,
}

impl Config {
    pub fn from_args(args: &Args) -> Result<Config, String> {
        let notify = notify::parse(args.notify_keyspace_events.as_bytes())
            .ok_or("invalid --notify-keyspace-events")?;
        let pass = args
            .requirepass
            .clone()
            .filter(|p| !p.is_empty())
            .map(String::into_bytes);
        Ok(Config {
            bind: args.bind.clone(),
            port: AtomicU32::new(args.port as u32),
            databases: args.databases.clamp(1, 10_000),
            debug_command: parse_bool(args.enable_debug_command.as_bytes())
                .ok_or("invalid --enable-debug-command")?,
            has_password: AtomicBool::new(pass.is_some()),
            requirepass: RwLock::new(pass),
            hz: AtomicU32::new(args.hz.clamp(1, 500)),
            notify: AtomicU32::new(notify),
            zset_max_listpack_entries: AtomicUsize::new(128),
            zset_max_listpack_value: AtomicUsize::new(64),
            hll_sparse_max_bytes: AtomicUsize::new(3000),
            set_max_intset_entries: AtomicUsize::new(512),
            list_compress_depth: AtomicUsize::new(0),
            hash_max_listpack_entries: AtomicUsize::new(512),
            hash_max_listpack_value: AtomicUsize::new(64),
            list_max_listpack_size: AtomicI64::new(-2),
            stream_node_max_bytes: AtomicUsize::new(4096),
            stream_node_max_entries: AtomicUsize::new(100),
            proto_max_bulk_len: AtomicI64::new(512 * 1024 * 1024),
            tracking_table_max_keys: AtomicUsize::new(1_000_000),
            client_query_buffer_limit: AtomicU64::new(1024 * 1024 * 1024),
            maxclients: AtomicUsize::new(args.maxclients.unwrap_or(10_000).max(1)),
            protected_mode: AtomicBool::new(
                parse_bool(args.protected_mode.as_bytes()).ok_or("invalid --protected-mode")?,
            ),
            tcp_keepalive: AtomicU64::new(args.tcp_keepalive.unwrap_or(300)),
            timeout: AtomicU64::new(args.timeout.unwrap_or(0)),
            tcp_backlog: args.tcp_backlog.unwrap_or(511),
            min_replicas_to_write: AtomicUsize::new(0),
            min_replicas_max_lag: AtomicUsize::new(10),
            obuf_limits: [
                [0, 0, 0],
                [256 << 20, 64 << 20, 60],
                [32 << 20, 8 << 20, 60],
            ]
            .map(|l| l.map(AtomicU64::new)),
            busy_reply_threshold: AtomicI64::new(5000),
            latency_tracking: AtomicBool::new(true),
            latency_percentiles: RwLock::new(vec![50.0, 99.0, 99.9]),
            config_file: args
                .config
                .as_ref()
                .map(|f| {
                    std::path::absolute(f).map_or_else(|_| f.clone(), |p| p.display().to_string())
                })
                .unwrap_or_default(),
        })
    }

    pub fn latency_tracking(&self) -> bool {
        self.latency_tracking.load(Relaxed)
    }

    pub fn latency_percentiles(&self) -> Vec<f64> {
        self.latency_percentiles.read().clone()
    }

    pub fn notify_flags(&self) -> u32 {
        self.notify.load(Relaxed)
    }

    /// The limit for clients in pub/sub mode (the `pubsub` class).
    pub fn pubsub_output_limit(&self) -> OutputLimit {
        self.output_limit(2)
    }

    /// The limit of the `normal` class.
    pub fn normal_output_limit(&self) -> OutputLimit {
        self.output_limit(0)
    }

    fn output_limit(&self, class: usize) -> OutputLimit {
        let l = &self.obuf_limits[class];
        OutputLimit {
            hard: l[0].load(Relaxed),
            soft: l[1].load(Relaxed),
            soft_secs: l[2].load(Relaxed),
        }
    }

    pub fn hz(&self) -> u32 {
        self.hz.load(Relaxed)
    }

    pub fn stream_node_max_bytes(&self) -> usize {
        self.stream_node_max_bytes.load(Relaxed)
    }

    pub fn stream_node_max_entries(&self) -> usize {
        self.stream_node_max_entries.load(Relaxed)
    }

    pub fn zset_max_listpack_entries(&self) -> usize {
        self.zset_max_listpack_entries.load(Relaxed)
    }

    pub fn zset_max_listpack_value(&self) -> usize {
        self.zset_max_listpack_value.load(Relaxed)
    }

    pub fn hll_sparse_max_bytes(&self) -> usize {
        self.hll_sparse_max_bytes.load(Relaxed)
    }

    pub fn set_max_intset_entries(&self) -> usize {
        self.set_max_intset_entries.load(Relaxed)
    }

    pub fn hash_max_listpack_entries(&self) -> usize {
        self.hash_max_listpack_entries.load(Relaxed)
    }

    pub fn hash_max_listpack_value(&self) -> usize {
        self.hash_max_listpack_value.load(Relaxed)
    }

    pub fn list_max_listpack_size(&self) -> i64 {
        self.list_max_listpack_size.load(Relaxed)
    }

    pub fn proto_max_bulk_len(&self) -> i64 {
        self.proto_max_bulk_len.load(Relaxed)
    }

    /// Milliseconds a script runs before other clients get BUSY.
    /// Redis's `checkGoodReplicasStatus() == 0`: writes need more good
    /// replicas than there are (zwindow never has any).
    pub fn lacks_good_replicas(&self) -> bool {
        self.min_replicas_to_write.load(Relaxed) > 0 && self.min_replicas_max_lag.load(Relaxed) > 0
    }

    pub fn busy_reply_threshold(&self) -> u64 {
        self.busy_reply_threshold.load(Relaxed).max(0) as u64
    }

    pub fn protected_mode(&self) -> bool {
        self.protected_mode.load(Relaxed)
    }

    pub fn tcp_keepalive_secs(&self) -> u64 {
        self.tcp_keepalive.load(Relaxed)
    }

    pub fn timeout_secs(&self) -> u64 {
        self.timeout.load(Relaxed)
    }

    /// Lowers `maxclients` to what the open-files limit allows (startup).
    pub fn set_maxclients(&self, n: usize) {
        self.maxclients.store(n.max(1), Relaxed);
    }

    pub fn client_query_buffer_limit(&self) -> u64 {
        self.client_query_buffer_limit.load(Relaxed)
    }

    pub fn tracking_table_max_keys(&self) -> usize {
        self.tracking_table_max_keys.load(Relaxed)
    }

    pub fn maxclients(&self) -> usize {
        self.maxclients.load(Relaxed)
    }

    /// True when clients must authenticate.
    /// Whether an ACL user of this name exists: zwindow has only Redis's
    /// `default` user (ACL users are not implemented yet).
    pub fn user_exists(&self, name: &[u8]) -> bool {
        name == b"default"
    }

    pub fn auth_required(&self) -> bool {
        self.has_password.load(Relaxed)
    }

    /// Constant-time-ish password check (length leaks, content does not).
    pub fn check_password(&self, given: &[u8]) -> bool {
        match &*self.requirepass.read() {
            None => false,
            Some(p) => {
                p.len() == given.len()
                    && p.iter().zip(given).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
            }
        }
    }

    /// `CONFIG GET`: every (name, value) whose name matches one of the patterns.
    pub fn get_matching(&self, patterns: &[&[u8]]) -> Vec<(&'static str, String)> {
        let mut out: Vec<(&'static str, String)> = Vec::new();
        for pat in patterns {
            for p in PARAMS {
                for name in std::iter::once(p.name).chain(p.alias) {
                    if glob_match(pat, name.as_bytes(), true)
                        && !out.iter().any(|(n, _)| *n == name)
                    {
                        out.push((name, (p.get)(self)));
                    }
                }
            }
        }
        out
    }

    /// `CONFIG SET name value [name value ...]`: all or nothing.
    pub fn set_many(&self, pairs: &[(&[u8], &[u8])]) -> Result<(), String> {
        let mut seen: Vec<&'static str> = Vec::new();
        let mut found = Vec::with_capacity(pairs.len());
        for (name, value) in pairs {
            let Some(p) = PARAMS
                .iter()
                .find(|p| eq_ic(name, p.name) || p.alias.is_some_and(|a| eq_ic(name, a)))
            else {
                return Err(format!(
                    "ERR Unknown option or number of arguments for CONFIG SET - '{}'",
                    String::from_utf8_lossy(name)
                ));
            };
            let fail = |why: &str| {
                format!(
                    "ERR CONFIG SET failed (possibly related to argument '{}') - {why}",
                    String::from_utf8_lossy(name)
                )
            };
            if seen.contains(&p.name) {
                return Err(fail("duplicate parameter"));
            }
            seen.push(p.name);
            let Some(set) = p.set else {
                return Err(fail("can't set immutable config"));
            };
            set(self, value, false).map_err(|e| fail(&e))?;
            found.push((set, *value));
        }
        for (set, value) in found {
            // Validated above; applying cannot fail.
            let _ = set(self, value, true);
        }
        Ok(())
    }
}

type Setter = fn(&Config, &[u8], bool) -> Result<(), String>;

struct Param {
    name: &'static str,
    alias: Option<&'static str>,
    get: fn(&Config) -> String,
    set: Option<Setter>,
}

fn int_setter(v: &[u8], min: i64, max: i64) -> Result<i64, String> {
    let n = parse_i64(v).ok_or("argument couldn't be parsed into an integer")?;
    if n < min || n > max {
        return Err(format!(
            "argument must be between {min} and {max} inclusive"
        ));
    }
    Ok(n)
}

fn parse_bool(v: &[u8]) -> Option<bool> {
    if eq_ic(v, "yes") {
        Some(true)
    } else if eq_ic(v, "no") {
        Some(false)
    } else {
        None
    }
}

/// A percentile as Redis prints it: `%f` without trailing zeros (`50`,
/// `99.9`).
pub fn fmt_percentile(p: f64) -> String {
    let s = format!("{p:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Parses Redis memory values: `512mb`, `1gb`, `100k`, plain bytes.
pub fn parse_memory(v: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(v).ok()?.to_ascii_lowercase();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: i64 = num.parse().ok()?;
    let mul = match unit {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    n.checked_mul(mul)
}

macro_rules! usize_param {
    ($name:expr, $alias:expr, $field:ident, $min:expr, $max:expr) => {
        Param {
            name: $name,
            alias: $alias,
            get: |c| c.$field.load(Relaxed).to_string(),
            set: Some(|c, v, apply| {
                let n = int_setter(v, $min, $max)?;
                if apply {
                    c.$field.store(n as usize, Relaxed);
                }
                Ok(())
            }),
        }
    };
}

const PARAMS: &[Param] = &[
    Param {
        name: "bind",
        alias: None,
        get: |c| c.bind.clone(),
        set: None,
    },
    Param {
        name: "port",
        alias: None,
        get: |c| c.port.load(Relaxed).to_string(),
        set: None,
    },
    Param {
        name: "databases",
        alias: None,
        get: |c| c.databases.to_string(),
        set: None,
    },
    Param {
        name: "enable-debug-command",
        alias: None,
        get: |c| if c.debug_command { "yes" } else { "no" }.into(),
        set: None,
    },
    Param {
        name: "requirepass",
        alias: None,
        get: |c| {
            c.requirepass
                .read()
                .as_ref()
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .unwrap_or_default()
        },
        set: Some(|c, v, apply| {
            if apply {
                let pass = (!v.is_empty()).then(|| v.to_vec());
                c.has_password.store(pass.is_some(), Relaxed);
                *c.requirepass.write() = pass;
            }
            Ok(())
        }),
    },
    Param {
        name: "hz",
        alias: None,
        get: |c| c.hz().to_string(),
        set: Some(|c, v, apply| {
            let n = parse_i64(v).ok_or("argument couldn't be parsed into an integer")?;
            if n < 0 {
                return Err("argument must be between 0 and 2147483647 inclusive".into());
            }
            if apply {
                c.hz.store(n.clamp(1, 500) as u32, Relaxed);
            }
            Ok(())
        }),
    },
    Param {
        name: "notify-keyspace-events",
        alias: None,
        get: |c| notify::to_string(c.notify_flags()),
        set: Some(|c, v, apply| {
            let flags =
                notify::parse(v).ok_or("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")?;
            if apply {
                c.notify.store(flags, Relaxed);
            }
            Ok(())
        }),
    },
    Param {
        name: "client-output-buffer-limit",
        alias: None,
        get: |c| {
            let mut out = Vec::new();
            for (class, l) in OBUF_CLASSES.iter().zip(&c.obuf_limits) {
                out.push(format!(
                    "{class} {} {} {}",
                    l[0].load(Relaxed),
                    l[1].load(Relaxed),
                    l[2].load(Relaxed)
                ));
            }
            out.join(" ")
        },
        set: Some(|c, v, apply| {
            // `class hard soft seconds` groups, as Redis's
            // `updateClientOutputBufferLimit` parses them.
            let text = String::from_utf8_lossy(v);
            let words: Vec<&str> = text.split_whitespace().collect();
            if !words.len().is_multiple_of(4) {
                return Err("Wrong number of arguments in buffer limit configuration.".into());
            }
            let mut parsed = Vec::new();
            for group in words.chunks(4) {
                let class = match group[0].to_ascii_lowercase().as_str() {
                    "normal" => 0,
                    "slave" | "replica" => 1,
                    "pubsub" => 2,
                    _ => {
                        return Err(
                            "Invalid client class specified in buffer limit configuration.".into(),
                        );
                    }
                };
                let bad = || {
                    "Error in hard, soft or soft_seconds setting in buffer limit configuration."
                        .to_string()
                };
                let hard = parse_memory(group[1].as_bytes()).ok_or_else(bad)?;
                let soft = parse_memory(group[2].as_bytes()).ok_or_else(bad)?;
                let secs = parse_i64(group[3].as_bytes())
                    .filter(|&n| n >= 0)
                    .ok_or_else(bad)?;
                parsed.push((class, [hard as u64, soft as u64, secs as u64]));
            }
            if apply {
                for (class, vals) in parsed {
                    for (slot, v) in c.obuf_limits[class].iter().zip(vals) {
                        slot.store(v, Relaxed);
                    }
                }
            }
            Ok(())
        }),
    },
    usize_param!(
        "zset-max-listpack-entries",
        Some("zset-max-ziplist-entries"),
        zset_max_listpack_entries,
        0,
        i64::MAX
    ),
    usize_param!(
        "zset-max-listpack-value",
        Some("zset-max-ziplist-value"),
        zset_max_listpack_value,
        0,
        i64::MAX
    ),
    Param {
        name: "hll-sparse-max-bytes",
        alias: None,
        get: |c| c.hll_sparse_max_bytes().to_string(),
        // A memory value, as Redis's MEMORY_CONFIG (`4kb`).
        set: Some(|c, v, apply| {
            let n = parse_memory(v).ok_or("argument must be a memory value")?;
            if apply {
                c.hll_sparse_max_bytes.store(n as usize, Relaxed);
            }
            Ok(())
        }),
    },
    usize_param!(
        "stream-node-max-entries",
        None,
        stream_node_max_entries,
        0,
        i64::MAX
    ),
    Param {
        name: "stream-node-max-bytes",
        alias: None,
        get: |c| c.stream_node_max_bytes.load(Relaxed).to_string(),
        set: Some(|c, v, apply| {
            let n = parse_memory(v)
                .filter(|&n| n >= 0)
                .ok_or("argument must be a memory value")?;
            if apply {
                c.stream_node_max_bytes.store(n as usize, Relaxed);
            }
            Ok(())
        }),
    },
    usize_param!(
        "set-max-intset-entries",
        None,
        set_max_intset_entries,
        0,
        i64::MAX
    ),
    usize_param!(
        "hash-max-listpack-entries",
        Some("hash-max-ziplist-entries"),
        hash_max_listpack_entries,
        0,
        i64::MAX
    ),
    usize_param!(
        "hash-max-listpack-value",
        Some("hash-max-ziplist-value"),
        hash_max_listpack_value,
        0,
        i64::MAX
    ),
    usize_param!("maxclients", None, maxclients, 1, i64::from(u32::MAX)),
    Param {
        name: "client-query-buffer-limit",
        alias: None,
        get: |c| c.client_query_buffer_limit().to_string(),
        set: Some(|c, v, apply| {
            let n = parse_memory(v).ok_or("argument must be a memory value")?;
            if n < 1024 * 1024 {
                return Err(
                    "argument must be between 1048576 and 9223372036854775807 inclusive".into(),
                );
            }
            if apply {
                c.client_query_buffer_limit.store(n as u64, Relaxed);
            }
            Ok(())
        }),
    },
    usize_param!(
        "tracking-table-max-keys",
        None,
        tracking_table_max_keys,
        0,
        i64::MAX
    ),
    usize_param!(
        "min-replicas-to-write",
        Some("min-slaves-to-write"),
        min_replicas_to_write,
        0,
        i64::from(i32::MAX)
    ),
    usize_param!(
        "min-replicas-max-lag",
        Some("min-slaves-max-lag"),
        min_replicas_max_lag,
        0,
        i64::from(i32::MAX)
    ),
    usize_param!(
        "list-compress-depth",
        None,
        list_compress_depth,
        0,
        i64::from(i32::MAX)
    ),
    Param {
        name: "busy-reply-threshold",
        alias: Some("lua-time-limit"),
        get: |c| c.busy_reply_threshold.load(Relaxed).to_string(),
        set: Some(|c, v, apply| {
            let n = int_setter(v, 0, i64::MAX)?;
            if apply {
                c.busy_reply_threshold.store(n, Relaxed);
            }
            Ok(())
        }),
    },
    Param {
        name: "list-max-listpack-size",
        alias: Some("list-max-ziplist-size"),
        get: |c| c.list_max_listpack_size().to_string(),
        set: Some(|c, v, apply| {
            let n = int_setter(v, i64::MIN, i64::MAX)?;
            if apply {
                c.list_max_listpack_size.store(n, Relaxed);
            }
            Ok(())
        }),
    },
    Param {
        name: "proto-max-bulk-len",
        alias: None,
        get: |c| c.proto_max_bulk_len().to_string(),
        set: Some(|c, v, apply| {
            let n = parse_memory(v).ok_or("argument must be a memory value")?;
            if n < 1024 * 1024 {
                return Err(
                    "argument must be between 1048576 and 9223372036854775807 inclusive".into(),
                );
            }
            if apply {
                c.proto_max_bulk_len.store(n, Relaxed);
            }
            Ok(())
        }),
    },
    Param {
        name: "protected-mode",
        alias: None,
        get: |c| if c.protected_mode() { "yes" } else { "no" }.into(),
        set: Some(|c, v, apply| {
            let on = parse_bool(v).ok_or("argument must be 'yes' or 'no'")?;
            if apply {
                c.protected_mode.store(on, Relaxed);
            }
            Ok(())
        }),
    },
    Param {
        name: "tcp-keepalive",
        alias: None,
        get: |c| c.tcp_keepalive_secs().to_string(),
        set: Some(|c, v, apply| {
            let n = int_setter(v, 0, i64::from(i32::MAX))?;
            if apply {
                c.tcp_keepalive.store(n as u64, Relaxed);
            }
            Ok(())
        }),
    },
    Param {
        name: "timeout",
        alias: None,
        get: |c| c.timeout_secs().to_string(),
        set: Some(|c, v, apply| {
            let n = int_setter(v, 0, i64::from(i32::MAX))?;
            if apply {
                c.timeout.store(n as u64, Relaxed);
            }
            Ok(())
        }),
    },
    Param {
        name: "tcp-backlog",
        alias: None,
        get: |c| c.tcp_backlog.to_string(),
        set: None,
    },
    Param {
        name: "latency-tracking",
        alias: None,
        get: |c| if c.latency_tracking() { "yes" } else { "no" }.into(),
        set: Some(|c, v, apply| {
            let on = parse_bool(v).ok_or("argument must be 'yes' or 'no'")?;
            if apply {
                c.latency_tracking.store(on, Relaxed);
            }
            Ok(())
        }),
    },
    Param {
        name: "latency-tracking-info-percentiles",
        alias: None,
        get: |c| {
            let ps: Vec<String> = c
                .latency_percentiles()
                .into_iter()
                .map(fmt_percentile)
                .collect();
            ps.join(" ")
        },
        set: Some(|c, v, apply| {
            // Redis splits on single spaces (an empty word is invalid), and
            // an empty value means no percentiles.
            let mut ps = Vec::new();
            if !v.is_empty() {
                for word in v.split(|&b| b == b' ') {
                    let p = crate::util::parse_f64(word)
                        .ok_or("Invalid latency-tracking-info-percentiles parameters")?;
                    if !(0.0..=100.0).contains(&p) {
                        return Err("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]".into());
                    }
                    ps.push(p);
                }
            }
            if apply {
                *c.latency_percentiles.write() = ps;
            }
            Ok(())
        }),
    },
    // zwindow keeps everything in memory; these report (and accept) only "off".
    Param {
        name: "save",
        alias: None,
        get: |_| String::new(),
        set: Some(|_, v, _| {
            if v.is_empty() {
                Ok(())
            } else {
                Err("zwindow does not persist to disk".into())
            }
        }),
    },
    Param {
        name: "appendonly",
        alias: None,
        get: |_| "no".into(),
        set: Some(|_, v, _| {
            if eq_ic(v, "no") {
                Ok(())
            } else {
                Err("zwindow does not persist to disk".into())
            }
        }),
    },
    Param {
        name: "maxmemory",
        alias: None,
        get: |_| "0".into(),
        set: Some(|_, v, _| match parse_memory(v) {
            Some(0) => Ok(()),
            Some(_) => Err("zwindow does not evict; maxmemory must be 0".into()),
            None => Err("argument must be a memory value".into()),
        }),
    },
    Param {
        name: "maxmemory-policy",
        alias: None,
        get: |_| "noeviction".into(),
        set: Some(|_, v, _| {
            if eq_ic(v, "noeviction") {
                Ok(())
            } else {
                Err("zwindow does not evict; only noeviction".into())
            }
        }),
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> Config {
        Config::from_args(&Args::parse_from(["zwindow"])).unwrap()
    }

    #[test]
    fn get_by_pattern_and_alias() {
        let c = config();
        let got = c.get_matching(&[b"zset-max-*"]);
        let names: Vec<_> = got.iter().map(|(n, _)| *n).collect();
        assert!(names.contains(&"zset-max-listpack-entries"));
        assert!(names.contains(&"zset-max-ziplist-entries"));
        assert!(c.get_matching(&[b"nope"]).is_empty());
    }

    #[test]
    fn set_is_all_or_nothing() {
        let c = config();
        let err = c.set_many(&[(b"hz", b"20"), (b"hz", b"30")]).unwrap_err();
        assert!(err.contains("duplicate parameter"), "{err}");
        assert!(c.set_many(&[(b"hz", b"20"), (b"databases", b"3")]).is_err());
        assert_eq!(c.hz(), 10);
        c.set_many(&[(b"zset-max-ziplist-entries", b"7")]).unwrap();
        assert_eq!(c.zset_max_listpack_entries(), 7);
        assert!(
            c.set_many(&[(b"foo", b"1")])
                .unwrap_err()
                .contains("Unknown option")
        );
    }

    #[test]
    fn latency_percentiles_as_redis() {
        let c = config();
        let get = |c: &Config| {
            c.get_matching(&[b"latency-tracking-info-percentiles"])[0]
                .1
                .clone()
        };
        assert_eq!(get(&c), "50 99 99.9");
        c.set_many(&[(b"latency-tracking-info-percentiles", b"0 7.50 1e1 0x10")])
            .unwrap();
        assert_eq!(get(&c), "0 7.5 10 16");
        for bad in [&b"5  7"[..], b" 5", b"abc", b"101", b"inf"] {
            assert!(
                c.set_many(&[(b"latency-tracking-info-percentiles", bad)])
                    .is_err()
            );
        }
        assert_eq!(get(&c), "0 7.5 10 16");
        c.set_many(&[(b"latency-tracking-info-percentiles", b"")])
            .unwrap();
        assert_eq!(get(&c), "");
        assert!(c.latency_tracking());
        c.set_many(&[(b"latency-tracking", b"no")]).unwrap();
        assert!(!c.latency_tracking());
    }

    #[test]
    fn memory_values() {
        assert_eq!(parse_memory(b"512mb"), Some(512 * 1024 * 1024));
        assert_eq!(parse_memory(b"1k"), Some(1000));
        assert_eq!(parse_memory(b"1x"), None);
    }
}
