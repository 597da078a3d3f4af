//! A client's socket, whichever way it is served: tokio's epoll-driven
//! stream (TCP or unix), the io_uring driver ([`super::uring`]), which
//! serves both kinds alike, or TLS over an epoll TCP stream
//! ([`super::tls`]). The connection logic sees only these three
//! operations, so it is the same on every path.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::task::Poll;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};
use tokio_openssl::SslStream;

use super::listen::Stream;
use super::uring::UringSocket;

pub(crate) enum Socket {
    Epoll(TcpStream),
    EpollUnix(UnixStream),
    Uring(UringSocket),
    /// Boxed: the OpenSSL stream is larger than the other two.
    Tls(Box<SslStream<TcpStream>>),
}

/// The epoll path's write loop, the same for both kinds of stream.
macro_rules! write_epoll {
    ($s:expr, $buf:expr, $stalled:expr, $started:expr) => {{
        let mut done = 0;
        let mut started = Some($started);
        while done < $buf.len() {
            let wrote = $s.try_write(&$buf[done..]);
            if let Some(f) = started.take() {
                f();
            }
            match wrote {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    $stalled.store(true, Relaxed);
                    $s.writable().await?;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }};
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

    /// Writes all of `buf`; it holds the same bytes afterwards. `stalled`
    /// is set once the write has to wait for the peer to read (the socket
    /// is full), not before: eviction tells bytes on their way out from
    /// bytes a client leaves unread by it (`Clients::pushes_in_flight`).
    /// `started` runs once the bytes are handed to the socket (the first
    /// write tried, or the send queued), before waiting for the peer.
    pub(crate) async fn write_all(
        &mut self,
        buf: &mut Vec<u8>,
        stalled: &Arc<AtomicBool>,
        started: impl FnOnce(),
    ) -> std::io::Result<()> {
        match self {
            Socket::Epoll(s) => write_epoll!(s, buf, stalled, started),
            Socket::EpollUnix(s) => write_epoll!(s, buf, stalled, started),
            Socket::Uring(s) => s.write_all(buf, stalled, started).await,
            Socket::Tls(s) => {
                let mut done = 0;
                let mut started = Some(started);
                while done < buf.len() {
                    let n = std::future::poll_fn(|cx| {
                        let polled = Pin::new(&mut **s).poll_write(cx, &buf[done..]);
                        if let Some(f) = started.take() {
                            f();
                        }
                        match polled {
                            Poll::Pending => {
                                stalled.store(true, Relaxed);
                                Poll::Pending
                            }
                            ready => ready,
                        }
                    })
                    .await?;
                    if n == 0 {
                        return Err(std::io::ErrorKind::WriteZero.into());
                    }
                    done += n;
                }
                Ok(())
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
