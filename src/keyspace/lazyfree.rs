//! Freeing values on a background thread, as Redis's lazyfree (`lazyfree.c`)
//! does: UNLINK, `FLUSHALL`/`FLUSHDB ASYNC`, and the deletions the
//! `lazyfree-lazy-*` settings make lazy hand what they took out of the
//! keyspace to one thread that drops it, so the command that removed it
//! does not pay for a large value's deallocation.
//!
//! A single value goes there only when freeing it is work enough
//! ([`effort`] above [`THRESHOLD`], Redis's `LAZYFREE_THRESHOLD`); smaller
//! ones are dropped at once, which is cheaper than a hand-off. A whole
//! database always goes. INFO's `lazyfree_pending_objects` counts what was
//! handed over and not yet dropped, `lazyfreed_objects` what the thread
//! dropped (CONFIG RESETSTAT zeroes it): a value counts one, a database
//! its key count, as Redis counts them.
//!
//! The thread drains its queue in order, so a completion request
//! ([`LazyFree::when_done`]) answers once everything queued before it is
//! freed: the blocking `FLUSHALL` of Redis 7.4+ waits on one.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex, OnceLock};

use super::value::Value;

/// Redis's `LAZYFREE_THRESHOLD`: a value whose [`effort`] is at most this
/// is freed at once.
pub(crate) const THRESHOLD: usize = 64;

/// What the thread is handed.
enum Job {
    /// Something to drop, counting `count` objects.
    Free(Box<dyn Send>, usize),
    /// Run once everything queued before it is freed.
    Done(Box<dyn FnOnce() + Send>),
}

#[derive(Default)]
struct Counters {
    pending: AtomicUsize,
    freed: AtomicUsize,
}

impl Counters {
    fn freed(&self, n: usize) {
        self.pending.fetch_sub(n, Relaxed);
        self.freed.fetch_add(n, Relaxed);
    }
}

/// The lazyfree thread and its counters; the thread starts with the first
/// job.
#[derive(Default)]
pub(crate) struct LazyFree {
    counters: Arc<Counters>,
    queue: OnceLock<Option<Mutex<Sender<Job>>>>,
}

/// The amount of work freeing `value` takes (Redis's
/// `lazyfreeGetFreeEffort`): the element count of a value made of one
/// allocation per element, the quicklist node count of a list, the nodes
/// and consumer group entries of a stream, 1 for a value held in one block
/// (a string, a listpack, an intset).
pub(crate) fn effort(value: &Value) -> usize {
    match value {
        Value::List(l) if !l.is_listpack() => l.quicklist_len(),
        Value::Set(s) if s.encoding() == "hashtable" => s.len(),
        Value::ZSet(z) if z.encoding_name() == "skiplist" => z.len(),
        Value::Hash(h) if h.encoding() == "hashtable" => h.len(),
        Value::Stream(s) => {
            // Every node is one allocation, and so is every consumer group
            // and its pending entries, the first group's taken for all.
            let groups = s.groups.len();
            let pel = s.groups.values().next().map_or(0, |g| g.pel.len());
            s.node_count() + groups * (1 + pel)
        }
        _ => 1,
    }
}

impl LazyFree {
    /// Objects handed to the thread and not yet freed.
    pub(crate) fn pending(&self) -> usize {
        self.counters.pending.load(Relaxed)
    }

    /// Objects the thread freed since the start or CONFIG RESETSTAT.
    pub(crate) fn freed(&self) -> usize {
        self.counters.freed.load(Relaxed)
    }

    pub(crate) fn reset_stats(&self) {
        self.counters.freed.store(0, Relaxed);
    }

    /// Frees a value removed from the keyspace: on the thread when that is
    /// worth it (Redis's `freeObjAsync`), else here. True when it went to
    /// the thread.
    pub(crate) fn free_value(&self, value: Value) -> bool {
        if effort(&value) > THRESHOLD {
            self.free(Box::new(value), 1);
            true
        } else {
            drop(value);
            false
        }
    }

    /// Hands `what` to the thread, counting `count` objects (a database:
    /// its keys; a script cache: its scripts), whatever its size.
    pub(crate) fn free(&self, what: Box<dyn Send>, count: usize) {
        self.counters.pending.fetch_add(count, Relaxed);
        if let Err(job) = self.send(Job::Free(what, count)) {
            // No thread: freed here, counted as the thread would.
            drop(job);
            self.counters.freed(count);
        }
    }

    /// Calls `done` once everything handed over before is freed (Redis's
    /// `bioCreateCompRq`).
    pub(crate) fn when_done(&self, done: impl FnOnce() + Send + 'static) {
        if let Err(Job::Done(done)) = self.send(Job::Done(Box::new(done))) {
            done();
        }
    }

    fn send(&self, job: Job) -> Result<(), Job> {
        let queue = self.queue.get_or_init(|| self.start());
        let Some(tx) = queue else {
            return Err(job);
        };
        let tx = tx.lock().unwrap_or_else(|e| e.into_inner());
        tx.send(job).map_err(|e| e.0)
    }

    fn start(&self) -> Option<Mutex<Sender<Job>>> {
        let (tx, rx) = channel::<Job>();
        let counters = self.counters.clone();
        let spawned = std::thread::Builder::new()
            .name("lazyfree".into())
            .spawn(move || {
                while let Ok(job) = rx.recv() {
                    match job {
                        Job::Free(what, count) => {
                            drop(what);
                            counters.freed(count);
                        }
                        Job::Done(done) => done(),
                    }
                }
            });
        match spawned {
            Ok(_) => Some(Mutex::new(tx)),
            Err(e) => {
                tracing::warn!("lazyfree thread not started ({e}): freeing in place");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::set::{Set, SetLimits};

    fn big_set(n: usize) -> Value {
        let mut s = Set::new_table();
        for i in 0..n {
            s.add(format!("m{i}").as_bytes(), SetLimits::DEFAULT);
        }
        Value::Set(s)
    }

    fn settle(lf: &LazyFree) {
        let (tx, rx) = channel();
        lf.when_done(move || {
            let _ = tx.send(());
        });
        rx.recv().unwrap();
    }

    #[test]
    fn small_values_are_freed_in_place() {
        let lf = LazyFree::default();
        assert!(!lf.free_value(big_set(10)));
        assert_eq!((lf.pending(), lf.freed()), (0, 0));
    }

    #[test]
    fn large_values_are_freed_by_the_thread_and_counted() {
        let lf = LazyFree::default();
        let v = big_set(1000);
        assert_eq!(effort(&v), 1000);
        assert!(lf.free_value(v));
        lf.free(Box::new(vec![1u8; 10]), 7);
        settle(&lf);
        assert_eq!((lf.pending(), lf.freed()), (0, 8));
        lf.reset_stats();
        assert_eq!(lf.freed(), 0);
    }
}
