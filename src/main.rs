//! The `zwindow` binary: read the command line and config file as
//! redis-server does, set up logging, run the server.

use std::sync::Mutex;

use tracing_subscriber::EnvFilter;
use zwindow::config::{Launch, Startup};

/// mimalloc instead of glibc malloc: per-request allocations (reply
/// buffers, members, node splits) cost less, ~3% (pipeline 1) to ~6%
/// (pipeline 16) of server CPU per request on `benches/vs_redis_mixes.rs`, for
/// ~10 MB more RSS with a 1M-member set (still ~0.37x redis-server's).
/// The wrapper counts the bytes held, for INFO memory (see `alloc.rs`).
#[global_allocator]
static ALLOC: zwindow::alloc::CountingMimalloc = zwindow::alloc::CountingMimalloc;

const USAGE: &str = "\
Usage: zwindow [/path/to/redis.conf] [options] [-]
       zwindow - (read config from stdin)
       zwindow -v or --version
       zwindow -h or --help
       zwindow --healthcheck [pid] (PING the zwindow server running beside it)

Options are redis.conf directives: --port 6380, --requirepass secret,
--save \"\", --zwindow 'news:*=24h', --shards 8, --threads 2, --log-level debug.
Command-line directives override the file; see README.md for the list.

Examples:
       zwindow (run the server with default conf)
       echo 'maxmemory-policy noeviction' | zwindow -
       zwindow /etc/redis/6379.conf
       zwindow --port 7777
       zwindow /etc/myredis.conf --loglevel verbose -";

fn main() -> std::process::ExitCode {
    // The command table first: reading the config looks commands up
    // (`rename-command`).
    zwindow::commands::install();
    let argv: Vec<Vec<u8>> = std::env::args_os()
        .map(|a| a.into_encoded_bytes())
        .collect();
    let startup = match Launch::from_argv(&argv) {
        Ok(Launch::Run(startup)) => *startup,
        Ok(Launch::Version) => {
            println!(
                "zwindow {} (Redis server v={} compatible) bits=64",
                zwindow::version::VERSION,
                zwindow::version::REDIS_VERSION
            );
            return std::process::ExitCode::SUCCESS;
        }
        Ok(Launch::Healthcheck(pid)) => {
            return match zwindow::healthcheck::run(pid) {
                Ok(reply) => {
                    println!("healthy: {reply}");
                    std::process::ExitCode::SUCCESS
                }
                Err(why) => {
                    println!("unhealthy: {why}");
                    std::process::ExitCode::FAILURE
                }
            };
        }
        Ok(Launch::Help) => {
            println!("{USAGE}");
            return std::process::ExitCode::SUCCESS;
        }
        Err(fatal) => {
            eprintln!("{fatal}");
            return std::process::ExitCode::FAILURE;
        }
    };
    init_logging(&startup);
    if let Err(e) = startup.config.apply_to_process() {
        tracing::warn!("{e}");
        return std::process::ExitCode::FAILURE;
    }
    // Redis sets the score once the config is read; a failure is logged.
    let _ = startup.config.apply_oom_score();
    if startup.config.disable_thp()
        && !zwindow::alloc::disable_thp()
        && std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .is_ok_and(|s| s.contains("[always]"))
    {
        tracing::warn!(
            "WARNING you have Transparent Huge Pages (THP) support enabled in your kernel. This will create latency and memory usage issues with Redis. To fix this issue run the command 'echo madvise > /sys/kernel/mm/transparent_hugepage/enabled' as root, and add it to your /etc/rc.local in order to retain the setting after a reboot. Redis must be restarted after THP is disabled (set to 'madvise' or 'never')."
        );
    }
    // One worker (the default) runs on the current-thread scheduler: it
    // runs woken connections in the order their sockets became readable,
    // so requests sent in order on two connections run in that order, as
    // behind Redis's event loop (the multi-thread scheduler's LIFO slot
    // runs the last-woken task first). More workers use the multi-thread
    // scheduler.
    let workers = startup.config.worker_threads();
    let built = if workers == 1 {
        let mut builder = tokio::runtime::Builder::new_current_thread();
        if startup.config.io_uring() {
            // Submits the io_uring entries a loop iteration queued, all in
            // one syscall, before the thread sleeps (see network::uring).
            builder.on_thread_park(zwindow::network::uring::on_park);
        }
        builder.enable_all().build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .enable_all()
            .build()
    };
    let runtime = match built {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!("cannot start the runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(zwindow::server::run(startup));
    // Dropping the runtime would wait for every blocking task, including a
    // script still unwinding or a join stuck behind its locks; the server
    // has already shut down cleanly, so give them no more than a moment.
    runtime.shutdown_timeout(std::time::Duration::from_millis(50));
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Logs to stderr, or appended to `logfile` when the config names one
/// (startup has already checked it opens). The level is `log-level`, else
/// Redis's `loglevel`.
fn init_logging(startup: &Startup) {
    use tracing_subscriber::prelude::*;
    let filter =
        EnvFilter::try_new(startup.config.log_filter()).unwrap_or_else(|_| EnvFilter::new("info"));
    // CONFIG SET loglevel swaps the filter of the running subscriber.
    let (filter, handle) = tracing_subscriber::reload::Layer::new(filter);
    let _ = zwindow::config::LOG_RELOAD.set(Box::new(move |level: &str| {
        if let Ok(f) = EnvFilter::try_new(level) {
            let _ = handle.reload(f);
        }
    }));
    let registry = tracing_subscriber::registry().with(filter);
    let logfile = startup.config.logfile();
    let file = (!logfile.is_empty())
        .then(|| {
            std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(&logfile)
                .ok()
        })
        .flatten();
    // The crash report goes where the log goes (see zwindow::crash).
    let crash_fd = file
        .as_ref()
        .and_then(|f| f.try_clone().ok())
        .map_or(2, std::os::fd::IntoRawFd::into_raw_fd);
    zwindow::crash::install(crash_fd, startup.config.crash_log_enabled());
    zwindow::crash::set_exit_on_panic(startup.config.use_exit_on_panic());
    match file {
        Some(file) => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .with_ansi(false)
                    .with_writer(Mutex::new(file)),
            )
            .init(),
        None => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
                    .with_writer(std::io::stderr),
            )
            .init(),
    }
}
