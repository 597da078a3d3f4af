//! Window rules across a cluster, without I/O: every zwindow node of a
//! cluster converges on the same `ZWINDOW` rules, whichever node a rule was
//! set or deleted on, and whenever a node joins or comes back.
//!
//! The carrier is Redis 7.0's module message (`CLUSTERMSG_TYPE_MODULE`,
//! `clusterSendModule`): a module id, a one-byte type and a payload. The
//! id is the one `moduleTypeEncodeId` gives the 9-character name
//! [`MODULE_NAME`]; a redis-server node has no receiver for it
//! (`moduleCallClusterReceivers` finds none) and ignores the message, so a
//! cluster mixing redis-server and zwindow nodes stays healthy.
//!
//! The design is a last-writer-wins register per pattern with tombstones,
//! plus anti-entropy:
//! - Every change carries a [`Version`]: a hybrid logical clock reading
//!   (the wall clock in ms, or one more than the highest version seen if
//!   that is later: a Lamport clock that stays close to real time, so a
//!   node that restarted without history still outranks changes made
//!   before it restarted) and the node's name to break ties. A deletion
//!   is kept as a tombstone with its version, so an old copy of the rule
//!   cannot bring it back.
//! - A change is broadcast at once ([`MSG_ENTRIES`] with that one entry).
//! - Every [`DIGEST_PERIOD_MS`] each node sends every node it has a link to
//!   a digest of its table ([`MSG_DIGEST`]: FNV-1a over the entries,
//!   versions included). A node whose digest differs answers with its
//!   whole table, asking for a reply; the first node merges it and, if its
//!   own table still differs from what it received (it knew something
//!   newer), sends its table back, without asking for a reply. Two nodes
//!   are equal after one such round, whatever each missed (a partition, a
//!   restart, a late join); no message answers a message that does not ask,
//!   so nothing loops.
//! - Rules a node has without a version (loaded from its config file, RDB
//!   or AOF) enter the table at version 0 ([`RuleSync::seed`]): any change
//!   the cluster made since wins over them, and a rule only one node's
//!   files hold spreads to the others. Equal versions (two files holding
//!   different rules for one pattern) are ordered by their encoded bytes,
//!   so every node picks the same one.
//!
//! Limits: tombstones are not persisted, so when every node restarts at
//! once, a rule deleted while some node was down comes back from that
//! node's config file. Everything read from a peer is untrusted: a payload
//! longer than [`MAX_PAYLOAD`], a field longer than [`MAX_FIELD`], more
//! than [`MAX_ENTRIES`] patterns or bytes that do not parse are refused
//! whole (the caller logs and drops them); nothing here panics on input.

use std::collections::BTreeMap;

use bytes::{BufMut, Bytes, BytesMut};

use super::gossip::LinkId;
use super::wire::NAME_LEN;
use crate::types::window_rule::{Rule, Unit};

/// The module name the rules' messages are sent as (Redis module names of
/// 9 characters from `A-Za-z0-9-_` map to ids one to one).
pub(crate) const MODULE_NAME: &[u8; 9] = b"zwindow-r";
/// `moduleTypeEncodeId(MODULE_NAME, 0)` as the bytes Redis puts on the
/// wire (host order, little-endian on every platform Redis runs on).
pub(crate) const MODULE_ID: [u8; 8] = module_type_encode_id(MODULE_NAME).to_le_bytes();

/// A message with one node's table digest.
pub(crate) const MSG_DIGEST: u8 = 1;
/// A message with entries (one change, or a whole table in chunks).
pub(crate) const MSG_ENTRIES: u8 = 2;
/// How often each node sends its digest to every node.
pub(crate) const DIGEST_PERIOD_MS: i64 = 1000;

/// The longest payload accepted from a peer.
pub(crate) const MAX_PAYLOAD: usize = 4 << 20;
/// The longest pattern or destination synced.
pub(crate) const MAX_FIELD: usize = 64 << 10;
/// The most patterns (rules and tombstones) a table holds.
pub(crate) const MAX_ENTRIES: usize = 100_000;
/// A whole table goes out in messages of about this size.
const CHUNK: usize = 256 << 10;

/// [`MSG_ENTRIES`] flags: answer with your table if it differs from mine.
const FLAG_REPLY: u8 = 1;

/// Redis's `moduleTypeEncodeId`: 9 characters of 6 bits, then 10 bits of
/// encoding version (0).
const fn module_type_encode_id(name: &[u8; 9]) -> u64 {
    let mut id = 0u64;
    let mut j = 0;
    while j < 9 {
        let c = name[j];
        let pos = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' => 62,
            _ => 63,
        };
        id = (id << 6) | pos as u64;
        j += 1;
    }
    id << 10
}

/// A rule as the cluster carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RuleSpec {
    pub(crate) pattern: Vec<u8>,
    pub(crate) duration_ms: u64,
    pub(crate) unit: Unit,
    pub(crate) moveto: Option<Vec<u8>>,
}

impl RuleSpec {
    pub(crate) fn of(rule: &Rule) -> RuleSpec {
        RuleSpec {
            pattern: rule.pattern.to_vec(),
            duration_ms: rule.duration_ms,
            unit: rule.unit,
            moveto: rule.moveto.as_deref().map(<[u8]>::to_vec),
        }
    }

    pub(crate) fn to_rule(&self) -> Rule {
        Rule::new(
            &self.pattern,
            self.duration_ms,
            self.unit,
            self.moveto.as_deref(),
        )
    }

    /// Whether it fits the wire's bounds.
    pub(crate) fn fits(&self) -> bool {
        !self.pattern.is_empty()
            && self.pattern.len() <= MAX_FIELD
            && self
                .moveto
                .as_ref()
                .is_none_or(|d| !d.is_empty() && d.len() <= MAX_FIELD)
    }
}

/// When and where a change was made: ordered by time, then node name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Version {
    pub(crate) time: u64,
    pub(crate) node: [u8; NAME_LEN],
}

impl Version {
    /// What rules loaded from the node's own files have.
    const LOADED: Version = Version {
        time: 0,
        node: [0; NAME_LEN],
    };
}

/// A pattern's last change: its rule, or `None` when deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    version: Version,
    rule: Option<RuleSpec>,
}

/// What the caller must apply to the node's live rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    Set(RuleSpec),
    Del(Vec<u8>),
}

/// A message to send: on `link`, or to every node when `None`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Send {
    pub(crate) link: Option<LinkId>,
    pub(crate) msg_type: u8,
    pub(crate) payload: Bytes,
}

/// What one call asks of the caller.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Output {
    pub(crate) sends: Vec<Send>,
    pub(crate) changes: Vec<Change>,
}

/// One node's table of rules and tombstones.
#[derive(Debug, Default)]
pub(crate) struct RuleSync {
    entries: BTreeMap<Vec<u8>, Entry>,
    /// The highest version time seen or given.
    clock: u64,
    /// Whether the node's loaded rules are in (see [`RuleSync::seed`]).
    seeded: bool,
    last_digest_ms: i64,
}

impl RuleSync {
    pub(crate) fn seeded(&self) -> bool {
        self.seeded
    }

    /// Enters the rules the node loaded (config file, RDB, AOF) at version
    /// 0, once its dataset is loaded; before that the table is not used.
    pub(crate) fn seed(&mut self, rules: impl IntoIterator<Item = RuleSpec>) {
        if self.seeded {
            return;
        }
        self.seeded = true;
        for rule in rules.into_iter().filter(RuleSpec::fits) {
            let pattern = rule.pattern.clone();
            self.entries.entry(pattern).or_insert(Entry {
                version: Version::LOADED,
                rule: Some(rule),
            });
        }
    }

    /// The next version time: the wall clock, or past everything seen.
    fn tick(&mut self, now_ms: u64) -> u64 {
        self.clock = now_ms.max(self.clock.saturating_add(1));
        self.clock
    }

    /// A rule set on this node (ZWINDOW SET): recorded and broadcast.
    pub(crate) fn local_set(&mut self, me: [u8; NAME_LEN], rule: RuleSpec, now_ms: u64) -> Output {
        self.local(me, rule.pattern.clone(), Some(rule), now_ms)
    }

    /// A rule deleted on this node (ZWINDOW DEL): a tombstone, broadcast.
    pub(crate) fn local_del(&mut self, me: [u8; NAME_LEN], pattern: &[u8], now_ms: u64) -> Output {
        self.local(me, pattern.to_vec(), None, now_ms)
    }

    fn local(
        &mut self,
        me: [u8; NAME_LEN],
        pattern: Vec<u8>,
        rule: Option<RuleSpec>,
        now_ms: u64,
    ) -> Output {
        let mut out = Output::default();
        if pattern.is_empty()
            || pattern.len() > MAX_FIELD
            || rule.as_ref().is_some_and(|r| !r.fits())
        {
            tracing::warn!("window rule too long to share with the cluster");
            return out;
        }
        if !self.entries.contains_key(&pattern) && self.entries.len() >= MAX_ENTRIES {
            tracing::warn!("window rule not shared: the cluster's rule table is full");
            return out;
        }
        let entry = Entry {
            version: Version {
                time: self.tick(now_ms),
                node: me,
            },
            rule,
        };
        let mut body = Vec::new();
        encode_entry(&mut body, &pattern, &entry);
        self.entries.insert(pattern, entry);
        out.sends.push(Send {
            link: None,
            msg_type: MSG_ENTRIES,
            payload: entries_payload(0, self.digest(), 1, &body),
        });
        out
    }

    /// Every cron: the digest to every node, once per period.
    pub(crate) fn cron(&mut self, now_ms: i64) -> Output {
        let mut out = Output::default();
        if !self.seeded || now_ms - self.last_digest_ms < DIGEST_PERIOD_MS {
            return out;
        }
        self.last_digest_ms = now_ms;
        out.sends.push(self.digest_message(None));
        out
    }

    fn digest_message(&self, link: Option<LinkId>) -> Send {
        let mut p = BytesMut::with_capacity(12);
        p.put_u64(self.digest());
        p.put_u32(u32::try_from(self.entries.len()).unwrap_or(u32::MAX));
        Send {
            link,
            msg_type: MSG_DIGEST,
            payload: p.freeze(),
        }
    }

    /// A message of ours from the node on `link`. Errors are the peer's
    /// bytes that do not parse: nothing of that message is applied.
    pub(crate) fn on_message(
        &mut self,
        link: LinkId,
        msg_type: u8,
        payload: &[u8],
    ) -> Result<Output, String> {
        let mut out = Output::default();
        if !self.seeded {
            // Not loaded yet: the next digest exchange brings it all.
            return Ok(out);
        }
        if payload.len() > MAX_PAYLOAD {
            return Err(format!("payload of {} bytes", payload.len()));
        }
        let mut r = Reader(payload);
        match msg_type {
            MSG_DIGEST => {
                let digest = r.u64()?;
                let _count = r.u32()?;
                if digest != self.digest() {
                    self.table_messages(link, FLAG_REPLY, &mut out);
                }
            }
            MSG_ENTRIES => {
                let flags = r.u8()?;
                let their_digest = r.u64()?;
                let n = r.u32()?;
                let mut parsed = Vec::new();
                for _ in 0..n {
                    parsed.push(decode_entry(&mut r)?);
                }
                if !r.0.is_empty() {
                    return Err("trailing bytes".into());
                }
                for (pattern, entry) in parsed {
                    self.merge(pattern, entry, &mut out);
                }
                if flags & FLAG_REPLY != 0 && self.digest() != their_digest {
                    self.table_messages(link, 0, &mut out);
                }
            }
            t => return Err(format!("unknown message type {t}")),
        }
        Ok(out)
    }

    /// The whole table to `link`, in chunks; `flags` on the last one.
    fn table_messages(&self, link: LinkId, flags: u8, out: &mut Output) {
        let digest = self.digest();
        let mut body = Vec::new();
        let mut n = 0u32;
        for (pattern, entry) in &self.entries {
            encode_entry(&mut body, pattern, entry);
            n += 1;
            if body.len() >= CHUNK {
                out.sends.push(Send {
                    link: Some(link),
                    msg_type: MSG_ENTRIES,
                    payload: entries_payload(0, digest, n, &body),
                });
                body.clear();
                n = 0;
            }
        }
        out.sends.push(Send {
            link: Some(link),
            msg_type: MSG_ENTRIES,
            payload: entries_payload(flags, digest, n, &body),
        });
    }

    /// Takes `entry` if it is newer than what the table has for `pattern`,
    /// and says what that changes in the live rules.
    fn merge(&mut self, pattern: Vec<u8>, entry: Entry, out: &mut Output) {
        self.clock = self.clock.max(entry.version.time);
        let before = match self.entries.get(&pattern) {
            Some(cur) if !newer(&pattern, &entry, cur) => return,
            Some(cur) => cur.rule.clone(),
            None if self.entries.len() >= MAX_ENTRIES => {
                tracing::warn!("window rule from the cluster dropped: the rule table is full");
                return;
            }
            None => None,
        };
        match (&before, &entry.rule) {
            (before, Some(rule)) if before.as_ref() != Some(rule) => {
                out.changes.push(Change::Set(rule.clone()));
            }
            (Some(_), None) => out.changes.push(Change::Del(pattern.clone())),
            _ => {}
        }
        self.entries.insert(pattern, entry);
    }

    /// FNV-1a (64 bits) over the table in pattern order, versions included:
    /// equal digests, equal tables.
    pub(crate) fn digest(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut buf = Vec::new();
        for (pattern, entry) in &self.entries {
            buf.clear();
            encode_entry(&mut buf, pattern, entry);
            for &b in &buf {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
        h
    }

    /// The rule the table holds for `pattern` (none: deleted or unknown).
    pub(crate) fn live(&self, pattern: &[u8]) -> Option<&RuleSpec> {
        self.entries.get(pattern)?.rule.as_ref()
    }

    /// The live rules the table holds.
    #[cfg(test)]
    fn rules(&self) -> Vec<RuleSpec> {
        self.entries
            .values()
            .filter_map(|e| e.rule.clone())
            .collect()
    }
}

/// `a` replaces `b`: a later version, or at equal versions the larger
/// encoding (so that every node picks the same).
fn newer(pattern: &[u8], a: &Entry, b: &Entry) -> bool {
    if a.version != b.version {
        return a.version > b.version;
    }
    let (mut x, mut y) = (Vec::new(), Vec::new());
    encode_entry(&mut x, pattern, a);
    encode_entry(&mut y, pattern, b);
    x > y
}

fn entries_payload(flags: u8, digest: u64, n: u32, body: &[u8]) -> Bytes {
    let mut p = BytesMut::with_capacity(13 + body.len());
    p.put_u8(flags);
    p.put_u64(digest);
    p.put_u32(n);
    p.put_slice(body);
    p.freeze()
}

/// `time u64, node [40], kind u8 (0 deleted, 1 rule), pattern (u32 length,
/// bytes)`, then for a rule `duration_ms u64, unit u8 (0 s, 1 ms),
/// destination (u32 length, bytes; 0: none)`. Integers big-endian.
fn encode_entry(out: &mut Vec<u8>, pattern: &[u8], e: &Entry) {
    out.put_u64(e.version.time);
    out.put_slice(&e.version.node);
    out.put_u8(u8::from(e.rule.is_some()));
    out.put_u32(pattern.len() as u32);
    out.put_slice(pattern);
    if let Some(r) = &e.rule {
        out.put_u64(r.duration_ms);
        out.put_u8(match r.unit {
            Unit::Seconds => 0,
            Unit::Millis => 1,
        });
        let dest = r.moveto.as_deref().unwrap_or_default();
        out.put_u32(dest.len() as u32);
        out.put_slice(dest);
    }
}

fn decode_entry(r: &mut Reader<'_>) -> Result<(Vec<u8>, Entry), String> {
    let time = r.u64()?;
    let node: [u8; NAME_LEN] = r
        .take(NAME_LEN)?
        .try_into()
        .map_err(|_| "short node name")?;
    let kind = r.u8()?;
    let pattern = r.field()?;
    if pattern.is_empty() {
        return Err("empty pattern".into());
    }
    let rule = match kind {
        0 => None,
        1 => {
            let duration_ms = r.u64()?;
            // parse_duration's bounds.
            if duration_ms == 0 || duration_ms > 1_000_000_000_000_000 {
                return Err(format!("duration {duration_ms} ms out of range"));
            }
            let unit = match r.u8()? {
                0 => Unit::Seconds,
                1 => Unit::Millis,
                u => return Err(format!("unknown unit {u}")),
            };
            let dest = r.field()?;
            Some(RuleSpec {
                pattern: pattern.clone(),
                duration_ms,
                unit,
                moveto: (!dest.is_empty()).then_some(dest),
            })
        }
        k => return Err(format!("unknown entry kind {k}")),
    };
    let version = Version { time, node };
    Ok((pattern, Entry { version, rule }))
}

/// A bounds-checked reader over a peer's bytes.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.0.len() < n {
            return Err("truncated".into());
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64, String> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_be_bytes(a))
    }

    fn field(&mut self) -> Result<Vec<u8>, String> {
        let len = self.u32()? as usize;
        if len > MAX_FIELD {
            return Err(format!("field of {len} bytes"));
        }
        Ok(self.take(len)?.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(i: u8) -> [u8; NAME_LEN] {
        [b'a' + i; NAME_LEN]
    }

    fn rule(pattern: &str, secs: u64) -> RuleSpec {
        RuleSpec {
            pattern: pattern.as_bytes().to_vec(),
            duration_ms: secs * 1000,
            unit: Unit::Seconds,
            moveto: None,
        }
    }

    fn seeded(rules: Vec<RuleSpec>) -> RuleSync {
        let mut s = RuleSync::default();
        s.seed(rules);
        s
    }

    /// Delivers `out`'s sends from node `from` to the nodes in `up` (a
    /// broadcast reaches every other node that is up; a reply the node
    /// on its link), until nothing is left; returns the changes each
    /// node must apply.
    fn run(nodes: &mut [RuleSync], up: &[bool], from: usize, out: Output) -> Vec<Vec<Change>> {
        let mut changes = vec![Vec::new(); nodes.len()];
        changes[from].extend(out.changes);
        let mut queue: Vec<(usize, Send)> = out.sends.into_iter().map(|s| (from, s)).collect();
        while let Some((src, send)) = queue.pop() {
            // A link id names the sender in this simulation.
            let targets: Vec<usize> = match send.link {
                Some(l) => vec![l as usize],
                None => (0..nodes.len()).filter(|&n| n != src).collect(),
            };
            for t in targets {
                if !up[t] || !up[src] {
                    continue;
                }
                let got = nodes[t]
                    .on_message(src as LinkId, send.msg_type, &send.payload)
                    .unwrap();
                changes[t].extend(got.changes);
                queue.extend(got.sends.into_iter().map(|s| (t, s)));
            }
        }
        changes
    }

    fn digests(nodes: &[RuleSync]) -> Vec<u64> {
        nodes.iter().map(RuleSync::digest).collect()
    }

    #[test]
    fn the_module_id_is_redis_s_encoding() {
        // 'z' = 51, 'w' = 48, … as moduleTypeEncodeId maps them.
        let id = u64::from_le_bytes(MODULE_ID);
        assert_eq!(id & 0x3ff, 0);
        assert_eq!((id >> 10) & 63, u64::from(b'r' - b'a' + 26));
        assert_eq!((id >> 16) & 63, 62);
        assert_eq!(id >> 58, u64::from(b'z' - b'a' + 26));
    }

    #[test]
    fn a_change_reaches_every_node_and_a_deletion_too() {
        let mut nodes: Vec<RuleSync> = (0..3).map(|_| seeded(vec![])).collect();
        let up = [true; 3];
        let out = nodes[0].local_set(name(0), rule("a:*", 5), 1000);
        let ch = run(&mut nodes, &up, 0, out);
        assert_eq!(ch[1], vec![Change::Set(rule("a:*", 5))]);
        assert_eq!(ch[2], vec![Change::Set(rule("a:*", 5))]);
        let out = nodes[2].local_del(name(2), b"a:*", 1001);
        let ch = run(&mut nodes, &up, 2, out);
        assert_eq!(ch[0], vec![Change::Del(b"a:*".to_vec())]);
        assert_eq!(ch[1], vec![Change::Del(b"a:*".to_vec())]);
        assert!(nodes.iter().all(|n| n.rules().is_empty()));
        let d = digests(&nodes);
        assert!(d.iter().all(|&x| x == d[0]));
    }

    #[test]
    fn last_writer_wins_and_an_older_change_loses() {
        let mut a = seeded(vec![]);
        let mut b = seeded(vec![]);
        let old = a.local_set(name(0), rule("k", 5), 1000);
        let new = b.local_set(name(1), rule("k", 9), 2000);
        // b's newer change arrives first at a, then a's older one at b.
        let got = a.on_message(1, MSG_ENTRIES, &new.sends[0].payload).unwrap();
        assert_eq!(got.changes, vec![Change::Set(rule("k", 9))]);
        let got = b.on_message(0, MSG_ENTRIES, &old.sends[0].payload).unwrap();
        assert!(got.changes.is_empty());
        assert_eq!(a.digest(), b.digest());
        // A later local change outranks what was seen even with a clock
        // behind it (the Lamport part).
        let out = a.local_set(name(0), rule("k", 3), 10);
        let got = b.on_message(0, MSG_ENTRIES, &out.sends[0].payload).unwrap();
        assert_eq!(got.changes, vec![Change::Set(rule("k", 3))]);
    }

    #[test]
    fn a_partitioned_node_catches_up_by_digest_both_ways() {
        let mut nodes: Vec<RuleSync> = (0..3).map(|_| seeded(vec![])).collect();
        let all = [true; 3];
        let out = nodes[0].local_set(name(0), rule("gone", 5), 1000);
        run(&mut nodes, &all, 0, out);
        // Node 2 is cut off: a deletion and a new rule miss it, and it
        // makes a change of its own meanwhile.
        let cut = [true, true, false];
        let out = nodes[0].local_del(name(0), b"gone", 2000);
        run(&mut nodes, &cut, 0, out);
        let out = nodes[1].local_set(name(1), rule("new", 7), 2001);
        run(&mut nodes, &cut, 1, out);
        let mut own = Output::default();
        let r = nodes[2].local_set(name(2), rule("mine", 1), 2002);
        own.sends.extend(r.sends);
        run(&mut nodes, &cut, 2, own);
        assert_ne!(nodes[2].digest(), nodes[0].digest());
        // Healed: node 2's digest goes out; the round trip fixes both sides.
        nodes[2].last_digest_ms = -DIGEST_PERIOD_MS;
        let out = nodes[2].cron(0);
        let ch = run(&mut nodes, &all, 2, out);
        assert!(ch[2].contains(&Change::Del(b"gone".to_vec())));
        assert!(ch[2].contains(&Change::Set(rule("new", 7))));
        // The others learn node 2's rule.
        assert!(ch[0].contains(&Change::Set(rule("mine", 1))));
        assert!(ch[1].contains(&Change::Set(rule("mine", 1))));
        let d = digests(&nodes);
        assert!(d.iter().all(|&x| x == d[0]), "{d:?}");
        let mut rules = nodes[2].rules();
        rules.sort_by(|a, b| a.pattern.cmp(&b.pattern));
        assert_eq!(rules, vec![rule("mine", 1), rule("new", 7)]);
    }

    #[test]
    fn a_restart_from_an_old_config_loses_to_the_cluster() {
        let mut a = seeded(vec![]);
        let out = a.local_set(name(0), rule("r", 5), 1000);
        let mut b = seeded(vec![]);
        b.on_message(0, MSG_ENTRIES, &out.sends[0].payload).unwrap();
        let del = a.local_del(name(0), b"r", 2000);
        let set = a.local_set(name(0), rule("s", 2), 2001);
        // b restarts from a config file that still has `r`, not `s`.
        let _ = (del, set);
        let mut b = seeded(vec![rule("r", 5)]);
        let mut nodes = vec![a, b];
        let out = nodes[1].cron(DIGEST_PERIOD_MS);
        let ch = run(&mut nodes, &[true, true], 1, out);
        assert_eq!(
            ch[1],
            vec![Change::Del(b"r".to_vec()), Change::Set(rule("s", 2))]
        );
        assert!(ch[0].is_empty());
        b = nodes.pop().unwrap();
        assert_eq!(b.rules(), vec![rule("s", 2)]);
    }

    #[test]
    fn loaded_rules_spread_and_equal_versions_agree() {
        let mut nodes = vec![
            seeded(vec![rule("x", 5), rule("only-a", 1)]),
            seeded(vec![rule("x", 9)]),
        ];
        let out = nodes[0].cron(DIGEST_PERIOD_MS);
        run(&mut nodes, &[true, true], 0, out);
        assert_eq!(nodes[0].digest(), nodes[1].digest());
        assert_eq!(nodes[0].rules(), nodes[1].rules());
        assert!(nodes[1].rules().contains(&rule("only-a", 1)));
    }

    #[test]
    fn nothing_is_used_before_seeding() {
        let mut a = RuleSync::default();
        assert!(a.cron(10_000).sends.is_empty());
        let mut b = seeded(vec![]);
        let out = b.local_set(name(1), rule("k", 1), 5);
        let got = a.on_message(1, MSG_ENTRIES, &out.sends[0].payload).unwrap();
        assert_eq!(got, Output::default());
    }

    #[test]
    fn hostile_payloads_are_refused_whole_never_panicking() {
        let mut b = seeded(vec![]);
        let out = b.local_set(name(1), rule("k", 1), 5);
        let good = out.sends[0].payload.to_vec();
        let mut a = seeded(vec![]);
        // Every truncation fails without changing anything.
        for n in 0..good.len() {
            assert!(a.on_message(1, MSG_ENTRIES, &good[..n]).is_err());
        }
        assert!(a.rules().is_empty());
        // Trailing bytes, unknown kinds, units, types, huge lengths.
        let mut long = good.clone();
        long.push(0);
        assert!(a.on_message(1, MSG_ENTRIES, &long).is_err());
        assert!(a.on_message(1, 77, &good).is_err());
        let mut bad_count = good.clone();
        bad_count[9..13].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(a.on_message(1, MSG_ENTRIES, &bad_count).is_err());
        let huge = vec![0u8; MAX_PAYLOAD + 1];
        assert!(a.on_message(1, MSG_ENTRIES, &huge).is_err());
        // Random bytes.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for len in 0..400 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            for t in [MSG_DIGEST, MSG_ENTRIES] {
                let _ = a.on_message(1, t, &bytes);
            }
        }
        // The good one still applies.
        assert_eq!(
            a.on_message(1, MSG_ENTRIES, &good).unwrap().changes,
            vec![Change::Set(rule("k", 1))]
        );
    }

    #[test]
    fn a_large_table_goes_in_chunks_and_arrives_whole() {
        let rules: Vec<RuleSpec> = (0..3000)
            .map(|i| RuleSpec {
                pattern: format!("p:{i:0200}:*").into_bytes(),
                duration_ms: 1000,
                unit: Unit::Millis,
                moveto: Some(format!("{{key}}:{i}").into_bytes()),
            })
            .collect();
        let mut nodes = vec![seeded(rules), seeded(vec![])];
        let out = nodes[1].cron(DIGEST_PERIOD_MS);
        let ch = run(&mut nodes, &[true, true], 1, out);
        assert_eq!(ch[1].len(), 3000);
        assert_eq!(nodes[0].digest(), nodes[1].digest());
    }
}
