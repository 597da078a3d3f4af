//! Member -> score index for the skiplist encoding, sized for memory first.
//!
//! A general map would store (or point to) the member a second time; here a
//! slot is only 12 bytes: the score and a 32-bit fragment of the member's
//! keyed hash. A lookup collects slots whose fragment matches and lets the
//! caller confirm each candidate score by searching (score, member) in the
//! skiplist, which is where the member bytes live exactly once.
//!
//! The table is open addressing with linear probing over a non-power-of-two
//! slot count (so growth can be 1.4x instead of 2x, keeping the average
//! load near 70%). The home slot is derived from the fragment alone, which
//! matters for deletion: two slots with the same fragment and the same score
//! bits share a probe sequence, so they are interchangeable and removing
//! "either" is always correct without consulting the skiplist. Empty and
//! deleted slots are NaN bit patterns, which never occur as scores.

const EMPTY: u64 = 0x7ff8_0000_0000_0001;
const TOMB: u64 = 0x7ff8_0000_0000_0002;
/// Rebuild when live + deleted slots exceed this fraction (per mille).
const MAX_LOAD_PM: usize = 850;
/// Load factor right after a rebuild (per mille).
const TARGET_LOAD_PM: usize = 600;
const MIN_CAP: usize = 16;

/// Score bits split in two u32 halves so a slot is 12 bytes with 4-byte
/// alignment instead of 16 with 8-byte alignment.
#[derive(Clone, Copy)]
struct Slot {
    lo: u32,
    hi: u32,
    frag: u32,
}

impl Slot {
    const EMPTY: Slot = Slot::new(EMPTY, 0);

    const fn new(bits: u64, frag: u32) -> Slot {
        Slot {
            lo: bits as u32,
            hi: (bits >> 32) as u32,
            frag,
        }
    }

    fn bits(self) -> u64 {
        (u64::from(self.hi) << 32) | u64::from(self.lo)
    }
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

    /// Finds a live slot with `frag` whose score satisfies `verify`.
    pub fn find(&self, frag: u32, mut verify: impl FnMut(f64) -> bool) -> Option<usize> {
        let cap = self.slots.len();
        if cap == 0 {
            return None;
        }
        let mut i = self.home(frag);
        for _ in 0..cap {
            let s = self.slots[i];
            let bits = s.bits();
            if bits == EMPTY {
                return None;
            }
            if bits != TOMB && s.frag == frag && verify(f64::from_bits(bits)) {
                return Some(i);
            }
            i += 1;
            if i == cap {
                i = 0;
            }
        }
        None
    }

    pub fn score_at(&self, slot: usize) -> f64 {
        f64::from_bits(self.slots[slot].bits())
    }

    pub fn set_score(&mut self, slot: usize, score: f64) {
        let frag = self.slots[slot].frag;
        self.slots[slot] = Slot::new(score.to_bits(), frag);
    }

    /// Inserts an entry the caller knows to be absent.
    pub fn insert(&mut self, frag: u32, score: f64) {
        let cap = self.slots.len();
        if (self.len + self.tombs + 1) * 1000 > cap * MAX_LOAD_PM {
            self.rebuild(self.len + 1);
        }
        let cap = self.slots.len();
        let mut i = self.home(frag);
        for _ in 0..cap {
            let b = self.slots[i].bits();
            if b == EMPTY || b == TOMB {
                if b == TOMB {
                    self.tombs -= 1;
                }
                self.slots[i] = Slot::new(score.to_bits(), frag);
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
        if self.slots[(slot + 1) % cap].bits() == EMPTY {
            let mut i = slot;
            self.slots[i] = Slot::EMPTY;
            loop {
                i = if i == 0 { cap - 1 } else { i - 1 };
                if self.slots[i].bits() != TOMB {
                    break;
                }
                self.slots[i] = Slot::EMPTY;
                self.tombs -= 1;
            }
        } else {
            self.slots[slot] = Slot::new(TOMB, 0);
            self.tombs += 1;
        }
        if cap > MIN_CAP * 4 && self.len * 8 < cap {
            self.rebuild(self.len);
        }
    }

    /// Removes one entry with exactly this fragment and score bits.
    pub fn remove_exact(&mut self, frag: u32, score: f64) -> bool {
        let bits = score.to_bits();
        match self.find(frag, |s| s.to_bits() == bits) {
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
            let b = s.bits();
            if b != EMPTY && b != TOMB {
                self.insert(s.frag, f64::from_bits(b));
            }
        }
    }

    /// Multiset of (fragment, score bits) for invariant checks.
    pub fn entries(&self) -> Vec<(u32, u64)> {
        self.slots
            .iter()
            .filter(|s| s.bits() != EMPTY && s.bits() != TOMB)
            .map(|s| (s.frag, s.bits()))
            .collect()
    }

    pub fn check_invariants(&self) -> Result<(), String> {
        let live = self.entries().len();
        let tombs = self.slots.iter().filter(|s| s.bits() == TOMB).count();
        if live != self.len || tombs != self.tombs {
            return Err(format!(
                "index counts: live {live}/{} tombs {tombs}/{}",
                self.len, self.tombs
            ));
        }
        if !self.slots.is_empty() && !self.slots.iter().any(|s| s.bits() == EMPTY) {
            return Err("index has no empty slot".into());
        }
        for (i, s) in self.slots.iter().enumerate() {
            let b = s.bits();
            if b == EMPTY || b == TOMB {
                continue;
            }
            // Every slot between home and i must be non-empty.
            let mut j = self.home(s.frag);
            while j != i {
                if self.slots[j].bits() == EMPTY {
                    return Err("index slot unreachable from home".into());
                }
                j = (j + 1) % self.slots.len();
            }
        }
        Ok(())
    }
}
