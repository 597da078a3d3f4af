//! Member -> node index for the skiplist encoding, sized for memory first.
//!
//! A general map would store (or point to) the member a second time; here a
//! slot is only 8 bytes: a 32-bit fragment of the member's keyed hash and
//! the id of the skiplist node holding the element. A lookup takes the
//! slots whose fragment matches and confirms each candidate by scanning
//! that one node for the member, which is where its bytes live exactly
//! once. So ZSCORE is O(1) (one probe run plus one node scan) instead of a
//! skiplist descent, and the skiplist reports every element it moves
//! between nodes (splits, merges) so slots can follow.
//!
//! The table is open addressing with linear probing over a non-power-of-two
//! slot count (so growth can be 1.4x instead of 2x, keeping the average
//! load near 70%). The home slot is derived from the fragment alone, which
//! makes slots with equal (fragment, node) interchangeable: they share a
//! probe sequence and any of them confirms for either member. Updating or
//! removing "one (f, n) slot" is therefore always correct, with no need to
//! know which member a slot was created for. Empty and deleted slots use
//! node ids no real node can have.

const EMPTY: u32 = u32::MAX;
const TOMB: u32 = u32::MAX - 1;
/// Rebuild when live + deleted slots exceed this fraction (per mille).
const MAX_LOAD_PM: usize = 850;
/// Load factor right after a rebuild (per mille).
const TARGET_LOAD_PM: usize = 600;
const MIN_CAP: usize = 16;

#[derive(Clone, Copy)]
struct Slot {
    frag: u32,
    node: u32,
}

impl Slot {
    const EMPTY: Slot = Slot {
        frag: 0,
        node: EMPTY,
    };
}

#[derive(Clone, Default)]
pub struct MemberIndex {
    slots: Vec<Slot>,
    len: usize,
    tombs: usize,
}

impl MemberIndex {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn mem_usage(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Slot>()
    }

    fn home(&self, frag: u32) -> usize {
        // Multiply-shift maps the fragment monotonically onto 0..cap.
        ((u128::from(frag) * self.slots.len() as u128) >> 32) as usize
    }

    /// Finds a live slot with `frag` whose node satisfies `verify`.
    pub fn find(&self, frag: u32, mut verify: impl FnMut(u32) -> bool) -> Option<usize> {
        let cap = self.slots.len();
        if cap == 0 {
            return None;
        }
        let mut i = self.home(frag);
        for _ in 0..cap {
            let s = self.slots[i];
            if s.node == EMPTY {
                return None;
            }
            if s.node != TOMB && s.frag == frag && verify(s.node) {
                return Some(i);
            }
            i += 1;
            if i == cap {
                i = 0;
            }
        }
        None
    }

    /// Points one (frag, from) slot at node `to`.
    pub fn relocate(&mut self, frag: u32, from: u32, to: u32) {
        if let Some(i) = self.find(frag, |n| n == from) {
            self.slots[i].node = to;
        }
    }

    /// Adds a slot for an element the caller knows to be unindexed.
    pub fn insert(&mut self, frag: u32, node: u32) {
        let cap = self.slots.len();
        if (self.len + self.tombs + 1) * 1000 > cap * MAX_LOAD_PM {
            self.rebuild(self.len + 1);
        }
        let cap = self.slots.len();
        let mut i = self.home(frag);
        for _ in 0..cap {
            let b = self.slots[i].node;
            if b == EMPTY || b == TOMB {
                if b == TOMB {
                    self.tombs -= 1;
                }
                self.slots[i] = Slot { frag, node };
                self.len += 1;
                return;
            }
            i += 1;
            if i == cap {
                i = 0;
            }
        }
    }

    pub fn remove_slot(&mut self, slot: usize) {
        let cap = self.slots.len();
        self.len -= 1;
        // If the probe run ends right after this slot, no lookup can need to
        // pass through it (or through tombstones just before it), so they
        // can become truly empty instead of accumulating.
        if self.slots[(slot + 1) % cap].node == EMPTY {
            let mut i = slot;
            self.slots[i] = Slot::EMPTY;
            loop {
                i = if i == 0 { cap - 1 } else { i - 1 };
                if self.slots[i].node != TOMB {
                    break;
                }
                self.slots[i] = Slot::EMPTY;
                self.tombs -= 1;
            }
        } else {
            self.slots[slot] = Slot {
                frag: 0,
                node: TOMB,
            };
            self.tombs += 1;
        }
        if cap > MIN_CAP * 4 && self.len * 8 < cap {
            self.rebuild(self.len);
        }
    }

    /// Removes one (frag, node) slot.
    pub fn remove_exact(&mut self, frag: u32, node: u32) -> bool {
        match self.find(frag, |n| n == node) {
            Some(slot) => {
                self.remove_slot(slot);
                true
            }
            None => false,
        }
    }

    /// Re-lays the table for `want` live entries at the target load.
    fn rebuild(&mut self, want: usize) {
        let cap = (want * 1000 / TARGET_LOAD_PM).max(MIN_CAP);
        let old = std::mem::replace(&mut self.slots, vec![Slot::EMPTY; cap]);
        self.len = 0;
        self.tombs = 0;
        for s in old {
            if s.node != EMPTY && s.node != TOMB {
                self.insert(s.frag, s.node);
            }
        }
    }

    /// Multiset of (fragment, node) for invariant checks.
    pub fn entries(&self) -> Vec<(u32, u32)> {
        self.slots
            .iter()
            .filter(|s| s.node != EMPTY && s.node != TOMB)
            .map(|s| (s.frag, s.node))
            .collect()
    }

    pub fn check_invariants(&self) -> Result<(), String> {
        let live = self.entries().len();
        let tombs = self.slots.iter().filter(|s| s.node == TOMB).count();
        if live != self.len || tombs != self.tombs {
            return Err(format!(
                "index counts: live {live}/{} tombs {tombs}/{}",
                self.len, self.tombs
            ));
        }
        if !self.slots.is_empty() && !self.slots.iter().any(|s| s.node == EMPTY) {
            return Err("index has no empty slot".into());
        }
        for (i, s) in self.slots.iter().enumerate() {
            if s.node == EMPTY || s.node == TOMB {
                continue;
            }
            // Every slot between home and i must be non-empty.
            let mut j = self.home(s.frag);
            while j != i {
                if self.slots[j].node == EMPTY {
                    return Err("index slot unreachable from home".into());
                }
                j = (j + 1) % self.slots.len();
            }
        }
        Ok(())
    }
}
