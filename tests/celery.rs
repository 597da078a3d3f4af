//! Celery end to end: a real Celery worker (from the project's `.venv`, which
//! `bash .ci/test` creates from `tests/python/requirements.txt`) uses zwindow as
//! its broker (db 0) and result backend (db 1); `tests/python/celery_app.py`
//! queues tasks (plain calls, group, chain, chord, a failing task, a
//! countdown) and checks every result. The worker is then stopped and a new
//! one started while tasks are already queued, and the round is repeated:
//! what users of Celery on Redis do on every deploy. The worker is always
//! killed at the end, pass or fail.
mod common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::ZwindowServer;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn venv_bin(name: &str) -> PathBuf {
    let exe = root().join(".venv/bin").join(name);
    assert!(
        exe.exists(),
        "{} is missing: run `bash .ci/test`, which creates .venv from tests/python/requirements.txt",
        exe.display()
    );
    exe
}

/// A running Celery worker; killed when dropped.
struct Worker {
    child: Child,
    log: PathBuf,
}

impl Worker {
    fn start(broker: &str, backend: &str, tag: &str) -> Worker {
        let log =
            std::env::temp_dir().join(format!("zwindow-celery-{}-{tag}.log", std::process::id()));
        let out = File::create(&log).expect("worker log");
        let err = out.try_clone().expect("worker log");
        // Broker and backend are global options, given before `worker`.
        let child = Command::new(venv_bin("celery"))
            .current_dir(root().join("tests/python"))
            .args([
                "-A",
                "celery_app",
                "-b",
                broker,
                "--result-backend",
                backend,
            ])
            .args([
                "worker",
                "--pool=solo",
                "--concurrency=1",
                "--loglevel=INFO",
            ])
            .args([
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
            ])
            .args(["-n", &format!("zwindow-{tag}@%h")])
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .expect("cannot start the celery worker");
        Worker { child, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Warm shutdown (SIGTERM), as a deploy does; SIGKILL if it lingers.
    fn stop(mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        let _ = std::fs::remove_file(&self.log);
    }
}

/// Starts the producer for one round.
fn spawn_producer(broker: &str, backend: &str, round: &str) -> Child {
    Command::new(venv_bin("python"))
        .current_dir(root().join("tests/python"))
        .args(["celery_app.py", round])
        .env("CELERY_BROKER", broker)
        .env("CELERY_BACKEND", backend)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot run the producer")
}

/// Waits for a producer; panics with both logs on failure.
fn finish(z: &ZwindowServer, producer: Child, round: &str, worker: &Worker) {
    let out = producer.wait_with_output().expect("producer output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(&format!("ok {round}")),
        "celery round {round} failed ({}):\n{stdout}\n{}\n--- worker log ---\n{}\n--- zwindow log ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        worker.log(),
        z.log_tail()
    );
}

#[test]
fn celery_worker_round_trips_and_restart() {
    let z = ZwindowServer::start(&[]);
    let broker = format!("redis://127.0.0.1:{}/0", z.port());
    let backend = format!("redis://127.0.0.1:{}/1", z.port());

    let first = Worker::start(&broker, &backend, "a");
    finish(
        &z,
        spawn_producer(&broker, &backend, "first"),
        "first",
        &first,
    );
    first.stop();

    // Tasks queued while no worker runs wait in the broker for the next one.
    let mut queued = z.conn();
    let producer = spawn_producer(&broker, &backend, "second");
    let deadline = Instant::now() + Duration::from_secs(10);
    while queued.cmd_str("LLEN celery") == b":0\r\n" {
        assert!(Instant::now() < deadline, "the producer queued nothing");
        std::thread::sleep(Duration::from_millis(50));
    }
    let second = Worker::start(&broker, &backend, "b");
    finish(&z, producer, "second", &second);
    let log = second.log();
    assert!(
        log.contains("celery_app.total") && log.contains("succeeded"),
        "the restarted worker ran no task:\n{log}"
    );
    second.stop();

    // Nothing left behind in the broker's queue once every result is in.
    assert_eq!(queued.cmd_str("LLEN celery"), b":0\r\n");
}
