//! The network layer: connections in, replies out.
//!
//! [`admit`] decides what becomes of an accepted socket — refused past
//! `maxclients`, denied by protected mode, or registered and served — and
//! [`connection`] runs one client's socket: it reads whatever arrived,
//! hands every complete request to the [`execution`](crate::execution)
//! layer in order, and writes all their replies with one write. The accept
//! loop itself is in [`crate::server::run`], beside signal handling; idle
//! clients are closed by [`close_idle`] from the background cron. A
//! connection's socket I/O goes through tokio's epoll reactor or, with
//! `io-uring yes`, through [`uring`]; [`socket`] hides which. A client
//! of `tls-port` goes through [`tls`] (OpenSSL, on the epoll path).

pub(crate) mod connection;
pub(crate) mod socket;
pub(crate) mod tls;
pub mod uring;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

use crate::commands::Services;

/// Redis 7.0's text for a client refused by protected mode.
const DENIED: &str = "-DENIED Redis is running in protected mode because protected \
mode is enabled and no password is set for the default user. \
In this mode connections are only accepted from the loopback interface. \
If you want to connect from external computers to Redis you \
may adopt one of the following solutions: \
1) Just disable protected mode sending the command \
'CONFIG SET protected-mode no' from the loopback interface \
by connecting to Redis from the same host the server is \
running, however MAKE SURE Redis is not publicly accessible \
from internet if you do so. Use CONFIG REWRITE to make this \
change permanent. \
2) Alternatively you can just disable the protected mode by \
editing the Redis configuration file, and setting the protected \
mode option to 'no', and then restarting the server. \
3) If you started the server manually just for testing, restart \
it with the '--protected-mode no' option. \
4) Setup a an authentication password for the default user. \
NOTE: You only need to do one of the above things in order for \
the server to start accepting connections from the outside.\r\n";

/// Redis's `islocalClient` for TCP: the peer's address printed is exactly
/// `127.0.0.1` or `::1` (an IPv4-mapped `::ffff:127.0.0.1` is not).
fn is_local(peer: &SocketAddr) -> bool {
    match peer.ip() {
        IpAddr::V4(ip) => ip == Ipv4Addr::LOCALHOST,
        IpAddr::V6(ip) => ip == Ipv6Addr::LOCALHOST,
    }
}

/// Binds the listening socket with Redis's `tcp-backlog`.
pub(crate) async fn listen(bind: &str, port: u16, backlog: u32) -> std::io::Result<TcpListener> {
    TcpListener::from_std(listen_std(bind, port, backlog)?)
}

/// Binds a listening socket without a runtime (CONFIG SET port binds
/// from a command): the first address of `bind` that takes it, with
/// `SO_REUSEADDR` as Redis, non-blocking for the accept loop.
pub(crate) fn listen_std(
    bind: &str,
    port: u16,
    backlog: u32,
) -> std::io::Result<std::net::TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    use std::net::ToSocketAddrs;
    let mut last = None;
    for addr in (bind, port).to_socket_addrs()? {
        let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
        socket.set_reuse_address(true)?;
        let backlog = i32::try_from(backlog).unwrap_or(i32::MAX);
        match socket
            .bind(&addr.into())
            .and_then(|()| socket.listen(backlog))
            .and_then(|()| socket.set_nonblocking(true))
        {
            Ok(()) => return Ok(socket.into()),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other(format!("cannot resolve {bind}"))))
}

/// The socket a listener the accept loop owns listens on, so that CONFIG
/// SET (`port`, `tls-port`) can stop it listening at once: the loop drops
/// the old listener only when it next runs, and a command right after
/// (`CONFIG SET tls-port 0` then `CONFIG SET port <that port>`, as Redis's
/// unit/tls does) must find the port free. A shut-down listener's accept
/// fails with EINVAL, which [`not_listening`] tells from real failures.
pub(crate) struct ListenSlot(parking_lot::Mutex<Option<std::os::fd::RawFd>>);

impl ListenSlot {
    pub(crate) fn new(fd: Option<std::os::fd::RawFd>) -> ListenSlot {
        ListenSlot(parking_lot::Mutex::new(fd))
    }

    /// Hands `new` (None: no listener) to the accept loop through `send`,
    /// then stops the old socket listening. Under the slot's lock, so the
    /// old one is still open (the loop clears the slot before it closes
    /// its listeners at shutdown, and closes a replaced one only after
    /// this returns).
    pub(crate) fn replace(
        &self,
        new: Option<std::net::TcpListener>,
        send: impl FnOnce(Option<std::net::TcpListener>) -> Result<(), String>,
    ) -> Result<(), String> {
        let mut slot = self.0.lock();
        let fd = new.as_ref().map(std::os::fd::AsRawFd::as_raw_fd);
        send(new)?;
        if let Some(old) = slot.take() {
            // SAFETY: `old` is the listening socket the accept loop still
            // holds open (see above); shutdown only changes its state.
            unsafe {
                libc::shutdown(old, libc::SHUT_RDWR);
            }
        }
        *slot = fd;
        Ok(())
    }

    /// Forgets the socket: the accept loop is about to close it.
    pub(crate) fn clear(&self) {
        *self.0.lock() = None;
    }
}

/// Whether an accept error means the listener was shut down by
/// [`ListenSlot::replace`] (its replacement is on its way to the loop).
pub(crate) fn not_listening(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::EINVAL)
}

/// File descriptors kept beyond `maxclients` (Redis's
/// `CONFIG_MIN_RESERVED_FDS`: listeners, logs, scripts' and tasks' own).
const RESERVED_FDS: u64 = 32;

/// Redis's `adjustOpenFilesLimit`: raises the soft open-files limit to
/// `maxclients` + 32, as far as the hard limit allows, and lowers
/// `maxclients` to fit what it got — so the server refuses clients with an
/// error at the limit instead of failing to accept them.
pub(crate) fn adjust_open_files_limit(config: &crate::config::Config) {
    let wanted = config.maxclients() as u64 + RESERVED_FDS;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        tracing::warn!("Unable to obtain the current NOFILE limit, assuming 1024");
        limit.rlim_cur = 1024;
        limit.rlim_max = 1024;
    } else if limit.rlim_cur < wanted {
        let best = wanted.min(limit.rlim_max);
        let raised = libc::rlimit {
            rlim_cur: best,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: as above.
        if best > limit.rlim_cur && unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            tracing::info!(
                "Increased maximum number of open files to {best} (it was originally set to {}).",
                limit.rlim_cur
            );
            limit.rlim_cur = best;
        }
    }
    if limit.rlim_cur < wanted {
        let fit = limit.rlim_cur.saturating_sub(RESERVED_FDS).max(1);
        tracing::warn!(
            "You requested maxclients of {} requiring at least {wanted} max file descriptors. \
             Server can't set maximum open files to {wanted}: maxclients has been reduced to {fit} \
             to compensate for low ulimit. If you need higher maxclients increase 'ulimit -n'.",
            config.maxclients()
        );
        config.set_maxclients(fit as usize);
    }
}

/// What becomes of an accepted socket, decided on the accept loop so that
/// `maxclients` is exact however many connect at once: a client counts
/// from the moment it is registered here.
pub(crate) fn admit(
    shared: &Arc<Services>,
    stream: TcpStream,
    peer: SocketAddr,
    conns: &mut JoinSet<()>,
) {
    admit_on(shared, stream, peer, conns, None);
}

/// [`admit`] for a socket accepted on `tls-port`: the same checks, then
/// the handshake in the connection's own task (never on the accept loop),
/// with the context current at accept. A client refused before its
/// handshake is closed without a reply (Redis's reply could not be read
/// as TLS either).
pub(crate) fn admit_tls(
    shared: &Arc<Services>,
    tls: &tls::Tls,
    stream: TcpStream,
    peer: SocketAddr,
    conns: &mut JoinSet<()>,
) {
    match tls.context() {
        Some(ctx) => admit_on(shared, stream, peer, conns, Some(ctx)),
        None => tracing::warn!("TLS connection refused: TLS is not configured"),
    }
}

fn admit_on(
    shared: &Arc<Services>,
    stream: TcpStream,
    peer: SocketAddr,
    conns: &mut JoinSet<()>,
    tls: Option<openssl::ssl::SslContext>,
) {
    let config = &shared.config;
    let refused = if shared.clients.count() >= config.maxclients() {
        Some("-ERR max number of clients reached\r\n")
    } else if config.protected_mode() && shared.acl.default_nopass() && !is_local(&peer) {
        Some(DENIED)
    } else {
        None
    };
    if let Some(reply) = refused {
        shared.stats.rejected_connections.fetch_add(1, Relaxed);
        let reply = if tls.is_some() { "" } else { reply };
        tokio::spawn(refuse(stream, reply));
        return;
    }
    set_keepalive(&stream, config.tcp_keepalive_secs());
    let laddr = stream
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let fd = std::os::fd::AsRawFd::as_raw_fd(&stream);
    if let Some(ctx) = tls {
        let _ = stream.set_nodelay(true);
        let (handle, pushes) = shared.clients.register(peer.to_string(), laddr, fd);
        let shared = shared.clone();
        conns.spawn(async move {
            match tls::accept(&ctx, &shared.config, stream).await {
                Ok(stream) => {
                    let socket = socket::Socket::Tls(Box::new(stream));
                    connection::run(shared, socket, handle, pushes).await;
                }
                Err(e) => {
                    tracing::debug!("TLS handshake with {peer} failed: {e}");
                    shared.clients.unregister(handle.id);
                }
            }
        });
        return;
    }
    let socket = match socket::Socket::new(stream) {
        Ok(socket) => socket,
        Err(e) => {
            tracing::debug!("cannot serve an accepted connection: {e}");
            return;
        }
    };
    let (handle, pushes) = shared.clients.register(peer.to_string(), laddr, fd);
    conns.spawn(connection::run(shared.clone(), socket, handle, pushes));
}

/// Writes `reply` and closes, as Redis answers a client it will not serve.
async fn refuse(mut stream: TcpStream, reply: &'static str) {
    let _ = stream.write_all(reply.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// Redis's `anetKeepAlive`: probes after `secs` idle, then every third of
/// it, three times, so a vanished peer is noticed and its memory freed.
fn set_keepalive(stream: &TcpStream, secs: u64) {
    if secs == 0 {
        return;
    }
    let every = Duration::from_secs((secs / 3).max(1));
    let keepalive = socket2::TcpKeepalive::new()
        .with_time(Duration::from_secs(secs))
        .with_interval(every)
        .with_retries(3);
    if let Err(e) = socket2::SockRef::from(stream).set_tcp_keepalive(&keepalive) {
        tracing::debug!("cannot set TCP keepalive: {e}");
    }
}

/// The clients' cron (Redis's `clientsCron`, for what zwindow needs of
/// it): idle timeouts, checked ten times a second, and once a second the
/// memory freed by connections (a big request's buffers) handed back to
/// the operating system.
pub(crate) async fn cron(shared: Arc<Services>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut ticks = 0u64;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => return,
        }
        close_idle(&shared);
        resize_query_buffers(&shared);
        shared.migrate.close_idle();
        if shared.tracking.clients() > 0 {
            shared
                .tracking
                .limit(&shared.clients, shared.config.tracking_table_max_keys());
        }
        ticks += 1;
        if ticks.is_multiple_of(10) {
            crate::alloc::release_free_memory();
            uring::trim_buffers();
        }
    }
}

/// Redis's `clientsCronResizeQueryBuffer`: a read buffer wasting more than
/// 4 KB is released after 2 s idle, or trimmed to the usual read size when
/// a big request grew it past 32 KB. The connection does it on request.
fn resize_query_buffers(shared: &Services) {
    const RESIZE_THRESHOLD: usize = 32 * 1024;
    for c in shared.clients.all() {
        let (qbuf, free) = (c.qbuf.load(Relaxed), c.qbuf_free.load(Relaxed));
        if qbuf != 0 || free <= 4 * 1024 {
            continue;
        }
        let idle = c.idle_secs() > 2;
        if idle || free > RESIZE_THRESHOLD {
            let none = crate::config::OutputLimit {
                hard: 0,
                soft: 0,
                soft_secs: 0,
            };
            c.push(crate::clients::Push::ShrinkQuery { idle }, none);
        }
    }
}

/// Closes clients idle for longer than `timeout` seconds, as Redis's
/// `clientsCronHandleTimeout`: never subscribers (RESP2 or RESP3 pub/sub)
/// or blocked clients, whose silence is expected.
fn close_idle(shared: &Services) {
    let timeout = shared.config.timeout_secs();
    if timeout == 0 {
        return;
    }
    for c in shared.clients.all() {
        let subscribed = c.subscriptions() > 0;
        if subscribed || c.blocked.load(Relaxed) {
            continue;
        }
        if c.idle_secs() > timeout {
            tracing::debug!(id = c.id, "closing idle client");
            c.kill();
        }
    }
}
