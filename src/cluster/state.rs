//! A node's view of the cluster, as Redis 7.0.15's `clusterState` and
//! `clusterNode` (`cluster.h`) hold it: the nodes it knows, who serves
//! each of the 16384 slots, the slots this node imports or migrates, and
//! the epochs. Also the replies built straight from that view: `CLUSTER
//! SLOTS` and `CLUSTER SHARDS` (the `CLUSTER NODES` text is the nodes.conf
//! generator's, in [`super::nodes_conf`]).
//!
//! Nodes are kept in the order they were added: Redis iterates a dict in
//! hash order (random per process), so any order is Redis's order; ours is
//! stable, so a loaded nodes.conf is written back in its own order.

use std::collections::HashMap;

use super::gossip::{BusState, NodeBus};
use super::wire::{
    NODE_FAIL, NODE_HANDSHAKE, NODE_MASTER, NODE_MYSELF, NODE_SLAVE, NodeName, SLOTS, Slots,
};
use crate::protocol::reply::Reply;

/// `cluster-port`'s default offset from the client port
/// (`CLUSTER_PORT_INCR`), also what an old nodes.conf line without
/// `@cport` means.
pub const PORT_INCR: i32 = 10000;

/// The longest IP text Redis keeps (`NET_IP_STR_LEN` - 1).
pub const IP_MAX: usize = 45;

/// One known node (`clusterNode`): what nodes.conf and `CLUSTER NODES`
/// say of it, and what `CLUSTER SLOTS`/`SHARDS` need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub name: NodeName,
    /// The IP text (at most [`IP_MAX`] bytes; empty if not known yet).
    pub ip: Vec<u8>,
    /// The client port (the TLS one in a TLS cluster). Redis keeps ports as
    /// `int`, and nodes.conf's are `atoi`ed, so any int may be there.
    pub port: i32,
    /// The plaintext client port of a TLS cluster; 0 if unknown (it is not
    /// in nodes.conf, only on the bus).
    pub pport: i32,
    /// The cluster bus port.
    pub cport: i32,
    /// `cluster-announce-hostname`; empty if none.
    pub hostname: Vec<u8>,
    /// `cluster-announce-human-nodename` (Redis 7.2's `human_nodename`,
    /// shown in log lines about the node); empty if none.
    pub human_nodename: Vec<u8>,
    /// `NODE_*` bits from [`super::wire`].
    pub flags: u16,
    /// The primary of a replica.
    pub primary: Option<NodeName>,
    /// Replicas in the order they were attached (`slaves[]`).
    pub replicas: Vec<NodeName>,
    /// Unix time in ms of the PING awaiting its PONG; 0 if none.
    pub ping_sent: i64,
    /// Unix time in ms of the last PONG.
    pub pong_received: i64,
    /// When the node was flagged FAIL (ms).
    pub fail_time: i64,
    pub config_epoch: u64,
    /// Whether an outgoing bus link to it is up (`node->link != NULL`).
    pub link: bool,
    /// The slots it serves, as it announced them (`node->slots`).
    pub slots: Slots,
    /// Its replication offset, as last heard on the bus.
    pub repl_offset: i64,
    /// What only the bus's protocol logic keeps of it (links, failure
    /// reports, times): see [`super::gossip::NodeBus`].
    pub bus: NodeBus,
    /// Its shard's id (Redis 7.2's `shard_id`): 40 hex characters, random
    /// for a node just created, its primary's for a replica once known,
    /// what it says in its PING extension for a primary.
    pub shard_id: NodeName,
    /// When it joined its shard (a counter over the state): Redis lists a
    /// shard's nodes in that order (`clusterAddNodeToShard` appends).
    pub shard_seq: u64,
}

impl Node {
    /// A node known only by name (`createClusterNode(name, 0)`).
    pub fn new(name: NodeName) -> Node {
        Node {
            name,
            ip: Vec::new(),
            port: 0,
            pport: 0,
            cport: 0,
            hostname: Vec::new(),
            human_nodename: Vec::new(),
            flags: 0,
            primary: None,
            replicas: Vec::new(),
            ping_sent: 0,
            pong_received: 0,
            fail_time: 0,
            config_epoch: 0,
            link: false,
            slots: Slots::empty(),
            repl_offset: 0,
            bus: NodeBus::default(),
            shard_id: NodeName::NULL,
            shard_seq: 0,
        }
    }

    pub fn is_myself(&self) -> bool {
        self.flags & NODE_MYSELF != 0
    }

    pub fn is_primary(&self) -> bool {
        self.flags & NODE_MASTER != 0
    }

    pub fn is_replica(&self) -> bool {
        self.flags & NODE_SLAVE != 0
    }

    pub fn is_failed(&self) -> bool {
        self.flags & NODE_FAIL != 0
    }
}

/// `cluster-preferred-endpoint-type`: what `CLUSTER SLOTS` and `SHARDS`
/// give as a node's endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EndpointType {
    #[default]
    Ip,
    Hostname,
    UnknownEndpoint,
}

/// What a reply needs beyond the node table: the server's settings and,
/// for myself, the replication offset (Redis reads its own from the
/// replication state, not from its node entry).
#[derive(Debug, Clone, Copy, Default)]
pub struct ReplyContext {
    pub endpoint: EndpointType,
    /// `tls-cluster yes`: a node's `port` is its TLS port.
    pub tls_cluster: bool,
    /// The asking client is on a plaintext connection of a TLS cluster
    /// (`CLUSTER SLOTS` then gives plaintext ports where known).
    pub plaintext_client: bool,
    /// `master_repl_offset`, what a primary myself reports.
    pub master_repl_offset: i64,
    /// `replicationGetSlaveOffset()`, what a replica myself reports.
    pub replica_offset: i64,
}

/// The cluster as one node sees it (`clusterState`).
#[derive(Debug, Clone)]
pub struct ClusterState {
    /// My own name, once known.
    pub myself: Option<NodeName>,
    pub current_epoch: u64,
    pub last_vote_epoch: u64,
    nodes: Vec<Node>,
    /// Node names (chosen by peers) to their place in `nodes`: foldhash,
    /// seeded per process, as the keyspace's dicts.
    index: HashMap<NodeName, usize, foldhash::fast::RandomState>,
    /// Who serves each slot (`slots[]`).
    slots: SlotTable,
    /// Where myself migrates a slot to (`migrating_slots_to[]`).
    migrating_to: SlotTable,
    /// Where myself imports a slot from (`importing_slots_from[]`).
    importing_from: SlotTable,
    /// The bus's own state (links, election, settings): see
    /// [`super::gossip::BusState`].
    pub bus: BusState,
    /// Slots freed while myself served them, as primary or replica, in
    /// the order they were freed: their shard channels' subscribers must
    /// be unsubscribed (`clusterDelSlot` calling `removeChannelsInSlot`).
    /// Whoever changes the state takes them ([`ClusterState::take_lost_slots`])
    /// before releasing the lock.
    lost_slots: Vec<u16>,
    /// The last [`Node::shard_seq`] given.
    shard_seq: u64,
    /// `tls-cluster yes`: a node's `port` is its TLS port and `pport` its
    /// plaintext one (else the other way round), which nodes.conf's
    /// auxiliary port field names (`tcp-port=` / `tls-port=`).
    pub tls_cluster: bool,
}

impl Default for ClusterState {
    fn default() -> Self {
        ClusterState::new()
    }
}

/// A node name per slot, kept as a `u16` index into the short list of the
/// names in use: the table is 32 KB, where one of `Option<NodeName>` (41
/// bytes a slot) is 672 KB, so the routing's look-up of a random slot's
/// owner, for every keyed command, stays in the cache instead of missing
/// it. A table nobody set (no slot migrating or importing, as nearly
/// always) answers without reading it.
#[derive(Debug, Clone)]
struct SlotTable {
    /// Per slot, the name's place in `names`, or [`SlotTable::NONE`].
    ix: Box<[u16]>,
    /// The names the table has pointed to; a name no slot points to any
    /// more stays until [`SlotTable::compact`].
    names: Vec<NodeName>,
    /// Slots that have a name.
    used: usize,
    /// How long `names` was after its last compaction.
    compacted_len: usize,
}

impl SlotTable {
    const NONE: u16 = u16::MAX;

    fn new() -> SlotTable {
        SlotTable {
            ix: vec![Self::NONE; SLOTS].into_boxed_slice(),
            names: Vec::new(),
            used: 0,
            compacted_len: 0,
        }
    }

    fn get(&self, slot: u16) -> Option<&NodeName> {
        if self.used == 0 {
            return None;
        }
        let i = *self.ix.get(usize::from(slot))?;
        self.names.get(usize::from(i))
    }

    fn set(&mut self, slot: u16, name: Option<NodeName>) {
        let Some(&old) = self.ix.get(usize::from(slot)) else {
            return;
        };
        let new = match name {
            Some(name) => self.intern(name),
            None => Self::NONE,
        };
        self.used = self.used + usize::from(new != Self::NONE) - usize::from(old != Self::NONE);
        self.ix[usize::from(slot)] = new;
    }

    /// Every slot pointing to `old` points to `new` instead.
    fn retarget(&mut self, old: &NodeName, new: Option<NodeName>) {
        let new = match new {
            Some(name) => self.intern(name),
            None => Self::NONE,
        };
        for i in self.ix.iter_mut() {
            if self.names.get(usize::from(*i)) == Some(old) {
                *i = new;
            }
        }
        self.used = self.ix.iter().filter(|&&i| i != Self::NONE).count();
    }

    /// The place of `name` in `names`, added if absent. The list is
    /// compacted when it has grown past twice the names in use (nodes
    /// forgotten, renamed), so it stays about as long as the cluster.
    fn intern(&mut self, name: NodeName) -> u16 {
        if let Some(i) = self.names.iter().position(|n| *n == name) {
            return i as u16;
        }
        if self.names.len() >= (2 * self.compacted_len).max(64) {
            self.compact();
        }
        self.names.push(name);
        (self.names.len() - 1) as u16
    }

    /// Drops the names no slot points to, renumbering the rest.
    fn compact(&mut self) {
        let mut live: Vec<NodeName> = Vec::new();
        let mut map = vec![Self::NONE; self.names.len()];
        for i in self.ix.iter_mut() {
            let Some(slot) = map.get_mut(usize::from(*i)) else {
                continue;
            };
            if *slot == Self::NONE {
                *slot = live.len() as u16;
                live.push(self.names[usize::from(*i)]);
            }
            *i = *slot;
        }
        self.names = live;
        self.compacted_len = self.names.len();
    }
}

impl ClusterState {
    /// No nodes, no slots, epochs 0.
    pub fn new() -> ClusterState {
        ClusterState {
            myself: None,
            current_epoch: 0,
            last_vote_epoch: 0,
            nodes: Vec::new(),
            index: HashMap::default(),
            slots: SlotTable::new(),
            migrating_to: SlotTable::new(),
            importing_from: SlotTable::new(),
            bus: BusState::default(),
            lost_slots: Vec::new(),
            shard_seq: 0,
            tls_cluster: false,
        }
    }

    /// The nodes in the order they were added.
    pub fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.nodes.iter()
    }

    pub fn node(&self, name: &NodeName) -> Option<&Node> {
        self.index.get(name).and_then(|&i| self.nodes.get(i))
    }

    pub fn node_mut(&mut self, name: &NodeName) -> Option<&mut Node> {
        let i = *self.index.get(name)?;
        self.nodes.get_mut(i)
    }

    /// The node named `name`, created (at the end of the order) if unknown,
    /// with a random shard id of its own (`createClusterNode`).
    pub fn node_or_create(&mut self, name: NodeName) -> &mut Node {
        let i = match self.index.get(&name) {
            Some(&i) => i,
            None => {
                let mut node = Node::new(name);
                node.shard_id = super::random_name();
                self.shard_seq += 1;
                node.shard_seq = self.shard_seq;
                self.nodes.push(node);
                self.index.insert(name, self.nodes.len() - 1);
                self.nodes.len() - 1
            }
        };
        &mut self.nodes[i]
    }

    /// Moves `name` to the end of the node order.
    pub(crate) fn move_to_end(&mut self, name: &NodeName) {
        if let Some(i) = self.index.get(name).copied() {
            let node = self.nodes.remove(i);
            self.nodes.push(node);
            self.reindex();
        }
    }

    fn reindex(&mut self) {
        self.index = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name, i))
            .collect();
    }

    /// Who serves `slot`.
    pub fn slot_owner(&self, slot: u16) -> Option<&NodeName> {
        self.slots.get(slot)
    }

    /// Gives `slot` to `name` if nobody serves it (`clusterAddSlot`);
    /// false if it is served already, past the last slot, or `name` is
    /// unknown.
    pub fn add_slot(&mut self, name: &NodeName, slot: u16) -> bool {
        let s = usize::from(slot);
        if s >= SLOTS || self.slots.get(slot).is_some() {
            return false;
        }
        let Some(node) = self.node_mut(name) else {
            return false;
        };
        node.slots.insert(slot);
        self.slots.set(slot, Some(*name));
        true
    }

    pub fn migrating_to(&self, slot: u16) -> Option<&NodeName> {
        self.migrating_to.get(slot)
    }

    pub fn importing_from(&self, slot: u16) -> Option<&NodeName> {
        self.importing_from.get(slot)
    }

    /// Marks `slot` as migrating to `to` (None: not migrating).
    pub fn set_migrating(&mut self, slot: u16, to: Option<NodeName>) {
        self.migrating_to.set(slot, to);
    }

    /// Marks `slot` as importing from `from` (None: not importing).
    pub fn set_importing(&mut self, slot: u16, from: Option<NodeName>) {
        self.importing_from.set(slot, from);
    }

    /// Makes `replica` a replica of `primary` in `primary`'s list
    /// (`clusterNodeAddSlave`, which also flags the primary as a target of
    /// replica migration). Both must be known.
    pub fn attach_replica(&mut self, primary: &NodeName, replica: &NodeName) {
        if self.node(replica).is_none() {
            return;
        }
        if let Some(p) = self.node_mut(primary) {
            if !p.replicas.contains(replica) {
                p.replicas.push(*replica);
                p.flags |= super::wire::NODE_MIGRATE_TO;
            }
            if let Some(r) = self.node_mut(replica) {
                r.primary = Some(*primary);
            }
        }
    }

    /// Frees `slot` (`clusterDelSlot`): nobody serves it any more; false
    /// if nobody served it.
    pub(crate) fn del_slot(&mut self, slot: u16) -> bool {
        let s = usize::from(slot);
        let Some(owner) = self.slots.get(slot).copied() else {
            return false;
        };
        if self.serves_with_myself(&owner) {
            self.lost_slots.push(slot);
        }
        self.slots.set(slot, None);
        if let Some(node) = self.node_mut(&owner) {
            let mut bytes = *node.slots.as_bytes();
            bytes[s / 8] &= !(1 << (s % 8));
            node.slots = Slots::from_bytes(&bytes);
        }
        true
    }

    /// Myself changed primary (`clusterSetMaster` calling
    /// `removeAllNotOwnedShardChannelSubscriptions`): every slot its new
    /// shard does not own loses its shard channels here.
    pub(crate) fn lose_slots_not_served(&mut self, primary: &NodeName) {
        for slot in 0..SLOTS as u16 {
            if self.slots.get(slot) != Some(primary) {
                self.lost_slots.push(slot);
            }
        }
    }

    /// Whether myself serves `owner`'s slots with it: myself is their
    /// primary, or a replica of that primary (Redis's
    /// `clusterGetNodesServingMySlots(owner)` holding myself).
    fn serves_with_myself(&self, owner: &NodeName) -> bool {
        let (Some(me), Some(owner)) = (self.myself, self.node(owner)) else {
            return false;
        };
        let primary = if owner.is_primary() {
            Some(owner.name)
        } else {
            owner.primary
        };
        let Some(primary) = primary else {
            return false;
        };
        primary == me
            || self
                .node(&me)
                .is_some_and(|m| m.is_replica() && m.primary == Some(primary))
    }

    /// The slots freed since the last call whose shard channels this node
    /// must drop (see `lost_slots`), in the order they were freed.
    pub(crate) fn take_lost_slots(&mut self) -> Vec<u16> {
        std::mem::take(&mut self.lost_slots)
    }

    /// Puts `name` in shard `id` (`assignShardIdToNode`): it joins that
    /// shard's end. False if the node is unknown or already there.
    pub(crate) fn assign_shard_id(&mut self, name: &NodeName, id: NodeName) -> bool {
        let seq = self.shard_seq + 1;
        let Some(n) = self.node_mut(name) else {
            return false;
        };
        if n.shard_id == id {
            return false;
        }
        n.shard_id = id;
        n.shard_seq = seq;
        self.shard_seq = seq;
        true
    }

    /// Orders every shard's nodes as a running Redis lists them: each
    /// primary, then its replicas in the order they attached (after a
    /// nodes.conf load, whose line order is a dict's, so any order).
    pub(crate) fn order_shards_primary_first(&mut self) {
        let order: Vec<NodeName> = self
            .nodes
            .iter()
            .filter(|n| n.primary.is_none())
            .flat_map(|n| std::iter::once(n.name).chain(n.replicas.iter().copied()))
            .collect();
        for name in order {
            self.shard_seq += 1;
            let seq = self.shard_seq;
            if let Some(n) = self.node_mut(&name) {
                n.shard_seq = seq;
            }
        }
    }

    /// `updateShardId`: a primary takes `id` and gives it to its
    /// replicas; a replica takes it only if it is its primary's (else it
    /// keeps its primary's). The nodes whose id changed, the primary's
    /// replicas after it (Redis saves nodes.conf for all, fsyncing it for
    /// replicas).
    pub(crate) fn update_shard_id(&mut self, name: &NodeName, id: NodeName) -> Vec<NodeName> {
        let mut changed = Vec::new();
        let Some(node) = self.node(name) else {
            return changed;
        };
        if node.shard_id == id {
            return changed;
        }
        match node.primary {
            None => {
                let replicas = node.replicas.clone();
                if self.assign_shard_id(name, id) {
                    changed.push(*name);
                }
                for r in replicas {
                    if self.assign_shard_id(&r, id) {
                        changed.push(r);
                    }
                }
            }
            Some(p) => {
                if self.node(&p).is_some_and(|p| p.shard_id == id) && self.assign_shard_id(name, id)
                {
                    changed.push(*name);
                }
            }
        }
        changed
    }

    /// The primary at the top of `node`'s chain of primaries
    /// (`clusterNodeGetMaster`; a loop stops where it started).
    pub(crate) fn top_primary(&self, name: &NodeName) -> Option<&Node> {
        let mut node = self.node(name)?;
        let mut hops = 0;
        while let Some(p) = node.primary {
            let Some(next) = self.node(&p) else { break };
            node = next;
            hops += 1;
            if node.name == *name || hops > self.nodes.len() {
                break;
            }
        }
        Some(node)
    }

    /// Forgets `name` (`clusterDelNode`): its slots become unserved, its
    /// imports and migrations are dropped, and it leaves its primary's
    /// replica list. Failure reports and links are the bus's business.
    pub(crate) fn remove_node(&mut self, name: &NodeName) -> Option<Node> {
        let i = *self.index.get(name)?;
        if self.serves_with_myself(name) {
            for s in 0..SLOTS {
                let slot = s as u16;
                if self.slots.get(slot) == Some(name) {
                    self.lost_slots.push(slot);
                }
            }
        }
        self.slots.retarget(name, None);
        self.migrating_to.retarget(name, None);
        self.importing_from.retarget(name, None);
        let node = self.nodes.remove(i);
        self.reindex();
        if let Some(p) = node.primary.and_then(|p| self.node_mut(&p)) {
            p.replicas.retain(|r| r != name);
        }
        for n in &mut self.nodes {
            if n.primary == Some(*name) {
                n.primary = None;
            }
        }
        Some(node)
    }

    /// Renames a node (`clusterRenameNode`: a handshake node learning its
    /// real name), keeping its place in the order.
    pub(crate) fn rename_node(&mut self, old: &NodeName, new: NodeName) {
        let Some(&i) = self.index.get(old) else {
            return;
        };
        if self.index.contains_key(&new) {
            return;
        }
        self.nodes[i].name = new;
        // It joins its shard now (`clusterRenameNode`'s
        // `clusterAddNodeToShard`): a handshake node is in none.
        self.shard_seq += 1;
        self.nodes[i].shard_seq = self.shard_seq;
        self.index.remove(old);
        self.index.insert(new, i);
        self.slots.retarget(old, Some(new));
        self.migrating_to.retarget(old, Some(new));
        self.importing_from.retarget(old, Some(new));
        for n in &mut self.nodes {
            if n.primary == Some(*old) {
                n.primary = Some(new);
            }
            for r in &mut n.replicas {
                if r == old {
                    *r = new;
                }
            }
        }
    }

    /// The highest epoch known (`clusterGetMaxEpoch`).
    pub fn max_epoch(&self) -> u64 {
        self.nodes
            .iter()
            .map(|n| n.config_epoch)
            .fold(self.current_epoch, u64::max)
    }

    /// The slot ranges each node serves, from the slot table, as Redis's
    /// `clusterGenNodesSlotsInfo`: `(start, end)` pairs by node.
    pub(crate) fn slot_ranges(&self) -> HashMap<NodeName, Vec<(u16, u16)>> {
        let mut out: HashMap<NodeName, Vec<(u16, u16)>> = HashMap::new();
        for (start, end, name) in self.slot_runs() {
            out.entry(name).or_default().push((start, end));
        }
        out
    }

    /// The runs of consecutive slots with one owner, in slot order:
    /// `(start, end, owner)`; unowned slots are left out.
    fn slot_runs(&self) -> impl Iterator<Item = (u16, u16, NodeName)> + '_ {
        let mut start = 0usize;
        std::iter::from_fn(move || {
            while start < SLOTS {
                let owner = self.slots.get(start as u16).copied();
                let mut end = start;
                while end + 1 < SLOTS && self.slots.get(end as u16 + 1).copied() == owner {
                    end += 1;
                }
                let run = (start as u16, end as u16);
                start = end + 1;
                if let Some(name) = owner {
                    return Some((run.0, run.1, name));
                }
            }
            None
        })
    }

    /// The config epoch Redis shows for a node: a replica shows its
    /// primary's.
    pub(crate) fn shown_epoch(&self, node: &Node) -> u64 {
        match node.primary.as_ref().and_then(|p| self.node(p)) {
            Some(p) if node.is_replica() => p.config_epoch,
            _ => node.config_epoch,
        }
    }

    /// A node's replication offset as replies report it: myself's comes
    /// from the replication state.
    fn offset_of(&self, node: &Node, ctx: &ReplyContext) -> i64 {
        if node.is_myself() {
            if node.is_replica() {
                ctx.replica_offset
            } else {
                ctx.master_repl_offset
            }
        } else {
            node.repl_offset
        }
    }

    /// `CLUSTER SLOTS` (`clusterReplyMultiBulkSlots`): one entry per run of
    /// slots with one owner, in slot order, each with the owner and then
    /// its available replicas (not failed, offset known).
    pub(crate) fn write_slots_reply(&self, r: &mut Reply, ctx: &ReplyContext) {
        let runs: Vec<(u16, u16, &Node)> = self
            .slot_runs()
            .filter_map(|(start, end, name)| Some((start, end, self.node(&name)?)))
            .collect();
        r.array(runs.len());
        for (start, end, node) in runs {
            let replicas: Vec<&Node> = node
                .replicas
                .iter()
                .filter_map(|n| self.node(n))
                .filter(|n| !n.is_failed() && self.offset_of(n, ctx) != 0)
                .collect();
            r.array(3 + replicas.len());
            r.int(start as i64);
            r.int(end as i64);
            write_slots_node(r, node, ctx);
            for replica in replicas {
                write_slots_node(r, replica, ctx);
            }
        }
    }

    /// `CLUSTER SHARDS` (`clusterCommandShards`, Redis 7.2 and later): the
    /// known nodes (not those in handshake) grouped by shard id, each
    /// shard's nodes in the order they joined it, shards in the order
    /// their first node joined (Redis walks a dict: any order is its
    /// order). A shard's slots are those of the primary of its first node
    /// not failed (none if every node failed), as flattened start, end
    /// pairs.
    pub(crate) fn write_shards_reply(&self, r: &mut Reply, ctx: &ReplyContext) {
        let ranges = self.slot_ranges();
        let mut members: Vec<&Node> = self
            .nodes
            .iter()
            .filter(|n| n.flags & NODE_HANDSHAKE == 0)
            .collect();
        members.sort_by_key(|n| n.shard_seq);
        let mut shards: Vec<(NodeName, Vec<&Node>)> = Vec::new();
        for node in members {
            match shards.iter_mut().find(|(id, _)| *id == node.shard_id) {
                Some((_, list)) => list.push(node),
                None => shards.push((node.shard_id, vec![node])),
            }
        }
        r.array(shards.len());
        for (_, nodes) in shards {
            r.map(2);
            r.bulk(b"slots");
            let primary = nodes
                .iter()
                .find(|n| !n.is_failed())
                .and_then(|n| self.top_primary(&n.name));
            let mine = primary
                .and_then(|p| ranges.get(&p.name))
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            r.array(mine.len() * 2);
            for &(start, end) in mine {
                r.int(i64::from(start));
                r.int(i64::from(end));
            }
            r.bulk(b"nodes");
            r.array(nodes.len());
            for node in nodes {
                self.write_shard_node(r, node, ctx);
            }
        }
    }

    /// One node of a shard (`addNodeDetailsToShardReply`).
    fn write_shard_node(&self, r: &mut Reply, node: &Node, ctx: &ReplyContext) {
        let plaintext_port = if ctx.tls_cluster {
            node.pport
        } else {
            node.port
        };
        let tls_port = if ctx.tls_cluster {
            node.port
        } else {
            node.pport
        };
        let offset = self.offset_of(node, ctx);
        let fields = 6
            + usize::from(plaintext_port != 0)
            + usize::from(tls_port != 0)
            + usize::from(!node.hostname.is_empty());
        r.map(fields);
        r.bulk(b"id");
        r.bulk(node.name.as_bytes());
        if plaintext_port != 0 {
            r.bulk(b"port");
            r.int(i64::from(plaintext_port));
        }
        if tls_port != 0 {
            r.bulk(b"tls-port");
            r.int(i64::from(tls_port));
        }
        r.bulk(b"ip");
        r.bulk(&node.ip);
        r.bulk(b"endpoint");
        r.bulk(preferred_endpoint(node, ctx.endpoint));
        if !node.hostname.is_empty() {
            r.bulk(b"hostname");
            r.bulk(&node.hostname);
        }
        r.bulk(b"role");
        r.bulk(if node.is_replica() {
            b"replica"
        } else {
            b"master"
        });
        r.bulk(b"replication-offset");
        r.int(offset);
        r.bulk(b"health");
        r.bulk(if node.is_failed() {
            b"fail".as_slice()
        } else if node.is_replica() && offset == 0 {
            b"loading"
        } else {
            b"online"
        });
    }
}

/// `getPreferredEndpoint`: SHARDS' `endpoint` field.
fn preferred_endpoint(node: &Node, endpoint: EndpointType) -> &[u8] {
    match endpoint {
        EndpointType::Ip => &node.ip,
        EndpointType::Hostname if node.hostname.is_empty() => b"?",
        EndpointType::Hostname => &node.hostname,
        EndpointType::UnknownEndpoint => b"",
    }
}

/// One node of a `CLUSTER SLOTS` entry (`addNodeToNodeReply`): endpoint,
/// port, id, and a map of the other known endpoints.
fn write_slots_node(r: &mut Reply, node: &Node, ctx: &ReplyContext) {
    r.array(4);
    match ctx.endpoint {
        EndpointType::Ip => r.bulk(&node.ip),
        EndpointType::Hostname if node.hostname.is_empty() => r.bulk(b"?"),
        EndpointType::Hostname => r.bulk(&node.hostname),
        EndpointType::UnknownEndpoint => r.null(),
    }
    // The port of the client's kind (`clusterNodeClientPort`).
    let use_pport = ctx.tls_cluster == ctx.plaintext_client && node.pport != 0;
    r.int(i64::from(if use_pport { node.pport } else { node.port }));
    r.bulk(node.name.as_bytes());
    let with_ip = ctx.endpoint != EndpointType::Ip;
    let with_hostname = ctx.endpoint != EndpointType::Hostname && !node.hostname.is_empty();
    r.map(usize::from(with_ip) + usize::from(with_hostname));
    if with_ip {
        r.bulk(b"ip");
        r.bulk(&node.ip);
    }
    if with_hostname {
        r.bulk(b"hostname");
        r.bulk(&node.hostname);
    }
}

/// The `CLUSTER SLOTS` reply as RESP bytes (for tests and callers outside
/// the crate that have no [`Reply`]).
pub fn slots_reply_bytes(state: &ClusterState, ctx: &ReplyContext, resp3: bool) -> Vec<u8> {
    let mut r = Reply::with_resp3(resp3);
    state.write_slots_reply(&mut r, ctx);
    r.buf
}

/// The `CLUSTER SHARDS` reply as RESP bytes.
pub fn shards_reply_bytes(state: &ClusterState, ctx: &ReplyContext, resp3: bool) -> Vec<u8> {
    let mut r = Reply::with_resp3(resp3);
    state.write_shards_reply(&mut r, ctx);
    r.buf
}

/// What the CLUSTER subcommands read and change beside the bus: a node's
/// slot count, myself renamed (CLUSTER RESET HARD's new name).
impl ClusterState {
    /// How many slots `name` serves (`node->numslots`).
    pub fn slot_count(&self, name: &NodeName) -> usize {
        self.node(name).map_or(0, |n| n.slots.count())
    }

    /// Gives myself a new name (CLUSTER RESET HARD), keeping its place.
    pub fn rename_myself(&mut self, new: NodeName) {
        let Some(old) = self.myself else {
            return;
        };
        self.rename_node(&old, new);
        if self.node(&new).is_some() {
            self.myself = Some(new);
        }
    }
}

#[cfg(test)]
mod slot_table_tests {
    use super::*;

    fn name(i: u32) -> NodeName {
        let mut n = [b'0'; 40];
        n[..8].copy_from_slice(format!("{i:08}").as_bytes());
        NodeName(n)
    }

    #[test]
    fn names_churn_and_the_table_keeps_each_slot_s_name() {
        let mut t = SlotTable::new();
        assert_eq!(t.get(5), None);
        // Slots handed from node to node, many more names than fit
        // before a compaction, with a model to compare with.
        let mut model: Vec<Option<NodeName>> = vec![None; SLOTS];
        for round in 0..2000u32 {
            let slot = ((round * 7919) % SLOTS as u32) as u16;
            let n = (round % 5 != 0).then(|| name(round));
            t.set(slot, n);
            model[usize::from(slot)] = n;
            if round % 97 == 0 {
                let old = name(round - round % 3);
                let new = (round % 2 == 0).then(|| name(100_000 + round));
                t.retarget(&old, new);
                for m in model.iter_mut() {
                    if *m == Some(old) {
                        *m = new;
                    }
                }
            }
        }
        for (s, m) in model.iter().enumerate() {
            assert_eq!(t.get(s as u16), m.as_ref(), "slot {s}");
        }
        assert_eq!(t.used, model.iter().flatten().count());
        assert!(t.names.len() < 4 * t.used.max(64), "{}", t.names.len());
        assert_eq!(t.get(SLOTS as u16), None);
    }
}
