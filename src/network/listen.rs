//! The listening sockets, as Redis 7.0 opens them: a TCP socket for every
//! `bind` address on `port` (`listenToPort`: a `-` address is optional,
//! `*` is every IPv4 interface, `::*` every IPv6 one), and the
//! `unixsocket` (`anetUnixServer`), and a TCP socket for every `bind`
//! address on `tls-port`, whose clients speak TLS. The accept loop
//! ([`crate::server::run`]) takes connections from all of them through
//! one [`Listeners::accept`], whatever their kind; CONFIG SET `bind` and
//! `port` swap the TCP ones through [`Listeners::rebind`] meanwhile, and
//! `tls-port` the TLS ones through [`Listeners::rebind_tls`].

use std::future::poll_fn;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::task::{Context, Poll, Waker};

use parking_lot::Mutex;
use socket2::{Domain, SockAddr, Socket, Type};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};

use crate::config::Config;
use crate::config_file::strerror;

/// An accepted connection's socket.
pub(crate) enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    /// The descriptor, for the io_uring driver (which serves any stream
    /// socket alike).
    pub(crate) fn into_fd(self) -> std::io::Result<OwnedFd> {
        Ok(match self {
            Stream::Tcp(s) => s.into_std()?.into(),
            Stream::Unix(s) => s.into_std()?.into(),
        })
    }

    pub(crate) fn raw_fd(&self) -> RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
        }
    }
}

/// Who connected: a TCP peer, or a client of the unix socket (always
/// local, as Redis's `connIsLocal` says of them).
pub(crate) enum Peer {
    Tcp(SocketAddr),
    Unix,
}

/// What [`Listeners::accept`] hands the accept loop.
pub(crate) struct Accepted {
    pub(crate) stream: Stream,
    pub(crate) peer: Peer,
    /// Accepted on `tls-port`: the client speaks TLS.
    pub(crate) tls: bool,
}

/// Every socket the server listens on.
pub(crate) struct Listeners {
    state: Mutex<State>,
    backlog: u32,
}

struct State {
    tcp: Vec<TcpListener>,
    /// The TCP listeners' `bind` addresses and port, bound again when a
    /// rebind fails.
    addrs: Vec<String>,
    port: u16,
    /// The `tls-port` listeners, on the same addresses, and their port.
    tls: Vec<TcpListener>,
    tls_port: u16,
    /// The unix socket and its path (removed at [`Listeners::close`]).
    unix: Option<(UnixListener, String)>,
    /// Where the next poll starts, so that a busy listener does not
    /// starve the others.
    next: usize,
    /// The accept loop's waker: a rebind wakes it to poll the new sockets.
    waker: Option<Waker>,
    closed: bool,
}

impl Listeners {
    /// Opens what the config asks for, or fails with Redis's last log line
    /// (the lines before it are logged here). `port 0` listens on no TCP
    /// socket when there is a unix socket (Redis's meaning), and otherwise
    /// on a free port, shared by every bind address (zwindow's: tests and
    /// tools start servers that way); `config.port` becomes that port.
    pub(crate) fn open(config: &Config) -> Result<Listeners, String> {
        let backlog = config.tcp_backlog;
        let addrs = crate::config::bind_addrs(&config.bind());
        let port = config.port.load(std::sync::atomic::Ordering::Relaxed) as u16;
        let path = config.unixsocket.clone();
        let mut tcp = Vec::new();
        if port != 0 || path.is_empty() {
            tcp = bind_tcp(&addrs, port, backlog)
                .map_err(|()| format!("Failed listening on port {port} (TCP), aborting."))?;
        }
        let port = match tcp.first().map(std::net::TcpListener::local_addr) {
            Some(Ok(local)) => local.port(),
            _ => port,
        };
        config
            .port
            .store(u32::from(port), std::sync::atomic::Ordering::Relaxed);
        let tls_port = config.tls_port();
        let mut tls = Vec::new();
        if tls_port != 0 {
            tls = bind_tcp(&addrs, tls_port, backlog)
                .map_err(|()| format!("Failed listening on port {tls_port} (TLS), aborting."))?;
        }
        let unix = if path.is_empty() {
            None
        } else {
            let listener = bind_unix(&path, config.unixsocketperm, backlog)
                .map_err(|e| format!("Failed opening Unix socket: {e}"))?;
            Some((listener, path))
        };
        if tcp.is_empty() && tls.is_empty() && unix.is_none() {
            return Err("Configured to not listen anywhere, exiting.".into());
        }
        let tcp = tcp
            .into_iter()
            .map(TcpListener::from_std)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        let tls = tls
            .into_iter()
            .map(TcpListener::from_std)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        let unix = match unix {
            Some((l, path)) => Some((UnixListener::from_std(l).map_err(|e| e.to_string())?, path)),
            None => None,
        };
        Ok(Listeners {
            state: Mutex::new(State {
                tcp,
                addrs,
                port,
                tls,
                tls_port,
                unix,
                next: 0,
                waker: None,
                closed: false,
            }),
            backlog,
        })
    }

    /// Where the server listens, for its startup line: the TCP addresses
    /// (`127.0.0.1:6379`) then the unix socket's path.
    pub(crate) fn describe(&self) -> Vec<String> {
        let st = self.state.lock();
        let tcp = st.tcp.iter().filter_map(|l| l.local_addr().ok());
        let tls = st.tls.iter().filter_map(|l| l.local_addr().ok());
        tcp.map(|a| a.to_string())
            .chain(tls.map(|a| format!("{a} (TLS)")))
            .chain(st.unix.as_ref().map(|(_, path)| path.clone()))
            .collect()
    }

    pub(crate) fn has_tcp(&self) -> bool {
        !self.state.lock().tcp.is_empty()
    }

    pub(crate) fn has_tls(&self) -> bool {
        !self.state.lock().tls.is_empty()
    }

    pub(crate) fn unix_path(&self) -> Option<String> {
        self.state.lock().unix.as_ref().map(|(_, p)| p.clone())
    }

    /// The next connection on any listener; never, while there is none
    /// (`port 0`, `bind ""`) until a rebind opens some.
    pub(crate) async fn accept(&self) -> std::io::Result<Accepted> {
        poll_fn(|cx| self.poll_accept(cx)).await
    }

    fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<std::io::Result<Accepted>> {
        let mut st = self.state.lock();
        let (tcp, tls) = (st.tcp.len(), st.tls.len());
        let count = tcp + tls + usize::from(st.unix.is_some());
        for i in 0..count {
            let at = (st.next + i) % count;
            let tcp_accept = |l: &TcpListener, tls: bool, cx: &mut Context<'_>| {
                l.poll_accept(cx).map_ok(|(s, peer)| Accepted {
                    stream: Stream::Tcp(s),
                    peer: Peer::Tcp(peer),
                    tls,
                })
            };
            let polled = if at < tcp {
                tcp_accept(&st.tcp[at], false, cx)
            } else if at < tcp + tls {
                tcp_accept(&st.tls[at - tcp], true, cx)
            } else {
                match &st.unix {
                    Some((l, _)) => l.poll_accept(cx).map_ok(|(s, _)| Accepted {
                        stream: Stream::Unix(s),
                        peer: Peer::Unix,
                        tls: false,
                    }),
                    None => Poll::Pending,
                }
            };
            if polled.is_ready() {
                st.next = at + 1;
                return polled;
            }
        }
        if !st.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            st.waker = Some(cx.waker().clone());
        }
        Poll::Pending
    }

    /// CONFIG SET `bind` / `port`: listens on every address of `addrs` at
    /// `port` instead (none for port 0), all or none, as Redis's
    /// `changeBindAddr`: the old sockets close first (a new one may take
    /// an address they hold), and if a new one cannot be bound the old
    /// ones are bound again. Fails with what was logged.
    pub(crate) fn rebind(&self, addrs: &[String], port: u16) -> Result<(), String> {
        let mut st = self.state.lock();
        if st.closed {
            return Err("the server is shutting down".into());
        }
        st.tcp.clear();
        st.tls.clear();
        let tls_port = st.tls_port;
        let bind = |port: u16| {
            if port == 0 {
                Ok(Vec::new())
            } else {
                bind_tcp(addrs, port, self.backlog).and_then(|l| register(l).map_err(drop))
            }
        };
        // Both or neither (Redis's `changeBindAddr` rebinds `tls-port` too).
        let bound = bind(port).and_then(|tcp| bind(tls_port).map(|tls| (tcp, tls)));
        match bound {
            Ok((tcp, tls)) => {
                st.tcp = tcp;
                st.tls = tls;
                st.addrs = addrs.to_vec();
                st.port = port;
            }
            Err(()) => {
                tracing::warn!("Failed to bind");
                tracing::warn!(
                    "Failed applying new configuration. Possibly related to new bind setting. Restoring previous settings."
                );
                let (old, old_port) = (st.addrs.clone(), st.port);
                for (port, tls) in [(old_port, false), (tls_port, true)] {
                    if port == 0 {
                        continue;
                    }
                    match bind_tcp(&old, port, self.backlog).map(register) {
                        Ok(Ok(listeners)) if tls => st.tls = listeners,
                        Ok(Ok(listeners)) => st.tcp = listeners,
                        _ => tracing::warn!(
                            "Failed restoring failed CONFIG SET command: cannot listen on the previous addresses"
                        ),
                    }
                }
                if let Some(w) = st.waker.take() {
                    w.wake();
                }
                return Err("Failed to bind".into());
            }
        }
        if let Some(w) = st.waker.take() {
            w.wake();
        }
        Ok(())
    }

    /// CONFIG SET `tls-port`: listens on every `bind` address at `port`
    /// instead (none for 0), as Redis's `changeListenPort`: the old sockets
    /// close in the command (a command right after may bind that port),
    /// and if the new port cannot be bound the old one is bound again.
    /// The port the TLS listeners have already is kept as it is.
    pub(crate) fn rebind_tls(&self, port: u16) -> Result<(), String> {
        let mut st = self.state.lock();
        if st.closed {
            return Err("the server is shutting down".into());
        }
        if port == st.tls_port && (port == 0 || !st.tls.is_empty()) {
            return Ok(());
        }
        st.tls.clear();
        let addrs = st.addrs.clone();
        let bound = if port == 0 {
            Ok(Vec::new())
        } else {
            bind_tcp(&addrs, port, self.backlog).and_then(|l| register(l).map_err(drop))
        };
        let result = match bound {
            Ok(new) => {
                st.tls = new;
                st.tls_port = port;
                Ok(())
            }
            Err(()) => {
                let old = st.tls_port;
                if old != 0 {
                    match bind_tcp(&addrs, old, self.backlog).map(register) {
                        Ok(Ok(listeners)) => st.tls = listeners,
                        _ => tracing::warn!(
                            "Failed restoring failed CONFIG SET command: cannot listen on the previous TLS port"
                        ),
                    }
                }
                Err("Unable to listen on this port. Check server logs.".into())
            }
        };
        if let Some(w) = st.waker.take() {
            w.wake();
        }
        result
    }

    /// Stops listening, at shutdown: the sockets close and the unix
    /// socket's file is removed, as Redis's `closeListeningSockets`.
    pub(crate) fn close(&self) {
        let mut st = self.state.lock();
        st.closed = true;
        st.tcp.clear();
        st.tls.clear();
        if let Some((listener, path)) = st.unix.take() {
            drop(listener);
            tracing::info!("Removing the unix socket file.");
            if let Err(e) = std::fs::remove_file(&path) {
                tracing::warn!("Error removing the unix socket file: {}", strerror(&e));
            }
        }
    }
}

/// Registers freshly bound sockets with the runtime's reactor (CONFIG SET
/// runs on a connection's task, inside it; anywhere else it fails rather
/// than panics).
fn register(listeners: Vec<std::net::TcpListener>) -> std::io::Result<Vec<TcpListener>> {
    if tokio::runtime::Handle::try_current().is_err() {
        return Err(std::io::Error::other("no runtime to listen on"));
    }
    listeners.into_iter().map(TcpListener::from_std).collect()
}

/// Redis's `listenToPort`: a socket on every address, logging each that
/// fails. An optional (`-`) address that does not exist here is skipped,
/// and so is one of an address family the machine lacks (IPv6 disabled);
/// any other failure closes those already bound and fails. Port 0 binds
/// the first address on a free port and the others on the same one.
pub(crate) fn bind_tcp(
    addrs: &[String],
    mut port: u16,
    backlog: u32,
) -> Result<Vec<std::net::TcpListener>, ()> {
    let mut bound = Vec::with_capacity(addrs.len());
    for spec in addrs {
        let (optional, addr) = match spec.strip_prefix('-') {
            Some(addr) => (true, addr),
            None => (false, spec.as_str()),
        };
        match bind_one(addr, port, backlog) {
            Ok(listener) => {
                if port == 0 {
                    port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
                }
                bound.push(listener);
            }
            Err((errno, why)) => {
                tracing::warn!(
                    "Warning: Could not create server TCP listening socket {addr}:{port}: {why}"
                );
                let skipped = match errno {
                    Some(libc::EADDRNOTAVAIL) => optional,
                    Some(
                        libc::ENOPROTOOPT
                        | libc::EPROTONOSUPPORT
                        | libc::ESOCKTNOSUPPORT
                        | libc::EPFNOSUPPORT
                        | libc::EAFNOSUPPORT,
                    ) => true,
                    _ => false,
                };
                if !skipped {
                    return Err(());
                }
            }
        }
    }
    Ok(bound)
}

/// Redis's `_anetTcpServer` for one address: IPv6 when it has a colon,
/// IPv4 otherwise; the first address it resolves to, with `SO_REUSEADDR`
/// (and `IPV6_V6ONLY`, so `*` and `::*` can share a port). The error is
/// the errno and Redis's text (`bind: Address already in use`).
fn bind_one(
    addr: &str,
    port: u16,
    backlog: u32,
) -> Result<std::net::TcpListener, (Option<i32>, String)> {
    let v6 = addr.contains(':');
    let target: SocketAddr = match addr {
        "*" if !v6 => (Ipv4Addr::UNSPECIFIED, port).into(),
        "::*" => (Ipv6Addr::UNSPECIFIED, port).into(),
        _ => {
            let resolved = (addr, port).to_socket_addrs().map_err(|e| {
                let text = e.to_string();
                let gai = text
                    .strip_prefix("failed to lookup address information: ")
                    .unwrap_or(&text);
                (None, gai.to_string())
            })?;
            resolved
                .into_iter()
                .find(|a| a.is_ipv6() == v6)
                .ok_or((None, "Name or service not known".to_string()))?
        }
    };
    let failed =
        |what: &str, e: std::io::Error| (e.raw_os_error(), format!("{what}{}", strerror(&e)));
    let socket = Socket::new(Domain::for_address(target), Type::STREAM, None).map_err(|e| {
        let errno = e.raw_os_error();
        (
            errno,
            format!("unable to bind socket, errno: {}", errno.unwrap_or(0)),
        )
    })?;
    if v6 {
        socket
            .set_only_v6(true)
            .map_err(|e| failed("setsockopt: ", e))?;
    }
    socket
        .set_reuse_address(true)
        .map_err(|e| failed("setsockopt SO_REUSEADDR: ", e))?;
    socket
        .bind(&target.into())
        .map_err(|e| failed("bind: ", e))?;
    socket
        .listen(i32::try_from(backlog).unwrap_or(i32::MAX))
        .map_err(|e| failed("listen: ", e))?;
    socket
        .set_nonblocking(true)
        .map_err(|e| failed("fcntl(F_SETFL,O_NONBLOCK): ", e))?;
    Ok(socket.into())
}

/// Redis's `anetUnixServer`, after removing whatever file is at `path`
/// (a socket left by a server that did not stop cleanly): mode `perm`
/// when it is not 0, set before the socket listens.
fn bind_unix(
    path: &str,
    perm: u32,
    backlog: u32,
) -> Result<std::os::unix::net::UnixListener, String> {
    // sockaddr_un's sun_path, less its terminating NUL.
    const SUN_PATH: usize = 108;
    if path.len() > SUN_PATH - 1 {
        return Err(format!(
            "unix socket path too long ({}), must be under {SUN_PATH}",
            path.len()
        ));
    }
    let _ = std::fs::remove_file(path);
    let socket = Socket::new(Domain::UNIX, Type::STREAM, None)
        .map_err(|e| format!("creating socket: {}", strerror(&e)))?;
    let addr = SockAddr::unix(path).map_err(|e| format!("bind: {}", strerror(&e)))?;
    socket
        .bind(&addr)
        .map_err(|e| format!("bind: {}", strerror(&e)))?;
    if perm != 0 {
        use std::os::unix::fs::PermissionsExt;
        // Not fatal, as in Redis (which does not look at chmod's result).
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(perm));
    }
    socket
        .listen(i32::try_from(backlog).unwrap_or(i32::MAX))
        .map_err(|e| format!("listen: {}", strerror(&e)))?;
    socket
        .set_nonblocking(true)
        .map_err(|e| format!("fcntl: {}", strerror(&e)))?;
    Ok(std::os::unix::net::UnixListener::from(OwnedFd::from(
        socket,
    )))
}
