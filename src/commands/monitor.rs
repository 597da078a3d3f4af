//! MONITOR: every command the server runs, shown to the clients that asked,
//! one line each, as Redis 7.0's `replicationFeedMonitors` writes it:
//!
//! ```text
//! +1700000000.123456 [0 127.0.0.1:50012] "set" "k" "v\r\n"
//! ```
//!
//! Lines are fed from the after-command step of [`call`](crate::execution::call), so
//! commands inside MULTI/EXEC and scripts (`[0 lua]`) appear as they run;
//! EVAL, EVALSHA and FCALL appear before the commands their script runs.
//! Administrative commands (and those flagged `skip_monitor`) are never
//! shown; the arguments a command redacted ([`Ctx::redact`]: AUTH's and
//! HELLO AUTH's credentials) are shown as `(redacted)`, as in the slow log.
//!
//! [`Ctx::redact`]: crate::commands::Ctx::redact

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use parking_lot::Mutex;

use crate::clients::{ClientHandle, ClientId, Push};
use crate::commands::Args;
use crate::commands::session::Client;

#[derive(Default)]
pub(crate) struct Monitors {
    list: Mutex<Vec<Arc<ClientHandle>>>,
    count: AtomicUsize,
}

impl Monitors {
    /// Whether any client monitors (one relaxed load per command).
    pub(crate) fn active(&self) -> bool {
        self.count.load(Relaxed) > 0
    }

    /// Adds a monitor; false if it already was one.
    pub(crate) fn add(&self, h: &Arc<ClientHandle>) -> bool {
        let mut l = self.list.lock();
        if l.iter().any(|m| m.id == h.id) {
            return false;
        }
        l.push(h.clone());
        self.count.store(l.len(), Relaxed);
        true
    }

    pub(crate) fn remove(&self, id: ClientId) {
        let mut l = self.list.lock();
        l.retain(|m| m.id != id);
        self.count.store(l.len(), Relaxed);
    }

    pub(crate) fn is_monitor(&self, id: ClientId) -> bool {
        self.active() && self.list.lock().iter().any(|m| m.id == id)
    }

    /// Sends every monitor the line for `args`, run by `client` in `db`;
    /// the arguments whose bits are set in `redacted` (the command's
    /// [`Ctx::redacted`](crate::commands::Ctx::redacted)) are hidden. A
    /// monitor is a normal client in Redis: its unread lines count against
    /// `limit` (`client-output-buffer-limit normal`).
    pub(crate) fn feed(
        &self,
        client: &Client,
        db: usize,
        args: &Args<'_>,
        redacted: u64,
        limit: crate::config::OutputLimit,
    ) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let mut line = format!("+{}.{:06} ", now.as_secs(), now.subsec_micros()).into_bytes();
        if client.in_script {
            line.extend_from_slice(format!("[{db} lua] ").as_bytes());
        } else if client.handle.unix {
            // Redis names the socket's path, not the client's address.
            let path = client.handle.addr.strip_suffix(":0");
            let path = path.unwrap_or(&client.handle.addr);
            line.extend_from_slice(format!("[{db} unix:{path}] ").as_bytes());
        } else {
            line.extend_from_slice(format!("[{db} {}] ", client.handle.addr).as_bytes());
        }
        for (i, a) in args.iter().enumerate() {
            if i > 0 {
                line.push(b' ');
            }
            if redacted & (1 << i.min(63)) != 0 {
                repr(&mut line, b"(redacted)");
            } else {
                repr(&mut line, a);
            }
        }
        line.extend_from_slice(b"\r\n");
        let line = bytes::Bytes::from(line);
        for m in self.list.lock().iter() {
            m.push(Push::Raw(line.clone()), limit);
        }
    }
}

/// Redis's `sdscatrepr`: a quoted string with `\\`, `\"`, `\n`, `\r`, `\t`,
/// `\a`, `\b` escaped and other non-printable bytes as `\xHH`.
fn repr(out: &mut Vec<u8>, s: &[u8]) {
    crate::util::repr_into(out, s);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repr_escapes_as_sdscatrepr() {
        let mut v = Vec::new();
        repr(&mut v, b"a \"b\"\\\n\r\t\x07\x08\x00\xff~");
        assert_eq!(v, b"\"a \\\"b\\\"\\\\\\n\\r\\t\\a\\b\\x00\\xff~\"");
    }
}
