//! The link to this server's primary when it is a replica (Redis 7.0's
//! `connectWithMaster`, `syncWithMaster`, `readSyncBulkPayload` and the
//! master client), replica side of PSYNC2.
//!
//! [`supervise`] runs for the server's life: it waits on
//! `Replication::primary_changed` and runs one link at a time for the
//! primary REPLICAOF (or `replicaof` in the config) names, reconnecting
//! a second after a link ends, as Redis's replication cron does. A link:
//! connects (over TLS with `tls-replication yes`, see [`super::tls`]), performs
//! Redis 7.0's handshake (PING, AUTH, REPLCONF listening-port / ip-address
//! / capa, PSYNC), then either receives the primary's RDB (full sync) and
//! loads it, or continues where this server's history ends (`+CONTINUE`);
//! with `repl-rdb-channel` and a Redis 8.0 primary that offers it
//! (`+RDBCHANNELSYNC`), the RDB comes over a second connection while this
//! one buffers the stream that follows the snapshot ([`rdb_channel_sync`]);
//! then it applies the primary's stream as the master client, a client
//! registered like any other (CLIENT LIST's `M`) whose commands go
//! through the execution layer, replies discarded. Each command applied
//! is appended to this server's own stream ([`Replication::feed_raw`]),
//! which moves its offset; `REPLCONF ACK <offset>` goes back every second
//! and on `REPLCONF GETACK`.

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::commands::Services;
use crate::commands::session::Client;
use crate::execution::{Ran, execute_now, execute_rest};
use crate::protocol::{Args, Parser, Reply};
use crate::replication::{LinkState, Primary, Replication, encode};
use crate::util::eq_ic;

use super::tls::Tls;

/// Redis's replication cron period: a failed link is retried after it.
const RETRY: Duration = Duration::from_secs(1);
/// The longest line the handshake accepts from the primary.
const MAX_LINE: usize = 64 * 1024;
/// Bytes read per syscall at least.
const READ_CHUNK: usize = 64 * 1024;
/// The `$EOF:` mark's length.
const EOF_MARK: usize = 40;

/// Where the server becomes or stops being a replica: the one place the
/// keyspace's replica mode is switched (no expiry of its own, the
/// primary's DELs instead).
pub(crate) fn set_replica_mode(shared: &Services, on: bool) {
    tracing::debug!("replica mode {}", if on { "on" } else { "off" });
    shared.store.set_replica(on);
}

/// At startup, after the dataset loaded: `replicaof` in the config makes
/// this server a replica, continuing the history its RDB file recorded
/// if it carried one (Redis's `rsi`), else asking for a full sync.
fn start_as_configured(shared: &Services) {
    let Some((host, port)) = shared.config.replicaof() else {
        return;
    };
    let r = &shared.replication;
    let restored = shared.persistence.last_load.lock().repl;
    match restored {
        Some(info) if !shared.config.appendonly() => {
            let replid = String::from_utf8_lossy(&info.replid).into_owned();
            r.restore_history(&replid, info.offset, info.stream_db);
        }
        _ => r.forget_history(),
    }
    r.set_primary(Primary { host, port });
}

/// The link supervisor (see the module's doc), until shutdown. `tls`: the
/// server's contexts, for `tls-replication`.
pub(crate) async fn supervise(shared: Arc<Services>, tls: Arc<Tls>) {
    start_as_configured(&shared);
    let mut shutdown = shared.shutdown_rx();
    let mut replica = false;
    loop {
        let changed = shared.replication.primary_changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        let primary = shared.replication.primary();
        if primary.is_some() != replica {
            replica = primary.is_some();
            set_replica_mode(&shared, replica);
        }
        let links = async {
            let Some(primary) = primary else {
                return std::future::pending::<()>().await;
            };
            loop {
                let at_once = run_link(&shared, &tls, &primary).await;
                link_down(&shared);
                if !at_once {
                    tokio::time::sleep(RETRY).await;
                }
            }
        };
        tokio::select! {
            _ = changed => {}
            _ = shutdown.changed() => return,
            _ = links => {}
        }
        // A link dropped midway (REPLICAOF elsewhere or NO ONE).
        link_down(&shared);
    }
}

/// The link is not up (any more): INFO's `master_link_down_since_seconds`
/// counts from the first moment it is not.
fn link_down(shared: &Services) {
    let r = &shared.replication;
    if r.link_state() == LinkState::Connected || r.link_down_since.load(Relaxed) == 0 {
        r.link_down_since
            .store(shared.clock.now_ms() / 1000, Relaxed);
    }
    // The stream's database stays: a partial resync continues in it
    // (Redis's cached master keeps its `db`).
    if r.is_replica() {
        r.set_link_state(LinkState::Connect);
    }
}

/// Why a link ended: logged where it happens; the supervisor retries.
struct Failed;

type Step<T> = Result<T, Failed>;

/// The socket to the primary (TCP, or TLS over it: the halves hide
/// which) and what was read but not yet used.
struct Conn {
    rd: Box<dyn AsyncRead + Send + Unpin>,
    wr: Box<dyn AsyncWrite + Send + Unpin>,
    buf: BytesMut,
    /// For writes: `repl-timeout` as the link started.
    timeout: Duration,
    /// The last read, against which `fill` measures `repl-timeout`.
    last_read: Instant,
    /// The TCP socket's addresses and descriptor, for CLIENT LIST.
    peer: String,
    local: String,
    fd: i32,
}

impl Conn {
    /// Reads more into `buf`; `Ok(false)` once nothing came for
    /// `repl-timeout`, Err on a closed or failed socket. The timeout is
    /// read again every second, as Redis's cron compares the last read
    /// with it: a `CONFIG SET repl-timeout` during a handshake or a
    /// transfer applies to it at once.
    async fn fill(&mut self, shared: &Services) -> std::io::Result<bool> {
        if self.buf.capacity() - self.buf.len() < READ_CHUNK / 4 {
            self.buf.reserve(READ_CHUNK);
        }
        loop {
            let limit = Duration::from_secs(shared.config.repl_timeout().max(1));
            let Some(left) = limit.checked_sub(self.last_read.elapsed()) else {
                return Ok(false);
            };
            let wait = left.min(Duration::from_secs(1));
            match tokio::time::timeout(wait, self.rd.read_buf(&mut self.buf)).await {
                Err(_) => continue,
                Ok(Ok(0)) => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "Connection lost",
                    ));
                }
                Ok(Ok(_)) => {
                    self.last_read = Instant::now();
                    shared
                        .replication
                        .link_last_io_ms
                        .store(shared.clock.now_ms(), Relaxed);
                    return Ok(true);
                }
                Ok(Err(e)) => return Err(e),
            }
        }
    }

    /// One line (without its `\r\n`), as Redis's `connSyncReadLine`.
    async fn line(&mut self, shared: &Services) -> Step<String> {
        loop {
            if let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
                let mut line = self.buf.split_to(i + 1);
                line.truncate(i);
                if line.last() == Some(&b'\r') {
                    line.truncate(i - 1);
                }
                return Ok(String::from_utf8_lossy(&line).into_owned());
            }
            if self.buf.len() > MAX_LINE {
                tracing::warn!("Master did not respond to command during SYNC handshake");
                return Err(Failed);
            }
            match self.fill(shared).await {
                Ok(true) => {}
                Ok(false) => {
                    tracing::warn!("Timeout connecting to the MASTER...");
                    return Err(Failed);
                }
                Err(e) => {
                    tracing::warn!(
                        "Master did not respond to command during SYNC handshake ({})",
                        crate::config_file::strerror(&e)
                    );
                    return Err(Failed);
                }
            }
        }
    }

    async fn send(&mut self, argv: &[&[u8]]) -> Step<()> {
        let mut out = Vec::new();
        encode(&mut out, argv);
        self.write(&out).await
    }

    async fn write(&mut self, bytes: &[u8]) -> Step<()> {
        match tokio::time::timeout(self.timeout, self.wr.write_all(bytes)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => {
                tracing::warn!(
                    "I/O error writing to MASTER: {}",
                    crate::config_file::strerror(&e)
                );
                Err(Failed)
            }
            Err(_) => {
                tracing::warn!("I/O error writing to MASTER: Connection timed out");
                Err(Failed)
            }
        }
    }
}

/// `REPLCONF ACK <offset> [FACK <aof-offset>]` (FACK while the AOF is on,
/// as Redis 7.2's `replicationSendAck`).
async fn send_ack(conn: &mut Conn, offset: u64, fack: Option<u64>) -> Step<()> {
    let offset = offset.to_string();
    match fack {
        Some(f) => {
            let f = f.to_string();
            conn.send(&[
                b"REPLCONF",
                b"ACK",
                offset.as_bytes(),
                b"FACK",
                f.as_bytes(),
            ])
            .await
        }
        None => conn.send(&[b"REPLCONF", b"ACK", offset.as_bytes()]).await,
    }
}

/// How far this replica's AOF has fsynced the primary's stream (Redis's
/// `fsynced_reploff`), for its ACKs' FACK: pairs of (AOF bytes fed, stream
/// offset) taken as the stream is applied; the offset of the last pair
/// whose bytes are durable is acknowledged.
#[derive(Default)]
struct FsyncMarks {
    marks: std::collections::VecDeque<(u64, u64)>,
    acked: u64,
}

impl FsyncMarks {
    /// Bounds the pairs kept; past it the newest pair moves forward, which
    /// only acknowledges later, never wrongly.
    const MAX: usize = 1024;

    /// The stream is applied up to `offset`, its writes fed to the AOF.
    fn mark(&mut self, aof: &crate::aof::Aof, offset: u64) {
        let fed = aof.fed_position();
        let full = self.marks.len() >= Self::MAX;
        match self.marks.back_mut() {
            Some(last) if last.1 == offset => {}
            Some(last) if full => *last = (fed, offset),
            _ => self.marks.push_back((fed, offset)),
        }
    }

    /// The FACK to send with an ACK at `offset`, None while the AOF is off.
    fn fack(&mut self, aof: &crate::aof::Aof, offset: u64) -> Option<u64> {
        if !aof.on() {
            self.marks.clear();
            return None;
        }
        self.mark(aof, offset);
        while let Some(&(fed, off)) = self.marks.front() {
            if !aof.fsynced(fed) {
                break;
            }
            self.acked = self.acked.max(off);
            self.marks.pop_front();
        }
        Some(self.acked)
    }
}

/// How the primary answered PSYNC.
enum Sync {
    Full {
        replid: String,
        offset: u64,
    },
    Continue,
    /// `+RDBCHANNELSYNC <client-id>` (Redis 8.0): the RDB comes over an
    /// rdb channel, this connection (that client) buffers the stream.
    RdbChannel(u64),
}

/// One connection to the primary, until it fails. True: reconnect at
/// once, without the retry period: a full sync's transfer failed (Redis's
/// `cancelReplicationHandshake(1)`), so the replica has no stream to
/// continue and every second waited is a second more out of sync.
async fn run_link(shared: &Arc<Services>, tls: &Tls, primary: &Primary) -> bool {
    let r = &shared.replication;
    let Ok(mut conn) = connect(shared, tls, primary).await else {
        return false;
    };
    r.set_link_state(LinkState::Handshake);
    let Ok(sync) = handshake(shared, &mut conn).await else {
        return false;
    };
    // What an rdb channel's main channel buffered, applied first.
    let mut buffered = 0;
    match sync {
        Sync::Full { replid, offset } => {
            r.set_link_state(LinkState::Transfer);
            let result = full_sync(shared, &mut conn, &replid, offset).await;
            r.transfer_size.store(0, Relaxed);
            r.transfer_read.store(0, Relaxed);
            if result.is_err() {
                return true;
            }
        }
        Sync::RdbChannel(main_id) => {
            let result = rdb_channel_sync(shared, tls, primary, &mut conn, main_id).await;
            r.transfer_size.store(0, Relaxed);
            r.transfer_read.store(0, Relaxed);
            match result {
                Ok(()) => {
                    buffered = conn.buf.len();
                    tracing::info!(
                        "MASTER <-> REPLICA sync: Starting to stream replication buffer into the db ({buffered} bytes)."
                    );
                }
                Err(started) => {
                    r.full_sync_buffer.store(0, Relaxed);
                    return started;
                }
            }
        }
        Sync::Continue => {}
    }
    stream(shared, conn, buffered).await;
    r.full_sync_buffer.store(0, Relaxed);
    false
}

/// Connects to the primary, over TLS when `tls-replication` says so as
/// this link starts (Redis reads it per connection: `CONFIG SET` takes
/// effect at the next one).
async fn connect(shared: &Services, tls: &Tls, primary: &Primary) -> Step<Conn> {
    let r = &shared.replication;
    r.set_link_state(LinkState::Connecting);
    tracing::info!("Connecting to MASTER {}:{}", primary.host, primary.port);
    let timeout = Duration::from_secs(shared.config.repl_timeout().max(1));
    tracing::info!("MASTER <-> REPLICA sync started");
    let socket = tokio::time::timeout(
        timeout,
        super::outbound::connect(
            primary.host.as_str(),
            primary.port,
            &shared.config.bind_source_addr(),
        ),
    )
    .await;
    let socket = match socket {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            tracing::warn!(
                "Error condition on socket for SYNC: {}",
                crate::config_file::strerror(&e)
            );
            return Err(Failed);
        }
        Err(_) => {
            tracing::warn!("Timeout connecting to the MASTER...");
            return Err(Failed);
        }
    };
    let _ = socket.set_nodelay(true);
    let peer = socket
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let local = socket
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let fd = {
        use std::os::fd::AsRawFd;
        socket.as_raw_fd()
    };
    let (rd, wr): (
        Box<dyn AsyncRead + Send + Unpin>,
        Box<dyn AsyncWrite + Send + Unpin>,
    ) = if shared.config.tls_setting("tls-replication") == "yes" {
        match tls.connect(&primary.host, socket, timeout).await {
            Ok(stream) => {
                let (rd, wr) = tokio::io::split(stream);
                (Box::new(rd), Box::new(wr))
            }
            Err(e) => {
                tracing::warn!("Error condition on socket for SYNC: {e}");
                return Err(Failed);
            }
        }
    } else {
        let (rd, wr) = socket.into_split();
        (Box::new(rd), Box::new(wr))
    };
    tracing::info!("Non blocking connect for SYNC fired the event.");
    r.link_last_io_ms.store(shared.clock.now_ms(), Relaxed);
    Ok(Conn {
        rd,
        wr,
        buf: BytesMut::with_capacity(READ_CHUNK),
        timeout,
        last_read: Instant::now(),
        peer,
        local,
        fd,
    })
}

/// Redis's `slaveGetPortStr`: the port this replica announces; over TLS
/// `tls-port`, where this server's own replicas would reach it.
fn listening_port(shared: &Services) -> String {
    let (_, announce_port) = shared.config.replica_announce();
    let tls_port = shared.config.tls_port();
    match announce_port {
        0 if shared.config.tls_setting("tls-replication") == "yes" && tls_port != 0 => {
            tls_port.to_string()
        }
        0 => shared.config.port.load(Relaxed).to_string(),
        p => p.to_string(),
    }
}

/// The buffer of an rdb channel's main channel being applied: its end
/// logged, or, when the link ends first (a CLIENT KILL, REPLICAOF
/// elsewhere), Redis's warning.
struct Applying<'a> {
    r: &'a Replication,
    left: bool,
}

impl Applying<'_> {
    fn done(&mut self, bytes: usize) {
        if std::mem::take(&mut self.left) {
            tracing::info!(
                "MASTER <-> REPLICA sync: Successfully streamed replication buffer into the db ({bytes} bytes in total)"
            );
            self.r.full_sync_buffer.store(0, Relaxed);
        }
    }
}

impl Drop for Applying<'_> {
    fn drop(&mut self) {
        if std::mem::take(&mut self.left) {
            tracing::warn!(
                "Master client was freed while streaming accumulated replication data to db."
            );
            self.r.full_sync_buffer.store(0, Relaxed);
        }
    }
}

/// Redis 7.0's `syncWithMaster` up to the PSYNC reply.
async fn handshake(shared: &Services, conn: &mut Conn) -> Step<Sync> {
    let r = &shared.replication;
    conn.send(&[b"PING"]).await?;
    let pong = conn.line(shared).await?;
    if pong.starts_with('-')
        && !pong.starts_with("-NOAUTH")
        && !pong.starts_with("-NOPERM")
        && !pong.starts_with("-ERR operation not permitted")
    {
        tracing::warn!("Error reply to PING from master: '{pong}'");
        return Err(Failed);
    }
    tracing::info!("Master replied to PING, replication can continue...");
    // The rest is sent at once and the replies read in order, as Redis does.
    let (user, pass) = shared.config.master_auth();
    let mut out = Vec::new();
    let auth = !pass.is_empty();
    if auth {
        if user.is_empty() {
            encode(&mut out, &[b"AUTH", pass.as_bytes()]);
        } else {
            encode(&mut out, &[b"AUTH", user.as_bytes(), pass.as_bytes()]);
        }
    }
    let (announce_ip, _) = shared.config.replica_announce();
    let port = listening_port(shared);
    encode(
        &mut out,
        &[&b"REPLCONF"[..], b"listening-port", port.as_bytes()],
    );
    if !announce_ip.is_empty() {
        encode(
            &mut out,
            &[&b"REPLCONF"[..], b"ip-address", announce_ip.as_bytes()],
        );
    }
    let mut capa: Vec<&[u8]> = vec![
        b"REPLCONF",
        b"capa",
        b"eof",
        b"capa",
        b"psync2",
        b"capa",
        b"zwindow",
    ];
    if shared.config.repl_rdb_channel() {
        capa.extend_from_slice(&[b"capa", b"rdb-channel-repl"]);
    }
    encode(&mut out, &capa);
    conn.write(&out).await?;
    if auth {
        let reply = conn.line(shared).await?;
        if reply.starts_with('-') {
            tracing::warn!("Unable to AUTH to MASTER: {reply}");
            return Err(Failed);
        }
    }
    let reply = conn.line(shared).await?;
    if reply.starts_with('-') {
        tracing::info!(
            "(Non critical) Master does not understand REPLCONF listening-port: {reply}"
        );
    }
    if !announce_ip.is_empty() {
        let reply = conn.line(shared).await?;
        if reply.starts_with('-') {
            tracing::info!(
                "(Non critical) Master does not understand REPLCONF ip-address: {reply}"
            );
        }
    }
    let reply = conn.line(shared).await?;
    if reply.starts_with('-') {
        tracing::info!("(Non critical) Master does not understand REPLCONF capa: {reply}");
    }
    // Redis's `slaveTryPartialResynchronization`; a primary handing over
    // (FAILOVER) asks its target to take its place.
    let failover = r.failover_in_progress();
    let (replid, offset) = if r.has_history() {
        let (replid, offset) = (r.replid(), (r.offset() + 1).to_string());
        tracing::info!("Trying a partial resynchronization (request {replid}:{offset}).");
        (replid, offset)
    } else {
        tracing::info!("Partial resynchronization not possible (no cached master)");
        ("?".to_string(), "-1".to_string())
    };
    let mut psync: Vec<&[u8]> = vec![b"PSYNC", replid.as_bytes(), offset.as_bytes()];
    if failover {
        psync.push(b"FAILOVER");
    }
    conn.send(&psync).await?;
    let answer = psync_answer(shared, conn).await;
    if failover {
        r.failover_psync_result(&shared.pause, &shared.config, answer.is_ok());
    }
    answer
}

/// The primary's answer to PSYNC (Redis's
/// `slaveTryPartialResynchronization`, reading half).
async fn psync_answer(shared: &Services, conn: &mut Conn) -> Step<Sync> {
    let r = &shared.replication;
    // The primary may send newlines while it prepares its answer.
    let reply = loop {
        let line = conn.line(shared).await?;
        if !line.is_empty() {
            break line;
        }
    };
    if let Some(rest) = reply.strip_prefix("+FULLRESYNC") {
        let mut words = rest.split_whitespace();
        let replid = words.next().filter(|id| id.len() == 40);
        let offset = words.next().and_then(|o| o.parse::<u64>().ok());
        let (Some(replid), Some(offset)) = (replid, offset) else {
            tracing::warn!("Master replied with wrong +FULLRESYNC syntax.");
            return Err(Failed);
        };
        tracing::info!("Full resync from master: {replid}:{offset}");
        // The history this replica had is kept until the payload loads
        // (see `Replication::drop_replicas`): a transfer that fails leaves
        // it to continue from, with its own replicas.
        return Ok(Sync::Full {
            replid: replid.to_string(),
            offset,
        });
    }
    if let Some(rest) = reply.strip_prefix("+RDBCHANNELSYNC") {
        let Some(id) = rest.trim().parse::<u64>().ok() else {
            tracing::warn!("Master replied with wrong +RDBCHANNELSYNC syntax: {reply}");
            return Err(Failed);
        };
        tracing::info!("PSYNC is not possible, initialize RDB channel.");
        return Ok(Sync::RdbChannel(id));
    }
    if let Some(rest) = reply.strip_prefix("+CONTINUE") {
        tracing::info!("Successful partial resynchronization with master.");
        let new = rest.trim();
        if new.len() == 40 && new != r.replid() {
            tracing::info!("Master replication ID changed to {new}");
            r.continue_with(new);
        }
        tracing::info!("MASTER <-> REPLICA sync: Master accepted a Partial Resynchronization.");
        return Ok(Sync::Continue);
    }
    if reply.starts_with("-NOMASTERLINK") || reply.starts_with("-LOADING") {
        tracing::info!("Master is currently unable to PSYNC but should be in the future: {reply}");
    } else if reply.starts_with("-ERR") {
        tracing::info!("Master does not support PSYNC or is in error state (reply: {reply})");
    } else {
        tracing::warn!("Unexpected reply to PSYNC from master: {reply}");
    }
    Err(Failed)
}

/// Where a full sync's payload goes: memory (diskless load) or the
/// temporary file (`repl-diskless-load disabled`, or `on-empty-db` with
/// data).
enum Dest {
    Memory(Vec<u8>),
    File {
        file: std::fs::File,
        path: std::path::PathBuf,
        /// The last bytes written, where an `$EOF:` mark ends.
        tail: Vec<u8>,
    },
}

impl Dest {
    fn put(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        use std::io::Write;
        match self {
            Dest::Memory(v) => v.extend_from_slice(bytes),
            Dest::File { file, tail, .. } => {
                file.write_all(bytes)?;
                tail.extend_from_slice(bytes);
                if tail.len() > EOF_MARK {
                    tail.drain(..tail.len() - EOF_MARK);
                }
            }
        }
        Ok(())
    }

    fn ends_with(&self, mark: &[u8]) -> bool {
        match self {
            Dest::Memory(v) => v.ends_with(mark),
            Dest::File { tail, .. } => tail.ends_with(mark),
        }
    }
}

/// Redis's `readSyncBulkPayload`: the RDB after `+FULLRESYNC`, then the
/// dataset replaced by it.
async fn full_sync(shared: &Arc<Services>, conn: &mut Conn, replid: &str, offset: u64) -> Step<()> {
    let r = &shared.replication;
    // The primary sends newlines while its snapshot is being made.
    let header = loop {
        let line = match conn.line(shared).await {
            Ok(line) => line,
            Err(Failed) => {
                tracing::warn!("I/O error reading bulk count from MASTER: Connection lost");
                return Err(Failed);
            }
        };
        if !line.is_empty() {
            break line;
        }
    };
    if let Some(err) = header.strip_prefix('-') {
        tracing::warn!("MASTER aborted replication with an error: {err}");
        return Err(Failed);
    }
    if !header.starts_with('$') {
        tracing::warn!(
            "Bad protocol from MASTER, the first byte is not '$' (we received '{header}'), are you sure the host and port are right?"
        );
        return Err(Failed);
    }
    let mark = header
        .strip_prefix("$EOF:")
        .filter(|m| m.len() == EOF_MARK)
        .map(|m| m.as_bytes().to_vec());
    let size = match &mark {
        Some(_) => None,
        None => match header[1..].parse::<u64>() {
            Ok(n) => Some(n),
            Err(_) => {
                tracing::warn!(
                    "Bad protocol from MASTER, the first byte is not '$' (we received '{header}'), are you sure the host and port are right?"
                );
                return Err(Failed);
            }
        },
    };
    let mode = shared.config.repl_diskless_load();
    let diskless = mode == "swapdb" || (mode == "on-empty-db" && dataset_empty(shared));
    // Redis's async loading: with swapdb, when the primary's history is
    // the one this replica's data came from (a resync after a
    // disconnection), clients go on reading the old data until the new
    // replaces it. Otherwise a diskless load is a load from the first
    // byte received, and clients get -LOADING meanwhile, as in Redis.
    let asynchronous = diskless && mode == "swapdb" && r.replid() == replid;
    let loading = &shared.persistence.loading;
    loading.set_serve_after(shared.config.loading_serve_after());
    let _async_loading = asynchronous.then(|| loading.begin_async());
    let _loading = (diskless && !asynchronous)
        .then(|| loading.begin(shared.clock.now_ms() / 1000, size.unwrap_or(0)));
    let target = if diskless { "to parser" } else { "to disk" };
    match size {
        None => tracing::info!(
            "MASTER <-> REPLICA sync: receiving streamed RDB from master with EOF {target}"
        ),
        Some(n) => {
            tracing::info!("MASTER <-> REPLICA sync: receiving {n} bytes from master {target}")
        }
    }
    r.transfer_size
        .store(size.map_or(-1, |n| n as i64), Relaxed);
    r.transfer_read.store(0, Relaxed);
    if diskless {
        r.drop_replicas();
        // The load starts with the first byte, as Redis's parser reads the
        // socket (the payload is parsed once whole; see `load`).
        if mode != "swapdb" {
            tracing::info!("MASTER <-> REPLICA sync: Flushing old data");
        }
        tracing::info!("MASTER <-> REPLICA sync: Loading DB in memory");
    }
    let mut dest = if diskless {
        Dest::Memory(Vec::with_capacity(size.unwrap_or(0).min(1 << 26) as usize))
    } else {
        let dir = shared
            .config
            .rdb_path()
            .parent()
            .map(|d| d.to_path_buf())
            .unwrap_or_default();
        let path = dir.join(format!(
            "temp-{}.{}.rdb",
            shared.clock.now_ms() / 1000,
            std::process::id()
        ));
        match std::fs::File::create(&path) {
            Ok(file) => Dest::File {
                file,
                path,
                tail: Vec::new(),
            },
            Err(e) => {
                tracing::warn!(
                    "Opening the temp file needed for MASTER <-> REPLICA synchronization: {}",
                    crate::config_file::strerror(&e)
                );
                return Err(Failed);
            }
        }
    };
    let received = receive(
        shared,
        conn,
        &mut dest,
        size,
        mark.as_deref(),
        _loading.is_some(),
    )
    .await;
    let data = match (received, dest) {
        (Err(Failed), Dest::File { path, .. }) => {
            let _ = std::fs::remove_file(path);
            return Err(Failed);
        }
        (Err(Failed), Dest::Memory(_)) => {
            // What Redis's parser reports when the socket ends early.
            tracing::warn!(
                "Internal error in RDB reading offset {} -> Unexpected EOF reading RDB file",
                r.transfer_read.load(Relaxed)
            );
            tracing::warn!(
                "Failed trying to load the MASTER synchronization DB from socket, check server logs."
            );
            return Err(Failed);
        }
        (Ok(()), Dest::Memory(mut data)) => {
            if mark.is_some() {
                data.truncate(data.len() - EOF_MARK);
            }
            data
        }
        (Ok(()), Dest::File { file, path, .. }) => {
            match disk_file(shared, file, &path, mark.is_some()) {
                Ok(data) => data,
                Err(()) => {
                    let _ = std::fs::remove_file(path);
                    return Err(Failed);
                }
            }
        }
    };
    if !diskless {
        r.drop_replicas();
    }
    let loader = shared.clone();
    let swap = mode == "swapdb";
    let from = if diskless { "socket" } else { "disk" };
    let loaded =
        tokio::task::spawn_blocking(move || load(&loader, &data, swap, from, asynchronous)).await;
    let Ok(Ok(stats)) = loaded else {
        return Err(Failed);
    };
    r.synced_from(replid, offset);
    r.read_offset.store(offset, Relaxed);
    r.stream_db
        .store(stats.repl.map_or(0, |info| info.stream_db) as i64, Relaxed);
    tracing::info!("MASTER <-> REPLICA sync: Finished with success");
    Ok(())
}

/// Redis 8.0's rdb-channel full sync, after `+RDBCHANNELSYNC <main_id>`
/// on `main`: a second connection (the rdb channel) asks for the RDB
/// naming `main_id`, and while it is received and loaded `main` buffers
/// the stream that follows the snapshot, up to
/// `replica-full-sync-buffer-limit` (left in `main.buf` for [`stream`]).
/// Err(true): the transfer had started (reconnect at once).
async fn rdb_channel_sync(
    shared: &Arc<Services>,
    tls: &Tls,
    primary: &Primary,
    main: &mut Conn,
    main_id: u64,
) -> Result<(), bool> {
    let r = &shared.replication;
    let mut rdb = connect(shared, tls, primary).await.map_err(|_| false)?;
    r.set_link_state(LinkState::Handshake);
    let (user, pass) = shared.config.master_auth();
    let mut out = Vec::new();
    if !pass.is_empty() {
        if user.is_empty() {
            encode(&mut out, &[b"AUTH", pass.as_bytes()]);
        } else {
            encode(&mut out, &[b"AUTH", user.as_bytes(), pass.as_bytes()]);
        }
    }
    let (cid, port) = (main_id.to_string(), listening_port(shared));
    encode(
        &mut out,
        &[
            &b"REPLCONF"[..],
            b"capa",
            b"eof",
            b"rdb-only",
            b"1",
            b"rdb-channel",
            b"1",
            b"main-ch-client-id",
            cid.as_bytes(),
            b"listening-port",
            port.as_bytes(),
        ],
    );
    rdb.write(&out).await.map_err(|_| false)?;
    if !pass.is_empty() {
        let reply = rdb.line(shared).await.map_err(|_| false)?;
        if reply.starts_with('-') {
            tracing::warn!("Unable to AUTH to master: {reply}");
            return Err(false);
        }
    }
    let reply = rdb.line(shared).await.map_err(|_| false)?;
    if reply.starts_with('-') {
        tracing::warn!("Master replied error to replconf: {reply}");
        return Err(false);
    }
    r.debug_pause_at(crate::replication::PAUSE_BEFORE_RDB_CHANNEL);
    rdb.send(&[b"PSYNC", b"?", b"-1"])
        .await
        .map_err(|_| false)?;
    let reply = loop {
        let line = rdb.line(shared).await.map_err(|_| false)?;
        if !line.is_empty() {
            break line;
        }
    };
    let mut words = reply
        .strip_prefix("+FULLRESYNC")
        .unwrap_or("")
        .split_whitespace();
    let replid = words.next().filter(|id| id.len() == 40);
    let offset = words.next().and_then(|o| o.parse::<u64>().ok());
    let (Some(replid), Some(offset)) = (replid, offset) else {
        tracing::warn!("Received unexpected psync reply: {reply}");
        tracing::warn!("rdb channel sync failed with error: {reply}");
        return Err(false);
    };
    let replid = replid.to_string();
    // Whether `full_sync` will load from the socket (as it decides).
    let mode = shared.config.repl_diskless_load();
    let diskless = mode == "swapdb" || (mode == "on-empty-db" && dataset_empty(shared));
    r.load_abort.store(false, Relaxed);
    r.set_link_state(LinkState::Transfer);
    tracing::info!("Starting to receive RDB and replication stream in parallel.");
    let sync = full_sync(shared, &mut rdb, &replid, offset);
    tokio::pin!(sync);
    let buffering = buffer_stream(shared, main);
    tokio::pin!(buffering);
    let result = tokio::select! {
        res = &mut sync => res,
        () = &mut buffering => {
            // The main channel failed (Redis's `rdbChannelAbort`): before
            // the load, the sync stops; a load from the socket is aborted;
            // a load from disk ends first, and the replica then continues
            // from what it loaded with a partial resync.
            if !shared.persistence.loading.active() {
                tracing::info!("Aborting rdb channel sync");
                return Err(true);
            }
            tracing::info!("Aborting rdb channel sync while loading the RDB.");
            if diskless {
                r.load_abort.store(true, Relaxed);
            } else {
                tracing::info!("After loading RDB, replica will try psync with master.");
            }
            let _ = (&mut sync).await;
            r.load_abort.store(false, Relaxed);
            Err(Failed)
        }
    };
    result.map_err(|_| true)
}

/// A main channel's stream while its rdb channel's RDB loads, read into
/// `conn.buf` in Redis's 1 MB blocks until the limit is passed (then the
/// primary keeps the rest). Returns when the connection fails.
async fn buffer_stream(shared: &Services, conn: &mut Conn) {
    const BLOCK: u64 = 1 << 20;
    let r = &shared.replication;
    let limit = shared.config.replica_full_sync_buffer_limit();
    let mut blocks = 0u64;
    r.full_sync_buffer.store(0, Relaxed);
    loop {
        let len = conn.buf.len() as u64;
        if len >= blocks * BLOCK {
            if limit != 0 && blocks * BLOCK > limit {
                tracing::info!(
                    "Replication buffer limit has been reached ({limit} bytes), stopped buffering replication stream. Further accumulation may occur on master side. "
                );
                return std::future::pending().await;
            }
            blocks = len / BLOCK + 1;
            let size = blocks * BLOCK;
            r.full_sync_buffer.store(size, Relaxed);
            r.full_sync_buffer_peak.fetch_max(size, Relaxed);
        }
        let room = (blocks * BLOCK - len) as usize;
        conn.buf.reserve(room.min(READ_CHUNK));
        match conn.rd.read_buf(&mut conn.buf).await {
            Ok(0) | Err(_) => {
                tracing::warn!("Main channel error while reading from master: Connection lost");
                return;
            }
            Ok(n) => {
                r.link_last_io_ms.store(shared.clock.now_ms(), Relaxed);
                shared
                    .stats
                    .net_repl_input_bytes
                    .fetch_add(n as u64, Relaxed);
            }
        }
    }
}

/// Every database empty (`repl-diskless-load on-empty-db`).
fn dataset_empty(shared: &Services) -> bool {
    let store = &shared.store;
    (0..store.shard_count()).all(|i| store.lock_shard(i).dbs.iter().all(|db| db.keys.is_empty()))
}

/// Reads the payload into `dest`: `size` bytes, or up to the `$EOF:`
/// mark; `loading`: the bytes count as the load's progress.
async fn receive(
    shared: &Services,
    conn: &mut Conn,
    dest: &mut Dest,
    size: Option<u64>,
    mark: Option<&[u8]>,
    loading: bool,
) -> Step<()> {
    let r = &shared.replication;
    let mut left = size.unwrap_or(u64::MAX);
    loop {
        if !conn.buf.is_empty() {
            let n = (conn.buf.len() as u64).min(left) as usize;
            if let Err(e) = dest.put(&conn.buf[..n]) {
                tracing::warn!(
                    "Write error or short write writing to the DB dump file needed for MASTER <-> REPLICA synchronization: {}",
                    crate::config_file::strerror(&e)
                );
                return Err(Failed);
            }
            conn.buf.advance(n);
            r.transfer_read.fetch_add(n as u64, Relaxed);
            if loading {
                shared.persistence.loading.advance(n as u64);
            }
            if size.is_some() {
                left -= n as u64;
            }
        }
        let done = match mark {
            Some(mark) => dest.ends_with(mark),
            None => left == 0,
        };
        if done {
            return Ok(());
        }
        match conn.fill(shared).await {
            Ok(true) => {}
            Ok(false) => {
                tracing::warn!(
                    "Timeout receiving bulk data from MASTER... If the problem persists try to set the 'repl-timeout' parameter in redis.conf to a larger value."
                );
                return Err(Failed);
            }
            Err(e) => {
                tracing::warn!(
                    "I/O error trying to sync with MASTER: {}",
                    crate::config_file::strerror(&e)
                );
                return Err(Failed);
            }
        }
    }
}

/// The received file made the dataset's file (`dbfilename`), as Redis
/// does before loading it; its bytes.
fn disk_file(
    shared: &Services,
    file: std::fs::File,
    path: &std::path::Path,
    marked: bool,
) -> Result<Vec<u8>, ()> {
    let io = |e: std::io::Error| {
        tracing::warn!(
            "Failed trying to sync the temp DB to disk in MASTER <-> REPLICA synchronization: {}",
            crate::config_file::strerror(&e)
        );
    };
    if marked {
        let len = file.metadata().map_err(io)?.len();
        if let Err(e) = file.set_len(len.saturating_sub(EOF_MARK as u64)) {
            tracing::warn!(
                "Error truncating the RDB file received from the master for SYNC: {}",
                crate::config_file::strerror(&e)
            );
            return Err(());
        }
    }
    file.sync_all().map_err(io)?;
    drop(file);
    let target = shared.config.rdb_path();
    if let Err(e) = std::fs::rename(path, &target) {
        tracing::warn!(
            "Failed trying to rename the temp DB into {} in MASTER <-> REPLICA synchronization: {}",
            target.display(),
            crate::config_file::strerror(&e)
        );
        return Err(());
    }
    std::fs::read(&target).map_err(|e| {
        tracing::warn!(
            "Failed trying to load the MASTER synchronization DB from disk, check server logs. ({})",
            crate::config_file::strerror(&e)
        );
    })
}

/// Replaces the dataset with the primary's RDB, every shard held (clients
/// get -LOADING meanwhile). `swap`: the old data comes back if the new
/// cannot be loaded (`repl-diskless-load swapdb`). `asynchronous`: clients
/// go on reading the old data while the new loads beside it
/// ([`load_beside`]).
fn load(
    shared: &Arc<Services>,
    data: &[u8],
    swap: bool,
    from: &str,
    asynchronous: bool,
) -> Result<crate::rdb::file::LoadStats, ()> {
    use crate::keyspace::Keyspace;
    let env = shared.env();
    let p = &shared.persistence;
    // Stopped for the load, and restarted after it as `appendonly` says
    // then: a CONFIG SET during the load is only recorded (Redis's
    // `restartAOFAfterSYNC` reads `server.aof_enabled` once loaded).
    if shared.config.appendonly() {
        crate::aof::stop(&**shared);
    }
    if asynchronous {
        let result = load_beside(shared, data);
        if result.is_ok() && shared.config.appendonly() {
            restart_aof(shared);
        }
        return result;
    }
    let _loading = p
        .loading
        .begin(shared.clock.now_ms() / 1000, data.len() as u64);
    let guards = env.store.lock(env.store.all_shards());
    let mut ks = Keyspace::new(env, guards, 0, env.clock.now_ms());
    let old: Option<Vec<_>> = swap.then(|| {
        ks.shards_mut()
            .map(|s| {
                let empty = (0..s.dbs.len()).map(|_| Default::default()).collect();
                (
                    std::mem::replace(&mut s.dbs, empty),
                    std::mem::take(&mut s.schedule),
                )
            })
            .collect()
    });
    // A diskless load said so as its first byte arrived.
    let announced = from == "socket";
    if !swap && !announced {
        tracing::info!("MASTER <-> REPLICA sync: Flushing old data");
    }
    let lazy = shared.config.replica_lazy_flush();
    crate::persistence::flush_all_freeing(&**shared, &mut ks, lazy);
    if !announced {
        tracing::info!("MASTER <-> REPLICA sync: Loading DB in memory");
    }
    let dirty = env.dirty.load(Relaxed);
    let loaded = crate::rdb::file::load(data, &mut ks, &**shared, false);
    env.dirty.store(dirty, Relaxed);
    let result = match loaded {
        Ok(stats) => {
            if old.is_some() {
                tracing::info!("MASTER <-> REPLICA sync: Swapping active DB with loaded DB");
                tracing::info!("MASTER <-> REPLICA sync: Discarding old DB in background");
            }
            *p.last_load.lock() = stats;
            Ok(stats)
        }
        Err(e) => {
            tracing::warn!("{e}");
            tracing::warn!(
                "Failed trying to load the MASTER synchronization DB from {from}, check server logs."
            );
            crate::persistence::flush_all(&**shared, &mut ks);
            if let Some(old) = old {
                tracing::info!("MASTER <-> REPLICA sync: Discarding temporary DB in background");
                for (shard, (dbs, schedule)) in ks.shards_mut().zip(old) {
                    shard.dbs = dbs;
                    shard.schedule = schedule;
                }
                ks.db_replaced(0);
            }
            Err(())
        }
    };
    drop(ks);
    if result.is_ok() && shared.config.appendonly() {
        restart_aof(shared);
    }
    result
}

/// Redis's async loading (`repl-diskless-load swapdb` when the primary
/// continues this replica's history): the RDB loads into a store of its
/// own, no shard of the live one held, so clients keep reading the old
/// data; then, under every shard's lock, the new contents and function
/// libraries take the old ones' place. A load that fails leaves the old
/// data as it was.
fn load_beside(shared: &Arc<Services>, data: &[u8]) -> Result<crate::rdb::file::LoadStats, ()> {
    use crate::keyspace::{Env, Keyspace, Store};
    let env = shared.env();
    let mut temp = Store::new(env.store.shard_count(), env.store.databases);
    temp.set_replica(env.store.is_replica());
    if env.store.slot_index().is_some() {
        temp.enable_slot_index();
    }
    let staged = Staged {
        shared,
        libraries: Default::default(),
    };
    let dirty = env.dirty.load(Relaxed);
    let loaded = {
        let temp_env = Env {
            store: &temp,
            ..env
        };
        let guards = temp.lock(temp.all_shards());
        let mut ks = Keyspace::new(temp_env, guards, 0, env.clock.now_ms());
        crate::rdb::file::load(data, &mut ks, &staged, false)
    };
    env.dirty.store(dirty, Relaxed);
    let stats = match loaded {
        Ok(stats) => stats,
        Err(e) => {
            tracing::warn!("{e}");
            tracing::warn!(
                "Failed trying to load the MASTER synchronization DB from socket, check server logs."
            );
            tracing::info!("MASTER <-> REPLICA sync: Discarding temporary DB in background");
            return Err(());
        }
    };
    tracing::info!("MASTER <-> REPLICA sync: Swapping active DB with loaded DB");
    {
        let guards = env.store.lock(env.store.all_shards());
        let mut ks = Keyspace::new(env, guards, 0, env.clock.now_ms());
        ks.swap_in(&temp);
        crate::persistence::Host::flush_libraries(&**shared);
        for code in staged.libraries.into_inner() {
            if let Err(e) = crate::rdb::file::Host::load_library(&**shared, &code, true) {
                tracing::warn!("{e}");
            }
        }
        *shared.persistence.last_load.lock() = stats;
    }
    tracing::info!("MASTER <-> REPLICA sync: Discarding old DB in background");
    // Redis's discardTempDb: always on the lazyfree thread.
    let old_keys = temp.key_count();
    shared.lazyfree.free(Box::new(temp), old_keys);
    Ok(stats)
}

/// An async load's function libraries, kept aside until its data takes
/// the old data's place (the libraries are part of the dataset).
struct Staged<'a> {
    shared: &'a Services,
    libraries: std::cell::RefCell<Vec<Vec<u8>>>,
}

impl crate::rdb::file::Host for Staged<'_> {
    fn load_library(&self, code: &[u8], _replace: bool) -> Result<(), crate::rdb::RdbError> {
        self.libraries.borrow_mut().push(code.to_vec());
        Ok(())
    }

    fn progress(&self, bytes: u64) {
        crate::rdb::file::Host::progress(self.shared, bytes);
    }

    fn aborted(&self) -> bool {
        crate::rdb::file::Host::aborted(self.shared)
    }
}

/// The AOF again after a successful sync, rewritten from the new data.
fn restart_aof(shared: &Arc<Services>) {
    use crate::keyspace::Keyspace;
    tracing::info!("MASTER <-> REPLICA sync: Starting AOF after a successful sync");
    let env = shared.env();
    let guards = env.store.lock(env.store.all_shards());
    let mut ks = Keyspace::new(env, guards, 0, env.clock.now_ms());
    let host: Arc<dyn crate::aof::Host> = shared.clone();
    let _ = crate::aof::start(host, &mut ks, false);
}

/// Unregisters the master client however the stream ends.
struct MasterClient<'a> {
    shared: &'a Services,
    client: Client,
}

impl Drop for MasterClient<'_> {
    fn drop(&mut self) {
        self.client.tally.flush();
        // A stream that ends mid-batch holds nobody back.
        batch_over(self.shared, &self.client.handle);
        self.shared.clients.unregister(self.client.handle.id);
    }
}

/// The master client's batch of the stream is applied: what it caused
/// other clients to receive (a blocked XREAD served, a published message,
/// an invalidation) carries its batch's gate, and shards it wrote with
/// `--threads` keep that gate for their readers (see `clients::Gate`).
/// Its replies go nowhere, so the batch is over once applied: the gate
/// opens, and the turn a script of the stream took is given back, as a
/// client connection does once its replies are handed to its socket.
fn batch_over(shared: &Services, handle: &crate::clients::ClientHandle) {
    handle.open_gate();
    shared.clients.turn.release(handle.id);
}

/// Whether `req` is `REPLCONF GETACK …`.
fn is_getack(req: &Args<'_>) -> bool {
    req.len() >= 2 && eq_ic(req.get(0), "replconf") && eq_ic(req.get(1), "getack")
}

/// The primary's stream, applied as the master client until the link
/// fails, times out or the client is killed.
///
/// `buffered`: the first bytes of `conn.buf` are what the main channel of
/// an rdb-channel sync buffered during the RDB (Redis's
/// `rdbChannelStreamReplDataToDb`): INFO shows them as the replica's
/// full-sync buffer until they are applied.
async fn stream(shared: &Arc<Services>, mut conn: Conn, buffered: usize) {
    // Bytes of `conn.buf` applied and dropped so far, and of the buffer.
    let (mut base, mut buf_done) = (0usize, 0usize);
    let mut applying = Applying {
        r: &shared.replication,
        left: buffered > 0,
    };
    let r = &shared.replication;
    let (addr, laddr) = (
        std::mem::take(&mut conn.peer),
        std::mem::take(&mut conn.local),
    );
    let (handle, _pushes) = shared.clients.register(addr, laddr, conn.fd, false, false);
    handle.role.store(crate::clients::ROLE_MASTER, Relaxed);
    // Redis's master client has no ACL user.
    *handle.user.lock() = b"(superuser)".to_vec();
    let mut master = MasterClient {
        shared,
        client: Client::new(handle.clone(), false),
    };
    master.client.master = true;
    master.client.db = usize::try_from(r.stream_db.load(Relaxed))
        .unwrap_or(0)
        .min(shared.store.databases.saturating_sub(1));
    handle.db.store(master.client.db, Relaxed);
    r.set_link_state(LinkState::Connected);
    r.link_down_since.store(0, Relaxed);
    // Bytes an rdb channel's main channel buffered are read, not applied.
    r.read_offset
        .store(r.offset() + conn.buf.len() as u64, Relaxed);
    r.link_last_io_ms.store(shared.clock.now_ms(), Relaxed);
    let mut marks = FsyncMarks::default();
    // The first ACK at once: a diskless primary waits for it to stream.
    let fack = marks.fack(&shared.aof, r.offset());
    if send_ack(&mut conn, r.offset(), fack).await.is_err() {
        return;
    }
    let mut parser = Parser::new(i64::MAX);
    let mut out = Reply::new();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut shutdown = shared.shutdown_rx();
    let timeout_ms = shared.config.repl_timeout().max(1) * 1000;
    loop {
        // Apply every whole command read; a transaction's bytes join the
        // stream at its EXEC, as Redis moves the master's offset only
        // outside MULTI.
        let mut fed = 0usize;
        let mut ack_at: Option<u64> = None;
        master.client.batch_written = crate::keyspace::ShardSet(0);
        master.client.batch_yielded = false;
        loop {
            if handle.killed.load(Relaxed) {
                break;
            }
            let req = match parser.next(&conn.buf, false) {
                Ok(Some(req)) => req,
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!("Protocol error from MASTER: {e}");
                    return;
                }
            };
            let client = &mut master.client;
            if !req.is_empty() {
                let args = Args::new(req);
                if is_getack(&args) {
                    ack_at = Some(r.offset());
                } else {
                    client.batch_clock = None;
                    let ran = match execute_now(shared, client, &mut out, args) {
                        Ok(ran) => ran,
                        Err(pending) => execute_rest(shared, client, &mut out, args, pending).await,
                    };
                    // A primary's stream neither blocks nor closes
                    // (it carries effects, never BLPOP or QUIT to obey).
                    let _: Ran = ran;
                    if out.buf.first() == Some(&b'-') {
                        let err = String::from_utf8_lossy(&out.buf);
                        tracing::warn!(
                            "== CRITICAL == This replica is sending an error to its master: '{}' after processing the command '{}'",
                            err.trim_end().trim_start_matches('-'),
                            String::from_utf8_lossy(args.get(0))
                        );
                    }
                    out.buf.clear();
                }
            }
            let after = parser.consumed();
            if buf_done < buffered {
                // Redis applies the buffer 16 KB at a time, and runs other
                // clients' commands (a CLIENT KILL, a REPLICAOF) between.
                let done = (base + after).min(buffered);
                let chunk_end = done / (16 << 10) > buf_done / (16 << 10) || done == buffered;
                let pause = crate::replication::PAUSE_ON_STREAMING_REPL_BUF;
                if chunk_end && r.debug_pause.load(Relaxed) & pause != 0 {
                    r.debug_pause_at(pause);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                buf_done = done;
                if buf_done == buffered && !handle.killed.load(Relaxed) {
                    applying.done(buffered);
                }
            }
            if !client.in_multi() {
                r.feed_raw(&conn.buf[fed..after], client.db);
                fed = after;
            }
            handle.db.store(client.db, Relaxed);
            if let Some(offset) = ack_at.take() {
                // Before more is applied, as Redis answers GETACK at once.
                parser.discard(fed);
                conn.buf.advance(fed);
                base += fed;
                fed = 0;
                let fack = marks.fack(&shared.aof, offset);
                if send_ack(&mut conn, offset, fack).await.is_err() {
                    return;
                }
            }
        }
        parser.discard(fed);
        conn.buf.advance(fed);
        base += fed;
        // The batch is in the AOF, fsynced under `appendfsync always` (as
        // Redis's beforeSleep writes what its master client applied).
        shared.aof.before_reply(&shared.config).await;
        if shared.aof.on() {
            marks.mark(&shared.aof, r.offset());
        }
        // What the batch read of client batches whose replies have not
        // left comes first (it may answer nobody, but what it delivers
        // must not overtake those replies), then its own gate opens.
        let mut gates = Vec::new();
        handle.take_reads_after(&mut gates);
        for gate in gates {
            tokio::select! {
                biased;
                _ = shutdown.changed() => return,
                _ = handle.kill_notify.notified() => break,
                _ = shared.clients.wait_gate(handle.id, &gate) => {}
            }
        }
        batch_over(shared, &handle);
        master.client.tally.flush();
        shared
            .stats
            .commands_processed
            .fetch_add(std::mem::take(&mut master.client.commands), Relaxed);
        if handle.killed.load(Relaxed) {
            drop(applying);
            tracing::info!("Connection with master lost.");
            tracing::info!("Caching the disconnected master state.");
            return;
        }
        if conn.buf.capacity() - conn.buf.len() < READ_CHUNK / 4 {
            conn.buf.reserve(READ_CHUNK);
        }
        tokio::select! {
            _ = handle.kill_notify.notified() => {}
            _ = shutdown.changed() => return,
            _ = tick.tick() => {
                let idle = shared.clock.now_ms().saturating_sub(r.link_last_io_ms.load(Relaxed));
                if idle > timeout_ms {
                    tracing::warn!("MASTER timeout: no data nor PING received...");
                    return;
                }
                let fack = marks.fack(&shared.aof, r.offset());
                if send_ack(&mut conn, r.offset(), fack).await.is_err() {
                    return;
                }
            }
            read = conn.rd.read_buf(&mut conn.buf) => match read {
                Ok(0) | Err(_) => {
                    tracing::info!("Connection with master lost.");
                    tracing::info!("Caching the disconnected master state.");
                    return;
                }
                Ok(n) => {
                    r.link_last_io_ms.store(shared.clock.now_ms(), Relaxed);
                    r.read_offset.fetch_add(n as u64, Relaxed);
                    shared
                        .stats
                        .net_repl_input_bytes
                        .fetch_add(n as u64, Relaxed);
                    handle.touch();
                }
            },
        }
    }
}
