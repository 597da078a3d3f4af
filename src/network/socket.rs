//! A client's socket, whichever way it is served: tokio's epoll-driven
//! stream (TCP or unix), the io_uring driver ([`super::uring`]), which
//! serves both kinds alike, or TLS over an epoll TCP stream
//! ([`super::tls`]). The connection logic sees only these three
//! operations, so it is the same on every path.

use std::cell::Cell;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::task::Poll;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt, Interest};
use tokio::net::{TcpStream, UnixStream};
use tokio_openssl::SslStream;

use super::listen::Stream;
use super::uring::UringSocket;
use crate::clients::WriteProgress;

pub(crate) enum Socket {
    Epoll(TcpStream),
    EpollUnix(UnixStream),
    Uring(UringSocket),
    /// Boxed: the OpenSSL stream is larger than the other two.
    Tls(Box<SslStream<TcpStream>>),
}

/// How a write that read meanwhile ([`Socket::write_all_reading`]) ended.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(crate) enum Wrote {
    /// Everything was written.
    All,
    /// Everything was written, and the input ended (end of stream or a
    /// read error) meanwhile: nothing more will be read.
    InputEnded,
    /// `on_read` refused what was read (the client is to be closed): the
    /// write was left unfinished.
    Stopped,
    /// `on_read` asked for what was read to run: the write stopped where
    /// the socket had taken its bytes (`sent`), the rest still to write.
    Paused,
}

/// What a write that read meanwhile does after a read (`on_read`'s answer).
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(crate) enum AfterRead {
    /// Goes on writing.
    Write,
    /// Stops: the client is to be closed.
    Stop,
    /// Returns [`Wrote::Paused`], for the caller to run the requests read
    /// and write their replies after the rest.
    Pause,
}

/// The room a read into `rbuf` asks for. A big request's buffer grows by
/// doubling, and mimalloc keeps the copy each doubling left resident until
/// the thread's next purge: past 1 MB it is handed back at once, so a
/// request's bytes cost their size, not up to twice it (a client that
/// announces a huge request and sends it slowly holds what it sent).
pub(crate) fn make_room(rbuf: &mut BytesMut) {
    if rbuf.capacity() - rbuf.len() < GROW_BELOW {
        let before = rbuf.capacity();
        rbuf.reserve(READ_ROOM);
        if before >= 1 << 20 && rbuf.capacity() != before {
            crate::alloc::release_free_memory();
        }
    }
}

const READ_ROOM: usize = 16 * 1024;

/// A read grows the buffer when less than this is free in it.
pub(crate) const GROW_BELOW: usize = READ_ROOM / 4;

/// The size of a read into the reusable query buffer (Redis's
/// `PROTO_IOBUF_LEN`).
pub(crate) const QUERY_CHUNK: usize = 16 * 1024;

thread_local! {
    /// Redis 7.4+'s reusable query buffer (`thread_reusable_qb`): a
    /// connection with no request pending holds no read buffer; it reads
    /// into its thread's, and gives it back once its requests have run (a
    /// request left unfinished keeps it, as its own). Many idle
    /// connections thus hold no query buffer memory.
    static REUSABLE: Cell<Option<BytesMut>> = const { Cell::new(None) };
}

/// The thread's reusable query buffer, or a new one of the same size if a
/// connection of this thread holds it.
pub(crate) fn take_query_buffer() -> BytesMut {
    REUSABLE
        .take()
        .unwrap_or_else(|| BytesMut::with_capacity(QUERY_CHUNK))
}

/// Gives back a query buffer whose bytes were all consumed: it becomes the
/// thread's reusable one unless the thread has one, or it grew past the
/// usual size (a big request's buffer is not kept for everybody).
pub(crate) fn give_query_buffer(mut buf: BytesMut) {
    buf.clear();
    // An empty view that was advanced reclaims its allocation's start (no
    // copy); a buffer shared with something else gets a fresh allocation.
    buf.reserve(QUERY_CHUNK);
    if buf.capacity() != QUERY_CHUNK {
        return;
    }
    REUSABLE.with(|slot| {
        let held = slot.take();
        slot.set(Some(held.unwrap_or(buf)));
    });
}

/// The epoll path's write loop, the same for both kinds of stream. While
/// the socket is full it also waits for input (unless `$reading` is
/// false) and reads it into `$rbuf` (see `Socket::write_all_reading`).
macro_rules! write_epoll {
    ($s:expr, $buf:expr, $sent:expr, $progress:expr, $started:expr, $rbuf:expr, $reading:expr, $on_read:expr) => {{
        let done: &mut usize = $sent;
        let mut started = Some($started);
        let mut reading = $reading;
        let mut ended = false;
        while *done < $buf.len() {
            let wrote = $s.try_write(&$buf[*done..]);
            if let Some(f) = started.take() {
                f();
            }
            match wrote {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    *done += n;
                    $progress.sent.store(*done, Relaxed);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    $progress.stalled.store(true, Relaxed);
                    if !reading {
                        $s.writable().await?;
                        continue;
                    }
                    let ready = $s.ready(Interest::WRITABLE | Interest::READABLE).await?;
                    if !ready.is_readable() {
                        continue;
                    }
                    make_room($rbuf);
                    match $s.try_read_buf($rbuf) {
                        Ok(n) if n > 0 => match ($on_read)($rbuf, n) {
                            AfterRead::Write => {}
                            AfterRead::Stop => return Ok(Wrote::Stopped),
                            AfterRead::Pause => return Ok(Wrote::Paused),
                        },
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        // End of stream or an error: the write goes on, and
                        // the caller closes after it.
                        _ => {
                            reading = false;
                            ended = true;
                        }
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(if ended { Wrote::InputEnded } else { Wrote::All })
    }};
}

/// What a TLS write's poll came back with.
enum Step {
    Wrote(std::io::Result<usize>),
    Read(std::io::Result<usize>),
}

impl Socket {
    /// Wraps an accepted socket for the path this thread serves with.
    pub(crate) fn new(stream: Stream) -> std::io::Result<Socket> {
        if let Stream::Tcp(s) = &stream {
            let _ = s.set_nodelay(true);
        }
        if super::uring::active() {
            return UringSocket::new(stream.into_fd()?).map(Socket::Uring);
        }
        Ok(match stream {
            Stream::Tcp(s) => Socket::Epoll(s),
            Stream::Unix(s) => Socket::EpollUnix(s),
        })
    }

    /// Reads what has arrived into `rbuf` (waiting for something); 0 at
    /// end of stream. Cancel-safe on both paths.
    pub(crate) async fn read_buf(&mut self, rbuf: &mut BytesMut) -> std::io::Result<usize> {
        match self {
            Socket::Epoll(s) => s.read_buf(rbuf).await,
            Socket::EpollUnix(s) => s.read_buf(rbuf).await,
            Socket::Uring(s) => s.read(rbuf).await,
            Socket::Tls(s) => s.read_buf(rbuf).await,
        }
    }

    /// Reads a client's input into `rbuf`, as `read_buf`, except that a
    /// connection with no read buffer (capacity 0: no request pending)
    /// waits for input without one, then reads into the thread's reusable
    /// buffer ([`take_query_buffer`]), which the connection gives back once
    /// its requests ran. Cancel-safe: a wait dropped before input came took
    /// no buffer.
    pub(crate) async fn read_query(&mut self, rbuf: &mut BytesMut) -> std::io::Result<usize> {
        if rbuf.capacity() != 0 {
            make_room(rbuf);
            return self.read_buf(rbuf).await;
        }
        macro_rules! read_when_ready {
            ($s:expr) => {{
                $s.readable().await?;
                *rbuf = take_query_buffer();
                loop {
                    match $s.try_read_buf(rbuf) {
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            $s.readable().await?
                        }
                        read => return read,
                    }
                }
            }};
        }
        match self {
            Socket::Epoll(s) => read_when_ready!(s),
            Socket::EpollUnix(s) => read_when_ready!(s),
            // The driver receives into buffers of its own and hands the
            // pending input's over (see `UringSocket::read`).
            Socket::Uring(s) => s.read(rbuf).await,
            Socket::Tls(s) => {
                // OpenSSL reads whole records (no read-ahead): input it
                // decrypted and still holds is `pending`; otherwise what
                // comes next shows on the socket.
                if s.ssl().pending() == 0 {
                    s.get_ref().readable().await?;
                }
                *rbuf = take_query_buffer();
                s.read_buf(rbuf).await
            }
        }
    }

    /// Writes `buf` from `sent` (the bytes of it written before) to its
    /// end, `sent` following the bytes the socket takes; `buf` holds the
    /// same bytes afterwards. `progress`
    /// counts the bytes the kernel took as it takes them (an unread client's
    /// output is what is left: CLIENT LIST's `omem`, the output limits),
    /// and says once the write has to wait for the peer to read (the
    /// socket is full), not before: eviction tells bytes on their way out
    /// from bytes a client leaves unread by it (`Clients::pushes_in_flight`).
    /// `started` runs once the bytes are handed to the socket (the first
    /// write tried, or the send queued), before waiting for the peer.
    ///
    /// While the write waits, what the client sends is read into `rbuf`
    /// (unless `reading` is false), each read told to `on_read` with the
    /// bytes it added, which says whether to go on, stop (the write is then
    /// left unfinished) or pause ([`AfterRead`]). A client that writes a
    /// whole pipeline before reading any reply waits for its send to
    /// finish, and the send for us to read: Redis reads and runs while its
    /// output waits, and so must we, or both sides wait forever; and what
    /// the commands read meanwhile do must not wait for a client that does
    /// not read (it grows its output, as Redis's, to its limits). Nothing
    /// read is lost if the future is dropped: it is in `rbuf` already.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn write_all_reading(
        &mut self,
        buf: &mut Vec<u8>,
        sent: &mut usize,
        progress: &Arc<WriteProgress>,
        started: impl FnOnce(),
        rbuf: &mut BytesMut,
        reading: bool,
        mut on_read: impl FnMut(&BytesMut, usize) -> AfterRead,
    ) -> std::io::Result<Wrote> {
        match self {
            Socket::Epoll(s) => {
                write_epoll!(s, buf, sent, progress, started, rbuf, reading, on_read)
            }
            Socket::EpollUnix(s) => {
                write_epoll!(s, buf, sent, progress, started, rbuf, reading, on_read)
            }
            Socket::Uring(s) => {
                s.write_all_reading(buf, sent, progress, started, rbuf, reading, on_read)
                    .await
            }
            Socket::Tls(s) => {
                let done = sent;
                let mut started = Some(started);
                let mut reading = reading;
                let mut ended = false;
                while *done < buf.len() {
                    // OpenSSL allows reads between a write that wants to
                    // be retried and its retry, as long as the retry
                    // passes the same bytes first: `buf[done..]` until it
                    // is taken, which a pause only moves (compacted) or
                    // extends (replies appended): `network::tls` sets
                    // ACCEPT_MOVING_WRITE_BUFFER and partial writes.
                    let step = std::future::poll_fn(|cx| {
                        let polled = Pin::new(&mut **s).poll_write(cx, &buf[*done..]);
                        if let Some(f) = started.take() {
                            f();
                        }
                        match polled {
                            Poll::Pending => {
                                progress.stalled.store(true, Relaxed);
                                if !reading {
                                    return Poll::Pending;
                                }
                                make_room(rbuf);
                                // Cancel-safe: dropped at once if pending.
                                let read = std::pin::pin!(s.read_buf(rbuf));
                                read.poll(cx).map(Step::Read)
                            }
                            Poll::Ready(n) => Poll::Ready(Step::Wrote(n)),
                        }
                    })
                    .await;
                    match step {
                        Step::Wrote(n) => {
                            let n = n?;
                            if n == 0 {
                                return Err(std::io::ErrorKind::WriteZero.into());
                            }
                            *done += n;
                            progress.sent.store(*done, Relaxed);
                        }
                        Step::Read(Ok(n)) if n > 0 => match on_read(rbuf, n) {
                            AfterRead::Write => {}
                            AfterRead::Stop => return Ok(Wrote::Stopped),
                            AfterRead::Pause => return Ok(Wrote::Paused),
                        },
                        Step::Read(_) => {
                            reading = false;
                            ended = true;
                        }
                    }
                }
                Ok(if ended { Wrote::InputEnded } else { Wrote::All })
            }
        }
    }

    /// Ends the write side, so the peer reads end of stream.
    pub(crate) async fn shutdown(&mut self) {
        match self {
            Socket::Epoll(s) => {
                let _ = s.shutdown().await;
            }
            Socket::EpollUnix(s) => {
                let _ = s.shutdown().await;
            }
            Socket::Uring(s) => s.shutdown(),
            Socket::Tls(s) => {
                let _ = s.shutdown().await;
            }
        }
    }
}
