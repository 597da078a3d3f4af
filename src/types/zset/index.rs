//! Member -> node index for the skiplist encoding, sized for memory first.
//!
//! A general map would store (or point to) the member a second time; here a
//! slot is one `u32`: the id of the skiplist node holding the element in
//! the low `node_bits`, and a tag of the member's keyed hash in the bits
//! above. A lookup takes the slots whose tag matches and confirms each
//! candidate by scanning that one node for the member, which is where its
//! bytes live exactly once. So ZSCORE is O(1) (one probe run plus one node
//! scan) instead of a skiplist descent, and the skiplist reports every
//! element it moves between nodes (splits, merges) so slots can follow.
//!
//! The table is open addressing with linear probing over a non-power-of-two
//! slot count (so growth can be 1.4x instead of 2x, keeping the average
//! load near 70%). The home slot comes from hash bits the slot does not
//! keep, so the table cannot re-lay itself from its slots: the owner
//! rebuilds it from the list ([`MemberIndex::rebuild`]) when it must grow,
//! shrink or widen its node field, and says so in advance
//! ([`needs_rebuild`](MemberIndex::needs_rebuild)) since the list is busy
//! while it reports moves.
//!
//! Slots with equal (tag, node) are interchangeable even when their homes
//! differ, provided every update of "the slot of member m" takes the
//! *first* matching slot of m's probe run: if that is another member's slot
//! p, m's own slot lies further along the same run, so everything between
//! p's owner's home and m's slot is non-empty and p's owner still reaches
//! it. Updating or removing "one (tag, node) slot" is therefore always
//! correct without knowing which member a slot was created for. Empty and
//! deleted slots use node values no real node can have.

/// Rebuild when live + deleted slots exceed this fraction (per mille).
const MAX_LOAD_PM: usize = 850;
/// Load factor right after a rebuild (per mille).
const TARGET_LOAD_PM: usize = 600;
const MIN_CAP: usize = 16;
/// Never fewer node bits than this: small sets keep room for their slab
/// to grow without a rebuild, and tags stay filters, not identities.
const MIN_NODE_BITS: u32 = 8;
const EMPTY_SLOT: u32 = u32::MAX;

#[derive(Clone)]
pub(crate) struct MemberIndex {
    slots: Vec<u32>,
    len: usize,
    tombs: usize,
    /// Width of the node field; the tag takes the `32 - node_bits` bits
    /// above it.
    node_bits: u32,
}

impl Default for MemberIndex {
    fn default() -> Self {
        MemberIndex {
            slots: Vec::new(),
            len: 0,
            tombs: 0,
            node_bits: MIN_NODE_BITS,
        }
    }
}

impl MemberIndex {
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn mem_usage(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<u32>()
    }

    fn node_mask(&self) -> u32 {
        ((1u64 << self.node_bits) - 1) as u32
    }

    /// The node value of an empty slot (all ones, as is the whole slot).
    fn empty(&self) -> u32 {
        self.node_mask()
    }

    /// The node value (and whole slot) of a deleted slot.
    fn tomb(&self) -> u32 {
        self.node_mask() - 1
    }

    /// The highest node id a slot can hold.
    fn max_node(&self) -> u32 {
        self.node_mask() - 2
    }

    /// Tag bits of `hash` in slot position (node field zero).
    fn tag(&self, hash: u64) -> u32 {
        // The low 32 bits; the home slot is taken from the high ones.
        let t = u64::from(hash as u32) >> self.node_bits << self.node_bits;
        t as u32
    }

    fn home(&self, hash: u64) -> usize {
        // Multiply-shift maps the high half monotonically onto 0..cap.
        ((u128::from(hash >> 32) * self.slots.len() as u128) >> 32) as usize
    }

    /// Finds the first live slot of `hash`'s probe run with its tag whose
    /// node satisfies `verify`.
    pub(crate) fn find(&self, hash: u64, mut verify: impl FnMut(u32) -> bool) -> Option<usize> {
        let cap = self.slots.len();
        if cap == 0 {
            return None;
        }
        let (mask, empty, tomb) = (self.node_mask(), self.empty(), self.tomb());
        let tag = self.tag(hash);
        let mut i = self.home(hash);
        for _ in 0..cap {
            let s = self.slots[i];
            let node = s & mask;
            if node == empty {
                return None;
            }
            if s & !mask == tag && node != tomb && verify(node) {
                return Some(i);
            }
            i += 1;
            if i == cap {
                i = 0;
            }
        }
        None
    }

    /// Points one (hash tag, from) slot at node `to`.
    pub(crate) fn relocate(&mut self, hash: u64, from: u32, to: u32) {
        debug_assert!(to <= self.max_node());
        if let Some(i) = self.find(hash, |n| n == from) {
            self.slots[i] = self.tag(hash) | to;
        }
    }

    /// Whether adding `extra` entries, or a node id up to `max_node`,
    /// needs a [`rebuild`](Self::rebuild) first.
    pub(crate) fn needs_rebuild(&self, extra: usize, max_node: u64) -> bool {
        (self.len + self.tombs + extra) * 1000 > self.slots.len() * MAX_LOAD_PM
            || max_node > u64::from(self.max_node())
    }

    /// Whether the table is so sparse it should be rebuilt smaller.
    pub(crate) fn wants_shrink(&self) -> bool {
        self.slots.len() > MIN_CAP * 4 && self.len * 8 < self.slots.len()
    }

    /// Adds a slot for an element the caller knows to be unindexed, after
    /// making room with [`needs_rebuild`](Self::needs_rebuild).
    pub(crate) fn insert(&mut self, hash: u64, node: u32) {
        debug_assert!(node <= self.max_node());
        let cap = self.slots.len();
        if cap == 0 {
            return;
        }
        let (mask, empty, tomb) = (self.node_mask(), self.empty(), self.tomb());
        let mut i = self.home(hash);
        for _ in 0..cap {
            let b = self.slots[i] & mask;
            if b == empty || b == tomb {
                if b == tomb {
                    self.tombs -= 1;
                }
                self.slots[i] = self.tag(hash) | node;
                self.len += 1;
                return;
            }
            i += 1;
            if i == cap {
                i = 0;
            }
        }
    }

    pub(crate) fn remove_slot(&mut self, slot: usize) {
        let cap = self.slots.len();
        let (mask, tomb) = (self.node_mask(), self.tomb());
        self.len -= 1;
        // If the probe run ends right after this slot, no lookup can need to
        // pass through it (or through tombstones just before it), so they
        // can become truly empty instead of accumulating.
        if self.slots[(slot + 1) % cap] == EMPTY_SLOT {
            let mut i = slot;
            self.slots[i] = EMPTY_SLOT;
            loop {
                i = if i == 0 { cap - 1 } else { i - 1 };
                if self.slots[i] & mask != tomb {
                    break;
                }
                self.slots[i] = EMPTY_SLOT;
                self.tombs -= 1;
            }
        } else {
            self.slots[slot] = tomb;
            self.tombs += 1;
        }
    }

    /// Removes one (hash tag, node) slot.
    pub(crate) fn remove_exact(&mut self, hash: u64, node: u32) -> bool {
        match self.find(hash, |n| n == node) {
            Some(slot) => {
                self.remove_slot(slot);
                true
            }
            None => false,
        }
    }

    /// Re-lays the table for `want` live entries at the target load, with
    /// a node field wide enough for ids up to `max_node` (and twice that,
    /// so a growing slab widens it only at doublings). `fill` is given the
    /// insertion function and must call it with (hash, node) of every
    /// element.
    pub(crate) fn rebuild(
        &mut self,
        want: usize,
        max_node: u64,
        fill: impl FnOnce(&mut dyn FnMut(u64, u32)),
    ) {
        let cap = (want * 1000 / TARGET_LOAD_PM).max(MIN_CAP);
        // Room for the two sentinels above the largest id.
        let need = (max_node + 3) * 2;
        self.node_bits = (64 - need.leading_zeros()).clamp(MIN_NODE_BITS, 32);
        self.slots = Vec::new();
        self.slots.resize(cap, EMPTY_SLOT);
        self.len = 0;
        self.tombs = 0;
        fill(&mut |hash, node| self.insert(hash, node));
    }

    /// Multiset of (tag of `hash`, node) the index should hold, for
    /// invariant checks against [`entries`](Self::entries).
    #[cfg(test)]
    pub(crate) fn entry_of(&self, hash: u64, node: u32) -> (u32, u32) {
        (self.tag(hash), node)
    }

    /// Multiset of (tag, node) for invariant checks.
    #[cfg(test)]
    pub(crate) fn entries(&self) -> Vec<(u32, u32)> {
        let (mask, empty, tomb) = (self.node_mask(), self.empty(), self.tomb());
        self.slots
            .iter()
            .filter(|&&s| s & mask != empty && s & mask != tomb)
            .map(|&s| (s & !mask, s & mask))
            .collect()
    }

    #[cfg(test)]
    pub(crate) fn check_invariants(&self) -> Result<(), String> {
        let (mask, tomb) = (self.node_mask(), self.tomb());
        let live = self.entries().len();
        let tombs = self.slots.iter().filter(|&&s| s & mask == tomb).count();
        if live != self.len || tombs != self.tombs {
            return Err(format!(
                "index counts: live {live}/{} tombs {tombs}/{}",
                self.len, self.tombs
            ));
        }
        if self.slots.iter().any(|&s| s & mask == tomb && s != tomb) {
            return Err("index tomb with a tag".into());
        }
        if self
            .slots
            .iter()
            .any(|&s| s & mask == self.empty() && s != EMPTY_SLOT)
        {
            return Err("index empty slot with a tag".into());
        }
        if !self.slots.is_empty() && !self.slots.contains(&EMPTY_SLOT) {
            return Err("index has no empty slot".into());
        }
        Ok(())
    }
}
