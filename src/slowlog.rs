//! The slow log: the most recent commands that ran longer than
//! `slowlog-log-slower-than` microseconds, at most `slowlog-max-len` of
//! them, newest first (Redis's `slowlog.c`).
//!
//! Entries keep a bounded copy of the arguments, as Redis keeps them: at
//! most [`MAX_ARGC`] arguments (the last standing for the rest) and at most
//! [`MAX_STRING`] bytes of each, so a huge command costs the log little.
//! `execution::call` records into it after each command.

use std::collections::VecDeque;

/// Arguments kept per entry (Redis's `SLOWLOG_ENTRY_MAX_ARGC`).
const MAX_ARGC: usize = 32;
/// Bytes kept per argument (Redis's `SLOWLOG_ENTRY_MAX_STRING`).
const MAX_STRING: usize = 128;

/// One logged command.
pub(crate) struct Entry {
    pub(crate) id: u64,
    /// Unix seconds when it was logged.
    pub(crate) time: u64,
    /// How long it ran, in microseconds.
    pub(crate) duration: u64,
    pub(crate) args: Vec<Vec<u8>>,
    /// The client's `ip:port`.
    pub(crate) peer: String,
    /// The client's name, empty when it has none.
    pub(crate) name: Vec<u8>,
}

#[derive(Default)]
pub(crate) struct SlowLog {
    /// Newest first.
    entries: VecDeque<Entry>,
    next_id: u64,
}

impl SlowLog {
    /// Logs a command that took `duration` µs when it reaches
    /// `slower_than` (negative: the log is off), then trims to `max_len`.
    /// `args(i)` gives argument `i`, already redacted where the command
    /// asked for it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn push_if_needed(
        &mut self,
        slower_than: i64,
        max_len: u64,
        duration: u64,
        argc: usize,
        args: impl Fn(usize) -> Vec<u8>,
        peer: impl FnOnce() -> String,
        name: impl FnOnce() -> Vec<u8>,
        now_secs: u64,
    ) {
        // A log of length 0 takes nothing, not even an id (Redis's
        // `slowlogPushEntryIfNeeded`).
        if slower_than < 0 || max_len == 0 {
            self.trim(max_len);
            return;
        }
        if duration >= slower_than as u64 {
            let kept = argc.min(MAX_ARGC);
            let args = (0..kept)
                .map(|j| {
                    if kept != argc && j == kept - 1 {
                        return format!("... ({} more arguments)", argc - kept + 1).into_bytes();
                    }
                    let mut a = args(j);
                    if a.len() > MAX_STRING {
                        let more = a.len() - MAX_STRING;
                        a.truncate(MAX_STRING);
                        a.extend_from_slice(format!("... ({more} more bytes)").as_bytes());
                    }
                    a
                })
                .collect();
            self.entries.push_front(Entry {
                id: self.next_id,
                time: now_secs,
                duration,
                args,
                peer: peer(),
                name: name(),
            });
            self.next_id += 1;
        }
        self.trim(max_len);
    }

    /// Drops the oldest entries past `max_len`.
    pub(crate) fn trim(&mut self, max_len: u64) {
        let max = usize::try_from(max_len).unwrap_or(usize::MAX);
        self.entries.truncate(max);
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(crate) fn reset(&mut self) {
        self.entries.clear();
    }

    /// Newest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push(log: &mut SlowLog, args: &[&[u8]], duration: u64) {
        let owned: Vec<Vec<u8>> = args.iter().map(|a| a.to_vec()).collect();
        log.push_if_needed(
            10,
            3,
            duration,
            owned.len(),
            |i| owned[i].clone(),
            || "127.0.0.1:1".into(),
            Vec::new,
            0,
        );
    }

    #[test]
    fn threshold_and_length() {
        let mut log = SlowLog::default();
        push(&mut log, &[b"ping"], 9);
        assert!(log.is_empty());
        for _ in 0..5 {
            push(&mut log, &[b"ping"], 10);
        }
        assert_eq!(log.len(), 3);
        let ids: Vec<u64> = log.iter().map(|e| e.id).collect();
        assert_eq!(ids, [4, 3, 2]);
    }

    #[test]
    fn trims_arguments_as_redis() {
        let mut log = SlowLog::default();
        let many: Vec<Vec<u8>> = (0..35).map(|i| i.to_string().into_bytes()).collect();
        let refs: Vec<&[u8]> = many.iter().map(|a| a.as_slice()).collect();
        push(&mut log, &refs, 100);
        let e = log.iter().next().unwrap();
        assert_eq!(e.args.len(), 32);
        assert_eq!(e.args[31], b"... (4 more arguments)");
        let long = vec![b'A'; 129];
        push(&mut log, &[b"set", &long], 100);
        let e = log.iter().next().unwrap();
        assert_eq!(e.args[1].len(), 128 + "... (1 more bytes)".len());
    }
}
