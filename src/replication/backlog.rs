//! The replication backlog: the tail of the replication stream, addressed
//! by offset, from which a replica that reconnects continues (`+CONTINUE`)
//! and from which every attached replica's writer takes its bytes.
//!
//! Redis 7.0 keeps one shared buffer of blocks that the backlog and every
//! replica's output reference, trimmed from the front once no replica
//! still needs a block and the rest is at least `repl-backlog-size`. This
//! is the same: the stream is a deque of frozen 16 KB chunks plus a
//! growing tail; readers get cheap `Bytes` clones; [`Backlog::trim`]
//! keeps whatever the slowest replica has not taken (the caller cuts off a
//! replica whose lag passes its output buffer limit).

use std::collections::VecDeque;

use bytes::{Bytes, BytesMut};

/// Bytes per frozen chunk.
pub(crate) const CHUNK: usize = 16 * 1024;

pub(crate) struct Backlog {
    /// Frozen chunks, oldest first, each with the offset of its first byte.
    chunks: VecDeque<(u64, Bytes)>,
    /// The chunk being filled (starts at `tail_start`).
    tail: BytesMut,
    tail_start: u64,
    /// Offset of the first byte held (Redis's
    /// `repl_backlog_first_byte_offset`); offsets count from 1.
    first: u64,
}

impl Backlog {
    /// An empty backlog whose next byte is offset `next` (Redis creates it
    /// at `master_repl_offset + 1`).
    pub(crate) fn new(next: u64) -> Backlog {
        Backlog {
            chunks: VecDeque::new(),
            tail: BytesMut::new(),
            tail_start: next,
            first: next,
        }
    }

    /// Offset of the first byte held.
    pub(crate) fn first(&self) -> u64 {
        self.first
    }

    /// Offset the next byte appended will have.
    pub(crate) fn next(&self) -> u64 {
        self.tail_start + self.tail.len() as u64
    }

    /// Bytes held (Redis's `repl_backlog_histlen`).
    pub(crate) fn histlen(&self) -> u64 {
        self.next() - self.first
    }

    pub(crate) fn append(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.tail.capacity() == 0 {
                self.tail.reserve(CHUNK);
            }
            let room = CHUNK.saturating_sub(self.tail.len()).max(1);
            let n = room.min(bytes.len());
            self.tail.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
            if self.tail.len() >= CHUNK {
                let start = self.tail_start;
                let frozen = std::mem::take(&mut self.tail).freeze();
                self.tail_start += frozen.len() as u64;
                self.chunks.push_back((start, frozen));
            }
        }
    }

    /// Whether offset `from` can be served (from the first byte held up to
    /// the next one, which means "nothing to send yet").
    pub(crate) fn covers(&self, from: u64) -> bool {
        from >= self.first && from <= self.next()
    }

    /// Up to `max` bytes starting at offset `from`, copied onto the end of
    /// `out` (one copy, into a buffer its caller keeps); none when `from`
    /// is the next offset or is not held.
    pub(crate) fn read_into(&self, from: u64, max: usize, out: &mut Vec<u8>) -> usize {
        if !self.covers(from) {
            return 0;
        }
        let mut taken = 0;
        let mut at = from;
        let idx = self
            .chunks
            .partition_point(|(s, c)| s + c.len() as u64 <= at);
        for (start, chunk) in self.chunks.iter().skip(idx) {
            if taken >= max {
                return taken;
            }
            let skip = (at - start) as usize;
            let n = (chunk.len() - skip).min(max - taken);
            out.extend_from_slice(&chunk[skip..skip + n]);
            taken += n;
            at += n as u64;
        }
        if taken < max && at >= self.tail_start {
            let skip = (at - self.tail_start) as usize;
            let n = (self.tail.len() - skip).min(max - taken);
            out.extend_from_slice(&self.tail[skip..skip + n]);
            taken += n;
        }
        taken
    }

    /// Whether [`Backlog::trim`] to `size` could drop a chunk (if no
    /// replica needs it): the front chunk's end is `size` or more behind
    /// the next byte. Cheap, so a write looks at the replicas' offsets
    /// only once per chunk it fills past the size.
    pub(crate) fn may_trim(&self, size: u64) -> bool {
        self.chunks
            .front()
            .is_some_and(|(start, chunk)| self.next() - (start + chunk.len() as u64) >= size)
    }

    /// Drops whole chunks from the front while what stays is at least
    /// `size` bytes and nothing before `keep_from` (the oldest offset an
    /// attached replica still needs) goes.
    pub(crate) fn trim(&mut self, size: u64, keep_from: u64) {
        while let Some((start, chunk)) = self.chunks.front() {
            let end = start + chunk.len() as u64;
            if self.next() - end < size || end > keep_from {
                break;
            }
            self.chunks.pop_front();
            self.first = end;
        }
        // A partly dropped first chunk still counts from its start: Redis
        // too serves only from the first byte its first block holds.
        if let Some((start, _)) = self.chunks.front() {
            self.first = self.first.max(*start);
        } else {
            self.first = self.first.max(self.tail_start);
        }
    }

    /// Moves every offset by `delta` (a primary restarting from an RDB
    /// that recorded its offset: Redis's `rebaseReplicationBuffer`).
    pub(crate) fn rebase(&mut self, delta: u64) {
        for (start, _) in self.chunks.iter_mut() {
            *start += delta;
        }
        self.tail_start += delta;
        self.first += delta;
    }

    /// The bytes held by the chunks and the deque that lists them (for
    /// INFO's memory figures and eviction, as Redis counts its blocks'
    /// list nodes in `repl_buffer_mem`).
    pub(crate) fn memory(&self) -> usize {
        self.chunks.len() * CHUNK
            + self.tail.capacity()
            + self.chunks.capacity() * size_of::<(u64, Bytes)>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(b: &Backlog, from: u64, max: usize) -> Vec<u8> {
        let mut flat = Vec::new();
        b.read_into(from, max, &mut flat);
        flat
    }

    #[test]
    fn reads_any_offset_across_chunks() {
        let mut b = Backlog::new(1);
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        for part in data.chunks(777) {
            b.append(part);
        }
        assert_eq!(b.first(), 1);
        assert_eq!(b.next(), 100_001);
        assert_eq!(b.histlen(), 100_000);
        for from in [1u64, 2, 16_384, 16_385, 16_386, 50_000, 99_999, 100_000] {
            let got = collect(&b, from, usize::MAX);
            assert_eq!(got, &data[(from - 1) as usize..], "from {from}");
        }
        assert_eq!(collect(&b, 100_001, 10), b"");
        assert_eq!(collect(&b, 20_000, 10), &data[19_999..20_009]);
        assert!(!b.covers(0) && !b.covers(100_002));
    }

    #[test]
    fn trim_keeps_the_size_and_what_replicas_need() {
        let mut b = Backlog::new(1001);
        b.append(&vec![7u8; 5 * CHUNK + 10]);
        // A replica still needs offset 1001: nothing goes.
        b.trim(CHUNK as u64, 1001);
        assert_eq!(b.first(), 1001);
        assert!(b.may_trim(CHUNK as u64 + 5));
        assert!(!b.may_trim(5 * CHUNK as u64 + 11));
        // Nobody needs anything: whole chunks go while the rest is >= size.
        b.trim(CHUNK as u64 + 5, u64::MAX);
        assert!(!b.may_trim(CHUNK as u64 + 5));
        assert!(b.histlen() >= CHUNK as u64 + 5);
        assert!(b.histlen() < 2 * CHUNK as u64 + 10 + 1);
        let first = b.first();
        assert_eq!(collect(&b, first, usize::MAX).len() as u64, b.histlen());
        assert!(!b.covers(1001));
    }
}
