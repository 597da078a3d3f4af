//! A client's socket, whichever way it is served: tokio's epoll-driven
//! stream, or the io_uring driver ([`super::uring`]). The connection logic
//! sees only these three operations, so it is the same on both paths.

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::uring::UringSocket;

pub(crate) enum Socket {
    Epoll(TcpStream),
    Uring(UringSocket),
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
        }
    }

    /// Writes all of `buf`; it holds the same bytes afterwards.
    pub(crate) async fn write_all(&mut self, buf: &mut Vec<u8>) -> std::io::Result<()> {
        match self {
            Socket::Epoll(s) => s.write_all(buf).await,
            Socket::Uring(s) => s.write_all(buf).await,
        }
    }

    /// Ends the write side, so the peer reads end of stream.
    pub(crate) async fn shutdown(&mut self) {
        match self {
            Socket::Epoll(s) => {
                let _ = s.shutdown().await;
            }
            Socket::Uring(s) => s.shutdown(),
        }
    }
}
