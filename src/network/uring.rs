//! Client sockets served through io_uring (`io-uring yes`), beside tokio.
//!
//! With `threads 1` every connection task runs on one thread, and so does
//! this driver: one ring per process, kept in a thread-local, touched only
//! between awaits. It exists to cut the syscalls per request:
//! - each connection keeps one multishot receive armed on its socket; the
//!   kernel picks a buffer from a ring of provided buffers for each arrival
//!   and posts a completion, which the driver copies into the connection's
//!   pending input, handing the buffer straight back. No syscall per read.
//! - a write hands the reply buffer itself to the ring as one send entry.
//! - nothing is submitted as it is queued: tokio's park hook ([`on_park`])
//!   submits every queued entry with one `io_uring_enter` just before the
//!   thread would sleep, so one syscall carries every connection's sends of
//!   that loop iteration, then reaps completions, so woken connections run
//!   at once instead of after an `epoll_wait`.
//! - the ring's descriptor sits in tokio's epoll set, so a sleeping thread
//!   wakes for completions as it does for timers and cross-thread wakeups.
//!
//! Timers, channels, signals and everything else stay tokio's; connection
//! logic is shared with the epoll path ([`super::socket::Socket`]).
//!
//! Memory the kernel may read or write — the provided buffers, their ring,
//! a send in flight — is never freed while it might: the driver is leaked
//! (it lives as long as the process), and a send's buffer stays in its
//! connection's slot until its completion arrives, even when the
//! connection is gone.

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};
use std::task::{Context, Poll, Waker};

use bytes::BytesMut;
use io_uring::{IoUring, cqueue, opcode, squeue, types};

use crate::clients::WriteProgress;

/// Submission queue entries; completions get twice as many.
const ENTRIES: u32 = 1024;
/// Provided buffers (a power of two) and their size: 2 MB in all, touched
/// only as data arrives. One completion fills at most one buffer.
const BUF_COUNT: u16 = 256;
const BUF_SIZE: usize = 8 * 1024;
/// Buffers offered to the kernel at first; the offer doubles each time
/// the kernel runs out, up to `BUF_COUNT`, and halves back towards this
/// each second it did not.
const BUF_OFFER_MIN: u16 = 16;
const BUF_GROUP: u16 = 0;
/// Received bytes a connection may have waiting before its receive is
/// cancelled (re-armed once it reads): a client that sends without reading
/// replies is held back by TCP, as on the epoll path, not by our memory.
const INPUT_PAUSE: usize = 256 * 1024;

/// Registered-file slots: a connection whose slot index is below this
/// names its socket by that index, sparing the kernel a descriptor lookup
/// and reference count on every receive and send.
const FIXED_FILES: u32 = 4096;

/// Sends remembered between parks for `Driver::mark_stalled_sends`.
const QUEUED_SENDS_MAX: usize = 4096;

/// What an entry was for, in the low bits of its user data.
const RECV: u64 = 0;
const SEND: u64 = 1;
const CANCEL: u64 = 2;

fn user_data(idx: u32, generation: u32, kind: u64) -> u64 {
    (u64::from(generation) << 32) | (u64::from(idx) << 2) | kind
}

/// The kernel's `struct io_uring_buf`: one entry of the provided-buffer
/// ring. The first entry's `resv` is the ring's tail.
#[repr(C)]
struct BufEntry {
    addr: u64,
    len: u32,
    bid: u16,
    resv: u16,
}

/// The most buffers worth offering with `conns` connections open: one each
/// (a loop turn's receives) and, for bursts, as many as one connection may
/// hold pending (`INPUT_PAUSE`), whose receive is cancelled beyond that.
///
/// A multishot receive moves everything a socket holds into offered
/// buffers, so what the offer allows is what a burst makes resident and
/// leaves resident (the kernel keeps offered buffers until data comes):
/// uncapped, one client pipelining 100k ZADDs in 2,000-request batches
/// left 1 MB of the pool resident on an idle server. Beyond the cap the
/// kernel answers `ENOBUFS`, the receive is re-armed once its connection
/// has read, and the bytes wait in the socket as they do on epoll.
fn offer_cap(conns: usize) -> u16 {
    let burst = INPUT_PAUSE / BUF_SIZE;
    u16::try_from(conns.saturating_add(burst)).map_or(BUF_COUNT, |n| n.min(BUF_COUNT))
}

/// The provided buffers and the ring that offers them to the kernel.
///
/// The kernel takes offered buffers in ring order, so offering all of them
/// would cycle every receive through the whole pool and make all 2 MB
/// resident under any load. Only `offer` are offered at a time instead,
/// refilled from `idle` most recently used first: a server's resident pool
/// is what its receives have actually needed at once. After a burst, the
/// cron's [`trim_buffers`] lowers the offer again and hands the pages of
/// buffers left idle back to the kernel.
struct Buffers {
    /// `BUF_COUNT` entries, page-aligned, never freed.
    entries: *mut BufEntry,
    /// `BUF_COUNT * BUF_SIZE` bytes, never freed.
    data: *mut u8,
    tail: u16,
    /// Buffers not offered, the last given back on top.
    idle: Vec<u16>,
    /// Offered and not yet consumed by a completion.
    offered: u16,
    /// How many to keep offered.
    offer: u16,
    /// Whether the kernel ran out since the last trim.
    starved: bool,
    /// Per buffer, whether its pages may be resident (it was offered since
    /// they were last handed back).
    resident: [u64; BUF_COUNT as usize / 64],
}

/// `len` bytes of zeroed, page-aligned memory mapped for the life of the
/// process.
///
/// Mapped directly rather than taken from the allocator: the pool is fixed
/// I/O memory shared with the kernel, like a socket's buffers, not data.
/// Allocated, its 2 MB counted in `used_memory` and so against `maxmemory`:
/// the io_uring path held 2 MB less data under a limit than the epoll path.
fn map_zeroed(len: usize) -> io::Result<*mut u8> {
    // SAFETY: an anonymous private mapping of `len` (> 0) bytes at an
    // address of the kernel's choosing touches no existing memory.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(p.cast::<u8>())
}

impl Buffers {
    fn new() -> io::Result<Buffers> {
        let entries = map_zeroed(usize::from(BUF_COUNT) * 16)?.cast::<BufEntry>();
        let data = map_zeroed(usize::from(BUF_COUNT) * BUF_SIZE)?;
        let mut bufs = Buffers {
            entries,
            data,
            tail: 0,
            idle: (0..BUF_COUNT).rev().collect(),
            offered: 0,
            offer: BUF_OFFER_MIN,
            starved: false,
            resident: [0; BUF_COUNT as usize / 64],
        };
        bufs.refill();
        Ok(bufs)
    }

    /// Takes back buffer `bid`, which a completion consumed.
    fn give(&mut self, bid: u16) {
        self.offered = self.offered.saturating_sub(1);
        self.idle.push(bid);
        self.refill();
    }

    /// The kernel found no buffer offered (`ENOBUFS`) with `conns`
    /// connections open: offer twice as many, up to [`offer_cap`].
    fn ran_out(&mut self, conns: usize) {
        self.starved = true;
        self.offer = self.offer.saturating_mul(2).min(offer_cap(conns));
        self.refill();
    }

    /// Once a second: halves the offer unless the kernel ran out since the
    /// last call, and drops the pages of the idle buffers that will not be
    /// offered next (the least recently used). Buffers already offered
    /// beyond a lowered offer come back as they are used and stay idle.
    fn trim(&mut self) {
        if !std::mem::take(&mut self.starved) {
            self.offer = (self.offer / 2).max(BUF_OFFER_MIN);
        }
        let cold = self.idle.len().saturating_sub(usize::from(self.offer));
        for &bid in &self.idle[..cold] {
            let (word, bit) = (usize::from(bid) / 64, 1u64 << (bid % 64));
            if self.resident[word] & bit == 0 {
                continue;
            }
            self.resident[word] &= !bit;
            // SAFETY: an idle buffer is not in the ring, so neither the
            // kernel nor any slice from `filled` (whose borrow ended when
            // the buffer was given back) refers to it; on a private
            // anonymous mapping, MADV_DONTNEED only makes its pages read
            // as zeros again when next touched.
            unsafe {
                libc::madvise(
                    self.data.add(usize::from(bid) * BUF_SIZE).cast(),
                    BUF_SIZE,
                    libc::MADV_DONTNEED,
                );
            }
        }
    }

    /// Offers idle buffers until `offer` are.
    fn refill(&mut self) {
        while self.offered < self.offer {
            let Some(bid) = self.idle.pop() else {
                return;
            };
            self.offered += 1;
            self.publish(bid);
        }
    }

    /// Puts buffer `bid` at the ring's tail.
    fn publish(&mut self, bid: u16) {
        self.resident[usize::from(bid) / 64] |= 1 << (bid % 64);
        let slot = usize::from(self.tail & (BUF_COUNT - 1));
        // SAFETY: `slot` < BUF_COUNT, inside the allocation. The kernel
        // reads entries between its head and our tail only, and this one
        // is at the tail, not yet published; `resv` (the tail itself, in
        // entry 0) is left alone. `bid` < BUF_COUNT, so the address is
        // inside `data`.
        unsafe {
            let e = self.entries.add(slot);
            std::ptr::addr_of_mut!((*e).addr)
                .write(self.data.add(usize::from(bid) * BUF_SIZE) as u64);
            std::ptr::addr_of_mut!((*e).len).write(BUF_SIZE as u32);
            std::ptr::addr_of_mut!((*e).bid).write(bid);
        }
        self.tail = self.tail.wrapping_add(1);
        // SAFETY: entry 0's `resv` is aligned for a u16 and lives forever;
        // the kernel only reads it, and the release store publishes the
        // entry written above before the new tail.
        unsafe {
            AtomicU16::from_ptr(std::ptr::addr_of_mut!((*self.entries).resv))
                .store(self.tail, Ordering::Release);
        }
    }

    /// The first `len` bytes of buffer `bid`, which a completion has just
    /// handed to us: the kernel does not touch it until it is given back.
    fn filled(&self, bid: u16, len: usize) -> &[u8] {
        let bid = usize::from(bid % BUF_COUNT);
        // SAFETY: inside `data`; see above for why nothing writes it now.
        unsafe { std::slice::from_raw_parts(self.data.add(bid * BUF_SIZE), len.min(BUF_SIZE)) }
    }
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum Recv {
    Idle,
    Armed,
    Cancelling,
}

/// One connection's socket as the driver sees it.
struct Conn {
    socket: OwnedFd,
    fd: RawFd,
    /// The socket sits in the ring's file table at the slot's index.
    fixed: bool,
    /// Received and not yet read by the connection task.
    input: BytesMut,
    eof: bool,
    error: Option<i32>,
    recv: Recv,
    reader: Option<Waker>,
    /// The send in flight (its buffer and how much of it has gone), or
    /// finished and not yet collected.
    send: Option<Vec<u8>>,
    sent: usize,
    sending: bool,
    /// The connection asked the send to stop where it is (a pause to run
    /// what the client sent: see `Socket::write_all_reading`): what
    /// completes is not sent on.
    pausing: bool,
    send_error: Option<i32>,
    writer: Option<Waker>,
    /// The connection's [`WriteProgress`]: how much of the send has gone,
    /// and whether it is still in flight after the submit that carried it
    /// (the socket is full): see `Socket::write_all_reading`.
    progress: Option<Arc<WriteProgress>>,
    /// The connection task let go; the slot is freed once no entry of its
    /// own is left in the ring.
    dropped: bool,
}

struct Slot {
    generation: u32,
    conn: Option<Conn>,
}

struct Driver {
    ring: IoUring,
    bufs: Buffers,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Completions copied out of the ring before they are handled (the
    /// handling queues entries, which needs the ring again).
    reaped: Vec<(u64, i32, u32)>,
    wake: Vec<Waker>,
    /// Sends queued since the last park: any of them still in flight once
    /// that park's submit and reap are done waits on its peer.
    queued_sends: Vec<(u32, u32)>,
    /// Size of the registered file table (0: none, descriptors are used).
    fixed_files: u32,
}

thread_local! {
    static DRIVER: Cell<Option<&'static RefCell<Driver>>> = const { Cell::new(None) };
}

fn driver() -> Option<&'static RefCell<Driver>> {
    DRIVER.with(Cell::get)
}

/// True when this thread serves connections through io_uring.
pub(crate) fn active() -> bool {
    driver().is_some()
}

/// Sets up the ring on this thread, which must be the current-thread
/// runtime's: an error (no io_uring in this kernel, disabled by
/// `kernel.io_uring_disabled`, refused by a seccomp filter) leaves
/// connections on epoll.
pub(crate) fn start() -> io::Result<()> {
    if active() {
        return Ok(());
    }
    let ring = IoUring::builder()
        .setup_cqsize(ENTRIES * 2)
        .setup_single_issuer()
        // A completion arriving while this thread runs waits for its next
        // kernel entry (the park's submit) instead of interrupting it with
        // an IPI; the TASKRUN flag tells the park that work is waiting.
        .setup_coop_taskrun()
        .setup_taskrun_flag()
        .build(ENTRIES)?;
    if !ring.params().is_feature_nodrop() {
        return Err(io::Error::other("kernel too old (no IORING_FEAT_NODROP)"));
    }
    let mut probe = io_uring::Probe::new();
    ring.submitter().register_probe(&mut probe)?;
    for code in [opcode::RecvMulti::CODE, opcode::Send::CODE] {
        if !probe.is_supported(code) {
            return Err(io::Error::other("kernel too old (no multishot receive)"));
        }
    }
    let bufs = Buffers::new()?;
    // SAFETY: the ring of entries is page-aligned, BUF_COUNT entries long
    // and never freed (see `Buffers`).
    unsafe {
        ring.submitter().register_buf_ring_with_flags(
            bufs.entries as u64,
            BUF_COUNT,
            BUF_GROUP,
            0,
        )?;
    }
    // Without a file table (a kernel or limit refusing one) entries name
    // descriptors, which works the same, a little slower.
    // The kernel refuses a table larger than the descriptor limit.
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid, writable rlimit; the call only writes it.
    let nofile = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        u32::try_from(limit.rlim_cur).unwrap_or(u32::MAX)
    } else {
        0
    };
    let table = FIXED_FILES.min(nofile);
    let fixed_files = match ring.submitter().register_files_sparse(table) {
        Ok(()) => table,
        Err(e) => {
            tracing::debug!("io_uring: no registered file table: {e}");
            0
        }
    };
    let fd = ring.as_raw_fd();
    // SAFETY: the ring's descriptor stays open for the life of the process
    // (the driver holding the ring is leaked below, never dropped).
    let afd = unsafe {
        tokio::io::unix::AsyncFd::register_with_interest(RingFd(fd), tokio::io::Interest::READABLE)
    }?;
    let driver: &'static RefCell<Driver> = Box::leak(Box::new(RefCell::new(Driver {
        ring,
        bufs,
        slots: Vec::new(),
        free: Vec::new(),
        reaped: Vec::new(),
        wake: Vec::new(),
        queued_sends: Vec::new(),
        fixed_files,
    })));
    DRIVER.with(|d| d.set(Some(driver)));
    tokio::spawn(async move {
        loop {
            let Ok(mut ready) = afd.readable().await else {
                return;
            };
            reap();
            ready.clear_ready();
        }
    });
    Ok(())
}

/// The ring's descriptor, for tokio's epoll set (the ring lives forever).
struct RingFd(RawFd);

impl AsRawFd for RingFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

/// tokio's park hook: submits what this loop iteration queued, then
/// reaps, so connections whose data or send completed run before the
/// thread sleeps.
pub fn on_park() {
    let Some(d) = driver() else { return };
    let mut wake = {
        let mut d = d.borrow_mut();
        d.submit();
        d.reap();
        d.mark_stalled_sends();
        std::mem::take(&mut d.wake)
    };
    for w in wake.drain(..) {
        w.wake();
    }
    d.borrow_mut().wake = wake;
}

/// The cron's once-a-second call: gives back the receive buffers' pages
/// that recent traffic has not needed (see [`Buffers::trim`]). Nothing on
/// a thread that does not serve through io_uring.
pub(crate) fn trim_buffers() {
    if let Some(d) = driver() {
        d.borrow_mut().bufs.trim();
    }
}

/// Handles the completions the ring holds (the reaper task, on epoll's
/// word that there are some).
fn reap() {
    let Some(d) = driver() else { return };
    let mut wake = {
        let mut d = d.borrow_mut();
        d.reap();
        std::mem::take(&mut d.wake)
    };
    for w in wake.drain(..) {
        w.wake();
    }
    d.borrow_mut().wake = wake;
}

impl Driver {
    /// Flags the connections whose sends this park submitted and that did
    /// not complete at once: the kernel waits for their peers to read.
    fn mark_stalled_sends(&mut self) {
        let mut queued = std::mem::take(&mut self.queued_sends);
        for (idx, generation) in queued.drain(..) {
            if let Some(c) = self.conn(idx, generation)
                && c.sending
                && let Some(progress) = &c.progress
            {
                progress.stalled.store(true, Ordering::Relaxed);
            }
        }
        self.queued_sends = queued;
    }

    /// Enters the kernel when there is something to submit or completion
    /// work waiting to run (cooperative task running defers it to here).
    fn submit(&mut self) {
        let pending = {
            let sq = self.ring.submission();
            !sq.is_empty() || sq.taskrun()
        };
        if pending && let Err(e) = self.ring.submit() {
            tracing::debug!("io_uring submit: {e}");
        }
    }

    /// Queues `entry`, submitting first when the queue is full.
    fn push(&mut self, entry: &squeue::Entry) -> io::Result<()> {
        for _ in 0..2 {
            // SAFETY: every buffer an entry points at outlives it: the
            // provided buffers are never freed, a send's buffer stays in
            // its slot until its completion, and a cancel carries none.
            if unsafe { self.ring.submission().push(entry) }.is_ok() {
                return Ok(());
            }
            self.ring.submit()?;
        }
        Err(io::Error::other("io_uring submission queue full"))
    }

    fn conn(&mut self, idx: u32, generation: u32) -> Option<&mut Conn> {
        let slot = self.slots.get_mut(idx as usize)?;
        if slot.generation != generation {
            return None;
        }
        slot.conn.as_mut()
    }

    fn arm_recv(&mut self, idx: u32, generation: u32) {
        let Some(c) = self.conn(idx, generation) else {
            return;
        };
        let entry = if c.fixed {
            opcode::RecvMulti::new(types::Fixed(idx), BUF_GROUP).build()
        } else {
            opcode::RecvMulti::new(types::Fd(c.fd), BUF_GROUP).build()
        }
        .user_data(user_data(idx, generation, RECV));
        match self.push(&entry) {
            Ok(()) => {
                if let Some(c) = self.conn(idx, generation) {
                    c.recv = Recv::Armed;
                }
            }
            Err(e) => {
                if let Some(c) = self.conn(idx, generation) {
                    c.error = Some(e.raw_os_error().unwrap_or(libc::EIO));
                    if let Some(w) = c.reader.take() {
                        self.wake.push(w);
                    }
                }
            }
        }
    }

    fn cancel(&mut self, idx: u32, generation: u32, kind: u64) {
        let entry = opcode::AsyncCancel::new(user_data(idx, generation, kind))
            .build()
            .flags(squeue::Flags::SKIP_SUCCESS)
            .user_data(user_data(idx, generation, CANCEL));
        // A cancel that cannot be queued leaves the operation to end by
        // itself (the peer closing, keepalive): nothing is freed early.
        let _ = self.push(&entry);
    }

    fn push_send(&mut self, idx: u32, generation: u32) -> io::Result<()> {
        let Some(c) = self.conn(idx, generation) else {
            return Err(io::ErrorKind::NotConnected.into());
        };
        let buf = c.send.as_ref().map_or(&[][..], |b| &b[c.sent..]);
        let len = u32::try_from(buf.len()).unwrap_or(u32::MAX);
        // No MSG_WAITALL: each completion says exactly what the socket
        // took, and a send that waits for room has taken nothing, so one
        // cancelled to pause it (`UringSocket::write_all_reading`) leaves
        // no doubt where the bytes stopped. A partial one is sent on below.
        let entry = if c.fixed {
            opcode::Send::new(types::Fixed(idx), buf.as_ptr(), len)
                .flags(libc::MSG_NOSIGNAL)
                .build()
        } else {
            opcode::Send::new(types::Fd(c.fd), buf.as_ptr(), len)
                .flags(libc::MSG_NOSIGNAL)
                .build()
        }
        .user_data(user_data(idx, generation, SEND));
        c.sending = true;
        // Bounded for a loop that runs long without parking; a send left
        // out is only flagged late.
        if self.queued_sends.len() < QUEUED_SENDS_MAX {
            self.queued_sends.push((idx, generation));
        }
        let pushed = self.push(&entry);
        if pushed.is_err()
            && let Some(c) = self.conn(idx, generation)
        {
            c.sending = false;
        }
        pushed
    }

    fn reap(&mut self) {
        let mut reaped = std::mem::take(&mut self.reaped);
        loop {
            reaped.extend(
                self.ring
                    .completion()
                    .map(|c| (c.user_data(), c.result(), c.flags())),
            );
            if reaped.is_empty() {
                break;
            }
            for &(ud, res, flags) in &reaped {
                self.complete(ud, res, flags);
            }
            reaped.clear();
        }
        self.reaped = reaped;
    }

    fn complete(&mut self, ud: u64, res: i32, flags: u32) {
        let idx = ((ud & 0xffff_ffff) >> 2) as u32;
        let generation = (ud >> 32) as u32;
        match ud & 3 {
            RECV => self.complete_recv(idx, generation, res, flags),
            SEND => self.complete_send(idx, generation, res),
            _ => {}
        }
        self.release_if_done(idx, generation);
    }

    fn complete_recv(&mut self, idx: u32, generation: u32, res: i32, flags: u32) {
        let more = cqueue::more(flags);
        let bid = cqueue::buffer_select(flags);
        let Some(c) = self
            .slots
            .get_mut(idx as usize)
            .filter(|s| s.generation == generation)
            .and_then(|s| s.conn.as_mut())
        else {
            if let Some(bid) = bid {
                self.bufs.give(bid);
            }
            return;
        };
        if let Some(bid) = bid {
            if res > 0 {
                // Pending input waits in the thread's reusable query buffer
                // (see `socket::take_query_buffer`), which the connection
                // takes over when it reads.
                if c.input.capacity() == 0 {
                    c.input = super::socket::take_query_buffer();
                }
                c.input
                    .extend_from_slice(self.bufs.filled(bid, res as usize));
            }
            self.bufs.give(bid);
        }
        let mut rearm = false;
        let starved = res == -libc::ENOBUFS;
        if res == 0 {
            c.eof = true;
        } else if res < 0 && !starved && res != -libc::ECANCELED {
            c.error = Some(-res);
        }
        if !more {
            // A receive that ended by itself (out of buffers, say) starts
            // again unless the socket is done or we stopped it.
            let was = c.recv;
            c.recv = Recv::Idle;
            rearm = was == Recv::Armed
                && !c.eof
                && c.error.is_none()
                && !c.dropped
                && c.input.len() <= INPUT_PAUSE;
        } else if c.recv == Recv::Armed && c.input.len() > INPUT_PAUSE {
            c.recv = Recv::Cancelling;
            self.cancel(idx, generation, RECV);
        }
        if starved {
            let conns = self.slots.len().saturating_sub(self.free.len());
            self.bufs.ran_out(conns);
        }
        let Some(c) = self.conn(idx, generation) else {
            return;
        };
        if let Some(w) = c.reader.take() {
            self.wake.push(w);
        }
        if rearm {
            self.arm_recv(idx, generation);
        }
    }

    fn complete_send(&mut self, idx: u32, generation: u32, res: i32) {
        let Some(c) = self.conn(idx, generation) else {
            return;
        };
        c.sending = false;
        if res == -libc::ECANCELED && c.pausing {
            // Paused before the socket took anything more.
        } else if res < 0 {
            c.send_error = Some(-res);
        } else {
            c.sent += res as usize;
            if let Some(progress) = &c.progress {
                progress.sent.store(c.sent, Ordering::Relaxed);
            }
            let len = c.send.as_ref().map_or(0, Vec::len);
            if c.sent < len && !c.dropped && !c.pausing {
                if let Err(e) = self.push_send(idx, generation)
                    && let Some(c) = self.conn(idx, generation)
                {
                    c.send_error = Some(e.raw_os_error().unwrap_or(libc::EIO));
                } else {
                    return;
                }
            }
        }
        if let Some(c) = self.conn(idx, generation)
            && let Some(w) = c.writer.take()
        {
            self.wake.push(w);
        }
    }

    /// Frees a dropped connection's slot (closing its socket) once the
    /// ring holds nothing of its.
    fn release_if_done(&mut self, idx: u32, generation: u32) {
        let Some(slot) = self.slots.get_mut(idx as usize) else {
            return;
        };
        let done = slot.generation == generation
            && slot
                .conn
                .as_ref()
                .is_some_and(|c| c.dropped && c.recv == Recv::Idle && !c.sending);
        if done {
            // Out of the file table before the socket closes (nothing of
            // its is in flight, so nothing still uses the entry).
            if slot.conn.as_ref().is_some_and(|c| c.fixed) {
                let _ = self.ring.submitter().register_files_update(idx, &[-1]);
            }
            slot.conn = None;
            slot.generation = slot.generation.wrapping_add(1);
            self.free.push(idx);
        }
    }
}

/// A connection's socket on the ring. Dropping it cancels what it has in
/// flight; the socket closes once the ring lets go of it.
pub(crate) struct UringSocket {
    idx: u32,
    generation: u32,
}

fn gone() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "io_uring driver not running")
}

impl UringSocket {
    /// Takes over an accepted socket and arms its receive.
    pub(crate) fn new(socket: OwnedFd) -> io::Result<UringSocket> {
        let d = driver().ok_or_else(gone)?;
        // Blocking mode: io_uring then waits for room or data itself
        // instead of completing with EAGAIN.
        socket2::SockRef::from(&socket).set_nonblocking(false)?;
        let fd = socket.as_raw_fd();
        let mut d = d.borrow_mut();
        let idx = match d.free.pop() {
            Some(idx) => idx,
            None => {
                d.slots.push(Slot {
                    generation: 0,
                    conn: None,
                });
                (d.slots.len() - 1) as u32
            }
        };
        let fixed =
            idx < d.fixed_files && d.ring.submitter().register_files_update(idx, &[fd]).is_ok();
        let conn = Conn {
            socket,
            fd,
            fixed,
            input: BytesMut::new(),
            eof: false,
            error: None,
            recv: Recv::Idle,
            reader: None,
            send: None,
            sent: 0,
            sending: false,
            pausing: false,
            send_error: None,
            writer: None,
            progress: None,
            dropped: false,
        };
        let slot = &mut d.slots[idx as usize];
        slot.conn = Some(conn);
        let generation = slot.generation;
        d.arm_recv(idx, generation);
        Ok(UringSocket { idx, generation })
    }

    /// Appends what has arrived to `rbuf`, waiting for something if
    /// nothing has; 0 at end of stream. Cancel-safe: nothing is lost when
    /// the future is dropped.
    pub(crate) async fn read(&mut self, rbuf: &mut BytesMut) -> io::Result<usize> {
        poll_fn(|cx| self.poll_read(cx, rbuf)).await
    }

    fn poll_read(&mut self, cx: &mut Context<'_>, rbuf: &mut BytesMut) -> Poll<io::Result<usize>> {
        let (idx, generation) = (self.idx, self.generation);
        let d = driver().ok_or_else(gone)?;
        let mut d = d.borrow_mut();
        let Some(c) = d.conn(idx, generation) else {
            return Poll::Ready(Err(gone()));
        };
        let rearm = !c.eof && c.error.is_none() && c.recv == Recv::Idle;
        if !c.input.is_empty() {
            let n = c.input.len();
            if rbuf.is_empty() {
                // The usual case: hand the bytes over without copying.
                std::mem::swap(rbuf, &mut c.input);
            } else {
                // A big request's buffer grows by doubling here too: past
                // 1 MB the copy each doubling left goes back at once, as
                // `socket::make_room` hands it back on the epoll path.
                let before = rbuf.capacity();
                rbuf.extend_from_slice(&c.input);
                c.input.clear();
                if before >= 1 << 20 && rbuf.capacity() != before {
                    crate::alloc::release_free_memory();
                }
            }
            // What is left of the input's buffer (the connection's empty
            // one after a swap) is the thread's to reuse: an idle
            // connection holds none.
            if c.input.capacity() != 0 {
                super::socket::give_query_buffer(std::mem::take(&mut c.input));
            }
            if rearm {
                d.arm_recv(idx, generation);
            }
            return Poll::Ready(Ok(n));
        }
        if let Some(errno) = c.error {
            return Poll::Ready(Err(io::Error::from_raw_os_error(errno)));
        }
        if c.eof {
            return Poll::Ready(Ok(0));
        }
        if !c.reader.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            c.reader = Some(cx.waker().clone());
        }
        if rearm {
            d.arm_recv(idx, generation);
        }
        Poll::Pending
    }

    /// Sends `buf` from `sent` to its end, which the ring holds meanwhile
    /// and gives back (empty if the future is dropped first: the send goes
    /// on, and its buffer is freed when it completes). Meanwhile what
    /// arrives is read into `rbuf` (see `Socket::write_all_reading`): the
    /// receive stays armed beside the send, and its input is taken as
    /// `read` takes it, so nothing is lost if this future is dropped. A
    /// pause cancels the send waiting for room and collects it: `sent`
    /// says where it stopped.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn write_all_reading(
        &mut self,
        buf: &mut Vec<u8>,
        sent: &mut usize,
        progress: &Arc<WriteProgress>,
        started: impl FnOnce(),
        rbuf: &mut BytesMut,
        mut reading: bool,
        mut on_read: impl FnMut(&BytesMut, usize) -> super::socket::AfterRead,
    ) -> io::Result<super::socket::Wrote> {
        use super::socket::{AfterRead, Wrote};
        // A send left by a dropped write finishes first.
        poll_fn(|cx| self.poll_sent(cx).map_ok(drop)).await?;
        // Queued before anything another task queues after `started`, so
        // the loop's next submit sends it first.
        let queued = self.start_send(std::mem::take(buf), *sent, progress);
        started();
        queued?;
        let mut ended = false;
        let mut paused = false;
        loop {
            let step = poll_fn(|cx| {
                if let Poll::Ready(sent) = self.poll_sent(cx) {
                    return Poll::Ready(Ok(sent));
                }
                if !reading || paused {
                    return Poll::Pending;
                }
                self.poll_read(cx, rbuf).map(Err)
            })
            .await;
            match step {
                Ok(done) => {
                    let (back, at) = done?;
                    *buf = back;
                    *sent = at;
                    return Ok(if *sent < buf.len() {
                        Wrote::Paused
                    } else if ended {
                        Wrote::InputEnded
                    } else {
                        Wrote::All
                    });
                }
                Err(Ok(n)) if n > 0 => match on_read(rbuf, n) {
                    AfterRead::Write => {}
                    AfterRead::Stop => return Ok(Wrote::Stopped),
                    AfterRead::Pause => {
                        paused = true;
                        self.pause_send();
                    }
                },
                Err(_) => {
                    reading = false;
                    ended = true;
                }
            }
        }
    }

    /// Stops the send in flight where it is: a part in flight completes
    /// and is not sent on; one waiting for room is cancelled.
    fn pause_send(&mut self) {
        let Some(d) = driver() else { return };
        let mut d = d.borrow_mut();
        let (idx, generation) = (self.idx, self.generation);
        let Some(c) = d.conn(idx, generation) else {
            return;
        };
        c.pausing = true;
        if c.sending {
            d.cancel(idx, generation, SEND);
        }
    }

    fn start_send(
        &mut self,
        buf: Vec<u8>,
        from: usize,
        progress: &Arc<WriteProgress>,
    ) -> io::Result<()> {
        let d = driver().ok_or_else(gone)?;
        let mut d = d.borrow_mut();
        let c = d.conn(self.idx, self.generation).ok_or_else(gone)?;
        c.pausing = false;
        c.sent = from;
        if from >= buf.len() {
            c.send = Some(buf);
            return Ok(());
        }
        if !c
            .progress
            .as_ref()
            .is_some_and(|p| Arc::ptr_eq(p, progress))
        {
            c.progress = Some(Arc::clone(progress));
        }
        c.send = Some(buf);
        d.push_send(self.idx, self.generation)
    }

    /// Ready when no send is in flight, with the finished send's buffer
    /// (cleared of nothing: the caller clears it) and how much of it went.
    fn poll_sent(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<(Vec<u8>, usize)>> {
        let d = driver().ok_or_else(gone)?;
        let mut d = d.borrow_mut();
        let Some(c) = d.conn(self.idx, self.generation) else {
            return Poll::Ready(Err(gone()));
        };
        if c.sending {
            if !c.writer.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                c.writer = Some(cx.waker().clone());
            }
            return Poll::Pending;
        }
        if let Some(errno) = c.send_error {
            return Poll::Ready(Err(io::Error::from_raw_os_error(errno)));
        }
        Poll::Ready(Ok((c.send.take().unwrap_or_default(), c.sent)))
    }

    /// Ends the write side (the peer reads end of stream), as the epoll
    /// path's `shutdown`.
    pub(crate) fn shutdown(&mut self) {
        let Some(d) = driver() else { return };
        let mut d = d.borrow_mut();
        if let Some(c) = d.conn(self.idx, self.generation) {
            let _ = socket2::SockRef::from(&c.socket).shutdown(std::net::Shutdown::Write);
        }
    }
}

impl Drop for UringSocket {
    fn drop(&mut self) {
        let Some(d) = driver() else { return };
        let mut d = d.borrow_mut();
        let (idx, generation) = (self.idx, self.generation);
        let Some(c) = d.conn(idx, generation) else {
            return;
        };
        c.dropped = true;
        c.reader = None;
        c.writer = None;
        let (recv, sending) = (c.recv, c.sending);
        if recv == Recv::Armed {
            c.recv = Recv::Cancelling;
            d.cancel(idx, generation, RECV);
        }
        if sending {
            d.cancel(idx, generation, SEND);
        }
        d.release_if_done(idx, generation);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stands in for the kernel: takes the buffer at the ring's head, as a
    /// receive would, and hands it back as a completion's processing does.
    fn consume(b: &mut Buffers, head: &mut u16) -> u16 {
        let slot = usize::from(*head & (BUF_COUNT - 1));
        // SAFETY: `slot` < BUF_COUNT, inside the entries mapping.
        let bid = unsafe { (*b.entries.add(slot)).bid };
        *head = head.wrapping_add(1);
        b.give(bid);
        bid
    }

    fn resident(b: &Buffers) -> u32 {
        b.resident.iter().map(|w| w.count_ones()).sum()
    }

    #[test]
    fn receives_cycle_through_only_the_buffers_they_need() {
        let mut b = Buffers::new().expect("mmap");
        let mut head = 0u16;
        assert_eq!((b.offered, b.offer), (BUF_OFFER_MIN, BUF_OFFER_MIN));
        // A steady trickle reuses the same few buffers, however long.
        let mut used = std::collections::BTreeSet::new();
        for _ in 0..10_000 {
            used.insert(consume(&mut b, &mut head));
        }
        assert_eq!(used.len(), usize::from(BUF_OFFER_MIN));
        assert_eq!(b.offered, BUF_OFFER_MIN);
        // Running out doubles the offer, up to the pool.
        for _ in 0..10 {
            b.ran_out(1000);
        }
        assert_eq!((b.offered, b.offer), (BUF_COUNT, BUF_COUNT));
        assert!(b.idle.is_empty());
        for _ in 0..1000 {
            consume(&mut b, &mut head);
        }
        assert_eq!(resident(&b), u32::from(BUF_COUNT));
        // What a receive would leave in each buffer.
        for bid in 0..usize::from(BUF_COUNT) {
            // SAFETY: inside `data`; no slice of it is alive.
            unsafe { b.data.add(bid * BUF_SIZE).write_bytes(0xab, BUF_SIZE) };
        }
        // Quiet seconds halve the offer; as the offered buffers come back
        // only the new offer is offered again, and the rest are dropped.
        let mut quiet_second = |b: &mut Buffers| {
            b.trim();
            for _ in 0..BUF_COUNT {
                consume(b, &mut head);
            }
        };
        for _ in 0..8 {
            quiet_second(&mut b);
        }
        assert_eq!((b.offered, b.offer), (BUF_OFFER_MIN, BUF_OFFER_MIN));
        b.trim();
        assert_eq!(resident(&b), 2 * u32::from(BUF_OFFER_MIN));
        // The dropped buffers' pages are gone (they read as zeros); the
        // ones still in use kept their bytes.
        let zeroed = (0..BUF_COUNT)
            .filter(|&bid| b.filled(bid, BUF_SIZE).iter().all(|&x| x == 0))
            .count();
        assert_eq!(
            zeroed,
            usize::from(BUF_COUNT) - 2 * usize::from(BUF_OFFER_MIN)
        );
        // A second that ran out keeps its offer.
        b.ran_out(1000);
        b.trim();
        assert_eq!(b.offer, 2 * BUF_OFFER_MIN);
    }

    #[test]
    fn a_burst_on_few_connections_is_offered_what_they_may_hold() {
        let burst = INPUT_PAUSE / BUF_SIZE;
        let mut b = Buffers::new().expect("mmap");
        let mut head = 0u16;
        // One client pipelining: the offer stops where its receive would be
        // cancelled anyway, however often the kernel runs out.
        for _ in 0..10 {
            b.ran_out(1);
            for _ in 0..BUF_COUNT {
                consume(&mut b, &mut head);
            }
        }
        assert_eq!(usize::from(b.offer), burst + 1);
        assert!(resident(&b) as usize <= 2 * (burst + 1));
        // Many connections may use the whole pool.
        for _ in 0..10 {
            b.ran_out(usize::from(BUF_COUNT));
        }
        assert_eq!(b.offer, BUF_COUNT);
        assert_eq!(offer_cap(0), burst as u16);
        assert_eq!(offer_cap(usize::MAX), BUF_COUNT);
    }
}
