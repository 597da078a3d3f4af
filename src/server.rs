//! The server: startup, the accept loop, background tasks and graceful
//! shutdown. It builds the [`Services`] every connection shares (one
//! `Arc`) and runs the background thread: active expiry, the window
//! sweeper, the sampler and eviction timer, the save points and the AOF's
//! tick.
//!
//! Shutdown (SIGTERM, SIGINT or SHUTDOWN) stops accepting, tells every
//! connection through a watch channel to finish the batch it is running and
//! close, and waits at most a second for them, as `docker stop` expects.

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::commands::Services;
use crate::config::{Config, Startup};
use crate::keyspace::evict;
use crate::keyspace::windows::sweeper;
use crate::version::{REDIS_VERSION, VERSION};

/// Serves the clients blocked on keys that became ready outside a command
/// (eviction, the sweeper's hand-offs).
fn serve_ready(shared: &Arc<Services>, ready: Vec<(usize, crate::keyspace::Key)>) {
    crate::execution::blocking::serve(shared, ready);
}

/// The `pidfile`, written at start and removed at exit as Redis does (a
/// file that cannot be written is logged, not fatal, as in Redis).
struct PidFile(Option<std::path::PathBuf>);

impl PidFile {
    fn create(path: &str) -> PidFile {
        if path.is_empty() {
            return PidFile(None);
        }
        match std::fs::write(path, format!("{}\n", std::process::id())) {
            Ok(()) => PidFile(Some(path.into())),
            Err(e) => {
                tracing::warn!("Failed to write PID file: {e}");
                PidFile(None)
            }
        }
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        if let Some(path) = &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The ACL users at startup (acl.c `ACLLoadUsersAtStartup`): `requirepass`
/// as the default user's password, then the `user` lines or the ACL file
/// (not both, as Redis refuses). `users` are the `user` lines of the
/// config file and the command line (`Startup::users`), each the words
/// after `user`, duplicates already refused at their line.
fn load_users(shared: &Services, users: &[Vec<Vec<u8>>]) -> Result<(), String> {
    let acl = &shared.acl;
    let all_channels = shared.config.acl_pubsub_all();
    acl.set_default_password(shared.config.requirepass().as_deref());
    let aclfile = &shared.config.aclfile;
    if !aclfile.is_empty() && !users.is_empty() {
        return Err("Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both.".into());
    }
    acl.load_configured(users, all_channels)
        .map_err(|e| format!("{e}. Critical error while loading ACLs. Exiting."))?;
    if !aclfile.is_empty() {
        acl.load_file(aclfile, all_channels)
            .map_err(|e| format!("Aborting Redis startup because of ACL errors: {e}"))?;
    }
    Ok(())
}

/// How long accepting pauses after it failed (out of file descriptors).
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// Binds, serves until a shutdown signal, then drains connections.
pub async fn run(startup: Startup) -> Result<(), Box<dyn std::error::Error>> {
    let Startup {
        mut config,
        window_rules,
        users,
        renames,
        warnings,
        unresolved,
    } = startup;
    for w in &warnings {
        tracing::warn!("{w}");
    }
    // Redis 8.0: a cluster node has one database (7.0 kept sixteen, of
    // which only 0 could be selected).
    if config.cluster_enabled() && config.databases > 1 {
        tracing::warn!(
            "WARNING: Changing databases number from {} to 1 since we are in cluster mode",
            config.databases
        );
        config.databases = 1;
    }
    // `main` installed the table before reading the config; a caller that
    // built its `Startup` otherwise gets it here (a second install is a
    // no-op).
    crate::commands::install();
    crate::spec::rename_commands(&renames)?;
    // TLS: the context is built before the TLS port listens, and a
    // context that cannot be built stops the server, as in Redis.
    let tls = Arc::new(crate::network::tls::Tls::new());
    if config.tls_enabled() && tls.configure(&config, true).is_err() {
        tracing::warn!("Failed to configure TLS. Check logs for more info.");
        return Err("Failed to configure TLS. Check logs for more info.".into());
    }
    // Redis's texts when a socket cannot be opened, the last one as the
    // error: tools (Redis's own test harness among them) look for
    // "Failed listening on port" to retry on another port.
    let listeners = Arc::new(crate::network::listen::Listeners::open(&config)?);
    crate::network::adjust_open_files_limit(&config);
    let port = config.port.load(Relaxed);
    let shards = config.shard_count();
    let _pidfile = PidFile::create(&config.pidfile());
    let mut services = Services::new(config, shards);
    // Cluster mode (`clusterInit`): nodes.conf locked and loaded (or a new
    // identity made) before anything is served; database 0's keys indexed
    // by slot before the store is shared.
    if services.config.cluster_enabled() {
        // Redis refuses this when it reads its config (with the line).
        if services.config.replicaof().is_some() {
            return Err("replicaof directive not allowed in cluster mode".into());
        }
        let cluster = crate::cluster::Cluster::open(&services.config)?;
        // A replica by its nodes.conf loads its dataset as one (Redis's
        // `iAmMaster()` reads myself's role): keys past their time stay
        // for its primary's DELs, until the bus links it (or promotes it).
        if cluster.read().myself_is_replica() {
            services.store.set_replica(true);
        }
        services.cluster = Some(cluster);
        services.store.enable_slot_index();
    }
    let shared = Arc::new(services);
    load_users(&shared, &users)?;
    shared
        .stats
        .startup_memory
        .store(crate::stats::note_peak_memory(&shared.stats), Relaxed);
    if shared.cluster.is_some()
        && let Some(rule) = window_rules
            .iter()
            .find(|r| !crate::keyspace::windows::moveto_confined(r))
    {
        let why = crate::commands::windows::MOVETO_CROSS_SLOT;
        return Err(format!(
            "zwindow rule '{}': {}",
            String::from_utf8_lossy(&rule.pattern),
            why.strip_prefix("ERR ").unwrap_or(why)
        )
        .into());
    }
    for rule in window_rules {
        // No key exists before the dataset loads below: no cache to reset.
        let _ = shared.windows.set(rule);
    }
    start_io_uring(&shared.config);
    tracing::info!(
        "zwindow {VERSION} listening on {}, {} shards",
        listeners.describe().join(", "),
        shared.store.shard_count()
    );
    // Redis's own startup lines, which tools wait for in a server's log
    // (test containers' "Ready to accept connections", Redis's TCL harness
    // looking for " PID: <pid>" then "Server initialized").
    tracing::info!(
        "Redis version={REDIS_VERSION} (zwindow {VERSION}), Running mode={}, port={port}, PID: {}",
        if shared.cluster.is_some() {
            "cluster"
        } else {
            "standalone"
        },
        std::process::id()
    );
    // Redis 8.0's `moduleLoadFromQueue`: settings no module claimed stop
    // the server here, after its banner.
    if !unresolved.is_empty() {
        tracing::warn!("Unresolved Configuration(s) Detected:");
        for (name, value) in &unresolved {
            tracing::warn!(">>> '{name} {value}'");
        }
        return Err(
            "Module Configuration detected without loadmodule directive or no ApplyConfig call: aborting"
                .into(),
        );
    }
    tracing::info!("Server initialized");
    // After the banner, as Redis loads after its logo: tools waiting for
    // the PID line see a server that fails to load stop. Connections are
    // accepted meanwhile and answered -LOADING (clients retry on it).
    if shared.cluster.is_some() {
        tokio::spawn(cluster_cron(shared.clone(), shared.shutdown_rx()));
        crate::network::bus::start(&shared, tls.clone())?;
    }
    crate::aof::spawn_syncer(shared.clone())?;
    let mut loaded = load_dataset(&shared)?;
    let mut background = None;

    // CONFIG SET bind / port: the sockets are bound in the command (so an
    // address or port that cannot be bound fails it), and the accept loop
    // takes connections from the new ones.
    let rebind = listeners.clone();
    shared
        .config
        .set_listen(Box::new(move |addrs, port| rebind.rebind(addrs, port)));
    let configure = tls.clone();
    let rebind = listeners.clone();
    shared.config.set_tls(crate::config::TlsHooks {
        configure: Box::new(move |config, reconfigure| configure.configure(config, reconfigure)),
        listen: Box::new(move |port| rebind.rebind_tls(port)),
    });

    // The clients' cron runs beside the connections, on their threads: the
    // memory it hands back is what those threads freed.
    tokio::spawn(crate::network::cron(shared.clone(), shared.shutdown_rx()));

    let mut conns = JoinSet::new();
    let mut sigterm = signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut sigint = signal(tokio::signal::unix::SignalKind::interrupt())?;
    // Out of file descriptors, accept fails at once and would fail again at
    // once: accepting pauses instead of spinning, and the clients already
    // connected are served meanwhile.
    let resume = tokio::time::sleep(Duration::ZERO);
    tokio::pin!(resume);
    let mut paused = false;
    let mut streak = 0;
    let mut last_warning: Option<Instant> = None;
    // A shutdown waiting for lagging replicas is looked at every 10 ms
    // (Redis looks in its cron); the flags a signal stops with; the
    // SHUTDOWN clients of a wait that ends in the exit, kept waiting.
    let mut shutdown_tick = tokio::time::interval(Duration::from_millis(10));
    let mut exit_flags = crate::shutdown::Flags::default();
    let mut _exit_waiters = Vec::new();
    loop {
        let waiting = shared.shutdown.initiated();
        // A signal's shutdown not acted on yet (none during a wait).
        let requested = shared.shutdown.requested().filter(|_| !waiting);
        tokio::select! {
            accepted = listeners.accept(), if !paused => match accepted {
                Ok(accepted) => {
                    let from_tls = accepted.tls;
                    crate::network::admit(&shared, &tls, accepted, &mut conns);
                    // Redis's accept handler takes at most
                    // `max-new-connections-per-cycle` (TLS: its own
                    // setting) per event-loop cycle: then the clients
                    // already connected have their turn.
                    streak += 1;
                    if streak >= shared.config.max_new_conns_per_cycle(from_tls) {
                        streak = 0;
                        tokio::task::yield_now().await;
                    }
                }
                Err(e) => {
                    if last_warning.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
                        tracing::warn!("Accepting client connection: {e}");
                        last_warning = Some(Instant::now());
                    }
                    paused = true;
                    resume.as_mut().reset(tokio::time::Instant::now() + ACCEPT_PAUSE);
                }
            },
            _ = &mut resume, if paused => paused = false,
            done = &mut loaded, if background.is_none() => {
                done.map_err(|_| "the dataset loader stopped unexpectedly".to_string())??;
                verify_cluster_with_data(&shared)?;
                background = Some(spawn_background(shared.clone())?);
                // The link to a primary (`replicaof` in the config, later
                // REPLICAOF) once the dataset, and any replication
                // history its file carried, is in.
                tokio::spawn(crate::network::link::supervise(shared.clone(), tls.clone()));
                if listeners.has_tcp() {
                    tracing::info!("Ready to accept connections tcp");
                }
                // `port 0` with a `tls-port` (Redis's harness with
                // `--tls`): tools wait for this line all the same.
                if listeners.has_tls() {
                    tracing::info!("Ready to accept connections tls");
                }
                if let Some(path) = listeners.unix_path() {
                    tracing::info!("The server is now ready to accept connections at {path}");
                }
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            _ = sigterm.recv() => {
                if background.is_none() {
                    tracing::warn!("Received shutdown signal during loading, scheduling shutdown.");
                    break;
                }
                tracing::warn!("Received SIGTERM scheduling shutdown...");
                shared.shutdown.request(false);
            }
            _ = sigint.recv() => {
                // Redis's second SIGINT: the user insists, nothing is
                // waited for or saved, and a save under way leaves no
                // temp file behind.
                // (Read now: SHUTDOWN ABORT may have taken a request back
                // since this turn of the loop began.)
                if shared.shutdown.initiated() || shared.shutdown.requested().is_some() {
                    insist_and_exit(&shared);
                }
                if background.is_none() {
                    tracing::warn!("Received shutdown signal during loading, scheduling shutdown.");
                    break;
                }
                tracing::warn!("Received SIGINT scheduling shutdown...");
                shared.shutdown.request(true);
            }
            _ = shared.stop.notified() => { tracing::info!("SHUTDOWN requested, shutting down"); break }
            _ = shared.shutdown.changed.notified() => {}
            // A wait for lagging replicas is looked at every tick; a
            // signal is acted on at the next one, as Redis's cron acts on
            // `shutdown_asap` (so DEBUG PAUSE-CRON holds it, and SHUTDOWN
            // ABORT can take it back meanwhile).
            _ = shutdown_tick.tick(), if waiting || (requested.is_some() && !shared.cron_held()) => {
                if waiting {
                    if let Some(waiters) = finish_shutdown_wait(&shared).await {
                        _exit_waiters = waiters;
                        break;
                    }
                } else if let Some(flags) = shutdown_on_signal(&shared, requested.unwrap_or_default(), &mut sigint).await {
                    exit_flags = flags;
                    break;
                }
            }
        }
    }
    listeners.close();
    shared.shut_down();
    shared.scripting.busy.force_kill();
    // Everything below shares one deadline: the process exits within a
    // second of the signal whatever a script or a shard lock is doing.
    let deadline = tokio::time::Instant::now() + Duration::from_millis(500);
    let drained = tokio::time::timeout_at(deadline, async {
        while conns.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        conns.abort_all();
    }
    // Stopped while loading: nothing to save (Redis skips the save too),
    // and the loader ends with the process.
    let Some(background) = background else {
        tracing::info!("zwindow is now ready to exit, bye bye...");
        return Ok(());
    };
    // After the connections' last batches, so every acknowledged write is
    // in the file; a script being killed releases its shards in a moment.
    let saver = shared.clone();
    let _ = tokio::task::spawn_blocking(move || {
        saver.aof.flush_all();
        // A signal stops the server even if its save fails.
        if let Err(e) = crate::commands::server::save_for_shutdown(&saver, exit_flags) {
            tracing::warn!("{e}; exiting anyway");
        }
    })
    .await;
    // The background tasks return as soon as they see the shutdown signal,
    // unless they wait on a shard lock a dying script still holds: then
    // the exit does not wait for them (threads end with the process).
    let joined = tokio::task::spawn_blocking(move || background.join());
    if tokio::time::timeout_at(deadline, joined).await.is_err() {
        tracing::warn!("background tasks did not stop in time; exiting without them");
    }
    tracing::info!("zwindow is now ready to exit, bye bye...");
    Ok(())
}

/// A signal's shutdown (`by_sigint`: SIGINT's), with the flags
/// `shutdown-on-sigterm` / `-sigint` give: the flags to exit with, or
/// `None` while a wait for lagging replicas runs (begun now), or when the
/// save failed and the server runs on (Redis's "can't exit").
///
/// SIGTERM exits even if its save fails (FORCE): what sends it (`docker
/// stop`, systemd) expects the process gone, and sends SIGKILL next,
/// which would lose the data all the same. Redis stays up there; SIGINT
/// does as Redis does (unless `shutdown-on-sigint` says `force`): it
/// saves now, with writes held, and runs on if the save fails; a second
/// SIGINT during the save exits at once, deleting the save's temp file.
async fn shutdown_on_signal(
    shared: &Arc<Services>,
    by_sigint: bool,
    sigint: &mut tokio::signal::unix::Signal,
) -> Option<crate::shutdown::Flags> {
    use crate::commands::server as srv;
    let mut flags = shared.config.shutdown_on_signal(by_sigint);
    flags.force |= !by_sigint;
    tracing::info!("User requested shutdown...");
    if srv::begin_shutdown_wait(shared, flags, None) {
        return None;
    }
    // A shutdown that cannot fail saves after the connections' last
    // batches, once a running script is killed (its shards are then
    // free): the exit stays within a second of the signal.
    if flags.force {
        return Some(flags);
    }
    let saver = shared.clone();
    let save = tokio::task::spawn_blocking(move || srv::finish_shutdown(&saver, flags));
    tokio::pin!(save);
    let saved = tokio::select! {
        saved = &mut save => saved.unwrap_or_else(|e| Err(e.to_string())),
        _ = sigint.recv() => insist_and_exit(shared),
    };
    shared.shutdown.settle();
    saved.ok().map(|()| flags)
}

/// Redis's second SIGINT during a shutdown: exit at once with an error,
/// leaving no `temp-<pid>.rdb` of the save under way.
fn insist_and_exit(shared: &Services) -> ! {
    tracing::warn!("You insist... exiting now.");
    crate::persistence::remove_foreground_temp_file(&shared.config);
    std::process::exit(1);
}

/// A wait for lagging replicas, every 10 ms: once they caught up or its
/// time is up, the rest of Redis's `finishShutdown` (a line per lagging
/// replica, the save). `Some`: the server exits, holding the SHUTDOWN
/// clients given; a save that fails without FORCE ends the wait instead,
/// and the server runs on.
async fn finish_shutdown_wait(
    shared: &Arc<Services>,
) -> Option<Vec<tokio::sync::oneshot::Sender<()>>> {
    use crate::commands::server as srv;
    let (deadline, flags) = shared.shutdown.pending()?;
    if shared.clock.now_ms() < deadline && !srv::replicas_in_sync(shared) {
        return None;
    }
    srv::log_replicas_at_shutdown(shared);
    let saver = shared.clone();
    let saved = tokio::task::spawn_blocking(move || srv::save_for_shutdown(&saver, flags))
        .await
        .unwrap_or_else(|e| Err(e.to_string()));
    match saved {
        Ok(()) => Some(shared.shutdown.finish()),
        Err(e) => {
            tracing::warn!("{e}");
            tracing::warn!(
                "Errors trying to shut down the server. Check the logs for more information."
            );
            srv::cancel_shutdown(shared);
            None
        }
    }
}

/// Loads the dataset on a thread of its own (the AOF with `appendonly
/// yes`, as Redis 7.0, else `dump.rdb`), while connections are served:
/// the loading state refuses their commands with -LOADING until it is done.
/// Not tokio's blocking pool: a runtime waits for those at exit, and a
/// server stopped while loading must not. The receiver gets the outcome.
fn load_dataset(shared: &Arc<Services>) -> Result<LoadDone, String> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    // Marked loading before any connection is accepted, so none sees an
    // empty dataset as the real one.
    shared
        .persistence
        .loading
        .set_serve_after(shared.config.loading_serve_after());
    shared
        .persistence
        .loading
        .enter(shared.clock.now_ms() / 1000);
    let loader = shared.clone();
    std::thread::Builder::new()
        .name("zwindow-load".into())
        .spawn(move || {
            let result = if loader.config.appendonly() {
                let dispatch = crate::execution::Dispatcher::new(&loader);
                crate::aof::load::load_at_startup(&*loader, &dispatch)
                    .and_then(|manifest| crate::aof::open_at_startup(&*loader, manifest))
            } else {
                // A primary restarting keeps its replicas' history (see
                // `Replication::after_startup_load`). A cluster node that
                // is a replica by its nodes.conf is none (Redis's
                // `iAmMaster()`): it continues the history its file
                // recorded once the bus links it to its primary.
                let cluster_replica = loader.store.is_replica() && loader.cluster.is_some();
                let primary = loader.config.replicaof().is_none() && !cluster_replica;
                if primary {
                    let size = loader.config.repl_backlog_size();
                    loader.replication.set_backlog_size(size);
                    loader.replication.before_startup_load();
                }
                let loaded = crate::persistence::load_at_startup(&*loader);
                if primary {
                    let info = loader.persistence.last_load.lock().repl;
                    let replid = info.map(|i| String::from_utf8_lossy(&i.replid).into_owned());
                    loader.replication.after_startup_load(
                        replid.as_deref().zip(info.map(|i| i.offset)),
                        loader.clock.now_ms() / 1000,
                    );
                } else if cluster_replica
                    && let Some(info) = loader.persistence.last_load.lock().repl
                {
                    let replid = String::from_utf8_lossy(&info.replid).into_owned();
                    loader
                        .replication
                        .restore_history(&replid, info.offset, info.stream_db);
                }
                loaded
            };
            loader.persistence.loading.leave();
            let result = result.and_then(|()| crate::aof::apply_config(loader.clone()));
            let _ = tx.send(result);
        })
        .map_err(|e| format!("Can't start loading the dataset: {e}"))?;
    Ok(rx)
}

type LoadDone = tokio::sync::oneshot::Receiver<Result<(), String>>;

/// `io-uring yes` (the default): client sockets go through io_uring from
/// now on, or stay on epoll where that cannot be, with a log line saying
/// why. Falling back is not an error: Docker's default seccomp profile,
/// `kernel.io_uring_disabled` and older kernels all refuse io_uring.
fn start_io_uring(config: &Config) {
    if !config.io_uring() {
        tracing::info!("io-uring no: serving connections with epoll");
        return;
    }
    if config.worker_threads() > 1 {
        tracing::info!("io-uring needs threads 1: serving connections with epoll");
        return;
    }
    match crate::network::uring::start() {
        Ok(()) => tracing::info!("Serving connections with io_uring"),
        Err(e) => tracing::info!("io_uring unavailable ({e}): serving connections with epoll"),
    }
}

/// Active key expiry, the window sweeper and the statistics sampler run on
/// a thread of their own, so a long sweep competes with connections only
/// for CPU, never for a connection worker.
fn spawn_background(shared: Arc<Services>) -> std::io::Result<std::thread::JoinHandle<()>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    std::thread::Builder::new()
        .name("zwindow-background".into())
        .spawn(move || {
            runtime.block_on(async {
                tokio::join!(
                    active_expiry(shared.clone(), shared.shutdown_rx()),
                    sweeper(shared.clone(), shared.shutdown_rx()),
                    sampler(shared.clone(), shared.shutdown_rx()),
                    crate::aof::run(shared.clone(), shared.shutdown_rx()),
                );
            });
        })
}

/// Runs the expiry cycle `hz` times a second until shutdown, a quarter of
/// each period at most, as Redis's slow cycle. CLIENT PAUSE holds expiry
/// back, as in Redis.
async fn active_expiry(shared: Arc<Services>, mut shutdown: watch::Receiver<bool>) {
    loop {
        let hz = shared.config.hz().clamp(1, 500);
        let period = Duration::from_millis(1000 / hz as u64);
        tokio::select! {
            _ = tokio::time::sleep(period) => {}
            _ = shutdown.changed() => return,
        }
        let paused = shared.pause.mode(&shared.clock) != crate::pause::OFF;
        if !paused && shared.store.active_expire.load(Relaxed) {
            crate::keyspace::expire::cycle(shared.env(), period / 4);
            crate::keyspace::expire::local_cycle(shared.env());
        }
    }
}

/// The window sweeper, [`sweeper::DEFAULT_HZ`] times a second until
/// shutdown; it serves the clients its hand-offs feed.
async fn sweeper(shared: Arc<Services>, mut shutdown: watch::Receiver<bool>) {
    let period = Duration::from_millis(1000 / sweeper::DEFAULT_HZ);
    loop {
        tokio::select! {
            _ = tokio::time::sleep(period) => {}
            _ = shutdown.changed() => return,
        }
        if sweeper::due(shared.env()) {
            sweeper::cycle(shared.env(), sweeper::BUDGET, &mut |ready| {
                serve_ready(&shared, ready)
            });
        }
    }
}

/// The 100 ms sampler ([`crate::stats::sample`]) and Redis's eviction
/// timer: a pass that ran out of time goes on here, even when no command
/// comes to start the next one.
async fn sampler(shared: Arc<Services>, mut shutdown: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(crate::stats::SAMPLE_PERIOD);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => return,
        }
        let began = std::time::Instant::now();
        crate::stats::sample(&shared.stats, shared.clock.now_ms());
        if evict::over_limit(shared.env()) && !shared.scripting.busy.is_running() {
            evict::perform_evictions(shared.env(), &mut |ready| serve_ready(&shared, ready));
        }
        // The tick is a cycle of the server's cron, as Redis's timer event
        // is one of its event loop.
        shared.stats.el_cron_cycle(began);
    }
}

fn signal(kind: tokio::signal::unix::SignalKind) -> std::io::Result<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(kind)
}

/// Cluster mode's periodic work without a bus (Redis's `clusterCron`, ten
/// times a second): the cluster's health, so that its startup and rejoin
/// delays run out.
async fn cluster_cron(shared: Arc<Services>, mut shutdown: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => return,
        }
        if let Some(cluster) = &shared.cluster {
            cluster.cron(&shared.config, crate::clock::system_us() as i64 / 1000);
            crate::execution::redirect_blocked(&shared);
        }
    }
}

/// Cluster mode, once the dataset is in (Redis's
/// `verifyClusterConfigWithData`): the slots this node has keys for.
fn verify_cluster_with_data(shared: &Services) -> Result<(), String> {
    let Some(cluster) = &shared.cluster else {
        return Ok(());
    };
    let mut guards = shared.store.lock(shared.store.all_shards());
    let other_dbs_used = guards
        .iter_mut()
        .any(|shard| shard.dbs.iter().skip(1).any(|db| !db.keys.is_empty()));
    drop(guards);
    cluster.verify_with_data(|slot| shared.store.count_in_slot(slot), other_dbs_used)
}
