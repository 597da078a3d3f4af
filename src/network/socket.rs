//! A client's socket, whichever way it is served: tokio's epoll-driven
//! stream, the io_uring driver ([`super::uring`]), or TLS over an epoll
//! stream ([`super::tls`]). The connection logic sees only these three
//! operations, so it is the same on every path.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::task::Poll;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_openssl::SslStream;

use super::uring::UringSocket;

pub(crate) enum Socket {
    Epoll(TcpStream),
    Uring(UringSocket),
    /// Boxed: the OpenSSL stream is larger than the other two.
    Tls(Box<SslStream<TcpStream>>),
}

impl Socket {
    /// Wraps an accepted socket for the path this thread serves with.
    pub(crate) fn new(stream: TcpStream) -> std::io::Result<Socket> {
        let _ = stream.set_nodelay(true);
        if super::uring::active() {
            return UringSocket::new(stream).map(Socket::Uring);
        }
        Ok(Socket::Epoll(stream))
    }

    /// Reads what has arrived into `rbuf` (waiting for something); 0 at
    /// end of stream. Cancel-safe on both paths.
    pub(crate) async fn read_buf(&mut self, rbuf: &mut BytesMut) -> std::io::Result<usize> {
        match self {
            Socket::Epoll(s) => s.read_buf(rbuf).await,
            Socket::Uring(s) => s.read(rbuf).await,
            Socket::Tls(s) => s.read_buf(rbuf).await,
        }
    }

    /// Writes all of `buf`; it holds the same bytes afterwards. `stalled`
    /// is set once the write has to wait for the peer to read (the socket
    /// is full), not before: eviction tells bytes on their way out from
    /// bytes a client leaves unread by it (`Clients::pushes_in_flight`).
    pub(crate) async fn write_all(
        &mut self,
        buf: &mut Vec<u8>,
        stalled: &Arc<AtomicBool>,
    ) -> std::io::Result<()> {
        match self {
            Socket::Epoll(s) => {
                let mut done = 0;
                while done < buf.len() {
                    match s.try_write(&buf[done..]) {
                        Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                        Ok(n) => done += n,
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            stalled.store(true, Relaxed);
                            s.writable().await?;
                        }
                        Err(e) => return Err(e),
                    }
                }
                Ok(())
            }
            Socket::Uring(s) => s.write_all(buf, stalled).await,
            Socket::Tls(s) => {
                let mut done = 0;
                while done < buf.len() {
                    let n = std::future::poll_fn(|cx| {
                        match Pin::new(&mut **s).poll_write(cx, &buf[done..]) {
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
            Socket::Uring(s) => s.shutdown(),
            Socket::Tls(s) => {
                let _ = s.shutdown().await;
            }
        }
    }
}
