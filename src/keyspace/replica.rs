//! Replica mode: expiry as a Redis replica does it.
//!
//! A replica never deletes on its own: keys past their TTL, sorted-set
//! members and hash fields past their deadlines, and members aged out of
//! their window all stay stored until the primary's DEL / UNLINK / ZREM /
//! HDEL (and a MOVETO rule's RPUSH) arrive in the replication stream, so
//! the replica holds exactly what the primary had at each point of the
//! stream whatever the two clocks say. [`Store::set_replica`] turns the
//! mode on; then:
//!
//! - The primary's commands ([`Keyspace::from_master`]) see everything as
//!   stored, due or not (Redis's `expireIfNeeded` for `CLIENT_MASTER`), so
//!   the stream applies as the primary meant it.
//! - The replica's own clients' lookups treat a key past its TTL as
//!   missing without deleting, notifying or propagating anything (Redis's
//!   `expireIfNeeded` on a replica): EXISTS, GET, TYPE and TTL (-2) answer
//!   as if it were gone; KEYS and SCAN skip it (as they skip logically
//!   expired keys on a primary); DBSIZE and INFO's `keys=` count it, being
//!   the dictionaries' sizes, as in Redis; RANDOMKEY, when every key has a
//!   TTL, gives up after 100 tries and returns one anyway, as Redis's
//!   `dbRandomKey` does on a replica.
//! - A key with due members or fields is left as stored too, and the
//!   view's lookups return a *trimmed copy* of it: the value cloned, with
//!   what a primary would have removed first removed from the clone (a
//!   window's aged members, due members, due fields). Every read path then
//!   hides them without each command knowing about replicas. The copy is
//!   kept in the view for later lookups of the same key at the same
//!   instant, dropped at any write; a copy left empty makes the key
//!   missing. It costs a clone per command reading such a key, only in
//!   the short time between a member or field coming due and the
//!   primary's removal reaching the replica. A MOVETO rule's members are
//!   in neither the set nor the list meanwhile: the hand-off arrives with
//!   the primary's ZREM.
//! - A deadline given already past (EXPIRE, SET … PXAT, HEXPIRE, RESTORE
//!   with an old TTL…) is stored, not applied at once (Redis's
//!   `checkAlreadyExpired` is false on a replica).
//! - Active expiry, the sweeper and, with `replica-ignore-maxmemory yes`
//!   (the default), eviction and the OOM refusal skip a replica.
//!
//! A writable replica (`replica-read-only no`) is the one exception, as in
//! Redis (`EXPIRE_FORCE_DELETE_EXPIRED` on a write lookup): a write
//! lookup ([`Keyspace::get`]) by its own client deletes what is due as a
//! primary does, so a write never lands on a copy and is lost; its reads
//! hide as above. A read-only replica refuses its clients' writes before
//! they look anything up. Keys such a client wrote with a TTL are not
//! expired in the background (Redis's `expireSlaveKeys`): the next write
//! lookup deletes them, and reads hide them meanwhile.
//!
//! Cost on a primary: one relaxed load of the flag where something due was
//! found (where it is about to be deleted), none on other lookups.

use super::windows::{RuleCache, Windows};
use super::{Entry, HashedKey, Key, Keyspace, Store, Value};
use crate::types::zset::{ScoreBound, ScoreRange};

/// What a lookup does with something it found due (a key past its TTL, a
/// member or field past its deadline, members aged out of their window).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Due {
    /// Delete it, notify and propagate: a primary, or a writable
    /// replica's write lookup.
    Delete,
    /// See it as stored: the primary's stream being applied.
    Keep,
    /// Treat it as gone without deleting it: a replica's own clients.
    Hide,
}

/// What [`Keyspace::prepare_as`](super::Keyspace) found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seen {
    /// The stored entry (or no key) is what the command sees.
    Live,
    /// The key is gone for the command (deleted, or hidden).
    Gone,
    /// The command sees the view's trimmed copy with this index.
    Copy(usize),
}

/// A view's replica-mode state.
#[derive(Default)]
pub(crate) struct View {
    /// The lookup in progress is a write's ([`Keyspace::get`]).
    pub(super) write: bool,
    /// A trim, field or member expiry of the lookup in progress found
    /// something due and left it for the primary ([`Keyspace::replica_holds`]).
    pub(super) held: bool,
    copies: Vec<Copied>,
}

/// A trimmed copy of one key, valid at one instant.
struct Copied {
    db: usize,
    now_ms: u64,
    key: Key,
    entry: Entry,
}

impl View {
    pub(super) fn copy(&mut self, i: usize) -> Option<&mut Entry> {
        self.copies.get_mut(i).map(|c| &mut c.entry)
    }

    /// Drops the copies: the view wrote, and a copy may no longer match
    /// what is stored.
    pub(super) fn forget(&mut self) {
        if !self.copies.is_empty() {
            self.copies.clear();
        }
    }
}

impl Keyspace<'_> {
    /// What to do with something found due: [`Due::Delete`] on a primary
    /// (one relaxed load).
    #[inline]
    pub(crate) fn on_due(&self) -> Due {
        if !self.env.store.is_replica() {
            return Due::Delete;
        }
        self.on_due_replica()
    }

    #[cold]
    fn on_due_replica(&self) -> Due {
        if self.from_master {
            Due::Keep
        } else if self.replica.write && !self.env.config.replica_read_only() {
            Due::Delete
        } else {
            Due::Hide
        }
    }

    /// For a trim or a member or field expiry that found something due:
    /// true if it must leave it (a replica), noting that the lookup's
    /// command must see a trimmed copy when the view hides.
    pub(crate) fn replica_holds(&mut self) -> bool {
        match self.on_due() {
            Due::Delete => false,
            Due::Keep => true,
            Due::Hide => {
                self.replica.held = true;
                true
            }
        }
    }

    /// Whether this view's lookups hide due keys without deleting them (a
    /// replica's own clients).
    pub(crate) fn replica_hides(&self) -> bool {
        self.env.store.is_replica() && !self.from_master
    }

    /// Whether CLIENT PAUSE holds expiry: due keys are hidden, not deleted.
    pub(crate) fn expiry_paused(&self) -> bool {
        self.env.pause.mode(self.env.clock) != crate::pause::OFF
    }
}

impl Store {
    /// Whether eviction stands still (a replica with
    /// `replica-ignore-maxmemory yes`, Redis's `isSafeToPerformEvictions`).
    pub(crate) fn ignores_maxmemory(&self, config: &crate::config::Config) -> bool {
        self.is_replica() && config.replica_ignore_maxmemory()
    }
}

/// A hiding lookup found due members or fields in `key`: what the command
/// sees instead of the stored entry, which stays as it is.
pub(super) fn read_copy(ks: &mut Keyspace<'_>, key: HashedKey<'_>) -> Seen {
    let (db, now) = (ks.db, ks.now_ms);
    let copies = &mut ks.replica.copies;
    if copies.first().is_some_and(|c| c.now_ms != now) {
        // The view moved on to a later command's instant.
        copies.clear();
    }
    if let Some(i) = copies
        .iter()
        .position(|c| c.db == db && *c.key == *key.bytes())
    {
        return Seen::Copy(i);
    }
    let windows = ks.env.windows;
    let Some(stored) = ks.db_of(key).keys.get_mut_hashed(key.bytes(), key.hash()) else {
        return Seen::Live;
    };
    let mut value = stored.value.clone();
    if trim_due(windows, &mut stored.window, key.bytes(), &mut value, now) == 0 {
        // Nothing was due after all: a member or field deadline bound was
        // early (its member went by another route). The copy holds the
        // same data with the bound made exact: keeping it spares later
        // reads a copy each.
        stored.value = value;
        return Seen::Live;
    }
    let empty = match &value {
        Value::ZSet(z) => z.is_empty(),
        Value::Hash(h) => h.is_empty(),
        Value::Set(s) => s.is_empty(),
        _ => false,
    };
    if empty {
        return Seen::Gone;
    }
    let entry = Entry {
        value,
        expire_at: stored.expire_at,
        meta: stored.meta,
        window: stored.window.clone(),
    };
    let copies = &mut ks.replica.copies;
    copies.push(Copied {
        db,
        now_ms: now,
        key: key.bytes().into(),
        entry,
    });
    Seen::Copy(copies.len() - 1)
}

/// Removes from `value` what a primary's lookup at `now` would: a window's
/// aged members, due members, due fields. Returns how many went.
fn trim_due(
    windows: &Windows,
    cache: &mut RuleCache,
    key: &[u8],
    value: &mut Value,
    now: u64,
) -> usize {
    match value {
        Value::ZSet(z) => {
            let mut removed = 0;
            if windows.active()
                && let Some(rule) = windows.rule_for(cache, key)
            {
                let cutoff = rule.cutoff(now);
                if z.min_score().is_some_and(|m| m < cutoff) {
                    let aged = ScoreRange {
                        min: ScoreBound::Inclusive(f64::NEG_INFINITY),
                        max: ScoreBound::Exclusive(cutoff),
                    };
                    removed += z.remove_range_by_score(&aged, |_, _| {});
                }
            }
            if z.min_deadline().is_some_and(|at| at <= now) {
                removed += z.expire_members(now, usize::MAX, |_, _| {});
            }
            removed
        }
        Value::Hash(h) if h.min_deadline().is_some_and(|at| at <= now) => {
            h.expire_fields_with(now, usize::MAX, |_| {})
        }
        Value::Set(s) if s.min_deadline().is_some_and(|at| at <= now) => {
            s.expire_members_with(now, usize::MAX, |_| {})
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::tests::Services;
    use super::super::windows::{self, Rule, Unit};
    use super::super::{Keyspace, Store, Str, Value, expire};
    use crate::types::hash::{Hash, Limits as HashLimits};
    use crate::types::zset::{AddFlags, Limits, NotNan, ZSet};

    const T0: u64 = 1_000_000;

    fn view<'a>(s: &'a Services, store: &'a Store) -> Keyspace<'a> {
        let env = s.env(store);
        Keyspace::new(env, store.lock(store.all_shards()), 0, env.clock.now_ms())
    }

    /// A sorted set of (member, score, deadline or 0).
    fn zset(members: &[(&[u8], f64, u64)]) -> Value {
        let mut z = ZSet::new();
        for &(m, score, at) in members {
            let score = NotNan::new(score).unwrap_or_default();
            z.add(m, score, AddFlags::default(), Limits::default())
                .unwrap();
            if at != 0 {
                z.set_expire(m, at);
            }
        }
        Value::ZSet(z)
    }

    /// A hash of (field, deadline or 0), each field's value "v".
    fn hash(fields: &[(&[u8], u64)], limits: HashLimits) -> Value {
        let mut h = Hash::new();
        for &(f, at) in fields {
            h.set(f, b"v", limits);
            if at != 0 {
                h.set_expire(f, at);
            }
        }
        Value::Hash(h)
    }

    const SMALL: HashLimits = HashLimits {
        entries: 128,
        value: 64,
    };

    fn zlen(e: Option<&mut super::Entry>) -> Option<usize> {
        match e.map(|e| &e.value) {
            Some(Value::ZSet(z)) => Some(z.len()),
            _ => None,
        }
    }

    fn hlen(e: Option<&mut super::Entry>) -> Option<usize> {
        match e.map(|e| &e.value) {
            Some(Value::Hash(h)) => Some(h.len()),
            _ => None,
        }
    }

    /// What the view's events recorded: (notifications, propagated).
    fn reported(s: &Services) -> (usize, usize) {
        (s.events.notified.lock().len(), s.events.fed.lock().len())
    }

    #[test]
    fn a_replica_hides_a_key_past_its_ttl_and_keeps_it() {
        let s = Services::new(T0);
        s.config
            .set_many(&[(b"notify-keyspace-events", b"KEA")])
            .unwrap();
        let store = Store::new(4, 1);
        store.set_replica(true);
        let mut ks = view(&s, &store);
        ks.set(&b"k"[..], Value::Str(Str::new(b"v")));
        assert!(ks.set_expire(&b"k"[..], T0 + 500));
        assert!(ks.exists(&b"k"[..]), "live before its deadline");
        drop(ks);

        s.clock.freeze_at(T0 + 500);
        let mut ks = view(&s, &store);
        assert!(ks.get_read(&b"k"[..]).is_none());
        assert!(ks.get(&b"k"[..]).is_none());
        assert!(ks.peek(&b"k"[..]).is_none(), "TTL and TYPE see no key");
        assert!(!ks.exists(&b"k"[..]));
        assert!(ks.expire_if_needed(&b"k"[..]));
        assert!(ks.prepare(&b"k"[..]));
        assert!(ks.peek_raw(&b"k"[..]).is_some(), "still stored");
        // A deadline given already past is stored, not applied.
        assert_eq!(ks.expiry_now(), None);
        // The primary's commands see it as stored.
        ks.from_master = true;
        assert!(ks.exists(&b"k"[..]));
        assert!(ks.get(&b"k"[..]).is_some());
        assert!(!ks.expire_if_needed(&b"k"[..]));
        drop(ks);
        // No background deletion either.
        assert_eq!(expire::cycle(s.env(&store), Duration::from_secs(1)), 0);
        let mut ks = view(&s, &store);
        assert!(ks.peek_raw(&b"k"[..]).is_some());
        let dict = ks.dbs_mut().map(|d| (d.keys.len(), d.expires.len()));
        assert_eq!(dict.fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1)), (1, 1));
        drop(ks);
        assert_eq!(reported(&s), (0, 0), "nothing notified nor propagated");

        // A primary again: the key expires as on any primary.
        store.set_replica(false);
        let mut ks = view(&s, &store);
        assert_eq!(ks.expiry_now(), Some(T0 + 500));
        assert!(!ks.exists(&b"k"[..]));
        assert!(ks.peek_raw(&b"k"[..]).is_none());
        drop(ks);
        let fed = s.events.fed.lock().clone();
        assert_eq!(fed, [vec![b"DEL".to_vec(), b"k".to_vec()]]);
        assert_eq!(s.events.notified.lock()[0].1, "expired");
    }

    #[test]
    fn a_replica_reads_a_trimmed_copy_of_due_members_and_fields() {
        let s = Services::new(T0);
        let store = Store::new(4, 1);
        store.set_replica(true);
        store
            .member_ttls
            .store(true, super::super::Ordering::Relaxed);
        store
            .field_ttls
            .store(true, super::super::Ordering::Relaxed);
        let mut ks = view(&s, &store);
        let (z, h, dead) = (&b"z"[..], &b"h"[..], &b"dead"[..]);
        ks.set(
            z,
            zset(&[
                (b"a", 1.0, T0 + 10),
                (b"b", 2.0, 0),
                (b"c", 3.0, T0 + 99_000),
            ]),
        );
        ks.set(h, hash(&[(b"f1", T0 + 10), (b"f2", 0)], SMALL));
        ks.set(dead, zset(&[(b"a", 1.0, T0 + 10), (b"b", 2.0, T0 + 20)]));
        for k in [z, h, dead] {
            windows::reschedule(&mut ks, k);
        }
        drop(ks);

        s.clock.freeze_at(T0 + 50);
        let mut ks = view(&s, &store);
        assert_eq!(zlen(ks.get_read(z)), Some(2), "a is hidden");
        assert_eq!(zlen(ks.peek(z)), Some(2));
        assert_eq!(zlen(ks.get(z)), Some(2));
        match ks.get_read(z).map(|e| &e.value) {
            Some(Value::ZSet(z)) => {
                assert_eq!(z.score(b"a"), None);
                assert_eq!(z.score(b"b"), Some(2.0));
            }
            _ => panic!("no sorted set"),
        }
        assert_eq!(hlen(ks.get_read(h)), Some(1), "f1 is hidden");
        match ks.peek(h).map(|e| &e.value) {
            Some(Value::Hash(h)) => assert!(h.get(b"f1").is_none() && h.get(b"f2").is_some()),
            _ => panic!("no hash"),
        }
        // Nothing left of it: the key is missing to reads, and stored.
        assert!(!ks.exists(dead));
        assert!(ks.get_read(dead).is_none());
        assert_eq!(zlen(ks.peek_raw(dead)), Some(2));
        // What is stored is untouched.
        assert_eq!(zlen(ks.peek_raw(z)), Some(3));
        assert_eq!(hlen(ks.peek_raw(h)), Some(2));
        // The primary's commands see it all.
        ks.from_master = true;
        assert_eq!(zlen(ks.get(z)), Some(3));
        assert_eq!(hlen(ks.get_read(h)), Some(2));
        assert!(ks.exists(dead));
        drop(ks);

        // The sweeper leaves them too.
        let removed =
            windows::sweeper::cycle(s.env(&store), Duration::from_millis(50), &mut |_| {});
        assert_eq!(removed, 0);
        assert!(!windows::sweeper::due(s.env(&store)));
        assert_eq!(reported(&s), (0, 0), "nothing notified nor propagated");

        // A primary again, the sweeper removes (and logs) what is due.
        store.set_replica(false);
        assert!(windows::sweeper::due(s.env(&store)));
        let removed =
            windows::sweeper::cycle(s.env(&store), Duration::from_millis(50), &mut |_| {});
        assert_eq!(removed, 4);
        let mut ks = view(&s, &store);
        assert_eq!(zlen(ks.peek_raw(z)), Some(2));
        assert_eq!(hlen(ks.peek_raw(h)), Some(1));
        assert!(ks.peek_raw(dead).is_none());
        drop(ks);
        assert_eq!(s.events.fed.lock().len(), 3, "ZREM, HDEL, ZREM");
    }

    #[test]
    fn a_replica_hides_members_aged_out_of_their_window() {
        let s = Services::new(T0);
        let store = Store::new(4, 1);
        store.set_replica(true);
        let _ = s.windows.set(Rule::new(b"w", 1000, Unit::Millis, None));
        let mut ks = view(&s, &store);
        let now = T0 as f64;
        ks.set(
            &b"w"[..],
            zset(&[(b"old", now - 5000.0, 0), (b"new", now, 0)]),
        );
        assert_eq!(zlen(ks.get_read(&b"w"[..])), Some(1));
        assert_eq!(zlen(ks.peek_raw(&b"w"[..])), Some(2));
        // A later command of the same view, at a later instant, sees it
        // at that instant (the copy is made again).
        ks.now_ms = T0 + 1001;
        assert!(ks.get_read(&b"w"[..]).is_none(), "every member aged");
        assert!(!ks.exists(&b"w"[..]));
        ks.from_master = true;
        assert_eq!(zlen(ks.get(&b"w"[..])), Some(2));
        drop(ks);
        assert_eq!(reported(&s), (0, 0));
    }

    #[test]
    fn a_writable_replica_deletes_on_its_clients_write_lookups_only() {
        let s = Services::new(T0);
        s.config.set_many(&[(b"replica-read-only", b"no")]).unwrap();
        let store = Store::new(4, 1);
        store.set_replica(true);
        let mut ks = view(&s, &store);
        ks.set(&b"k"[..], Value::Str(Str::new(b"v")));
        ks.set_expire(&b"k"[..], T0 - 1);
        assert!(ks.get_read(&b"k"[..]).is_none());
        assert!(ks.peek_raw(&b"k"[..]).is_some(), "a read only hides");
        assert!(ks.get(&b"k"[..]).is_none());
        assert!(ks.peek_raw(&b"k"[..]).is_none(), "a write deletes");
        drop(ks);
        let fed = s.events.fed.lock().clone();
        assert_eq!(fed, [vec![b"DEL".to_vec(), b"k".to_vec()]]);
    }

    #[test]
    fn an_early_bound_is_made_exact_once_and_nothing_is_copied() {
        let s = Services::new(T0);
        let store = Store::new(4, 1);
        store.set_replica(true);
        store
            .field_ttls
            .store(true, super::super::Ordering::Relaxed);
        let table = HashLimits {
            entries: 1,
            value: 64,
        };
        let mut h = hash(&[(b"f1", T0 + 10), (b"f2", T0 + 99_000), (b"f3", 0)], table);
        if let Value::Hash(h) = &mut h {
            // The primary's HDEL of the earliest field: the bound stays.
            assert!(h.remove(b"f1"));
            assert_eq!(h.min_deadline(), Some(T0 + 10));
        }
        let mut ks = view(&s, &store);
        ks.set(&b"h"[..], h);
        ks.now_ms = T0 + 50;
        assert_eq!(hlen(ks.get_read(&b"h"[..])), Some(2));
        assert!(ks.replica.copies.is_empty(), "nothing was due");
        match ks.peek_raw(&b"h"[..]).map(|e| &e.value) {
            Some(Value::Hash(h)) => assert_eq!(h.min_deadline(), Some(T0 + 99_000)),
            _ => panic!("no hash"),
        }
    }

    #[test]
    fn a_replica_ignores_maxmemory_as_configured() {
        let s = Services::new(T0);
        let store = Store::new(1, 1);
        assert!(!store.ignores_maxmemory(&s.config), "a primary evicts");
        store.set_replica(true);
        assert!(store.ignores_maxmemory(&s.config));
        s.config
            .set_many(&[(b"slave-ignore-maxmemory", b"no")])
            .unwrap();
        assert!(!store.ignores_maxmemory(&s.config));
    }
}
