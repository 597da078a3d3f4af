//! Time windows: rules that make sorted-set members age out by score.
//!
//! A rule binds a glob pattern to a duration D and a clock unit (Unix
//! seconds or milliseconds). A sorted set whose name matches a rule is
//! *windowed*: every command sees it as if `ZREMRANGEBYSCORE key -inf
//! (<now-D>` had run just before, with `now` the command's single instant.
//!
//! That equivalence is kept by two mechanisms sharing [`trim`]:
//! - lazily, `Keyspace` trims a windowed key whenever a command looks it up
//!   (O(log n + removed), and O(1) when nothing is due: the lowest score is
//!   compared with the cutoff first);
//! - in the background, the [`sweeper`] visits keys in the order their oldest
//!   member ages out, so idle keys release memory and announce expiry too.
//!
//! Rule resolution is cached per key (in the entry, stamped with the rules'
//! generation), so glob matching happens once per key per rule change, not
//! once per command.
//!
//! A replica trims nothing: its primary's ZREMs (and a MOVETO's RPUSHes)
//! do, and meanwhile its own clients read a copy of the set without the
//! aged members (see [`replica`](crate::keyspace::replica)).

pub(crate) mod sweeper;

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};

use parking_lot::RwLock;

use crate::keyspace::slots::{hash_tag, key_hash_slot};
use crate::keyspace::{Entry, Key, Keyspace, Value, notify};
use crate::types::list::End;
use crate::types::zset::{ScoreBound, ScoreRange};
use crate::util::glob_match;

pub(crate) use crate::types::window_rule::{Rule, Unit, parse_duration};

/// Counters for INFO's `# Windows` section.
#[derive(Default)]
pub(crate) struct Stats {
    expired_lazy: AtomicU64,
    expired_swept: AtomicU64,
    handed_off: AtomicU64,
    /// Members not handed off because their destination hashes to another
    /// slot than their key (cluster mode; see [`moveto_confined`]).
    handoff_cross_slot: AtomicU64,
    sweeper_cycles: AtomicU64,
    sweeper_us: AtomicU64,
}

/// The server's window rules.
#[derive(Default)]
pub(crate) struct Windows {
    /// Sorted by precedence, best first.
    rules: RwLock<Vec<Arc<Rule>>>,
    /// Bumped on every change; entries cache (generation, rule). Only its
    /// low 16 bits stamp a cache (see [`RuleCache`]).
    generation: AtomicU32,
    count: AtomicUsize,
    moveto_count: AtomicUsize,
    next_seq: AtomicU64,
    pub(crate) stats: Stats,
}

/// A key's resolved rule, valid while `generation` matches: 4 bytes, as it
/// sits in every key's entry (beside the 4-byte LRU clock, so together
/// they take the 8 bytes an `Arc` alone took before).
///
/// It names the rule by its index in the rules table rather than holding
/// an `Arc`: the table changes only with the generation, so an index
/// stamped with the current generation still names the same rule. The
/// stamp is the generation's low 16 bits; so that a key left untouched
/// for exactly 65,536 rule changes cannot match a stale stamp, the change
/// that wraps them resets every key's cache ([`set_rule`], [`del_rule`]).
#[derive(Debug, Default, Clone)]
pub(crate) struct RuleCache {
    /// 0 (never a live stamp): not resolved.
    generation: u16,
    /// `NO_RULE`, the rule's index + 1, or `UNCACHED` when the index is
    /// too large to store (past 254 rules: resolved on every use then).
    rule: u8,
    /// The shard of the rule's MOVETO destination for this key + 1, or
    /// `DEST_UNKNOWN` until asked, `DEST_NONE` when the rule hands nothing
    /// off (shard numbers are below `MAX_SHARDS`, 128).
    dest_shard: u8,
}

const NO_RULE: u8 = 0;
const UNCACHED: u8 = u8::MAX;
/// Zero, so a default cache has not been asked.
const DEST_UNKNOWN: u8 = 0;
const DEST_NONE: u8 = u8::MAX;

/// The stamp a cache carries for generation `g`.
fn stamp(g: u32) -> u16 {
    g as u16
}

impl RuleCache {
    /// The cached MOVETO destination shard, computing it with `find` the
    /// first time.
    fn dest_shard(&mut self, find: impl FnOnce() -> Option<usize>) -> Option<usize> {
        if self.dest_shard == DEST_UNKNOWN {
            // Shards are below MAX_SHARDS, so shard + 1 fits in a u8 and
            // never collides with DEST_NONE.
            self.dest_shard = find().map_or(DEST_NONE, |d| d as u8 + 1);
        }
        match self.dest_shard {
            DEST_NONE => None,
            d => Some(usize::from(d) - 1),
        }
    }
}

impl Windows {
    /// True when any rule exists: the only check commands pay otherwise.
    pub(crate) fn active(&self) -> bool {
        self.count.load(Relaxed) > 0
    }

    pub(crate) fn has_moveto(&self) -> bool {
        self.moveto_count.load(Relaxed) > 0
    }

    /// Adds or replaces the rule for `rule.pattern`. True when the keys'
    /// caches must all be reset ([`set_rule`] does it); only a server
    /// that has no keys yet calls this directly.
    #[must_use = "on true, every key's rule cache must be reset (see set_rule)"]
    pub(crate) fn set(&self, mut rule: Rule) -> bool {
        rule.seq = self.next_seq.fetch_add(1, Relaxed) + 1;
        let mut rules = self.rules.write();
        rules.retain(|r| r.pattern != rule.pattern);
        rules.push(Arc::new(rule));
        self.publish(&mut rules)
    }

    /// Deletes the rule with exactly this pattern: (removed, whether the
    /// keys' caches must all be reset).
    fn del(&self, pattern: &[u8]) -> (bool, bool) {
        let mut rules = self.rules.write();
        let before = rules.len();
        rules.retain(|r| &*r.pattern != pattern);
        let removed = rules.len() != before;
        (removed, self.publish(&mut rules))
    }

    /// Installs a changed table; true when the cache stamps wrapped.
    fn publish(&self, rules: &mut [Arc<Rule>]) -> bool {
        rules.sort_by_key(|r| std::cmp::Reverse(r.precedence()));
        self.count.store(rules.len(), Relaxed);
        self.moveto_count
            .store(rules.iter().filter(|r| r.moveto.is_some()).count(), Relaxed);
        // Stamp 0 means "never resolved" in a cache; skip it.
        let mut next = self.generation.load(Relaxed).wrapping_add(1);
        let wrapped = stamp(next) == 0;
        if wrapped {
            next = next.wrapping_add(1);
        }
        self.generation.store(next, Relaxed);
        wrapped
    }

    /// All rules, in precedence order.
    pub(crate) fn list(&self) -> Vec<Arc<Rule>> {
        self.rules.read().clone()
    }

    /// The rule that applies to `key` (uncached).
    pub(crate) fn resolve(&self, key: &[u8]) -> Option<Arc<Rule>> {
        if !self.active() {
            return None;
        }
        self.rules
            .read()
            .iter()
            .find(|r| glob_match(&r.pattern, key, false))
            .cloned()
    }

    /// The rule for a stored key, from its cache when still valid.
    pub(crate) fn rule_for(&self, cache: &mut RuleCache, key: &[u8]) -> Option<Arc<Rule>> {
        if cache.generation == stamp(self.generation.load(Relaxed)) && cache.rule == NO_RULE {
            return None;
        }
        // Read under the table's lock, so the index and the generation it
        // is checked against belong to the same table.
        let rules = self.rules.read();
        let generation = stamp(self.generation.load(Relaxed));
        if cache.generation != generation {
            let found = if self.active() {
                rules
                    .iter()
                    .position(|r| glob_match(&r.pattern, key, false))
            } else {
                None
            };
            cache.rule = match found {
                None => NO_RULE,
                Some(i) => u8::try_from(i + 1).unwrap_or(UNCACHED),
            };
            cache.generation = generation;
            cache.dest_shard = DEST_UNKNOWN;
        }
        match cache.rule {
            NO_RULE => None,
            UNCACHED => rules
                .iter()
                .find(|r| glob_match(&r.pattern, key, false))
                .cloned(),
            i => rules.get(usize::from(i) - 1).cloned(),
        }
    }

    /// [`rule_for`](Self::rule_for) for a key that cannot be written to:
    /// the cache when valid, else a fresh resolution left uncached.
    fn rule_peek(&self, cache: &RuleCache, key: &[u8]) -> Option<Arc<Rule>> {
        let rules = self.rules.read();
        if cache.generation != stamp(self.generation.load(Relaxed)) || cache.rule == UNCACHED {
            return if self.active() {
                rules
                    .iter()
                    .find(|r| glob_match(&r.pattern, key, false))
                    .cloned()
            } else {
                None
            };
        }
        match cache.rule {
            NO_RULE => None,
            i => rules.get(usize::from(i) - 1).cloned(),
        }
    }

    /// The fields of INFO's `# Windows` section (INFO writes the header).
    pub(crate) fn info(&self, out: &mut String, windowed_keys: usize) {
        let s = &self.stats;
        let _ = write!(
            out,
            "window_rules:{}\r\nwindowed_keys:{}\r\nwindow_expired_lazy:{}\r\nwindow_expired_swept:{}\r\nwindow_handed_off:{}\r\nwindow_handoff_cross_slot:{}\r\nwindow_sweeper_cycles:{}\r\nwindow_sweeper_time_us:{}\r\n",
            self.count.load(Relaxed),
            windowed_keys,
            s.expired_lazy.load(Relaxed),
            s.expired_swept.load(Relaxed),
            s.handed_off.load(Relaxed),
            s.handoff_cross_slot.load(Relaxed),
            s.sweeper_cycles.load(Relaxed),
            s.sweeper_us.load(Relaxed),
        );
    }
}

/// How much of a key's aged part to remove.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TrimMode {
    /// A command is about to run: remove everything aged.
    Lazy,
    /// The sweeper: remove at most this many members (then reschedule).
    Sweep(usize),
}

/// Removes the aged members of `key` if it is a windowed sorted set.
/// Returns the number removed.
pub(crate) fn trim(ks: &mut Keyspace<'_>, key: &[u8], mode: TrimMode) -> usize {
    let windows = ks.env.windows;
    let now = ks.now_ms;
    let db = ks.db;
    let logging = ks.propagating();
    ks.cow(key);
    let shard = ks.shard(key);
    let Some(entry) = shard.dbs[db].keys.get_mut(key) else {
        return 0;
    };
    let Entry {
        value: Value::ZSet(z),
        window,
        ..
    } = entry
    else {
        return 0;
    };
    let Some(rule) = windows.rule_for(window, key) else {
        return 0;
    };
    let cutoff = rule.cutoff(now);
    if z.min_score().is_none_or(|m| m >= cutoff) {
        return 0;
    }
    // A replica leaves aged members to its primary's ZREM (and RPUSH).
    if ks.replica_holds() {
        return 0;
    }
    if let Some(dest) = handoff_shard(ks, key).filter(|&d| !ks.holds(d)) {
        // Lock planning adds hand-off shards, so this cannot happen; if it
        // ever did, leaving the members for a later trim keeps each one
        // handed off exactly once, where touching an unlocked shard would
        // risk a deadlock.
        debug_assert!(false, "window hand-off to unlocked shard {dest}");
        tracing::error!(
            shard = dest,
            "window trim skipped: hand-off shard not locked"
        );
        return 0;
    }
    let Some(Entry {
        value: Value::ZSet(z),
        ..
    }) = ks.shard(key).dbs[db].keys.get_mut(key)
    else {
        return 0;
    };
    let aged = ScoreRange {
        min: ScoreBound::Inclusive(f64::NEG_INFINITY),
        max: ScoreBound::Exclusive(cutoff),
    };
    // The members are kept for a hand-off, and for the ZREM the AOF logs.
    let handing_off = rule.moveto.is_some() || logging;
    let mut moved: Vec<(Vec<u8>, f64)> = Vec::new();
    let removed = match mode {
        TrimMode::Lazy => z.remove_range_by_score(&aged, |m, s| {
            if handing_off {
                moved.push((m.to_vec(), s));
            }
        }),
        TrimMode::Sweep(max) => {
            let n = z.count_in_range(&aged).min(max.max(1));
            z.remove_range_by_rank(0, n - 1, |m, s| {
                if handing_off {
                    moved.push((m.to_vec(), s));
                }
            })
        }
    };
    let emptied = z.is_empty();
    if removed == 0 {
        return 0;
    }
    let counter = match mode {
        TrimMode::Lazy => &windows.stats.expired_lazy,
        TrimMode::Sweep(_) => &windows.stats.expired_swept,
    };
    counter.fetch_add(removed as u64, Relaxed);
    if emptied {
        ks.remove_raw_entry(key);
    }
    // Not the running command's change: logged as the ZREM (and RPUSH)
    // below, and the command only for what it did itself (see
    // hash_ttl::expire).
    let dirty = ks.prop.dirty;
    ks.modified(key);
    propagate_removal(ks, key, &moved);
    ks.notify(notify::ZSET, "zexpired", key);
    if emptied {
        ks.notify(notify::GENERIC, "del", key);
    }
    if let Some(dest) = rule.destination(key) {
        hand_off(ks, key, &dest, moved);
    }
    ks.prop.dirty = dirty;
    removed
}

/// Members a trim or member expiry removed, logged as the ZREM they
/// amount to (replayed, a ZREM of the last member deletes the key too).
pub(crate) fn propagate_removal(ks: &mut Keyspace<'_>, key: &[u8], members: &[(Vec<u8>, f64)]) {
    if members.is_empty() {
        return;
    }
    ks.also_propagate(|| {
        let mut v = vec![b"ZREM".to_vec(), key.to_vec()];
        v.extend(members.iter().map(|(m, _)| m.clone()));
        v
    });
}

/// Adds or replaces a rule (ZWINDOW SET, a loaded dataset's rules). `ks`
/// holds every shard, as any rule change must.
pub(crate) fn set_rule(ks: &mut Keyspace<'_>, rule: Rule) {
    if ks.env.windows.set(rule) {
        reset_caches(ks);
    }
}

/// Deletes the rule with exactly this pattern (ZWINDOW DEL); false if there
/// was none. `ks` holds every shard.
pub(crate) fn del_rule(ks: &mut Keyspace<'_>, pattern: &[u8]) -> bool {
    let (removed, wrapped) = ks.env.windows.del(pattern);
    if wrapped {
        reset_caches(ks);
    }
    removed
}

/// Whether every list `rule`'s MOVETO can name lies in the slot of the
/// sorted set it comes from, which cluster mode requires (a node writes
/// only keys of its own slots, and a slot moves as a whole).
///
/// - No MOVETO: yes.
/// - An exact pattern (no glob character) names one key: its destination
///   must hash to that key's slot.
/// - A glob pattern: the keys it matches have one slot only when its
///   literal prefix (the bytes before the first `*`, `?`, `[` or `\`)
///   holds a whole non-empty hash tag (`{tag}`, the first `{` and the next
///   `}`), as in `{events}:*`: every key starts with that prefix, so its
///   tag is `tag`. Then the destination template (`{key}` in it stands for
///   the key) must hash to `tag`'s slot for every key:
///   - without `{key}`, it is one fixed name: its slot must be `tag`'s
///     (`{events}:expired`);
///   - with `{key}`, the part before the first `{key}` decides: without
///     any `{`, the destination's first `{` is the key's own, so its tag is
///     the key's (`{key}:expired`, `old:{key}`); with a whole non-empty tag,
///     that tag's slot must be `tag`'s (`{events}:{key}:expired`); with an
///     open `{` or an empty `{}`, the tag would depend on the key: no.
///
/// Everything else is refused: `{key}:expired` under `events:*` would
/// put `events:1:expired` (hashed whole) in another slot than `events:1`.
pub(crate) fn moveto_confined(rule: &Rule) -> bool {
    let Some(template) = rule.moveto.as_deref() else {
        return true;
    };
    let (exact, prefix_len, _) = rule.precedence();
    if exact {
        return rule
            .destination(&rule.pattern)
            .is_some_and(|d| key_hash_slot(&d) == key_hash_slot(&rule.pattern));
    }
    let Some(tag) = hash_tag(&rule.pattern[..prefix_len]) else {
        return false;
    };
    let slot = key_hash_slot(tag);
    match template.windows(5).position(|w| w == b"{key}") {
        None => key_hash_slot(template) == slot,
        Some(at) => {
            let head = &template[..at];
            if !head.contains(&b'{') {
                return true;
            }
            hash_tag(head).is_some_and(|t| key_hash_slot(t) == slot)
        }
    }
}

/// Forgets every key's resolved rule, once per 65,535 rule changes (when
/// the 16-bit stamps wrap; see [`RuleCache`]).
fn reset_caches(ks: &mut Keyspace<'_>) {
    ks.for_each_shard(|shard| {
        for db in shard.dbs.iter_mut() {
            for (_, entry) in db.keys.iter_mut() {
                entry.window = RuleCache::default();
            }
        }
    });
}

/// The shard that trimming `key` would hand members off to, if `key` is a
/// windowed sorted set whose rule has a MOVETO destination.
///
/// Lock planning asks this once it holds `key`'s shard, and adds the answer
/// to the locks it takes: the destination is resolved once per key and rule
/// change (cached in the entry), so planning costs O(1) per key however many
/// rules exist. Rules change only under every shard's lock (`ZWINDOW SET`
/// and `DEL` lock them all), so the answer stays true while any lock planned
/// from it is held.
pub(crate) fn handoff_shard(ks: &mut Keyspace<'_>, key: &[u8]) -> Option<usize> {
    let windows = ks.env.windows;
    if !windows.has_moveto() {
        return None;
    }
    let store = ks.env.store;
    let db = ks.db;
    let by_rules = || {
        windows
            .resolve(key)
            .and_then(|r| r.destination(key))
            .map(|d| store.shard_of(&d))
    };
    // No sorted set here (yet): the command may create one, or meet one
    // in another database (MOVE, COPY … DB looks the key up there), so the
    // rules say where it would go (uncached).
    let Some(entry) = ks.shard(key).dbs[db].keys.get_mut(key) else {
        return by_rules();
    };
    if !matches!(entry.value, Value::ZSet(_)) {
        return by_rules();
    }
    let rule = windows.rule_for(&mut entry.window, key);
    entry.window.dest_shard(|| {
        rule.and_then(|r| r.destination(key))
            .map(|d| store.shard_of(&d))
    })
}

/// RPUSHes aged members to the rule's destination list, oldest first, in
/// the same critical section that removed them: a consumer sees each member
/// exactly once, and never both in the set and in the list.
///
/// In cluster mode a destination in another slot than `key` is never
/// written (the node may not own that slot, and a slot migrating away
/// would leave the list behind): the members are dropped, logged and
/// counted. Rules that could do this are refused where they are set
/// ([`moveto_confined`]); this guards rules that came another way (a
/// replicated or shared rule, a key a pattern rule did not foresee).
pub(crate) fn hand_off(
    ks: &mut Keyspace<'_>,
    key: &[u8],
    dest: &[u8],
    members: Vec<(Vec<u8>, f64)>,
) {
    if members.is_empty() {
        return;
    }
    let n = members.len() as u64;
    if ks.env.store.slot_index().is_some() && key_hash_slot(dest) != key_hash_slot(key) {
        tracing::warn!(
            key = %String::from_utf8_lossy(key),
            dest = %String::from_utf8_lossy(dest),
            dropped = n,
            "window hand-off destination hashes to another slot than the key: not written"
        );
        ks.env
            .windows
            .stats
            .handoff_cross_slot
            .fetch_add(n, Relaxed);
        return;
    }
    let fill = ks.env.config.list_max_listpack_size();
    let list = match ks.get(dest) {
        Some(Entry {
            value: Value::List(l),
            ..
        }) => l,
        Some(_) => {
            // Equivalence wins: the members are gone from the set either way.
            tracing::warn!(dest = %String::from_utf8_lossy(dest), dropped = n, "window hand-off destination is not a list");
            return;
        }
        None => {
            ks.set(dest, Value::List(Box::default()));
            match ks.get(dest) {
                Some(Entry {
                    value: Value::List(l),
                    ..
                }) => l,
                _ => return,
            }
        }
    };
    // As the RPUSH it is logged as: a listpack that would pass the limit
    // becomes a quicklist.
    list.grow_for(fill, members.iter().map(|(m, _)| &m[..]));
    for (member, _) in &members {
        list.push(End::Right, member);
    }
    ks.signal(dest, notify::LIST, "rpush");
    ks.also_propagate(|| {
        let mut v = vec![b"RPUSH".to_vec(), dest.to_vec()];
        v.extend(members.iter().map(|(m, _)| m.clone()));
        v
    });
    ks.signal_ready(dest);
    ks.env.windows.stats.handed_off.fetch_add(n, Relaxed);
}

/// The sweeper's schedule for one shard: windowed keys by the instant
/// their oldest member ages out, hashes with field TTLs by their earliest
/// field deadline, and sorted sets with member TTLs by the earlier of that
/// instant and their earliest member deadline.
#[derive(Default)]
pub(crate) struct Schedule {
    queue: BTreeSet<(u64, usize, Key)>,
    at: HashMap<(usize, Key), u64>,
}

impl Schedule {
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.at.len()
    }

    /// Sets (or clears, with None) the deadline of a key.
    pub(crate) fn set(&mut self, db: usize, key: &[u8], deadline: Option<u64>) {
        let k: (usize, Key) = (db, key.into());
        if let Some(old) = self.at.get(&k).copied() {
            if Some(old) == deadline {
                return;
            }
            self.queue.remove(&(old, db, k.1.clone()));
            self.at.remove(&k);
        }
        if let Some(d) = deadline {
            self.queue.insert((d, db, k.1.clone()));
            self.at.insert(k, d);
        }
    }

    pub(crate) fn get(&self, db: usize, key: &[u8]) -> Option<u64> {
        self.at.get(&(db, Key::from(key))).copied()
    }

    /// Every scheduled key, as (db, key).
    pub(crate) fn keys(&self) -> impl Iterator<Item = (usize, &[u8])> {
        self.at.keys().map(|(db, k)| (*db, &**k))
    }

    /// The most overdue key, if its deadline has passed.
    pub(crate) fn first_due(&self, now_ms: u64) -> Option<(usize, Key)> {
        let (d, db, key) = self.queue.first()?;
        (*d <= now_ms).then(|| (*db, key.clone()))
    }

    pub(crate) fn clear_db(&mut self, db: usize) {
        self.queue.retain(|(_, d, _)| *d != db);
        self.at.retain(|(d, _), _| *d != db);
    }
}

/// Recomputes a key's place in its shard's schedule after a write: a
/// windowed sorted set by when its oldest member ages out, a hash with
/// field TTLs by its earliest field deadline.
pub(crate) fn reschedule(ks: &mut Keyspace<'_>, key: &[u8]) {
    let windows = ks.env.windows;
    let db = ks.db;
    let shard = ks.shard(key);
    let deadline = match shard.dbs[db].keys.get_mut(key) {
        Some(Entry {
            value: Value::ZSet(z),
            window,
            ..
        }) => {
            let aged = match (windows.rule_for(window, key), z.min_score()) {
                (Some(rule), Some(min)) => Some(rule.deadline_ms(min)),
                _ => None,
            };
            // Member TTLs: whichever comes first.
            match (aged, z.min_deadline()) {
                (Some(a), Some(t)) => Some(a.min(t)),
                (a, t) => a.or(t),
            }
        }
        // A hash with field TTLs: its earliest field deadline.
        Some(Entry {
            value: Value::Hash(h),
            ..
        }) => h.min_deadline(),
        // A set with member TTLs: its earliest member deadline.
        Some(Entry {
            value: Value::Set(s),
            ..
        }) => s.min_deadline(),
        _ => None,
    };
    shard.schedule.set(db, key, deadline);
}

/// True if a stored entry is a windowed sorted set whose members have all
/// aged out (KEYS and SCAN skip it as they skip expired keys).
///
/// So is a hash whose fields have all expired.
pub(crate) fn is_dead(windows: &Windows, entry: &Entry, key: &[u8], now_ms: u64) -> bool {
    if let Value::Hash(h) = &entry.value {
        return h.all_expired(now_ms);
    }
    if let Value::Set(s) = &entry.value {
        return s.all_expired(now_ms);
    }
    if let Value::ZSet(z) = &entry.value
        && z.all_expired(now_ms)
    {
        return true;
    }
    if !windows.active() {
        return false;
    }
    let Entry {
        value: Value::ZSet(z),
        window,
        ..
    } = entry
    else {
        return false;
    };
    let Some(rule) = windows.rule_peek(window, key) else {
        return false;
    };
    let cutoff = rule.cutoff(now_ms);
    if z.has_ttls() {
        // Each member goes at whichever of its deadlines comes first.
        return z.all_gone(now_ms, |score| score < cutoff);
    }
    // The highest score decides: if even it is aged, nothing is left.
    z.range_by_rank(0, 0, true)
        .next()
        .is_none_or(|(_, max)| max < cutoff)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::window_rule::parse_cli_rule;

    #[test]
    fn durations() {
        assert_eq!(parse_duration(b"24h", Unit::Seconds), Some(86_400_000));
        assert_eq!(parse_duration(b"65s", Unit::Millis), Some(65_000));
        assert_eq!(parse_duration(b"65", Unit::Millis), Some(65));
        assert_eq!(parse_duration(b"65", Unit::Seconds), Some(65_000));
        assert_eq!(parse_duration(b"500ms", Unit::Seconds), Some(500));
        assert_eq!(parse_duration(b"1.5m", Unit::Seconds), Some(90_000));
        for bad in [&b"0"[..], b"-5", b"abc", b"5y", b"", b"1e300d"] {
            assert_eq!(parse_duration(bad, Unit::Seconds), None);
        }
    }

    #[test]
    fn moveto_confined_to_the_key_s_slot() {
        let ok = |pattern: &str, dest: Option<&str>| {
            let r = Rule::new(
                pattern.as_bytes(),
                1000,
                Unit::Seconds,
                dest.map(str::as_bytes),
            );
            moveto_confined(&r)
        };
        // No hand-off, or one into the key's own tag.
        assert!(ok("events:*", None));
        assert!(ok("{events}:*", Some("{key}:expired")));
        assert!(ok("{events}:*", Some("old:{key}")));
        assert!(ok("{events}:*", Some("{events}:expired")));
        assert!(ok("{events}:*", Some("{events}:{key}:expired")));
        assert!(ok("x{events}y:*", Some("archive{events}")));
        // A fixed destination in the tag's slot, whatever its spelling:
        // `{events}` and `events` hash alike.
        assert!(ok("{events}:*", Some("events")));
        // Exact names: the two keys' slots.
        assert!(ok("{a}b", Some("{a}c")));
        assert!(ok("ab", Some("{ab}:x")));
        assert!(ok("ab", Some("{key}")));
        assert!(!ok("ab", Some("ab:expired")));
        // The keys' slots vary: no tag in the literal prefix.
        assert!(!ok("events:*", Some("{key}:expired")));
        assert!(!ok("*{events}", Some("{key}:expired")));
        assert!(!ok("{ev*}:x", Some("{key}:expired")));
        assert!(!ok("{}:*", Some("{key}:expired")));
        // Another tag, an open brace or an empty tag before `{key}`.
        assert!(!ok("{events}:*", Some("{other}:expired")));
        assert!(!ok("{events}:*", Some("{other}:{key}")));
        assert!(!ok("{events}:*", Some("{{key}}")));
        assert!(!ok("{events}:*", Some("{}{key}")));
        // Checked against real keys and destinations: accepted rules
        // always land in the key's slot.
        for (pattern, dest) in [
            ("{events}:*", "{key}:expired"),
            ("{events}:*", "old:{key}"),
            ("x{events}y:*", "archive{events}"),
            ("{events}:*", "{events}:{key}:expired"),
        ] {
            let r = Rule::new(
                pattern.as_bytes(),
                1000,
                Unit::Seconds,
                Some(dest.as_bytes()),
            );
            let prefix = &pattern[..pattern.len() - 1];
            for suffix in ["", "1", "{x}", "}{", "{", "a}b{c}"] {
                let key = format!("{prefix}{suffix}");
                let d = r.destination(key.as_bytes()).unwrap();
                assert_eq!(
                    key_hash_slot(&d),
                    key_hash_slot(key.as_bytes()),
                    "{key} -> {}",
                    String::from_utf8_lossy(&d)
                );
            }
        }
    }

    #[test]
    fn cutoff_and_deadline_agree() {
        let r = Rule::new(b"k", 65_000, Unit::Millis, None);
        let score = 1_700_000_000_000.0;
        let d = r.deadline_ms(score);
        assert!(
            r.cutoff(d - 1) <= score,
            "still live just before the deadline"
        );
        assert!(r.cutoff(d) > score, "aged out at the deadline");
        let r = Rule::new(b"k", 10_000, Unit::Seconds, None);
        let d = r.deadline_ms(1_700_000_000.5);
        assert!(r.cutoff(d - 1) <= 1_700_000_000.5 && r.cutoff(d) > 1_700_000_000.5);
        assert_eq!(r.deadline_ms(f64::NEG_INFINITY), 0);
        assert_eq!(r.deadline_ms(f64::INFINITY), u64::MAX);
    }

    #[test]
    fn precedence_exact_then_prefix_then_latest() {
        let w = Windows::default();
        let _ = w.set(Rule::new(b"*", 1000, Unit::Seconds, None));
        let _ = w.set(Rule::new(b"news:*", 2000, Unit::Seconds, None));
        let _ = w.set(Rule::new(b"news:1*", 3000, Unit::Seconds, None));
        let _ = w.set(Rule::new(b"news:123", 4000, Unit::Seconds, None));
        let _ = w.set(Rule::new(b"n?ws:*", 5000, Unit::Seconds, None));
        let d = |k: &[u8]| w.resolve(k).map(|r| r.duration_ms);
        assert_eq!(d(b"news:123"), Some(4000));
        assert_eq!(d(b"news:124"), Some(3000));
        assert_eq!(d(b"news:9"), Some(2000));
        assert_eq!(d(b"nows:9"), Some(5000));
        assert_eq!(d(b"other"), Some(1000));
        // Same prefix length: the most recently set wins.
        let _ = w.set(Rule::new(b"news:[0-9]*", 6000, Unit::Seconds, None));
        assert_eq!(d(b"news:9"), Some(6000));
        assert!(w.del(b"*").0);
        assert_eq!(d(b"other"), None);
    }

    #[test]
    fn cache_follows_rule_changes() {
        let w = Windows::default();
        let mut cache = RuleCache::default();
        assert!(w.rule_for(&mut cache, b"a").is_none());
        let _ = w.set(Rule::new(b"a", 1000, Unit::Seconds, None));
        assert_eq!(
            w.rule_for(&mut cache, b"a").map(|r| r.duration_ms),
            Some(1000)
        );
        let _ = w.del(b"a");
        assert!(w.rule_for(&mut cache, b"a").is_none());
    }

    #[test]
    fn cache_stamps_wrap_once_per_65535_changes() {
        let w = Windows::default();
        let mut cache = RuleCache::default();
        let _ = w.set(Rule::new(b"a", 1000, Unit::Seconds, None));
        assert!(w.rule_for(&mut cache, b"a").is_some());
        let mut wraps = 0;
        for _ in 0..65_535 {
            wraps += usize::from(w.set(Rule::new(b"b", 1000, Unit::Seconds, None)));
        }
        // The change that would reuse this cache's stamp asked for a reset.
        assert_eq!(wraps, 1);
        assert_ne!(cache.generation, 0);
        assert!(w.rule_for(&mut RuleCache::default(), b"a").is_some());
    }

    #[test]
    fn the_cache_names_a_rule_by_index() {
        let w = Windows::default();
        for i in 0..300 {
            let _ = w.set(Rule::new(
                format!("k{i}").as_bytes(),
                1000 + i,
                Unit::Millis,
                None,
            ));
        }
        // Exact names all rank first, most recent first: k0 is last, past
        // the indexes a cache stores, and still resolves on every use.
        for (key, ms) in [(&b"k299"[..], 1299), (b"k0", 1000)] {
            let mut cache = RuleCache::default();
            for _ in 0..2 {
                assert_eq!(w.rule_for(&mut cache, key).map(|r| r.duration_ms), Some(ms));
                assert_eq!(w.rule_peek(&cache, key).map(|r| r.duration_ms), Some(ms));
            }
        }
        assert_eq!(std::mem::size_of::<RuleCache>(), 4);
    }

    #[test]
    fn cli_rules() {
        let r = parse_cli_rule("news.published:*=24h").unwrap();
        assert_eq!(
            (&*r.pattern, r.duration_ms, r.unit),
            (&b"news.published:*"[..], 86_400_000, Unit::Seconds)
        );
        let r = parse_cli_rule("heartbeats:*=65s:ms").unwrap();
        assert_eq!((r.duration_ms, r.unit), (65_000, Unit::Millis));
        let r = parse_cli_rule("folder:*=5s:moveto={key}:expired").unwrap();
        assert_eq!(r.destination(b"folder:1").unwrap(), b"folder:1:expired");
        let r = parse_cli_rule("f:*=500:ms:moveto=due").unwrap();
        assert_eq!(
            (r.duration_ms, r.unit, r.destination(b"f:1").unwrap()),
            (500, Unit::Millis, b"due".to_vec())
        );
        assert!(parse_cli_rule("=5s").is_err());
        assert!(parse_cli_rule("k=5x").is_err());
    }

    #[test]
    fn schedule_keeps_one_deadline_per_key() {
        let mut s = Schedule::default();
        s.set(0, b"a", Some(10));
        s.set(0, b"a", Some(5));
        s.set(0, b"b", Some(7));
        assert_eq!(s.len(), 2);
        assert_eq!(s.first_due(4), None);
        assert_eq!(s.first_due(5), Some((0, b"a"[..].into())));
        s.set(0, b"a", None);
        assert_eq!(s.first_due(100), Some((0, b"b"[..].into())));
    }
}
