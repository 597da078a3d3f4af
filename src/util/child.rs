//! The child process of a background save or AOF rewrite.
//!
//! Redis forks a child that writes the file and exits; the parent learns
//! the outcome from the child's exit status (`checkChildrenDone`): a child
//! killed by a signal other than `SIGUSR1` is a failed job, `SIGUSR1` is
//! how the server itself stops one without an error. Tools and Redis's
//! own tests use this: they find the child with `pgrep -P <server pid>`
//! and `kill -9` it to make a rewrite fail.
//!
//! zwindow cannot run its serializer in a forked copy of a multi-threaded
//! process (see [`crate::keyspace::snapshot`]), so the work is split: the
//! snapshot is serialized on a thread of the server, and a forked child
//! writes the bytes it receives through a pipe to the file and fsyncs it.
//! Between `fork` and `_exit` the child runs only async-signal-safe system
//! calls on memory set up before the fork (no allocation, no locks), which
//! is what POSIX allows after forking a multi-threaded process. Killing it
//! loses the file, as killing Redis's child does, and its exit status is
//! the job's outcome.

use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd};
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

/// INFO's `total_forks` and `latest_fork_usec` (Redis's
/// `stat_total_forks`, `stat_fork_time`).
static TOTAL_FORKS: AtomicU64 = AtomicU64::new(0);
static LATEST_FORK_USEC: AtomicU64 = AtomicU64::new(0);

/// (`total_forks`, `latest_fork_usec`).
pub(crate) fn fork_stats() -> (u64, u64) {
    (TOTAL_FORKS.load(Relaxed), LATEST_FORK_USEC.load(Relaxed))
}

/// `CONFIG RESETSTAT` (Redis's `resetServerStats` zeroes both).
pub(crate) fn reset_fork_stats() {
    TOTAL_FORKS.store(0, Relaxed);
    LATEST_FORK_USEC.store(0, Relaxed);
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    Code(i32),
    Signal(i32),
}

/// Writes through a child process into the file it was given: what is
/// written here reaches the file when the child has copied it; [`finish`]
/// ends the stream and waits for the child.
///
/// [`finish`]: Child::finish
pub(crate) struct Child {
    pid: libc::pid_t,
    pipe: Option<std::io::BufWriter<File>>,
    reaper: Option<std::thread::JoinHandle<Exit>>,
}

impl Child {
    /// Forks a child that copies its input into `file` and fsyncs it. A
    /// reaper thread waits for it and calls `died` should it end otherwise
    /// than by a clean exit (killed): the writer is told to stop as when
    /// the server stops it.
    /// `oom`: the OOM-killer score the child sets for itself (Redis's
    /// `CONFIG_OOM_BGCHILD` class).
    pub(crate) fn spawn(
        file: File,
        oom: Option<i64>,
        died: impl FnOnce() + Send + 'static,
    ) -> std::io::Result<Child> {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: both descriptors were just opened and are owned here.
        let (rd, wr) = unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) };
        let mut buf = vec![0u8; 1 << 16];
        // The score's text, made before the fork (no formatting after).
        let score = oom.map(|v| format!("{v}\n").into_bytes());
        let started = std::time::Instant::now();
        // SAFETY: the child runs only `copy_and_exit`, which makes
        // async-signal-safe system calls on memory allocated before the
        // fork, and leaves by `_exit`.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: as above; never returns.
            unsafe { copy_and_exit(rd.as_raw_fd(), file.as_raw_fd(), score.as_deref(), &mut buf) }
        }
        if pid < 0 {
            return Err(std::io::Error::last_os_error());
        }
        TOTAL_FORKS.fetch_add(1, Relaxed);
        LATEST_FORK_USEC.store(started.elapsed().as_micros() as u64, Relaxed);
        drop((rd, file, buf, score));
        let reaper = std::thread::Builder::new()
            .name("zwindow-child".into())
            .spawn(move || {
                let exit = wait(pid);
                if exit != Exit::Code(0) {
                    died();
                }
                exit
            });
        let reaper = match reaper {
            Ok(r) => r,
            Err(e) => {
                // SAFETY: the child is ours and not reaped yet.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                wait(pid);
                return Err(e);
            }
        };
        Ok(Child {
            pid,
            pipe: Some(std::io::BufWriter::with_capacity(1 << 20, wr)),
            reaper: Some(reaper),
        })
    }

    pub(crate) fn pid(&self) -> i32 {
        self.pid
    }

    /// Ends the stream and waits for the child: `complete` when everything
    /// was written (the child then fsyncs and exits 0); otherwise the child
    /// is stopped with `SIGUSR1`, as Redis stops a child it gave up on.
    pub(crate) fn finish(mut self, complete: bool) -> Exit {
        self.end(complete)
    }

    fn end(&mut self, complete: bool) -> Exit {
        let flushed = match self.pipe.take() {
            Some(mut p) if complete => p.flush().is_ok(),
            // Unwritten bytes are dropped with the pipe: no flush.
            Some(p) => {
                let _ = p.into_parts();
                false
            }
            None => false,
        };
        if !flushed {
            // SAFETY: the child is ours; until the reaper reaped it, its
            // pid cannot be reused.
            unsafe { libc::kill(self.pid, libc::SIGUSR1) };
        }
        match self.reaper.take().map(|r| r.join()) {
            Some(Ok(exit)) => exit,
            _ => Exit::Code(1),
        }
    }
}

impl Write for Child {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self.pipe.as_mut() {
            Some(p) => p.write(buf),
            None => Err(std::io::ErrorKind::BrokenPipe.into()),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        // The pipe's buffer only: durability is the child's fsync.
        match self.pipe.as_mut() {
            Some(p) => p.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if self.reaper.is_some() {
            self.end(false);
        }
    }
}

/// Forks the child of a background job: it writes `<stem>-<its pid>.<ext>`
/// (Redis's `temp-<pid>.rdb`, `temp-rewriteaof-bg-<pid>.aof`), which is
/// opened before the fork and renamed after; `died` runs should the child
/// be killed. Returns the child and the file's name.
pub(crate) fn spawn_writing(
    stem: &str,
    ext: &str,
    oom: Option<i64>,
    died: impl FnOnce() + Send + 'static,
) -> std::io::Result<(Child, std::path::PathBuf)> {
    let opening = std::path::PathBuf::from(format!("{stem}-{}-0.{ext}", std::process::id()));
    let child = File::create(&opening).and_then(|f| Child::spawn(f, oom, died));
    let child = match child {
        Ok(c) => c,
        Err(e) => {
            let _ = std::fs::remove_file(&opening);
            return Err(e);
        }
    };
    let tmp = std::path::PathBuf::from(format!("{stem}-{}.{ext}", child.pid()));
    std::fs::rename(&opening, &tmp)?;
    Ok((child, tmp))
}

/// Waits for child `pid` to end.
fn wait(pid: libc::pid_t) -> Exit {
    loop {
        let mut status = 0;
        // SAFETY: `status` is a valid out-parameter.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            if libc::WIFSIGNALED(status) {
                return Exit::Signal(libc::WTERMSIG(status));
            }
            return Exit::Code(libc::WEXITSTATUS(status));
        }
        if r < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return Exit::Code(1);
        }
    }
}

/// The child: default signal handling (the server's handlers are not its
/// own), descriptors 0 and 1 become the pipe and the file and every other
/// one is closed (a client's socket must close when the server closes
/// it), then a copy loop until the end of the pipe, an fsync and `_exit`.
///
/// # Safety
/// Only in a freshly forked child; `rd` and `out` are open descriptors.
unsafe fn copy_and_exit(rd: i32, out: i32, score: Option<&[u8]>, buf: &mut [u8]) -> ! {
    unsafe {
        if let Some(score) = score {
            let fd = libc::open(c"/proc/self/oom_score_adj".as_ptr(), libc::O_WRONLY);
            if fd >= 0 {
                libc::write(fd, score.as_ptr().cast(), score.len());
                libc::close(fd);
            }
        }
        for sig in [
            libc::SIGUSR1,
            libc::SIGTERM,
            libc::SIGINT,
            libc::SIGHUP,
            libc::SIGPIPE,
        ] {
            libc::signal(sig, libc::SIG_DFL);
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        // `out` may be 0 (stdin closed): move both out of the way first.
        let (rd2, out2) = (
            libc::fcntl(rd, libc::F_DUPFD, 3),
            libc::fcntl(out, libc::F_DUPFD, 3),
        );
        if rd2 < 0 || out2 < 0 || libc::dup2(rd2, 0) < 0 || libc::dup2(out2, 1) < 0 {
            libc::_exit(1);
        }
        if libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) != 0 {
            let mut limit: libc::rlimit = std::mem::zeroed();
            let max = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
                limit.rlim_cur.min(1 << 20) as i32
            } else {
                1024
            };
            for fd in 3..max {
                libc::close(fd);
            }
        }
        loop {
            let n = libc::read(0, buf.as_mut_ptr().cast(), buf.len());
            if n == 0 {
                break;
            }
            if n < 0 {
                if *libc::__errno_location() == libc::EINTR {
                    continue;
                }
                libc::_exit(1);
            }
            let mut done = 0usize;
            while done < n as usize {
                let w = libc::write(1, buf.as_ptr().add(done).cast(), n as usize - done);
                if w < 0 {
                    if *libc::__errno_location() == libc::EINTR {
                        continue;
                    }
                    libc::_exit(1);
                }
                done += w as usize;
            }
        }
        if libc::fsync(1) != 0 {
            libc::_exit(1);
        }
        libc::_exit(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    static DIED: AtomicBool = AtomicBool::new(false);

    fn died() {
        DIED.store(true, Relaxed);
    }

    #[test]
    fn child_writes_and_kill_fails() {
        let dir = std::env::temp_dir().join(format!("zw-child-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out");
        let mut c = Child::spawn(File::create(&path).unwrap(), None, died).unwrap();
        c.write_all(b"hello ").unwrap();
        c.write_all(&vec![b'x'; 300_000]).unwrap();
        assert_eq!(c.finish(true), Exit::Code(0));
        let data = std::fs::read(&path).unwrap();
        assert_eq!(data.len(), 6 + 300_000);
        assert!(data.starts_with(b"hello "));
        // Killed from outside: the writer learns it, the exit says so.
        let c = Child::spawn(File::create(&path).unwrap(), None, died).unwrap();
        // SAFETY: our child.
        unsafe { libc::kill(c.pid(), libc::SIGKILL) };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !DIED.load(Relaxed) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(DIED.load(Relaxed));
        let exit = c.finish(false);
        assert_eq!(exit, Exit::Signal(libc::SIGKILL));
        // Given up by the server: SIGUSR1, no error.
        let c = Child::spawn(File::create(&path).unwrap(), None, died).unwrap();
        let exit = c.finish(false);
        assert_eq!(exit, Exit::Signal(libc::SIGUSR1));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
