//! The crash report: on SIGSEGV, SIGBUS, SIGFPE, SIGILL or SIGABRT the
//! server writes Redis's bug report to its log — the signal, the faulting
//! address, who sent it, and a stack trace — then dies of the same signal
//! (so a core is dumped where enabled), as Redis's `sigsegvHandler`.
//! Operators and Redis's tests look for its lines (`crashed by signal`,
//! `STACK TRACE`). `crash-log-enabled no` leaves the signals to their
//! default action.
//!
//! The handler only formats into a stack buffer and calls `write(2)` and
//! glibc's `backtrace`/`backtrace_symbols_fd` (warmed at install, so the
//! unwinder library is not loaded inside the handler), as Redis's does.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, Ordering::Relaxed};

/// Where the report goes: the log file's descriptor, or stderr.
static LOG_FD: AtomicI32 = AtomicI32::new(2);
/// `crash-log-enabled`.
static ENABLED: AtomicBool = AtomicBool::new(true);
/// The report's START line is written once, whichever thread crashes.
static STARTED: AtomicBool = AtomicBool::new(false);
/// `use-exit-on-panic` (see [`set_exit_on_panic`]).
static EXIT_ON_PANIC: AtomicBool = AtomicBool::new(false);
/// The report's CURRENT CLIENT INFO section, formatted before the crash by
/// the command that causes it (see [`set_current_client`]); null if none.
static CURRENT_CLIENT: AtomicPtr<Vec<u8>> = AtomicPtr::new(std::ptr::null_mut());
/// `hide-user-data-from-log` as it was when the section was formatted.
static HIDE_USER_DATA: AtomicBool = AtomicBool::new(false);

const SIGNALS: [libc::c_int; 5] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGFPE,
    libc::SIGILL,
    libc::SIGABRT,
];

/// Installs the handler; the report is written to `log_fd` (stderr: 2).
pub fn install(log_fd: RawFd, enabled: bool) {
    LOG_FD.store(log_fd, Relaxed);
    // glibc loads its unwinder on the first backtrace: do it now, not in
    // a signal handler.
    let mut warm = [std::ptr::null_mut(); 2];
    unsafe { libc::backtrace(warm.as_mut_ptr(), 2) };
    set_enabled(enabled);
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default(info);
        if EXIT_ON_PANIC.load(Relaxed) {
            guru_meditation(info);
            std::process::exit(1);
        }
    }));
}

/// Redis's hidden `use-exit-on-panic`. By default a panic ends only the
/// task or thread it happened on (the connection whose command hit a
/// bug), and the server lives on with everyone else's data. With it set, a
/// panic is what Redis's `serverPanic` / `serverAssert` are under that
/// setting: Redis's report in the log, then `exit(1)`, so the tests that
/// feed corrupt payloads see any internal failure as the process's end.
pub fn set_exit_on_panic(on: bool) {
    EXIT_ON_PANIC.store(on, Relaxed);
}

/// `_serverPanic`'s lines for a panic, as Redis writes them.
fn guru_meditation(info: &std::panic::PanicHookInfo<'_>) {
    let fd = LOG_FD.load(Relaxed);
    let what = info
        .payload()
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| info.payload().downcast_ref::<String>().map(String::as_str))
        .unwrap_or("panic");
    let (file, line) = info.location().map_or(("?", 0), |l| (l.file(), l.line()));
    write_raw(fd, b"------------------------------------------------\n");
    log(
        fd,
        format_args!("!!! Software Failure. Press left mouse button to continue"),
    );
    log(fd, format_args!("Guru Meditation: {what} #{file}:{line}"));
}

/// `crash-log-enabled`: the handler on or the signals' default actions.
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Relaxed);
    for sig in SIGNALS {
        // SAFETY: a zeroed sigaction is valid; the handler is a plain
        // extern "C" function of the SA_SIGINFO shape.
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            libc::sigemptyset(&mut act.sa_mask);
            if on {
                act.sa_sigaction = handler as *const () as usize;
                act.sa_flags = libc::SA_SIGINFO | libc::SA_NODEFER | libc::SA_RESETHAND;
            } else {
                act.sa_sigaction = libc::SIG_DFL;
            }
            libc::sigaction(sig, &act, std::ptr::null_mut());
        }
    }
}

/// A line formatted on the stack (no allocation in a signal handler).
struct Line {
    buf: [u8; 256],
    len: usize,
}

impl Line {
    fn new() -> Line {
        Line {
            buf: [0; 256],
            len: 0,
        }
    }
}

impl std::fmt::Write for Line {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let n = s.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

fn write_raw(fd: RawFd, bytes: &[u8]) {
    // SAFETY: writing a valid buffer; a failed write is ignored (there is
    // nowhere else to report it).
    unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
}

/// One log line, in the log's prefix style (`pid:M # text`).
fn log(fd: RawFd, args: std::fmt::Arguments<'_>) {
    use std::fmt::Write;
    let mut line = Line::new();
    let _ = write!(line, "{}:M # ", std::process::id());
    let _ = line.write_fmt(args);
    let _ = line.write_str("\n");
    write_raw(fd, &line.buf[..line.len]);
}

extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    let fd = LOG_FD.load(Relaxed);
    if !STARTED.swap(true, Relaxed) {
        write_raw(
            fd,
            b"\n\n=== REDIS BUG REPORT START: Cut & paste starting from here ===\n",
        );
    }
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let (code, addr, pid, uid) = unsafe {
        match info.as_ref() {
            Some(i) => (i.si_code, i.si_addr(), i.si_pid(), i.si_uid()),
            None => (0, std::ptr::null_mut(), -1, 0),
        }
    };
    log(
        fd,
        format_args!(
            "Redis {} crashed by signal: {sig}, si_code: {code}",
            crate::version::REDIS_VERSION
        ),
    );
    if sig == libc::SIGSEGV || sig == libc::SIGBUS {
        log(fd, format_args!("Accessing address: {addr:p}"));
    }
    if code == libc::SI_USER && pid != -1 {
        log(fd, format_args!("Killed by PID: {pid}, UID: {uid}"));
    }
    write_raw(fd, b"\n------ STACK TRACE ------\n\nBacktrace:\n");
    let mut trace = [std::ptr::null_mut(); 64];
    // SAFETY: glibc's backtrace into a stack array, then its symbols
    // written straight to the descriptor (no malloc).
    unsafe {
        let n = libc::backtrace(trace.as_mut_ptr(), trace.len() as libc::c_int);
        libc::backtrace_symbols_fd(trace.as_ptr(), n, fd);
    }
    // SAFETY: the pointer is null or a leaked Vec never freed.
    if let Some(text) = unsafe { CURRENT_CLIENT.load(Relaxed).as_ref() } {
        write_raw(fd, b"\n------ CURRENT CLIENT INFO ------\n");
        write_raw(fd, text);
    }
    if HIDE_USER_DATA.load(Relaxed) {
        write_raw(fd, b"\n------ REGISTERS ------\n");
        log(
            fd,
            format_args!(
                "hide-user-data-from-log is on, skip logging stack content to avoid spilling PII."
            ),
        );
    }
    write_raw(
        fd,
        b"\n=== REDIS BUG REPORT END. Make sure to include from START to END. ===\n\n       \
          Please report the crash to zwindow's maintainers, with the report above.\n\n",
    );
    // Die of the same signal: SA_RESETHAND put the default action back.
    // SAFETY: raising a signal in a handler is async-signal-safe.
    unsafe { libc::raise(sig) };
}

/// The client whose command is about to crash the server (DEBUG SEGFAULT):
/// its CLIENT INFO line and its arguments, as Redis's crash report shows
/// the current client. With `hide` (`hide-user-data-from-log`) only the
/// arguments `shown` allows (the command's name, its subcommand's, its
/// keywords) are written, the rest `*redacted*`, and the stack's content
/// is said to be skipped, as Redis does.
pub(crate) fn set_current_client(
    info: &str,
    argv: &[&[u8]],
    shown: impl Fn(usize, &[u8]) -> bool,
    hide: bool,
) {
    let mut text = format!("{info}\nargc: '{}'\n", argv.len()).into_bytes();
    for (j, a) in argv.iter().enumerate() {
        if hide && !shown(j, a) {
            text.extend_from_slice(format!("argv[{j}]: '*redacted*'\n").as_bytes());
            continue;
        }
        text.extend_from_slice(format!("argv[{j}]: '").as_bytes());
        // sdscatrepr of at most 1024 bytes.
        crate::util::repr_into(&mut text, &a[..a.len().min(1024)]);
        text.extend_from_slice(b"'\n");
    }
    HIDE_USER_DATA.store(hide, Relaxed);
    let old = CURRENT_CLIENT.swap(Box::into_raw(Box::new(text)), Relaxed);
    if !old.is_null() {
        // SAFETY: made by Box::into_raw above; the handler only reads
        // the pointer it loads, and a second DEBUG SEGFAULT cannot follow
        // the first's crash.
        drop(unsafe { Box::from_raw(old) });
    }
}

/// `DEBUG SEGFAULT`: a real invalid write (to a read-only page), as
/// Redis's, so the report is the one a real crash writes.
pub(crate) fn segfault() -> ! {
    // SAFETY: mapping one read-only page and writing to it faults; the
    // handler (or the default action) ends the process.
    unsafe {
        let page = libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        std::ptr::write_volatile(page.cast::<u8>(), 1);
        libc::abort()
    }
}
