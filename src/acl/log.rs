//! The ACL security log (`ACL LOG`): the newest denials first, similar
//! ones within a minute folded into one entry with a count, at most
//! `acllog-max-len` entries (acl.c `addACLLogEntry`).

use std::collections::VecDeque;

/// Entries closer in time than this may be folded together.
const GROUPING_MAX_MS: u64 = 60_000;
/// How many of the newest entries a new one is compared with.
const SCAN: usize = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reason {
    Command,
    Key,
    Channel,
    Auth,
}

impl Reason {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Reason::Command => "command",
            Reason::Key => "key",
            Reason::Channel => "channel",
            Reason::Auth => "auth",
        }
    }
}

/// Where the denied command came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Context {
    Toplevel,
    Multi,
    Lua,
}

impl Context {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Context::Toplevel => "toplevel",
            Context::Multi => "multi",
            Context::Lua => "lua",
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) count: u64,
    pub(crate) reason: Reason,
    pub(crate) context: Context,
    /// The command, key or channel denied; for auth, the command's name.
    pub(crate) object: Vec<u8>,
    pub(crate) username: Vec<u8>,
    /// Unix milliseconds of the last occurrence.
    pub(crate) ctime_ms: u64,
    /// The client's CLIENT LIST line (of the last occurrence).
    pub(crate) client_info: String,
    /// Redis 7.2+'s identity of an entry: the number of entries created
    /// before it, and the time it was created (the time of its first
    /// occurrence); set by [`AclLog::add`].
    pub(crate) entry_id: u64,
    pub(crate) created_ms: u64,
}

impl Entry {
    fn same_as(&self, other: &Entry) -> bool {
        self.reason == other.reason
            && self.context == other.context
            && self.ctime_ms.abs_diff(other.ctime_ms) <= GROUPING_MAX_MS
            && self.object == other.object
            && self.username == other.username
    }
}

#[derive(Default)]
pub(crate) struct AclLog {
    /// Newest first.
    entries: VecDeque<Entry>,
    /// Denials since the start, by reason (INFO's `acl_access_denied_*`,
    /// which neither ACL LOG RESET nor CONFIG RESETSTAT clears, as Redis's
    /// `acl_info`), in [`AclLog::denied`]'s order.
    denied: [u64; 4],
    /// Entries created since the start (no reset clears it, as Redis's
    /// `ACLLogEntryCount`).
    created: u64,
}

impl AclLog {
    /// Records a denial: bumps a similar recent entry (moving it to the
    /// front) or adds a new one, dropping the oldest past `max_len`.
    pub(crate) fn add(&mut self, entry: Entry, max_len: usize) {
        let reason = match entry.reason {
            Reason::Auth => 0,
            Reason::Command => 1,
            Reason::Key => 2,
            Reason::Channel => 3,
        };
        self.denied[reason] += 1;
        let similar = self
            .entries
            .iter()
            .take(SCAN)
            .position(|e| e.same_as(&entry));
        if let Some(i) = similar
            && let Some(mut e) = self.entries.remove(i)
        {
            e.count += 1;
            e.ctime_ms = entry.ctime_ms;
            e.client_info = entry.client_info;
            self.entries.push_front(e);
            return;
        }
        let mut entry = entry;
        entry.entry_id = self.created;
        entry.created_ms = entry.ctime_ms;
        self.created += 1;
        self.entries.push_front(entry);
        self.entries.truncate(max_len);
    }

    pub(crate) fn reset(&mut self) {
        self.entries.clear();
    }

    /// Denials of auth, commands, keys and channels since the start.
    pub(crate) fn denied(&self) -> [u64; 4] {
        self.denied
    }

    /// The newest `n` entries.
    pub(crate) fn newest(&self, n: usize) -> impl Iterator<Item = &Entry> {
        self.entries.iter().take(n)
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(object: &str, ms: u64) -> Entry {
        Entry {
            count: 1,
            reason: Reason::Key,
            context: Context::Toplevel,
            object: object.as_bytes().to_vec(),
            username: b"u".to_vec(),
            ctime_ms: ms,
            client_info: String::new(),
            entry_id: 0,
            created_ms: 0,
        }
    }

    #[test]
    fn folds_similar_and_caps_length() {
        let mut log = AclLog::default();
        log.add(entry("a", 0), 3);
        log.add(entry("b", 1), 3);
        log.add(entry("a", 2), 3);
        let v: Vec<_> = log
            .newest(10)
            .map(|e| (e.object.clone(), e.count))
            .collect();
        assert_eq!(v, vec![(b"a".to_vec(), 2), (b"b".to_vec(), 1)]);
        log.add(entry("a", 100_000), 3);
        assert_eq!(log.len(), 3);
        log.add(entry("c", 0), 3);
        log.add(entry("d", 0), 3);
        assert_eq!(log.len(), 3);
        // Every denial counts, folded or dropped, and a reset keeps them.
        log.reset();
        assert_eq!(log.denied(), [0, 0, 6, 0]);
        log.reset();
        assert_eq!(log.len(), 0);
    }
}
