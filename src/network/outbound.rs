//! Connections this server opens to other servers: the replica's link to
//! its primary and the cluster bus's links to other nodes. They leave from
//! `bind-source-addr` when it is set, as Redis's
//! `anetTcpNonBlockBestEffortBindConnect`: a source that cannot be bound is
//! given up for that attempt, and the connection is made from any address.

use std::io;

use tokio::net::{TcpSocket, TcpStream, lookup_host};

/// Connects to `host:port`, from `source` if it is not empty and can be
/// bound (best effort).
pub(crate) async fn connect(host: &str, port: u16, source: &str) -> io::Result<TcpStream> {
    if !source.is_empty() {
        match connect_from(host, port, Some(source)).await {
            Ok(s) => return Ok(s),
            Err(e) => tracing::debug!("bind-source-addr {source} not usable: {e}"),
        }
    }
    connect_from(host, port, None).await
}

/// Redis's `anetTcpGenericConnect`: each address of `host` in turn; a
/// source that binds to none of the addresses it names fails the attempt.
async fn connect_from(host: &str, port: u16, source: Option<&str>) -> io::Result<TcpStream> {
    let mut last = None;
    for addr in lookup_host((host, port)).await? {
        let socket = if addr.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        socket.set_reuseaddr(true)?;
        if let Some(source) = source {
            let mut bound = Err(io::Error::new(
                io::ErrorKind::AddrNotAvailable,
                "no address to bind",
            ));
            for local in lookup_host((source, 0)).await? {
                bound = socket.bind(local);
                if bound.is_ok() {
                    break;
                }
            }
            bound?;
        }
        match socket.connect(addr).await {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no address")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn leaves_from_the_source_or_from_anywhere() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let s = connect("127.0.0.1", port, "127.0.0.2").await.unwrap();
        assert_eq!(s.local_addr().unwrap().ip().to_string(), "127.0.0.2");
        // An address this machine does not have: connected from any.
        let s = connect("127.0.0.1", port, "192.0.2.77").await.unwrap();
        assert_eq!(s.local_addr().unwrap().ip().to_string(), "127.0.0.1");
        let s = connect("127.0.0.1", port, "").await.unwrap();
        assert_eq!(s.local_addr().unwrap().ip().to_string(), "127.0.0.1");
    }
}
