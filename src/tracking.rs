//! Client-side caching: the tracking table and invalidation messages, as
//! Redis 7.0's `tracking.c`.
//!
//! A client in default tracking mode has every key it reads remembered in
//! the table (key name → the ids of the clients that may cache it; key
//! names, not databases, as in Redis). When the key changes — a write, an
//! expiry, an eviction, a window trim — each of those clients is sent an
//! `invalidate` message once and forgotten for that key until it reads it
//! again. A client in BCAST mode instead registers prefixes and is told of
//! every changed key under them, batched per command (Redis batches per
//! event-loop turn). FLUSHALL/FLUSHDB send every tracking client a null
//! ("everything") and empty the table.
//!
//! Messages go out as RESP3 pushes (`>2 invalidate [keys]`) or, for a RESP2
//! client redirecting to a subscribed client, as a `message` on
//! `__redis__:invalidate`. A message for the client whose command changed
//! the key is held until that command's reply is written (Redis's
//! `tracking_pending_keys`); the execution layer does that.
//!
//! Lock order: the table's mutex is taken under shard locks (the keyspace
//! reports changed keys while it holds them) and never takes one itself.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};

use parking_lot::Mutex;

use crate::clients::{ClientHandle, ClientId, Clients, Push};
use crate::keyspace::Key;

/// A client's tracking flags ([`ClientHandle::tracking`]).
pub(crate) const ON: u32 = 1;
pub(crate) const BCAST: u32 = 1 << 1;
pub(crate) const OPTIN: u32 = 1 << 2;
pub(crate) const OPTOUT: u32 = 1 << 3;
pub(crate) const NOLOOP: u32 = 1 << 4;
/// CLIENT CACHING YES (OPTIN) or NO (OPTOUT) for the next command.
pub(crate) const CACHING: u32 = 1 << 5;
/// The redirect client went away (CLIENT LIST's `R`).
pub(crate) const BROKEN_REDIR: u32 = 1 << 6;

/// Redis's `TrackingChannelName`.
const CHANNEL: &[u8] = b"__redis__:invalidate";

#[derive(Default)]
pub(crate) struct Tracking {
    /// Set once any client enabled tracking: from then on the keyspace
    /// reports changed keys (Redis's `TrackingTable != NULL`).
    used: AtomicBool,
    /// Clients with tracking on (INFO's `tracking_clients`).
    clients: AtomicUsize,
    /// Keys in the table, and whether a BCAST prefix has keys to send:
    /// read per command without taking the table's lock.
    keys: AtomicUsize,
    bcast_pending: AtomicBool,
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    keys: HashMap<Key, HashSet<ClientId>>,
    /// Ids across all keys (INFO's `tracking_total_items`).
    items: u64,
    prefixes: BTreeMap<Vec<u8>, Bcast>,
    client_prefixes: HashMap<ClientId, BTreeSet<Vec<u8>>>,
}

/// One BCAST prefix: its clients, and the keys under it changed since the
/// last broadcast, each with the client that changed it last (for NOLOOP).
#[derive(Default)]
struct Bcast {
    keys: BTreeMap<Key, Option<ClientId>>,
    clients: BTreeSet<ClientId>,
}

/// What was invalidated, in order, during a command: a key, or (None)
/// everything, by a flush. The keyspace collects it (see its `Events`).
pub(crate) use crate::keyspace::events::Invalidated;

/// Invalidations held for the client that caused them, until its reply is
/// written: (that client, the key or None for everything).
pub(crate) use crate::keyspace::events::OwnInvalidations as Pending;

impl Tracking {
    /// Whether the keyspace must report changed keys.
    pub(crate) fn used(&self) -> bool {
        self.used.load(Relaxed)
    }

    pub(crate) fn clients(&self) -> usize {
        self.clients.load(Relaxed)
    }

    /// INFO's `tracking_total_keys`, `tracking_total_items` and
    /// `tracking_total_prefixes`.
    pub(crate) fn totals(&self) -> (usize, u64, usize) {
        let t = self.table.lock();
        (t.keys.len(), t.items, t.prefixes.len())
    }

    /// Redis's `checkPrefixCollisionsOrReply`: the error text when a new
    /// prefix overlaps one the client has or another new one.
    pub(crate) fn prefix_collision(&self, id: ClientId, prefixes: &[&[u8]]) -> Option<String> {
        let t = self.table.lock();
        let overlap = |a: &[u8], b: &[u8]| {
            let n = a.len().min(b.len());
            a[..n] == b[..n]
        };
        let show = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        for (i, p) in prefixes.iter().enumerate() {
            if let Some(mine) = t.client_prefixes.get(&id)
                && let Some(old) = mine.iter().find(|old| overlap(old, p))
            {
                return Some(format!(
                    "ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must not overlap.",
                    show(p),
                    show(old)
                ));
            }
            if let Some(other) = prefixes[i + 1..].iter().find(|q| overlap(p, q)) {
                return Some(format!(
                    "ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client must not overlap.",
                    show(p),
                    show(other)
                ));
            }
        }
        None
    }

    /// Redis's `enableTracking`: `options` among BCAST, OPTIN, OPTOUT and
    /// NOLOOP; a BCAST client with no prefix gets the empty one (every key).
    pub(crate) fn enable(&self, h: &ClientHandle, redirect: u64, options: u32, prefixes: &[&[u8]]) {
        self.used.store(true, Relaxed);
        let old = h.tracking.load(Relaxed);
        if old & ON == 0 {
            self.clients.fetch_add(1, Relaxed);
        }
        h.tracking_redirect.store(redirect, Relaxed);
        if options & BCAST != 0 {
            let mut t = self.table.lock();
            let empty: &[u8] = b"";
            let list = if prefixes.is_empty() {
                std::slice::from_ref(&empty)
            } else {
                prefixes
            };
            for p in list {
                let bs = t.prefixes.entry(p.to_vec()).or_default();
                if bs.clients.insert(h.id) {
                    t.client_prefixes
                        .entry(h.id)
                        .or_default()
                        .insert(p.to_vec());
                }
            }
        }
        // CACHING survives re-enabling, as Redis clears only the mode bits.
        let keep = old & CACHING;
        h.tracking.store(
            ON | keep | (options & (BCAST | OPTIN | OPTOUT | NOLOOP)),
            Relaxed,
        );
    }

    /// Redis's `disableTracking`: the client's ids stay in the table and
    /// are dropped lazily, when their keys are invalidated.
    pub(crate) fn disable(&self, h: &ClientHandle) {
        let flags = h.tracking.load(Relaxed);
        if flags & BCAST != 0 {
            let mut t = self.table.lock();
            if let Some(mine) = t.client_prefixes.remove(&h.id) {
                for p in mine {
                    if let Some(bs) = t.prefixes.get_mut(&p) {
                        bs.clients.remove(&h.id);
                        if bs.clients.is_empty() {
                            t.prefixes.remove(&p);
                        }
                    }
                }
            }
        }
        if flags & ON != 0 {
            self.clients.fetch_sub(1, Relaxed);
            h.tracking.store(0, Relaxed);
        }
    }

    /// The client's BCAST prefixes, in order (CLIENT TRACKINGINFO).
    pub(crate) fn prefixes_of(&self, id: ClientId) -> Vec<Vec<u8>> {
        let t = self.table.lock();
        t.client_prefixes
            .get(&id)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Redis's `trackingRememberKeys`: `id` read `keys`.
    pub(crate) fn remember<'k>(&self, id: ClientId, keys: impl IntoIterator<Item = &'k [u8]>) {
        let mut t = self.table.lock();
        for key in keys {
            let added = match t.keys.get_mut(key) {
                Some(ids) => ids.insert(id),
                None => {
                    t.keys.insert(key.into(), HashSet::from([id]));
                    true
                }
            };
            if added {
                t.items += 1;
            }
        }
        self.keys.store(t.keys.len(), Relaxed);
    }

    /// Handles what a command (or a background task, `current` None)
    /// invalidated: messages to other clients go out now; those for
    /// `current` itself are added to `pending`, to follow its reply.
    pub(crate) fn invalidate(
        &self,
        clients: &Clients,
        changed: &mut Invalidated,
        current: Option<ClientId>,
        pending: &mut Pending,
    ) {
        for item in changed.drain(..) {
            match item {
                Some(key) => self.invalidate_key(clients, &key, current, true, pending),
                None => self.invalidate_all(clients, current, pending),
            }
        }
    }

    /// Redis's `trackingInvalidateKey`.
    fn invalidate_key(
        &self,
        clients: &Clients,
        key: &[u8],
        current: Option<ClientId>,
        bcast: bool,
        pending: &mut Pending,
    ) {
        let ids = {
            let mut t = self.table.lock();
            if bcast && !t.prefixes.is_empty() {
                for (p, bs) in t.prefixes.iter_mut() {
                    if key.starts_with(p) {
                        bs.keys.insert(key.into(), current);
                        self.bcast_pending.store(true, Relaxed);
                    }
                }
            }
            let Some(ids) = t.keys.remove(key) else {
                return;
            };
            t.items -= ids.len() as u64;
            self.keys.store(t.keys.len(), Relaxed);
            ids
        };
        for id in ids {
            let Some(target) = clients.get(id) else {
                continue;
            };
            let flags = target.tracking.load(Relaxed);
            if flags & ON == 0 || flags & BCAST != 0 {
                continue;
            }
            if Some(id) == current {
                if flags & NOLOOP == 0 {
                    pending.push((id, Some(key.into())));
                }
                continue;
            }
            self.send(clients, &target, &Message::Key(key), None);
        }
    }

    /// Redis's `trackingInvalidateKeysOnFlush`: a null to every tracking
    /// client, and the table emptied.
    fn invalidate_all(&self, clients: &Clients, current: Option<ClientId>, pending: &mut Pending) {
        if self.clients() > 0 {
            for c in clients.all() {
                if c.tracking.load(Relaxed) & ON == 0 {
                    continue;
                }
                if Some(c.id) == current {
                    pending.push((c.id, None));
                } else {
                    self.send(clients, &c, &Message::Null, None);
                }
            }
        }
        let mut t = self.table.lock();
        t.keys = HashMap::new();
        t.items = 0;
        self.keys.store(0, Relaxed);
    }

    /// Sends what was held for `me` until its reply was written: into
    /// `out` when the messages are its own, else to the redirect client.
    pub(crate) fn send_pending(
        &self,
        clients: &Clients,
        me: &ClientHandle,
        pending: &mut Pending,
        out: &mut crate::protocol::Reply,
    ) {
        for (id, item) in pending.drain(..) {
            if id == me.id {
                self.send(clients, me, &Message::of(&item), Some(&mut *out));
            } else if let Some(c) = clients.get(id) {
                self.send(clients, &c, &Message::of(&item), None);
            }
        }
    }

    /// Sends what was held for clients that were running but whose reply
    /// is not at hand (a blocked client served by another's write).
    pub(crate) fn push_pending(&self, clients: &Clients, pending: &mut Pending) {
        for (id, item) in pending.drain(..) {
            if let Some(c) = clients.get(id) {
                self.send(clients, &c, &Message::of(&item), None);
            }
        }
    }

    /// Redis's `trackingBroadcastInvalidationMessages`: each prefix's
    /// changed keys to its clients, one array per prefix.
    pub(crate) fn broadcast(&self, clients: &Clients) {
        if !self.bcast_pending.load(Relaxed) || !self.bcast_pending.swap(false, Relaxed) {
            return;
        }
        let mut batches = Vec::new();
        {
            let mut t = self.table.lock();
            for bs in t.prefixes.values_mut() {
                if !bs.keys.is_empty() {
                    let keys = std::mem::take(&mut bs.keys);
                    batches.push((keys, bs.clients.iter().copied().collect::<Vec<_>>()));
                }
            }
        }
        for (keys, ids) in batches {
            for id in ids {
                let Some(c) = clients.get(id) else {
                    continue;
                };
                let noloop = c.tracking.load(Relaxed) & NOLOOP != 0;
                let mine = |by: &Option<ClientId>| noloop && *by == Some(id);
                let count = keys.values().filter(|by| !mine(by)).count();
                if count == 0 {
                    continue;
                }
                let mut proto = format!("*{count}\r\n").into_bytes();
                for (k, by) in &keys {
                    if !mine(by) {
                        proto.extend_from_slice(format!("${}\r\n", k.len()).as_bytes());
                        proto.extend_from_slice(k);
                        proto.extend_from_slice(b"\r\n");
                    }
                }
                self.send(clients, &c, &Message::Proto(&proto), None);
            }
        }
    }

    /// Redis's `trackingLimitUsedSlots`: over `tracking-table-max-keys`,
    /// forgets keys (telling their clients, as if the keys had changed)
    /// until under it, with an effort that grows while it stays over.
    pub(crate) fn limit(&self, clients: &Clients, max_keys: usize) {
        static OVER_RUNS: AtomicUsize = AtomicUsize::new(0);
        let max = max_keys;
        if max == 0 || !self.used() {
            return;
        }
        if self.keys.load(Relaxed) <= max {
            OVER_RUNS.store(0, Relaxed);
            return;
        }
        let mut effort = 100 * (OVER_RUNS.load(Relaxed) + 1);
        let mut pending = Vec::new();
        while effort > 0 {
            effort -= 1;
            let key = {
                let t = self.table.lock();
                if t.keys.len() <= max {
                    OVER_RUNS.store(0, Relaxed);
                    return;
                }
                let skip = rand::random_range(0..t.keys.len());
                t.keys.keys().nth(skip).cloned()
            };
            let Some(key) = key else { break };
            self.invalidate_key(clients, &key, None, false, &mut pending);
        }
        if self.table.lock().keys.len() <= max {
            OVER_RUNS.store(0, Relaxed);
        } else {
            OVER_RUNS.fetch_add(1, Relaxed);
        }
    }

    /// Redis's `sendTrackingMessage` to client `c` (or its redirect).
    /// `own_out`: `c`'s reply buffer, when `c` is the client running.
    fn send(
        &self,
        clients: &Clients,
        c: &ClientHandle,
        msg: &Message<'_>,
        own_out: Option<&mut crate::protocol::Reply>,
    ) {
        let redirect = c.tracking_redirect.load(Relaxed);
        let mut own_out = own_out;
        let redir;
        let (target, redirected): (&ClientHandle, bool) = if redirect != 0 {
            match clients.get(redirect) {
                Some(r) => {
                    redir = r;
                    own_out = None;
                    (&*redir, true)
                }
                None => {
                    c.tracking.fetch_or(BROKEN_REDIR, Relaxed);
                    if c.resp.load(Relaxed) == 3 {
                        let mut b = b">2\r\n$21\r\ntracking-redir-broken\r\n".to_vec();
                        b.extend_from_slice(format!(":{redirect}\r\n").as_bytes());
                        deliver(c, b, own_out);
                    }
                    return;
                }
            }
        } else {
            (c, false)
        };
        // Sized up front: a queued message counts against maxmemory by its
        // length (`Clients::pushes_in_flight`), so it should not hold twice
        // that in growth slack.
        let body = match msg {
            Message::Key(k) => k.len() + 32,
            Message::Null => 8,
            Message::Proto(p) => p.len(),
        };
        let mut b = Vec::with_capacity(body + 48);
        if target.resp.load(Relaxed) == 3 {
            b.extend_from_slice(b">2\r\n$10\r\ninvalidate\r\n");
        } else if redirected && target.subscriptions() > 0 {
            b.extend_from_slice(b"*3\r\n$7\r\nmessage\r\n");
            b.extend_from_slice(format!("${}\r\n", CHANNEL.len()).as_bytes());
            b.extend_from_slice(CHANNEL);
            b.extend_from_slice(b"\r\n");
        } else {
            // RESP2 without a redirect: nowhere to send it.
            return;
        }
        match msg {
            Message::Key(k) => {
                b.extend_from_slice(format!("*1\r\n${}\r\n", k.len()).as_bytes());
                b.extend_from_slice(k);
                b.extend_from_slice(b"\r\n");
            }
            // Redis sends the null of the tracking client's protocol.
            Message::Null if c.resp.load(Relaxed) == 3 => b.extend_from_slice(b"_\r\n"),
            Message::Null => b.extend_from_slice(b"$-1\r\n"),
            Message::Proto(p) => b.extend_from_slice(p),
        }
        let queued = own_out.is_none();
        deliver(target, b, own_out);
        // Redis's `updateClientMemUsageAndBucket` after each message: the
        // receiver's grown output counts toward `maxmemory-clients` now,
        // not once its own connection runs (which, for a client that does
        // not read, may be never); the causing batch's eviction pass sees it.
        if queued {
            clients.note_memory_if_counted(target);
        }
    }
}

enum Message<'a> {
    Key(&'a [u8]),
    /// Everything (a flush).
    Null,
    /// Already encoded: a BCAST batch.
    Proto(&'a [u8]),
}

impl Message<'_> {
    fn of(item: &Option<Key>) -> Message<'_> {
        match item {
            Some(k) => Message::Key(k),
            None => Message::Null,
        }
    }
}

fn deliver(target: &ClientHandle, bytes: Vec<u8>, own_out: Option<&mut crate::protocol::Reply>) {
    match own_out {
        Some(out) => out.raw(&bytes),
        None => {
            // The receiver's output limit applies when its connection
            // writes and in the clients' cron (`push_unchecked`).
            // Exactly sized, so the `Bytes` is the vector's own allocation
            // (a vector with spare room gets a second one for its header)
            // and what the queue holds is what `Push::size` counts.
            target.push_unchecked(Push::Raw(bytes.into_boxed_slice().into()));
        }
    }
}
