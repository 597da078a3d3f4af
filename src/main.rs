//! The `zwindow` binary: parse flags, set up logging, run the server.

use tracing_subscriber::EnvFilter;

/// mimalloc instead of glibc malloc: per-request allocations (reply
/// buffers, members, node splits) cost less, ~3% (pipeline 1) to ~6%
/// (pipeline 16) of server CPU per request on `benches/vs_redis.rs`, for
/// ~10 MB more RSS with a 1M-member set (still ~0.37x redis-server's).
/// The wrapper counts the bytes held, for INFO memory (see `alloc.rs`).
#[global_allocator]
static ALLOC: zwindow::alloc::CountingMimalloc = zwindow::alloc::CountingMimalloc;

fn main() -> std::process::ExitCode {
    let args = match zwindow::config::Args::load() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("{e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let filter = EnvFilter::try_new(&args.log_level).unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
    // One worker (the default) runs on the current-thread scheduler: it
    // runs woken connections in the order their sockets became readable,
    // so requests sent in order on two connections run in that order, as
    // behind Redis's event loop (the multi-thread scheduler's LIFO slot
    // runs the last-woken task first). More workers use the multi-thread
    // scheduler.
    let built = if args.worker_threads() == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(args.worker_threads())
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
    let result = runtime.block_on(zwindow::server::run(args));
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
