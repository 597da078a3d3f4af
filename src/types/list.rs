//! The list value: a double-ended queue of byte strings.
//!
//! Redis 7.0 stores every list as a quicklist (a linked list of listpacks)
//! and `OBJECT ENCODING` says `quicklist` whatever the size, so one shape is
//! enough here: a `VecDeque` gives O(1) pushes and pops at both ends and
//! O(1) indexing, and boxed slices keep each element at its exact size. The
//! element byte count is kept alongside for `MEMORY USAGE`-style accounting.

use std::collections::VecDeque;

/// Which end of a list (Redis's `LIST_HEAD` / `LIST_TAIL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Left,
    Right,
}

impl End {
    /// `LEFT` / `RIGHT`, any case.
    pub fn parse(arg: &[u8]) -> Option<End> {
        if arg.eq_ignore_ascii_case(b"left") {
            Some(End::Left)
        } else if arg.eq_ignore_ascii_case(b"right") {
            Some(End::Right)
        } else {
            None
        }
    }

    pub fn push_event(self) -> &'static str {
        match self {
            End::Left => "lpush",
            End::Right => "rpush",
        }
    }

    pub fn pop_event(self) -> &'static str {
        match self {
            End::Left => "lpop",
            End::Right => "rpop",
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct List {
    items: VecDeque<Box<[u8]>>,
    bytes: usize,
}

impl List {
    pub fn new() -> List {
        List::default()
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn push(&mut self, end: End, elem: &[u8]) {
        self.bytes += elem.len();
        let elem: Box<[u8]> = elem.into();
        match end {
            End::Left => self.items.push_front(elem),
            End::Right => self.items.push_back(elem),
        }
    }

    pub fn pop(&mut self, end: End) -> Option<Box<[u8]>> {
        let e = match end {
            End::Left => self.items.pop_front(),
            End::Right => self.items.pop_back(),
        }?;
        self.bytes -= e.len();
        Some(e)
    }

    pub fn get(&self, i: usize) -> Option<&[u8]> {
        self.items.get(i).map(|e| &**e)
    }

    /// Replaces element `i`; false if out of range.
    pub fn set(&mut self, i: usize, elem: &[u8]) -> bool {
        let Some(slot) = self.items.get_mut(i) else {
            return false;
        };
        self.bytes = self.bytes - slot.len() + elem.len();
        *slot = elem.into();
        true
    }

    pub fn insert(&mut self, i: usize, elem: &[u8]) {
        self.bytes += elem.len();
        self.items.insert(i, elem.into());
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &[u8]> + ExactSizeIterator {
        self.items.iter().map(|e| &**e)
    }

    pub fn range(&self, start: usize, end_inclusive: usize) -> impl Iterator<Item = &[u8]> {
        self.items.range(start..=end_inclusive).map(|e| &**e)
    }

    /// Keeps only `[start, start + len)`.
    pub fn keep(&mut self, start: usize, len: usize) {
        for _ in 0..start.min(self.items.len()) {
            self.pop(End::Left);
        }
        while self.items.len() > len {
            self.pop(End::Right);
        }
    }

    /// Removes up to `limit` (0 = all) elements equal to `elem`, scanning
    /// from the head or (`from_tail`) the tail; returns how many went.
    pub fn remove(&mut self, elem: &[u8], limit: u64, from_tail: bool) -> u64 {
        let mut removed = 0u64;
        let n = self.items.len();
        let mut keep = vec![true; n];
        let order: Box<dyn Iterator<Item = usize>> = if from_tail {
            Box::new((0..n).rev())
        } else {
            Box::new(0..n)
        };
        for i in order {
            if limit != 0 && removed == limit {
                break;
            }
            if *self.items[i] == *elem {
                keep[i] = false;
                removed += 1;
            }
        }
        if removed > 0 {
            let mut i = 0;
            self.items.retain(|_| {
                i += 1;
                keep[i - 1]
            });
            self.bytes -= elem.len() * removed as usize;
        }
        removed
    }

    /// Approximate heap bytes held.
    pub fn mem_usage(&self) -> usize {
        self.bytes + self.items.capacity() * std::mem::size_of::<Box<[u8]>>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> List {
        let mut l = List::new();
        for i in items {
            l.push(End::Right, i.as_bytes());
        }
        l
    }

    fn items(l: &List) -> Vec<String> {
        l.iter()
            .map(|e| String::from_utf8_lossy(e).into_owned())
            .collect()
    }

    #[test]
    fn push_pop_both_ends() {
        let mut l = List::new();
        l.push(End::Left, b"b");
        l.push(End::Left, b"a");
        l.push(End::Right, b"c");
        assert_eq!(items(&l), ["a", "b", "c"]);
        assert_eq!(l.pop(End::Right).as_deref(), Some(&b"c"[..]));
        assert_eq!(l.pop(End::Left).as_deref(), Some(&b"a"[..]));
        assert!(l.mem_usage() >= 1);
    }

    #[test]
    fn remove_limits_and_direction() {
        let mut l = list(&["x", "a", "x", "b", "x"]);
        assert_eq!(l.remove(b"x", 2, true), 2);
        assert_eq!(items(&l), ["x", "a", "b"]);
        let mut l = list(&["x", "a", "x", "b", "x"]);
        assert_eq!(l.remove(b"x", 0, false), 3);
        assert_eq!(items(&l), ["a", "b"]);
        assert_eq!(l.bytes, 2);
    }

    #[test]
    fn keep_trims_both_sides() {
        let mut l = list(&["a", "b", "c", "d"]);
        l.keep(1, 2);
        assert_eq!(items(&l), ["b", "c"]);
        l.keep(5, 0);
        assert!(l.is_empty());
        assert_eq!(l.bytes, 0);
    }
}
