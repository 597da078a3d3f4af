//! MIGRATE's side of the wire: the connections to target instances, cached
//! per `host:port` as Redis's `migrate_cached_sockets`, and one transfer —
//! AUTH, SELECT and the RESTOREs written, their one-line replies read —
//! with Redis 7.0's retry rule and error texts (`cluster.c`,
//! `migrateCommand`).
//!
//! The I/O is blocking, with every write and line read bounded by the
//! command's timeout. Redis blocks its whole server for it; zwindow runs it
//! on a blocking thread of its own, with no shard held, so only the calling
//! client waits (see `execution::execute`). Inside EXEC or a script, which
//! cannot pause half-way, and in cluster mode, where a write to a key in
//! flight would leave it on both nodes, it runs in place, holding the keys'
//! shards, as Redis runs it.
//!
//! The command itself (arguments, the DUMP payloads, removing the keys the
//! target acknowledged) is `commands/migrate.rs`.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Redis's `MIGRATE_SOCKET_CACHE_ITEMS`: at most this many cached targets.
const CACHE_ITEMS: usize = 64;
/// Redis's `MIGRATE_SOCKET_CACHE_TTL`: a connection unused this long closes.
const CACHE_TTL: Duration = Duration::from_secs(10);
/// Writes go out in pieces this size, each within the timeout (as Redis).
const CHUNK: usize = 64 * 1024;
/// A reply line longer than this is not a Redis server's: the link is
/// dropped rather than buffering without bound.
const MAX_LINE: usize = 64 * 1024;
/// Redis reads each reply into a 1024-byte buffer: an error it forwards
/// is at most this long.
const ERROR_TEXT_MAX: usize = 1021;

/// A connection to a target instance.
struct TargetConn {
    stream: TcpStream,
    /// Bytes read past the last reply line.
    buf: Vec<u8>,
    /// The database the last successful transfer selected (SELECT is not
    /// repeated); None after any error, as Redis's `last_dbid = -1`.
    last_db: Option<i64>,
}

struct Cached {
    /// None while a transfer uses the connection.
    conn: Option<TargetConn>,
    last_use: Instant,
}

/// The cached connections, by `host:port` as the client spelled them.
#[derive(Default)]
pub(crate) struct SocketCache {
    map: Mutex<HashMap<Vec<u8>, Cached>>,
}

impl SocketCache {
    /// INFO's `migrate_cached_sockets`.
    pub(crate) fn len(&self) -> usize {
        self.map.lock().len()
    }

    /// Closes connections idle for longer than Redis's 10 seconds (from
    /// the clients' cron, as Redis's `migrateCloseTimedoutSockets`).
    pub(crate) fn close_idle(&self) {
        self.map
            .lock()
            .retain(|_, c| c.conn.is_none() || c.last_use.elapsed() <= CACHE_TTL);
    }

    /// Takes the cached connection to `name`, or opens one (dropping an
    /// arbitrary cached one when the cache is full).
    fn get(
        &self,
        name: &[u8],
        host: &[u8],
        port: u16,
        timeout: Duration,
    ) -> Result<TargetConn, ConnectError> {
        {
            let mut map = self.map.lock();
            if let Some(c) = map.get_mut(name)
                && let Some(conn) = c.conn.take()
            {
                c.last_use = Instant::now();
                return Ok(conn);
            }
        }
        let stream = connect(host, port, timeout)?;
        let _ = stream.set_nodelay(true);
        let mut map = self.map.lock();
        if map.len() >= CACHE_ITEMS
            && !map.contains_key(name)
            && let Some(victim) = map.keys().next().cloned()
        {
            map.remove(&victim);
        }
        map.insert(
            name.to_vec(),
            Cached {
                conn: None,
                last_use: Instant::now(),
            },
        );
        Ok(TargetConn {
            stream,
            buf: Vec::new(),
            last_db: None,
        })
    }

    /// Gives a healthy connection back to the cache.
    fn put(&self, name: &[u8], conn: TargetConn) {
        let mut map = self.map.lock();
        let c = map.entry(name.to_vec()).or_insert(Cached {
            conn: None,
            last_use: Instant::now(),
        });
        c.conn = Some(conn);
        c.last_use = Instant::now();
    }

    /// Forgets `name` after a socket error (Redis's `migrateCloseSocket`);
    /// the connection itself is dropped by the caller.
    fn close(&self, name: &[u8]) {
        self.map.lock().remove(name);
    }
}

/// Why no connection was made.
enum ConnectError {
    /// The address did not resolve: Redis's only "connecting" error.
    Resolve,
    /// Refused, unreachable or out of time: Redis's non-blocking connect
    /// reports these only when it writes, so they count as write errors.
    Io(IoError),
}

/// Connects to `host:port` within `timeout` (every resolved address tried
/// within what is left of it).
fn connect(host: &[u8], port: u16, timeout: Duration) -> Result<TcpStream, ConnectError> {
    let deadline = deadline_after(timeout);
    let host = std::str::from_utf8(host).map_err(|_| ConnectError::Resolve)?;
    let addrs: Vec<_> = (host, port)
        .to_socket_addrs()
        .map_err(|_| ConnectError::Resolve)?
        .collect();
    if addrs.is_empty() {
        return Err(ConnectError::Resolve);
    }
    let mut last = IoError::Other;
    for addr in addrs {
        let left = left_until(deadline).map_err(ConnectError::Io)?;
        match TcpStream::connect_timeout(&addr, left) {
            Ok(s) => return Ok(s),
            Err(e) => last = io_kind(&e),
        }
    }
    Err(ConnectError::Io(last))
}

/// One key to send: `RESTORE key ttl payload [REPLACE]`.
pub(crate) struct Item {
    pub(crate) key: Vec<u8>,
    /// Milliseconds left, 0 for none.
    pub(crate) ttl: u64,
    pub(crate) payload: Vec<u8>,
}

/// Everything one MIGRATE sends, prepared while the keys were locked.
pub(crate) struct Transfer {
    pub(crate) host: Vec<u8>,
    pub(crate) port: u16,
    pub(crate) db: i64,
    pub(crate) timeout: Duration,
    pub(crate) replace: bool,
    pub(crate) copy: bool,
    pub(crate) auth: Option<(Option<Vec<u8>>, Vec<u8>)>,
    pub(crate) items: Vec<Item>,
    /// The source database of the keys.
    pub(crate) source_db: usize,
    /// Cluster mode: the keys go as RESTORE-ASKING, which the target
    /// serves in a slot it is importing (as Redis's `migrateCommand`).
    pub(crate) asking: bool,
}

/// Shows the target and the keys' count, never the password or payloads.
impl std::fmt::Debug for Transfer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transfer")
            .field("host", &String::from_utf8_lossy(&self.host))
            .field("port", &self.port)
            .field("db", &self.db)
            .field("keys", &self.items.len())
            .finish_non_exhaustive()
    }
}

/// What a transfer came to: the keys the target acknowledged (removed
/// locally unless COPY) and the reply, None for `+OK`.
pub(crate) struct Outcome {
    pub(crate) acked: Vec<usize>,
    pub(crate) error: Option<Vec<u8>>,
}

/// How an I/O step failed.
enum IoError {
    /// The timeout ran out: Redis never retries then.
    Timeout,
    Other,
}

impl TargetConn {
    fn write_all(&mut self, data: &[u8], timeout: Duration) -> Result<(), IoError> {
        for chunk in data.chunks(CHUNK) {
            let deadline = deadline_after(timeout);
            let mut pos = 0;
            while pos < chunk.len() {
                let left = left_until(deadline)?;
                let _ = self.stream.set_write_timeout(Some(left));
                match self.stream.write(&chunk[pos..]) {
                    Ok(0) => return Err(IoError::Other),
                    Ok(n) => pos += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(io_kind(&e)),
                }
            }
        }
        Ok(())
    }

    /// One reply line without its CRLF, within `timeout`.
    fn read_line(&mut self, timeout: Duration) -> Result<Vec<u8>, IoError> {
        let deadline = deadline_after(timeout);
        loop {
            if let Some(at) = self.buf.iter().position(|&b| b == b'\n') {
                let mut line: Vec<u8> = self.buf.drain(..=at).collect();
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Ok(line);
            }
            if self.buf.len() > MAX_LINE {
                return Err(IoError::Other);
            }
            let left = left_until(deadline)?;
            let _ = self.stream.set_read_timeout(Some(left));
            let mut chunk = [0u8; 4096];
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err(IoError::Other),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                // A signal to this thread is no failure of the link.
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_kind(&e)),
            }
        }
    }
}

/// `timeout` from now; a timeout too large for the clock (a client may
/// give any `long`) is as good as none: a year.
fn deadline_after(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout)
        .unwrap_or_else(|| now + Duration::from_secs(365 * 24 * 3600))
}

fn left_until(deadline: Instant) -> Result<Duration, IoError> {
    match deadline.checked_duration_since(Instant::now()) {
        Some(d) if !d.is_zero() => Ok(d),
        _ => Err(IoError::Timeout),
    }
}

fn io_kind(e: &std::io::Error) -> IoError {
    match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => IoError::Timeout,
        _ => IoError::Other,
    }
}

fn bulk(out: &mut Vec<u8>, arg: &[u8]) {
    out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
    out.extend_from_slice(arg);
    out.extend_from_slice(b"\r\n");
}

fn command(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        bulk(out, a);
    }
}

/// Runs one transfer to the end: Redis's `migrateCommand` from its
/// `try_again` label, including the one retry on a fresh connection when
/// a cached one turns out dead (never after a timeout).
pub(crate) fn run(cache: &SocketCache, t: &Transfer) -> Outcome {
    let mut name = t.host.clone();
    name.push(b':');
    name.extend_from_slice(t.port.to_string().as_bytes());
    let mut may_retry = true;
    loop {
        let step = match cache.get(&name, &t.host, t.port, t.timeout) {
            Ok(conn) => attempt(cache, &name, conn, t),
            Err(ConnectError::Resolve) => {
                return Outcome {
                    acked: Vec::new(),
                    error: Some(b"IOERR error or timeout connecting to the client".to_vec()),
                };
            }
            Err(ConnectError::Io(e)) => Step::SocketError {
                acked: Vec::new(),
                writing: true,
                timeout: matches!(e, IoError::Timeout),
            },
        };
        match step {
            Step::Done { acked, error } => return Outcome { acked, error },
            Step::TargetErrorThenSocket { acked, error } => {
                cache.close(&name);
                return Outcome {
                    acked,
                    error: Some(error),
                };
            }
            Step::SocketError {
                acked,
                writing,
                timeout,
            } => {
                cache.close(&name);
                if acked.is_empty() && !timeout && may_retry {
                    may_retry = false;
                    continue;
                }
                let what = if writing { "writing" } else { "reading" };
                return Outcome {
                    acked,
                    error: Some(
                        format!("IOERR error or timeout {what} to target instance").into_bytes(),
                    ),
                };
            }
        }
    }
}

/// One attempt on one connection, which goes back to the cache when the
/// link stayed healthy.
fn attempt(cache: &SocketCache, name: &[u8], mut conn: TargetConn, t: &Transfer) -> Step {
    let select = conn.last_db != Some(t.db);
    let mut out = Vec::new();
    if let Some((user, password)) = &t.auth {
        match user {
            Some(u) => command(&mut out, &[b"AUTH", u, password]),
            None => command(&mut out, &[b"AUTH", password]),
        }
    }
    if select {
        command(&mut out, &[b"SELECT", t.db.to_string().as_bytes()]);
    }
    for item in &t.items {
        let ttl = item.ttl.to_string();
        let restore: &[u8] = if t.asking {
            b"RESTORE-ASKING"
        } else {
            b"RESTORE"
        };
        let mut args: Vec<&[u8]> = vec![restore, &item.key, ttl.as_bytes(), &item.payload];
        if t.replace {
            args.push(b"REPLACE");
        }
        command(&mut out, &args);
    }
    match transfer(&mut conn, t, &out, select) {
        Ok(Step::Done { acked, error }) => {
            conn.last_db = if error.is_none() { Some(t.db) } else { None };
            cache.put(name, conn);
            Step::Done { acked, error }
        }
        Ok(step) | Err(step) => step,
    }
}

/// How one attempt ended.
enum Step {
    /// Every reply read (some may be errors from the target).
    Done {
        acked: Vec<usize>,
        error: Option<Vec<u8>>,
    },
    /// The target answered an error, then the link failed.
    TargetErrorThenSocket { acked: Vec<usize>, error: Vec<u8> },
    /// The link failed before any error from the target.
    SocketError {
        acked: Vec<usize>,
        writing: bool,
        timeout: bool,
    },
}

fn transfer(conn: &mut TargetConn, t: &Transfer, out: &[u8], select: bool) -> Result<Step, Step> {
    let socket = |acked: Vec<usize>, writing: bool, e: IoError| Step::SocketError {
        acked,
        writing,
        timeout: matches!(e, IoError::Timeout),
    };
    conn.write_all(out, t.timeout)
        .map_err(|e| socket(Vec::new(), true, e))?;
    let auth_reply = match &t.auth {
        Some(_) => Some(
            conn.read_line(t.timeout)
                .map_err(|e| socket(Vec::new(), false, e))?,
        ),
        None => None,
    };
    let select_reply = if select {
        Some(
            conn.read_line(t.timeout)
                .map_err(|e| socket(Vec::new(), false, e))?,
        )
    } else {
        None
    };
    let failed = |r: &Option<Vec<u8>>| r.as_ref().is_some_and(|l| l.first() == Some(&b'-'));
    let mut acked = Vec::new();
    let mut error: Option<Vec<u8>> = None;
    for j in 0..t.items.len() {
        let line = match conn.read_line(t.timeout) {
            Ok(l) => l,
            Err(e) => {
                return Err(match error {
                    Some(error) => Step::TargetErrorThenSocket { acked, error },
                    // Redis retries only when nothing was acknowledged;
                    // `run` decides from `acked`.
                    None if j == 0 => socket(acked, false, e),
                    None => Step::SocketError {
                        acked,
                        writing: false,
                        // Keys already moved: no retry either way.
                        timeout: true,
                    },
                });
            }
        };
        if failed(&auth_reply) || failed(&select_reply) || line.first() == Some(&b'-') {
            if error.is_none() {
                let from = if failed(&auth_reply) {
                    auth_reply.as_deref().unwrap_or_default()
                } else if failed(&select_reply) {
                    select_reply.as_deref().unwrap_or_default()
                } else {
                    &line
                };
                error = Some(target_error(from));
            }
        } else {
            acked.push(j);
        }
    }
    Ok(Step::Done { acked, error })
}

/// `ERR Target instance replied with error: …`, with the target's line
/// (minus its `-`) cut as Redis's 1024-byte buffer cuts it, and line
/// breaks made spaces as Redis's error replies make them.
fn target_error(line: &[u8]) -> Vec<u8> {
    let text = line.get(1..).unwrap_or_default();
    let text = &text[..text.len().min(ERROR_TEXT_MAX)];
    let mut msg = b"ERR Target instance replied with error: ".to_vec();
    msg.extend(
        text.iter()
            .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
    );
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_timeouts_do_not_overflow() {
        let d = deadline_after(Duration::from_millis(i64::MAX as u64));
        assert!(d > Instant::now());
    }

    #[test]
    fn target_errors_are_quoted_bounded() {
        assert_eq!(
            target_error(b"-ERR invalid password"),
            b"ERR Target instance replied with error: ERR invalid password"
        );
        let long = [b"-".to_vec(), vec![b'x'; 5000]].concat();
        assert_eq!(
            target_error(&long).len(),
            "ERR Target instance replied with error: ".len() + ERROR_TEXT_MAX
        );
    }

    #[test]
    fn a_refused_connection_is_a_write_error() {
        let cache = SocketCache::default();
        // A port nothing listens on (bound, then released).
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap_or(1);
        let t = Transfer {
            host: b"127.0.0.1".to_vec(),
            port,
            db: 0,
            timeout: Duration::from_millis(200),
            replace: false,
            copy: false,
            auth: None,
            items: vec![Item {
                key: b"k".to_vec(),
                ttl: 0,
                payload: Vec::new(),
            }],
            source_db: 0,
            asking: false,
        };
        // Redis's non-blocking connect "succeeds"; its write fails, and
        // so does the one retry.
        let o = run(&cache, &t);
        assert_eq!(
            o.error.as_deref(),
            Some(&b"IOERR error or timeout writing to target instance"[..])
        );
        assert_eq!(cache.len(), 0);
    }
}
