//! Loading the append-only files at startup (Redis's `loadAppendOnlyFiles`):
//! the manifest, then the base (an RDB image, or RESP when written with
//! `aof-use-rdb-preamble no`), then each incremental file in order, whose
//! commands are replayed through the execution layer's [`Dispatch`] handle,
//! which the caller passes in, by a client of no connection, as Redis's
//! fake AOF client.
//!
//! The files are untrusted input: every length is checked against what is
//! left, a count never sizes an allocation beyond the bytes that could
//! hold it, and a bad file is an error naming it, never a panic. A command
//! cut short at the end of the last file is dropped and the file truncated
//! when `aof-load-truncated` is on (Redis's log lines); otherwise, and
//! anywhere else, loading fails and the server does not start.

use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;

use super::{BASE, FileInfo, HISTORY, Host, INCR, Manifest};
use crate::dispatch::Dispatch;
use crate::keyspace::Keyspace;
use crate::protocol::Reply;
use crate::protocol::{Args, OwnedArgs};
use crate::spec::lookup;

/// Redis's `MANIFEST_MAX_LINE`.
const MANIFEST_MAX_LINE: usize = 1024;

/// Reads `<dir>/<prefix>.manifest`; an empty manifest when the directory
/// or the file does not exist (a server that never wrote an AOF).
pub(crate) fn read_manifest(dir: &Path, prefix: &str) -> Result<Manifest, String> {
    let path = dir.join(format!("{prefix}.manifest"));
    let text = match std::fs::read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Manifest::default()),
        Err(e) => {
            return Err(format!(
                "Fatal error: can't open the AOF manifest file {} for reading: {e}",
                path.display()
            ));
        }
    };
    parse_manifest(&text)
}

/// Parses a manifest as Redis's `aofLoadManifestFromFile` does, with its
/// error texts.
fn parse_manifest(text: &[u8]) -> Result<Manifest, String> {
    let mut m = Manifest::default();
    if text.is_empty() {
        return Err("Found an empty AOF manifest".into());
    }
    let mut max_seq = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let (line, next) = match rest.iter().position(|&b| b == b'\n') {
            Some(i) if i <= MANIFEST_MAX_LINE => (&rest[..i], &rest[i + 1..]),
            _ => return Err("The AOF manifest file contains too long line".into()),
        };
        rest = next;
        if line.first() == Some(&b'#') {
            continue;
        }
        let invalid = || "Invalid AOF manifest file format".to_string();
        let line = std::str::from_utf8(line).map_err(|_| invalid())?.trim();
        let words = split_args(line).ok_or_else(invalid)?;
        if words.len() < 6 || !words.len().is_multiple_of(2) {
            return Err(invalid());
        }
        let (mut name, mut seq, mut kind) = (None, None, None);
        let (mut start_offset, mut end_offset) = (-1, -1);
        for pair in words.chunks(2) {
            let value = &pair[1];
            match pair[0].to_ascii_lowercase().as_str() {
                "file" => {
                    if value.contains('/') || value.is_empty() {
                        return Err("File can't be a path, just a filename".into());
                    }
                    name = Some(value.clone());
                }
                "seq" => seq = value.parse::<u64>().ok(),
                "type" => kind = value.bytes().next(),
                "startoffset" => start_offset = atoll(value),
                "endoffset" => end_offset = atoll(value),
                _ => {}
            }
        }
        let (Some(name), Some(seq), Some(kind)) = (name, seq, kind) else {
            return Err("Invalid AOF manifest file format".into());
        };
        if seq == 0 {
            return Err("Invalid AOF manifest file format".into());
        }
        let info = FileInfo {
            start_offset,
            end_offset,
            ..FileInfo::new(name, seq, kind)
        };
        match kind {
            BASE => {
                if m.base.is_some() {
                    return Err("Found duplicate base file information".into());
                }
                m.base = Some(info);
            }
            HISTORY => m.history.push(info),
            INCR => {
                if seq <= max_seq {
                    return Err("Found a non-monotonic sequence number".into());
                }
                max_seq = seq;
                m.incrs.push(info);
            }
            _ => return Err("Unknown AOF file type".into()),
        }
    }
    Ok(m)
}

/// C's `atoll`, as Redis reads the offsets: leading digits (after an
/// optional sign), 0 without any.
fn atoll(s: &str) -> i64 {
    let b = s.trim_start().as_bytes();
    let (neg, digits) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        Some(b'+') => (false, &b[1..]),
        _ => (false, b),
    };
    let mut v: i64 = 0;
    for &c in digits.iter().take_while(|c| c.is_ascii_digit()) {
        v = v.saturating_mul(10).saturating_add(i64::from(c - b'0'));
    }
    if neg { -v } else { v }
}

/// Splits a manifest line into words, double-quoted words with Redis's
/// escapes included (`sdssplitargs`); None if a quote is left open.
fn split_args(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let Some(&first) = chars.peek() else {
            return Some(words);
        };
        let mut w = String::new();
        if first == '"' || first == '\'' {
            chars.next();
            loop {
                match chars.next()? {
                    c if c == first => break,
                    '\\' if first == '"' => match chars.next()? {
                        'n' => w.push('\n'),
                        'r' => w.push('\r'),
                        't' => w.push('\t'),
                        c => w.push(c),
                    },
                    c => w.push(c),
                }
            }
            if chars.peek().is_some_and(|c| !c.is_whitespace()) {
                return None;
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                w.push(c);
                chars.next();
            }
        }
        words.push(w);
    }
}

/// What loading one file came to.
#[derive(Debug, PartialEq, Eq)]
enum Loaded {
    Ok,
    Empty,
    /// The last command was cut short, and the file truncated before it.
    Truncated,
}

/// Loads the AOF at startup when `appendonly yes`; returns the manifest
/// the writer continues from. Without AOF files the dataset stays empty
/// (`dump.rdb` is not read, as in Redis 7.0) and the writer creates a base.
/// `dispatch` runs the replayed commands.
pub(crate) fn load_at_startup<C>(
    host: &dyn Host,
    dispatch: &dyn Dispatch<C>,
) -> Result<Manifest, String> {
    let env = host.env();
    let guards = env.store.lock(env.store.all_shards());
    let mut ks = Keyspace::new(env, guards, 0, env.clock.now_ms());
    load_files(host, &mut ks, dispatch)
}

/// Loads the files the manifest names into `ks`, which holds every shard
/// (startup, `DEBUG LOADAOF`), replaying their commands through `dispatch`.
pub(crate) fn load_files<C>(
    host: &dyn Host,
    ks: &mut Keyspace<'_>,
    dispatch: &dyn Dispatch<C>,
) -> Result<Manifest, String> {
    let env = host.env();
    let dir = super::Aof::dir(env.config);
    let prefix = env.config.appendfilename();
    let mut manifest = read_manifest(&dir, &prefix)?;
    // An AOF of Redis before 7.0 (one file in `dir`) moves into the
    // directory as the base (Redis's `aofUpgradePrepare`), also when an
    // earlier start was cut short between writing the manifest and the move.
    if Path::new(&prefix).is_file() {
        let only_old_base = manifest.incrs.is_empty()
            && manifest.base.as_ref().is_some_and(|b| b.name == prefix)
            && !dir.join(&prefix).exists();
        let empty = manifest.base.is_none() && manifest.incrs.is_empty();
        if !dir.is_dir() || empty || only_old_base {
            upgrade(&dir, &prefix, &mut manifest)?;
        }
    }
    if manifest.base.is_none() && manifest.incrs.is_empty() {
        return Ok(manifest);
    }
    let files: Vec<&FileInfo> = manifest.base.iter().chain(&manifest.incrs).collect();
    let mut total = 0;
    for f in &files {
        match std::fs::metadata(dir.join(&f.name)) {
            Ok(m) => total += m.len(),
            Err(e) => {
                return Err(format!("The append log file {} doesn't exist: {e}", f.name));
            }
        }
    }
    if total == 0 {
        return Ok(manifest);
    }
    let started = std::time::Instant::now();
    let _loading = host
        .persistence()
        .loading
        .begin(env.clock.now_ms() / 1000, total);
    env.store.loading.store(true, Relaxed);
    let loaded = load_listed(host, ks, dispatch, &dir, &files);
    env.store.loading.store(false, Relaxed);
    loaded?;
    host.aof().current_size.store(total, Relaxed);
    let base = manifest
        .base
        .as_ref()
        .map_or(0, |b| super::file_size(&dir.join(&b.name)));
    host.aof().base_size.store(base, Relaxed);
    tracing::info!(
        "DB loaded from append only file: {:.3} seconds",
        started.elapsed().as_secs_f64()
    );
    Ok(manifest)
}

/// Loads the base and incremental files in order, by one replaying client.
fn load_listed<C>(
    host: &dyn Host,
    ks: &mut Keyspace<'_>,
    dispatch: &dyn Dispatch<C>,
    dir: &Path,
    files: &[&FileInfo],
) -> Result<(), String> {
    let mut replayer = Replayer::new(dispatch);
    let result = (|| {
        for (i, f) in files.iter().enumerate() {
            let last = i + 1 == files.len();
            let t = std::time::Instant::now();
            let loaded = load_file(ks, &mut replayer, &dir.join(&f.name), &f.name, host)?;
            if loaded == Loaded::Truncated && !last {
                return Err("Fatal error: the truncated file is not the last file".to_string());
            }
            let what = if f.kind == BASE { "base" } else { "incr" };
            if loaded != Loaded::Empty || f.kind == BASE {
                tracing::info!(
                    "DB loaded from {what} file {}: {:.3} seconds",
                    f.name,
                    t.elapsed().as_secs_f64()
                );
            }
        }
        Ok(())
    })();
    ks.db = 0;
    replayer.finish();
    result
}

/// Moves an old-style `appendonly.aof` into the directory as its base.
fn upgrade(dir: &Path, prefix: &str, manifest: &mut Manifest) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| {
        format!(
            "Can't open or create append-only dir {}: {e}",
            dir.display()
        )
    })?;
    manifest.base = Some(FileInfo::new(prefix.to_string(), 1, BASE));
    super::persist_manifest(dir, prefix, manifest)
        .map_err(|e| format!("Can't persist the AOF manifest: {e}"))?;
    std::fs::rename(prefix, dir.join(prefix)).map_err(|e| {
        format!(
            "Error trying to rename the existing AOF to the AOF directory {}: {e}",
            dir.display()
        )
    })?;
    tracing::info!(
        "Successfully migrated an old-style AOF into the AOF directory ({}).",
        dir.display()
    );
    Ok(())
}

/// Loads one file: RDB if it starts with `REDIS`, else RESP commands.
fn load_file<C>(
    ks: &mut Keyspace<'_>,
    replayer: &mut Replayer<'_, C>,
    path: &Path,
    name: &str,
    host: &dyn Host,
) -> Result<Loaded, String> {
    let (config, p) = (host.env().config, host.persistence());
    let data = std::fs::read(path).map_err(|e| {
        format!("Fatal error: can't open the append log file {name} for reading: {e}")
    })?;
    if data.is_empty() {
        return Ok(Loaded::Empty);
    }
    if data.starts_with(b"REDIS") {
        tracing::info!("Reading RDB base file on AOF loading...");
        let stats = crate::rdb::file::load(&data, ks, host, false).map_err(|e| {
            format!("Error reading the RDB base file {name}, AOF loading aborted: {e}")
        })?;
        *p.last_load.lock() = stats;
        if stats.bytes >= data.len() {
            return Ok(Loaded::Ok);
        }
        // An RDB preamble (Redis 4 to 6's AOF): commands follow.
        tracing::info!("Reading the remaining AOF tail...");
    }
    let start = if data.starts_with(b"REDIS") {
        p.last_load.lock().bytes
    } else {
        0
    };
    let mut cursor = Cursor {
        data: &data,
        pos: start,
    };
    // Where the last whole command (or, in MULTI, the MULTI) ends.
    let mut valid_up_to = start;
    let mut valid_before_multi = start;
    loop {
        if cursor.pos == data.len() {
            break;
        }
        match cursor.command() {
            Parsed::Annotation => {}
            Parsed::Command(argv) => {
                // Redis serves clients before its first command (and each
                // 1024th): they get -LOADING from here on.
                p.loading.serve_clients();
                if replayer.in_multi() {
                    if crate::util::eq_ic(&argv[0], "multi") {
                        return Err(bad_format(name));
                    }
                } else if crate::util::eq_ic(&argv[0], "multi") {
                    valid_before_multi = valid_up_to;
                }
                replayer.run(ks, argv, name)?;
            }
            Parsed::Truncated => {
                return truncated(config, path, name, valid_up_to);
            }
            Parsed::Bad => return Err(bad_format(name)),
        }
        p.loading.advance((cursor.pos - valid_up_to) as u64);
        valid_up_to = cursor.pos;
        let delay = config.key_load_delay();
        if delay != 0 {
            crate::util::debug_delay(delay);
        }
    }
    if replayer.in_multi() {
        tracing::warn!("Revert incomplete MULTI/EXEC transaction in AOF file {name}");
        replayer.discard();
        return truncated(config, path, name, valid_before_multi);
    }
    Ok(Loaded::Ok)
}

fn bad_format(name: &str) -> String {
    format!(
        "Bad file format reading the append only file {name}: make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>"
    )
}

/// The file ends inside a command (Redis's `uxeof`).
fn truncated(
    config: &crate::config::Config,
    path: &Path,
    name: &str,
    valid_up_to: usize,
) -> Result<Loaded, String> {
    if config.aof_load_truncated() {
        tracing::warn!("!!! Warning: short read while loading the AOF file {name}!!!");
        tracing::warn!("!!! Truncating the AOF {name} at offset {valid_up_to} !!!");
        let cut = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|f| f.set_len(valid_up_to as u64));
        match cut {
            Ok(()) => {
                tracing::warn!("AOF {name} loaded anyway because aof-load-truncated is enabled");
                return Ok(Loaded::Truncated);
            }
            Err(e) => tracing::warn!("Error truncating the AOF file {name}: {e}"),
        }
    }
    Err(format!(
        "Unexpected end of file reading the append only file {name}. You can: 1) Make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>. 2) Alternatively you can set the 'aof-load-truncated' configuration option to yes and restart the server."
    ))
}

enum Parsed {
    Command(Vec<Vec<u8>>),
    /// A `#` line (Redis 7.0's annotations, e.g. timestamps).
    Annotation,
    Truncated,
    Bad,
}

/// Reads RESP commands from a file's bytes.
struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    /// A `<prefix><number>\r\n` line; None at the end of the data.
    fn number_line(&mut self, prefix: u8) -> Result<i64, Parsed> {
        let rest = &self.data[self.pos..];
        let Some(end) = rest.iter().position(|&b| b == b'\n') else {
            return Err(Parsed::Truncated);
        };
        let line = rest[..end].strip_suffix(b"\r").ok_or(Parsed::Bad)?;
        if line.first() != Some(&prefix) {
            return Err(Parsed::Bad);
        }
        let n = std::str::from_utf8(&line[1..])
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
            .ok_or(Parsed::Bad)?;
        self.pos += end + 1;
        Ok(n)
    }

    fn command(&mut self) -> Parsed {
        let start = self.pos;
        if self.data[self.pos] == b'#' {
            return match self.data[self.pos..].iter().position(|&b| b == b'\n') {
                Some(end) => {
                    self.pos += end + 1;
                    Parsed::Annotation
                }
                None => Parsed::Truncated,
            };
        }
        let parsed = (|| {
            let argc = self.number_line(b'*')?;
            if argc < 1 {
                return Err(Parsed::Bad);
            }
            // Every argument takes at least 5 bytes (`$0\r\n\r\n`): a
            // count the file cannot hold never sizes an allocation.
            let left = self.data.len() - self.pos;
            let mut argv = Vec::with_capacity((argc as usize).min(left / 5 + 1));
            for _ in 0..argc {
                if self.pos == self.data.len() {
                    return Err(Parsed::Truncated);
                }
                let len = self.number_line(b'$')?;
                let len = usize::try_from(len).map_err(|_| Parsed::Bad)?;
                let left = self.data.len() - self.pos;
                if len > left || left - len < 2 {
                    return Err(Parsed::Truncated);
                }
                argv.push(self.data[self.pos..self.pos + len].to_vec());
                if &self.data[self.pos + len..self.pos + len + 2] != b"\r\n" {
                    return Err(Parsed::Bad);
                }
                self.pos += len + 2;
            }
            Ok(argv)
        })();
        match parsed {
            Ok(argv) => Parsed::Command(argv),
            Err(p) => {
                self.pos = start;
                p
            }
        }
    }
}

/// Redis's fake AOF client: runs the commands, queuing those between MULTI
/// and EXEC and running them at EXEC, as the transaction did.
struct Replayer<'d, C> {
    dispatch: &'d dyn Dispatch<C>,
    client: C,
    queue: Option<Vec<OwnedArgs>>,
}

impl<'d, C> Replayer<'d, C> {
    fn new(dispatch: &'d dyn Dispatch<C>) -> Replayer<'d, C> {
        Replayer {
            dispatch,
            client: dispatch.detached_client(),
            queue: None,
        }
    }

    fn in_multi(&self) -> bool {
        self.queue.is_some()
    }

    fn discard(&mut self) {
        self.queue = None;
    }

    fn run(&mut self, ks: &mut Keyspace<'_>, argv: Vec<Vec<u8>>, file: &str) -> Result<(), String> {
        let Some(cmd) = lookup(&argv[0]) else {
            return Err(format!(
                "Unknown command '{}' reading the append only file {file}",
                String::from_utf8_lossy(&argv[0])
            ));
        };
        match cmd.name {
            "multi" => {
                self.queue = Some(Vec::new());
                return Ok(());
            }
            "exec" => {
                for args in self.queue.take().unwrap_or_default() {
                    self.call(ks, args.args(), file)?;
                }
                return Ok(());
            }
            _ => {}
        }
        let parts: Vec<&[u8]> = argv.iter().map(|a| a.as_slice()).collect();
        let owned = OwnedArgs::from_slices(&parts);
        match &mut self.queue {
            Some(q) => q.push(owned),
            None => self.call(ks, owned.args(), file)?,
        }
        Ok(())
    }

    /// Runs one command (an `EVAL` of an older Redis's AOF too: this
    /// thread holds every shard, as the script runner would); a command's
    /// error reply is logged, as it changes nothing.
    fn call(&mut self, ks: &mut Keyspace<'_>, args: Args<'_>, file: &str) -> Result<(), String> {
        let cmd = crate::spec::resolve(&args).map_err(|e| {
            format!(
                "Bad command in the append only file {file}: {}",
                String::from_utf8_lossy(e.bytes())
            )
        })?;
        let mut out = Reply::default();
        let _ = self
            .dispatch
            .call(&mut self.client, &mut out, ks, cmd, args, None);
        if out.buf.first() == Some(&b'-') {
            tracing::warn!(
                "AOF {file}: {} replied {}",
                cmd.name,
                String::from_utf8_lossy(out.buf.trim_ascii_end())
            );
        }
        Ok(())
    }

    fn finish(self) {
        self.dispatch.release(self.client);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_parse_as_redis_reads_them() {
        let m = parse_manifest(
            b"file appendonly.aof.2.base.rdb seq 2 type b\n# note\nfile \"a b.aof\" seq 3 type i\nfile x.incr.aof seq 4 type i\n",
        )
        .unwrap();
        assert_eq!(m.base.as_ref().unwrap().seq, 2);
        assert_eq!(m.incrs.len(), 2);
        assert_eq!(m.incrs[0].name, "a b.aof");
        assert_eq!(
            parse_manifest(&m.to_text().into_bytes())
                .unwrap()
                .incrs
                .len(),
            2
        );
        for (bad, why) in [
            (&b""[..], "empty"),
            (
                b"file a seq 1 type i\nfile b seq 1 type i\n",
                "non-monotonic",
            ),
            (
                b"file a seq 1 type b\nfile b seq 2 type b\n",
                "duplicate base",
            ),
            (b"file a seq 1 type z\n", "Unknown AOF file type"),
            (b"file a seq 1 type\n", "Invalid"),
            (b"\n", "Invalid"),
            (b"file a/b seq 1 type i\n", "path"),
            (b"file a seq 1 type i", "too long"),
        ] {
            let e = parse_manifest(bad).unwrap_err();
            assert!(e.contains(why), "{why}: {e}");
        }
        let long = format!("file {} seq 1 type i\n", "x".repeat(2000));
        assert!(parse_manifest(long.as_bytes()).is_err());
    }

    #[test]
    fn the_cursor_reads_commands_and_stops_at_a_cut() {
        let data = b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n#TS:1\r\n*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET";
        let mut c = Cursor { data, pos: 0 };
        assert!(
            matches!(c.command(), Parsed::Command(v) if v == [b"SELECT".to_vec(), b"0".to_vec()])
        );
        assert!(matches!(c.command(), Parsed::Annotation));
        assert!(matches!(c.command(), Parsed::Command(v) if v.len() == 1));
        let at = c.pos;
        assert!(matches!(c.command(), Parsed::Truncated));
        assert_eq!(c.pos, at, "a cut command is not consumed");
        for bad in [
            &b"+OK\r\n"[..],
            b"*0\r\n",
            b"*1\r\n$-1\r\n",
            b"*1\r\n$1\r\nab\r\n",
            b"*x\r\n",
        ] {
            let mut c = Cursor { data: bad, pos: 0 };
            assert!(
                matches!(c.command(), Parsed::Bad),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        // A huge count sizes nothing: the data runs out first.
        let mut c = Cursor {
            data: b"*4000000000\r\n$1\r\na\r\n",
            pos: 0,
        };
        assert!(matches!(c.command(), Parsed::Truncated));
    }
}
