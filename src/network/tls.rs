//! TLS (`tls-port`, `tls-replication`): the server's OpenSSL contexts,
//! built from the `tls-*` settings as Redis 7.0's `tls.c` builds them,
//! the handshake of an accepted connection, and the client side of one
//! to a primary ([`Tls::connect`]).
//!
//! OpenSSL rather than rustls because the settings are OpenSSL's own
//! language: `tls-ciphers` is an OpenSSL cipher string (Redis's tests set
//! `DEFAULT:-AES128-SHA256` and expect a TLSv1.2 client offering only that
//! CBC suite to be refused, and one offering AES256-SHA256 served; rustls
//! has no CBC suites), `tls-dh-params-file` needs finite-field DH,
//! `tls-ca-cert-dir` is an OpenSSL hashed directory, and
//! `tls-key-file-pass` decrypts a PEM key as OpenSSL does.
//!
//! A context is built whole or not at all: `CONFIG SET` of any `tls-*`
//! setting builds a new one and swaps it in for the connections accepted
//! after it (those open keep theirs, as in Redis), and a file that does
//! not load leaves the old one. Why a build failed is logged with Redis's
//! lines; the client hears Redis's "Unable to update TLS configuration".
//!
//! TLS connections are served through tokio's epoll reactor, whatever the
//! socket path (`io-uring`): the record layer encrypts and decrypts in
//! memory buffers inside OpenSSL, which reads and writes the socket
//! through its own BIO; io_uring would save only the syscalls of those
//! reads and writes, which cost little beside the cipher work.

use std::path::Path;
use std::pin::Pin;
use std::time::Duration;

use openssl::dh::Dh;
use openssl::pkey::PKey;
use openssl::ssl::{
    Ssl, SslContext, SslContextBuilder, SslMethod, SslMode, SslOptions, SslSessionCacheMode,
    SslVerifyMode,
};
use parking_lot::RwLock;
use tokio::net::TcpStream;
use tokio_openssl::SslStream;

use crate::config::{Config, TLS_UNABLE};

/// A client that has not finished its handshake by then is closed (Redis
/// waits for it as for any idle client; a bound keeps a silent peer from
/// holding a connection slot forever when `timeout` is 0).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The server's TLS contexts, once TLS is configured.
pub(crate) struct Tls {
    contexts: RwLock<Option<Contexts>>,
}

/// What one build of the settings makes (Redis's `redis_tls_ctx` and
/// `redis_tls_client_ctx`).
#[derive(Clone)]
struct Contexts {
    server: SslContext,
    /// With `tls-client-cert-file` and `tls-client-key-file`: the context
    /// outgoing connections use; without, they use `server`'s certificate.
    client: Option<SslContext>,
}

impl Tls {
    pub(crate) fn new() -> Tls {
        Tls {
            contexts: RwLock::new(None),
        }
    }

    /// Builds the context from the settings and swaps it in (Redis's
    /// `tlsConfigure`); with `reconfigure` false, only when there is none
    /// yet. On failure the reasons are logged and the old context stays.
    pub(crate) fn configure(&self, config: &Config, reconfigure: bool) -> Result<(), String> {
        if !reconfigure && self.contexts.read().is_some() {
            return Ok(());
        }
        match build(config) {
            Ok(contexts) => {
                *self.contexts.write() = Some(contexts);
                Ok(())
            }
            Err(why) => {
                tracing::warn!("{why}");
                Err(TLS_UNABLE.into())
            }
        }
    }

    /// The context new connections get (None: TLS was never configured).
    pub(crate) fn context(&self) -> Option<SslContext> {
        self.contexts.read().as_ref().map(|c| c.server.clone())
    }

    /// The client side of a handshake on `stream`, connected to `host`
    /// (Redis's `connTLSConnect`, for `tls-replication`): the client
    /// certificate if one is configured, else the server's; the peer's
    /// certificate must be signed by `tls-ca-cert-file`/`-dir` (no host
    /// name check, as in Redis); a host that is not an IP address is sent
    /// as SNI. The error is OpenSSL's, for the log.
    pub(crate) async fn connect(
        &self,
        host: &str,
        stream: TcpStream,
        timeout: Duration,
    ) -> Result<SslStream<TcpStream>, String> {
        let ctx = {
            let contexts = self.contexts.read();
            let Some(c) = contexts.as_ref() else {
                return Err("TLS is not configured".into());
            };
            c.client.clone().unwrap_or_else(|| c.server.clone())
        };
        let mut ssl = Ssl::new(&ctx).map_err(|e| e.to_string())?;
        ssl.set_connect_state();
        if host.parse::<std::net::IpAddr>().is_err() {
            ssl.set_hostname(host).map_err(|e| e.to_string())?;
        }
        let mut stream = SslStream::new(ssl, stream).map_err(|e| e.to_string())?;
        match tokio::time::timeout(timeout, Pin::new(&mut stream).connect()).await {
            Ok(Ok(())) => Ok(stream),
            Ok(Err(e)) => Err(handshake_error(&e)),
            Err(_) => Err("Connection timed out".into()),
        }
    }
}

/// A failed handshake as Redis's `connGetLastError` prints it: OpenSSL's
/// first error (`...:certificate verify failed`), else the socket's.
fn handshake_error(e: &openssl::ssl::Error) -> String {
    if let Some(stack) = e.ssl_error() {
        return first(stack);
    }
    match e.io_error() {
        Some(io) => strerror(io),
        None => e.to_string(),
    }
}

/// `tls-auth-clients`: whether a client must present a certificate.
fn verify_mode(config: &Config) -> SslVerifyMode {
    match config.tls_setting("tls-auth-clients").as_str() {
        "no" => SslVerifyMode::NONE,
        "optional" => SslVerifyMode::PEER,
        _ => SslVerifyMode::PEER | SslVerifyMode::FAIL_IF_NO_PEER_CERT,
    }
}

/// Runs the server side of the handshake on an accepted socket, with
/// `tls-auth-clients` as it is now (Redis reads it per connection).
pub(crate) async fn accept(
    ctx: &SslContext,
    config: &Config,
    stream: TcpStream,
) -> std::io::Result<SslStream<TcpStream>> {
    let mut ssl = Ssl::new(ctx).map_err(std::io::Error::other)?;
    ssl.set_verify(verify_mode(config));
    let mut stream = SslStream::new(ssl, stream).map_err(std::io::Error::other)?;
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, Pin::new(&mut stream).accept()).await {
        Ok(Ok(())) => Ok(stream),
        Ok(Err(e)) => Err(std::io::Error::other(e)),
        Err(_) => Err(std::io::ErrorKind::TimedOut.into()),
    }
}

/// The server side of a cluster bus handshake: Redis asks every node for
/// a certificate signed by the CA, whatever `tls-auth-clients` says
/// (`connCreateAcceptedTLS(cfd, TLS_CLIENT_AUTH_YES)`).
pub(crate) async fn accept_peer(
    ctx: &SslContext,
    stream: TcpStream,
) -> std::io::Result<SslStream<TcpStream>> {
    let mut ssl = Ssl::new(ctx).map_err(std::io::Error::other)?;
    ssl.set_verify(SslVerifyMode::PEER | SslVerifyMode::FAIL_IF_NO_PEER_CERT);
    let mut stream = SslStream::new(ssl, stream).map_err(std::io::Error::other)?;
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, Pin::new(&mut stream).accept()).await {
        Ok(Ok(())) => Ok(stream),
        Ok(Err(e)) => Err(std::io::Error::other(e)),
        Err(_) => Err(std::io::ErrorKind::TimedOut.into()),
    }
}

/// Redis's `REDIS_TLS_PROTO_*` bits of `tls-protocols`.
const TLS1: u8 = 1;
const TLS1_1: u8 = 2;
const TLS1_2: u8 = 4;
const TLS1_3: u8 = 8;

/// `tls-protocols` (Redis's `parseProtocolsConfig`): unset is TLSv1.2 and
/// TLSv1.3.
fn parse_protocols(text: &str) -> Result<u8, String> {
    if text.is_empty() {
        return Ok(TLS1_2 | TLS1_3);
    }
    let mut protocols = 0;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        protocols |= match word.to_ascii_lowercase().as_str() {
            "tlsv1" => TLS1,
            "tlsv1.1" => TLS1_1,
            "tlsv1.2" => TLS1_2,
            "tlsv1.3" => TLS1_3,
            _ => {
                return Err(
                    "Invalid tls-protocols specified. Use a combination of 'TLSv1', \
                            'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'."
                        .into(),
                );
            }
        };
    }
    Ok(protocols)
}

/// A setting's text, `None` when unset. OpenSSL takes C strings: a value
/// with a NUL byte cannot be one, and is refused rather than cut.
fn setting(config: &Config, name: &str) -> Result<Option<String>, String> {
    let v = config.tls_setting(name);
    if v.contains('\0') {
        return Err(format!("{name} contains a NUL byte"));
    }
    Ok((!v.is_empty()).then_some(v))
}

/// Redis's `tlsConfigure`: the server context, and the client context
/// when a client certificate is configured. The error is what Redis logs.
fn build(config: &Config) -> Result<Contexts, String> {
    let cert = setting(config, "tls-cert-file")?.ok_or("No tls-cert-file configured!")?;
    let key = setting(config, "tls-key-file")?.ok_or("No tls-key-file configured!")?;
    let ca_file = setting(config, "tls-ca-cert-file")?;
    let ca_dir = setting(config, "tls-ca-cert-dir")?;
    let auth = config.tls_setting("tls-auth-clients") != "no";
    let peers = config.tls_setting("tls-cluster") == "yes"
        || config.tls_setting("tls-replication") == "yes";
    if (auth || peers) && ca_file.is_none() && ca_dir.is_none() {
        return Err(
            "Either tls-ca-cert-file or tls-ca-cert-dir must be specified when \
                    tls-cluster, tls-replication or tls-auth-clients are enabled!"
                .into(),
        );
    }
    let protocols = parse_protocols(&config.tls_setting("tls-protocols"))?;
    let pass = setting(config, "tls-key-file-pass")?;
    let mut b = context(config, protocols, &cert, &key, pass.as_deref())?;
    if config.tls_setting("tls-session-caching") == "yes" {
        let size = config
            .tls_setting("tls-session-cache-size")
            .parse()
            .unwrap_or(20480);
        let timeout: i64 = config
            .tls_setting("tls-session-cache-timeout")
            .parse()
            .unwrap_or(300);
        b.set_session_cache_mode(SslSessionCacheMode::SERVER);
        b.set_session_cache_size(size);
        set_session_timeout(&mut b, timeout);
        b.set_session_id_context(b"redis")
            .map_err(|e| e.to_string())?;
    } else {
        b.set_session_cache_mode(SslSessionCacheMode::OFF);
    }
    if config.tls_setting("tls-prefer-server-ciphers") == "yes" {
        b.set_options(SslOptions::CIPHER_SERVER_PREFERENCE);
    }
    b.set_options(SslOptions::SINGLE_DH_USE);
    match setting(config, "tls-dh-params-file")? {
        Some(file) => {
            let pem = std::fs::read(&file)
                .map_err(|e| format!("Failed to load {file}: {}", strerror(&e)))?;
            let dh = Dh::params_from_pem(&pem)
                .map_err(|_| format!("{file}: failed to read DH params."))?;
            b.set_tmp_dh(&dh)
                .map_err(|e| format!("Failed to load DH params file: {file}: {}", first(&e)))?;
        }
        None => set_dh_auto(&mut b),
    }
    let client_cert = setting(config, "tls-client-cert-file")?;
    let client_key = setting(config, "tls-client-key-file")?;
    let client = match (client_cert, client_key) {
        (Some(cert), Some(key)) => {
            let pass = setting(config, "tls-client-key-file-pass")?;
            Some(context(config, protocols, &cert, &key, pass.as_deref())?.build())
        }
        _ => None,
    };
    Ok(Contexts {
        server: b.build(),
        client,
    })
}

/// Redis's `createSSLContext`: protocols, modes, the certificate chain and
/// its key, the CAs, the cipher lists.
fn context(
    config: &Config,
    protocols: u8,
    cert: &str,
    key: &str,
    pass: Option<&str>,
) -> Result<SslContextBuilder, String> {
    let mut b = SslContext::builder(SslMethod::tls()).map_err(|e| e.to_string())?;
    let mut options = SslOptions::NO_SSLV2
        | SslOptions::NO_SSLV3
        | SslOptions::DONT_INSERT_EMPTY_FRAGMENTS
        | SslOptions::NO_COMPRESSION;
    for (bit, off) in [
        (TLS1, SslOptions::NO_TLSV1),
        (TLS1_1, SslOptions::NO_TLSV1_1),
        (TLS1_2, SslOptions::NO_TLSV1_2),
        (TLS1_3, SslOptions::NO_TLSV1_3),
    ] {
        if protocols & bit == 0 {
            options |= off;
        }
    }
    b.set_options(options);
    // A write that waits is retried with its bytes moved (compacted) or
    // followed by more (replies of what ran while it waited): see
    // `Socket::write_all_reading`.
    b.set_mode(SslMode::ENABLE_PARTIAL_WRITE | SslMode::ACCEPT_MOVING_WRITE_BUFFER);
    b.set_verify(SslVerifyMode::PEER | SslVerifyMode::FAIL_IF_NO_PEER_CERT);
    b.set_certificate_chain_file(cert)
        .map_err(|e| format!("Failed to load certificate: {cert}: {}", first(&e)))?;
    // Read here rather than by OpenSSL's file loader, so that a key with
    // no `tls-key-file-pass` fails instead of prompting on a terminal
    // (Redis installs a password callback for the same reason).
    let key_failed = |why: String| format!("Failed to load private key: {key}: {why}");
    let pem = std::fs::read(key).map_err(|e| key_failed(strerror(&e)))?;
    let pkey = PKey::private_key_from_pem_callback(&pem, |buf| {
        let pass = pass.unwrap_or("").as_bytes();
        let n = pass.len().min(buf.len());
        buf[..n].copy_from_slice(&pass[..n]);
        Ok(n)
    })
    .map_err(|e| key_failed(first(&e)))?;
    b.set_private_key(&pkey)
        .map_err(|e| key_failed(first(&e)))?;
    let ca_file = setting(config, "tls-ca-cert-file")?;
    let ca_dir = setting(config, "tls-ca-cert-dir")?;
    if ca_file.is_some() || ca_dir.is_some() {
        b.load_verify_locations(
            ca_file.as_deref().map(Path::new),
            ca_dir.as_deref().map(Path::new),
        )
        .map_err(|e| {
            format!(
                "Failed to configure CA certificate(s) file/directory: {}",
                first(&e)
            )
        })?;
    }
    if let Some(ciphers) = setting(config, "tls-ciphers")? {
        b.set_cipher_list(&ciphers)
            .map_err(|_| format!("Failed to configure ciphers: {ciphers}"))?;
    }
    if let Some(suites) = setting(config, "tls-ciphersuites")? {
        b.set_ciphersuites(&suites)
            .map_err(|_| format!("Failed to configure ciphersuites: {suites}"))?;
    }
    Ok(b)
}

/// The first OpenSSL error of a stack, as Redis prints it.
fn first(e: &openssl::error::ErrorStack) -> String {
    e.errors()
        .first()
        .map_or_else(|| e.to_string(), ToString::to_string)
}

fn strerror(e: &std::io::Error) -> String {
    crate::config_file::strerror(e)
}

unsafe extern "C" {
    // In libssl, which `openssl-sys` links; the `openssl` crate has no
    // wrapper for it.
    fn SSL_CTX_set_timeout(ctx: *mut openssl_sys::SSL_CTX, t: libc::c_long) -> libc::c_long;
}

/// `tls-session-cache-timeout` (Redis's `SSL_CTX_set_timeout`).
fn set_session_timeout(b: &mut SslContextBuilder, secs: i64) {
    // SAFETY: the pointer is the builder's live SSL_CTX; the call only
    // stores a number in it.
    unsafe {
        SSL_CTX_set_timeout(b.as_ptr(), secs as libc::c_long);
    }
}

/// OpenSSL 3's automatic DH parameters, when no `tls-dh-params-file` is
/// given (Redis's `SSL_CTX_set_dh_auto`).
fn set_dh_auto(b: &mut SslContextBuilder) {
    // SAFETY: the pointer is the builder's live SSL_CTX; the control call
    // only sets a flag in it.
    unsafe {
        openssl_sys::SSL_CTX_set_dh_auto(b.as_ptr(), 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols_as_redis_parses_them() {
        assert_eq!(parse_protocols(""), Ok(TLS1_2 | TLS1_3));
        assert_eq!(parse_protocols("TLSv1.2"), Ok(TLS1_2));
        assert_eq!(parse_protocols("tlsv1 TLSv1.3"), Ok(TLS1 | TLS1_3));
        assert!(parse_protocols("TLSv1.4").is_err());
    }
}
