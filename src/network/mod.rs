//! The network layer: connections in, replies out.
//!
//! [`admit`] decides what becomes of an accepted socket — refused past
//! `maxclients`, denied by protected mode, or registered and served — and
//! [`connection`] runs one client's socket: it reads whatever arrived,
//! hands every complete request to the [`execution`](crate::execution)
//! layer in order, and writes all their replies with one write. The accept
//! loop itself is in [`crate::server::run`], beside signal handling; idle
//! clients are closed by [`close_idle`] from the background cron. The
//! sockets it accepts on — every `bind` address on `port` and `tls-port`,
//! the `unixsocket` — are [`listen`]'s. A connection's socket I/O goes
//! through tokio's epoll reactor or, with `io-uring yes`, through
//! [`uring`]; [`socket`] hides which. A client of `tls-port` goes through
//! [`tls`] (OpenSSL, on the epoll path).

pub(crate) mod bus;
pub(crate) mod connection;
pub(crate) mod feed;
pub(crate) mod link;
pub(crate) mod listen;
pub(crate) mod outbound;
pub(crate) mod socket;
pub(crate) mod tls;
pub mod uring;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::task::JoinSet;

use listen::{Accepted, Peer, Stream};

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
    tls: &tls::Tls,
    accepted: Accepted,
    conns: &mut JoinSet<()>,
) {
    let config = &shared.config;
    let Accepted {
        stream,
        peer,
        tls: secure,
    } = accepted;
    // A client of `tls-port` gets the context current when it connected.
    let ctx = if secure {
        match tls.context() {
            Some(ctx) => Some(ctx),
            None => {
                tracing::warn!("TLS connection refused: TLS is not configured");
                return;
            }
        }
    } else {
        None
    };
    let local = match &peer {
        Peer::Tcp(peer) => is_local(peer),
        Peer::Unix => true,
    };
    let refused = if shared.clients.count() >= config.maxclients() {
        Some("-ERR max number of clients reached\r\n")
    } else if config.protected_mode() && shared.acl.default_nopass() && !local {
        Some(DENIED)
    } else {
        None
    };
    if let Some(reply) = refused {
        shared.stats.rejected_connections.fetch_add(1, Relaxed);
        let reply = if ctx.is_some() { "" } else { reply };
        tokio::spawn(refuse(stream, reply));
        return;
    }
    // CLIENT LIST's addr and laddr: a unix client's are the socket's path
    // and port 0, both ways, as Redis 7.0 prints them.
    let (addr, laddr) = match (&peer, &stream) {
        (Peer::Tcp(peer), Stream::Tcp(s)) => {
            set_keepalive(s, config.tcp_keepalive_secs());
            let laddr = s.local_addr().map(|a| a.to_string()).unwrap_or_default();
            (peer.to_string(), laddr)
        }
        _ => {
            let path = format!("{}:0", config.unixsocket);
            (path.clone(), path)
        }
    };
    let unix = matches!(peer, Peer::Unix);
    let fd = stream.raw_fd();
    if let Some(ctx) = ctx {
        // TLS listeners are TCP ones.
        let Stream::Tcp(stream) = stream else { return };
        let _ = stream.set_nodelay(true);
        let (handle, pushes) = shared.clients.register(addr.clone(), laddr, fd, unix, true);
        let shared = shared.clone();
        conns.spawn(async move {
            match tls::accept(&ctx, &shared.config, stream).await {
                Ok(stream) => {
                    let socket = socket::Socket::Tls(Box::new(stream));
                    connection::run(shared, socket, handle, pushes).await;
                }
                Err(e) => {
                    tracing::debug!("TLS handshake with {addr} failed: {e}");
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
    let (handle, pushes) = shared.clients.register(addr, laddr, fd, unix, false);
    conns.spawn(connection::run(shared.clone(), socket, handle, pushes));
}

/// Writes `reply` and closes, as Redis answers a client it will not serve.
async fn refuse(stream: Stream, reply: &'static str) {
    match stream {
        Stream::Tcp(mut s) => {
            let _ = s.write_all(reply.as_bytes()).await;
            let _ = s.shutdown().await;
        }
        Stream::Unix(mut s) => {
            let _ = s.write_all(reply.as_bytes()).await;
            let _ = s.shutdown().await;
        }
    }
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
        if shared.cron_held() {
            continue;
        }
        close_idle(&shared);
        check_output_limits(&shared);
        feed::failover_cron(&shared);
        resize_query_buffers(&shared);
        shared.migrate.close_idle();
        if shared.tracking.clients() > 0 {
            shared
                .tracking
                .limit(&shared.clients, shared.config.tracking_table_max_keys());
        }
        ticks += 1;
        if ticks.is_multiple_of(10) {
            feed::cron(&shared, ticks / 10);
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
        // The peak since the last look; the next one starts from what is
        // held now (Redis's `querybuf_peak`).
        let peak = c.qbuf_peak.swap(qbuf, Relaxed);
        // A connection that waits (blocked, or writing to a client that
        // does not read) takes no message: it is asked when it can act.
        if free <= 4 * 1024 || c.blocked.load(Relaxed) || c.write.stalled.load(Relaxed) {
            continue;
        }
        let idle = c.idle_secs() > 2;
        // A buffer holding an unfinished request is trimmed to it once the
        // client idles (Redis's sdsRemoveFreeSpace); while it sends, it
        // keeps the room its request needs.
        if qbuf != 0 && !idle {
            continue;
        }
        // As Redis's `clientsCronResizeQueryBuffer`: a big buffer is
        // trimmed once a whole cron period needed less than half of it, so
        // a request that just grew it keeps it until the next look.
        if idle || (free > RESIZE_THRESHOLD && free / (peak + 1) > 2) {
            c.push_unchecked(crate::clients::Push::ShrinkQuery { idle });
        }
    }
}

/// The output buffer limits, as Redis's `clientsCron` applies them to every
/// client besides checking them as output is added: a client that stays
/// over its class's soft limit is closed once the limit's seconds passed,
/// though nothing more is sent to it. Replicas' links apply theirs (see
/// `feed`); this server's link to its primary has none.
fn check_output_limits(shared: &Services) {
    let config = &shared.config;
    let (normal, pubsub) = (config.normal_output_limit(), config.pubsub_output_limit());
    for c in shared.clients.all() {
        if c.role.load(Relaxed) != crate::clients::ROLE_NORMAL {
            continue;
        }
        // Redis's getClientType: a client with subscriptions is of the
        // pubsub class whatever its protocol; a MONITOR is a normal one.
        let limit = if c.subscriptions() > 0 {
            pubsub
        } else {
            normal
        };
        c.check_output_limit(limit);
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
        let replication = c.role.load(Relaxed) != crate::clients::ROLE_NORMAL;
        if subscribed || replication || c.blocked.load(Relaxed) {
            continue;
        }
        if c.idle_secs() > timeout {
            tracing::debug!(id = c.id, "closing idle client");
            c.kill();
        }
    }
}
