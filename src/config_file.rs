//! redis.conf in and out, as Redis 7.0 reads and rewrites it.
//!
//! In: the command line (`zwindow [file] [--directive value …] [-]`), the
//! file, its `include`s, stdin and the command-line directives become one
//! text that is split line by line and word by word (`sdssplitargs`), each
//! line handed to the caller in order — the same text and line numbers as
//! `loadServerConfig`, so a bad line is reported exactly as redis-server
//! reports it. Out: `CONFIG REWRITE`'s edit of that file, keeping comments
//! and lines it does not own. What a directive means is `config.rs`'s table;
//! this module knows only the syntax.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Startup cannot go on: the text goes to stderr, the exit status is 1.
#[derive(Debug)]
pub struct Fatal(pub(crate) String);

impl std::fmt::Display for Fatal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The error block Redis prints for a bad line (`line` is `None` for a
/// check made after the last line, such as an unwritable log file).
pub(crate) fn fatal_at(line: Option<(usize, &[u8])>, why: &str) -> Fatal {
    let mut out = format!(
        "\n*** FATAL CONFIG FILE ERROR (Redis {}) ***\n",
        crate::version::REDIS_VERSION
    );
    if let Some((n, text)) = line {
        out.push_str(&format!(
            "Reading the configuration file, at line {n}\n>>> '{}'\n",
            String::from_utf8_lossy(c_str(text))
        ));
    }
    out.push_str(why);
    Fatal(out)
}

/// The bytes C would see: up to the first NUL.
fn c_str(s: &[u8]) -> &[u8] {
    s.iter().position(|&b| b == 0).map_or(s, |i| &s[..i])
}

/// C's `isspace`.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// Splits a line into words as Redis's `sdssplitargs`: blanks separate
/// words; `"…"` takes `\n \r \t \b \a \xHH` and `\<any>` escapes; `'…'`
/// takes only `\'`; a closing quote must end the word. `None` for
/// unbalanced quotes (or a quote followed by more of the word).
pub(crate) fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let line = c_str(line);
    let at = |i: usize| line.get(i).copied().unwrap_or(0);
    let mut words = Vec::new();
    let mut p = 0;
    loop {
        while p < line.len() && is_space(line[p]) {
            p += 1;
        }
        if p >= line.len() {
            return Some(words);
        }
        let (mut in_dq, mut in_sq) = (false, false);
        let mut word = Vec::new();
        loop {
            let c = at(p);
            if in_dq {
                if c == b'\\'
                    && at(p + 1) == b'x'
                    && at(p + 2).is_ascii_hexdigit()
                    && at(p + 3).is_ascii_hexdigit()
                {
                    let hex = |b: u8| (b as char).to_digit(16).unwrap_or(0) as u8;
                    word.push(hex(at(p + 2)) * 16 + hex(at(p + 3)));
                    p += 3;
                } else if c == b'\\' && at(p + 1) != 0 {
                    p += 1;
                    word.push(match at(p) {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                } else if c == b'"' {
                    if at(p + 1) != 0 && !is_space(at(p + 1)) {
                        return None;
                    }
                    p += 1;
                    break;
                } else if c == 0 {
                    return None;
                } else {
                    word.push(c);
                }
            } else if in_sq {
                if c == b'\\' && at(p + 1) == b'\'' {
                    p += 1;
                    word.push(b'\'');
                } else if c == b'\'' {
                    if at(p + 1) != 0 && !is_space(at(p + 1)) {
                        return None;
                    }
                    p += 1;
                    break;
                } else if c == 0 {
                    return None;
                } else {
                    word.push(c);
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => {
                        p += 1;
                        break;
                    }
                    b'"' => in_dq = true,
                    b'\'' => in_sq = true,
                    _ => word.push(c),
                }
            }
            p += 1;
        }
        words.push(word);
    }
}

/// Quotes `s` as Redis's `sdscatrepr`: `"…"` with `\\ \" \n \r \t \a \b`
/// and `\xHH` for other unprintable bytes; `split_args` reads it back.
pub(crate) fn repr(s: &[u8]) -> String {
    let mut out = Vec::with_capacity(s.len() + 2);
    crate::util::repr_into(&mut out, s);
    // Only ASCII is written.
    String::from_utf8_lossy(&out).into_owned()
}

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Invocation {
    Version,
    Help,
    /// `--healthcheck [PID]`: ask the running server instead
    /// (`healthcheck.rs`); the pid names it when several run.
    Healthcheck(Option<u32>),
    Run(Sources),
}

/// Where the configuration comes from, in the order it is read: the file,
/// stdin, then the command-line directives (so those win).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Sources {
    /// The config file, absolute (what CONFIG REWRITE writes back).
    pub(crate) file: Option<PathBuf>,
    pub(crate) stdin: bool,
    /// The command-line directives as config-file lines.
    pub(crate) options: Vec<u8>,
}

/// Reads `zwindow [/path/to/redis.conf] [--directive value …] [-]` as
/// Redis 7.0's `main()`: `--name` starts a directive, the words after it
/// are its (quoted) arguments; `-` first or last reads stdin too; `--save`
/// with no value means `save ""`. zwindow's older `--config FILE` names the
/// file when no positional one is given (otherwise it is an `include`).
pub(crate) fn parse_argv(argv: &[Vec<u8>]) -> Invocation {
    let mut args: Vec<&[u8]> = argv.iter().skip(1).map(|a| a.as_slice()).collect();
    match args.first().copied() {
        Some(b"-v" | b"--version") => return Invocation::Version,
        Some(b"--help" | b"-h") => return Invocation::Help,
        Some(b"--healthcheck") => {
            let pid = args
                .get(1)
                .and_then(|p| std::str::from_utf8(p).ok()?.parse().ok());
            return Invocation::Healthcheck(pid);
        }
        _ => {}
    }
    let mut sources = Sources::default();
    if let Some(first) = args.first()
        && first.first() != Some(&b'-')
    {
        sources.file = Some(absolute(first));
        args.remove(0);
    }
    let mut options: Vec<u8> = Vec::new();
    if sources.file.is_none()
        && let Some(i) = args
            .iter()
            .position(|a| a.eq_ignore_ascii_case(b"--config"))
        && i + 1 < args.len()
    {
        sources.file = Some(absolute(args[i + 1]));
        args.drain(i..i + 2);
    }
    // Redis counts argv positions: `-` is stdin only as the first option
    // (right after the program or the file) or the last one.
    let first_at = 0;
    let last_at = args.len().saturating_sub(1);
    let mut value_pending = false;
    for (j, arg) in args.iter().enumerate() {
        let next_is_option = args.get(j + 1).is_some_and(|n| n.starts_with(b"--"));
        if *arg == b"-" && ((j == first_at && sources.file.is_none()) || j == last_at) {
            sources.stdin = true;
        } else if !value_pending && arg.starts_with(b"--") {
            if !options.is_empty() {
                options.push(b'\n');
            }
            options.extend_from_slice(&arg[2..]);
            options.push(b' ');
            if split_args(arg).is_some_and(|w| w.len() == 1) {
                value_pending = true;
                if arg.eq_ignore_ascii_case(b"--save") && (next_is_option || j == last_at) {
                    options.extend_from_slice(b"\"\"");
                    value_pending = false;
                } else if arg.eq_ignore_ascii_case(b"--sentinel")
                    && (next_is_option || j == last_at)
                {
                    value_pending = false;
                }
            } else {
                value_pending = false;
            }
        } else {
            options.extend_from_slice(repr(arg).as_bytes());
            options.push(b' ');
            value_pending = false;
        }
    }
    sources.options = options;
    Invocation::Run(sources)
}

fn absolute(path: &[u8]) -> PathBuf {
    let p = PathBuf::from(String::from_utf8_lossy(path).into_owned());
    std::path::absolute(&p).unwrap_or(p)
}

/// A directive as the loader hands it over: its words (the name
/// lower-cased) and where it was read, for error messages.
type Apply<'a> = dyn FnMut(&[Vec<u8>]) -> Result<(), String> + 'a;

/// How deep `include` may nest (Redis has no limit and recurses until the
/// stack ends on a file that includes itself).
const MAX_INCLUDE_DEPTH: usize = 32;

/// Reads every source and hands each directive to `apply` in order;
/// `include` is followed here. Stops at the first error, as Redis does.
pub(crate) fn load(sources: &Sources, apply: &mut Apply<'_>) -> Result<(), Fatal> {
    let mut text = Vec::new();
    if let Some(file) = &sources.file {
        text = read_config(file.as_os_str().as_encoded_bytes())?;
    }
    if sources.stdin {
        eprintln!("Reading config from stdin");
        std::io::stdin().read_to_end(&mut text).map_err(|e| {
            Fatal(format!(
                "Fatal error, can't read config from stdin: {}",
                strerror(&e)
            ))
        })?;
    }
    if !sources.options.is_empty() {
        text.push(b'\n');
        text.extend_from_slice(&sources.options);
    }
    load_text(&text, apply, 0)
}

fn load_text(text: &[u8], apply: &mut Apply<'_>, depth: usize) -> Result<(), Fatal> {
    for (i, raw) in text.split(|&b| b == b'\n').enumerate() {
        let line = trim(raw);
        if line.is_empty() || line[0] == b'#' {
            continue;
        }
        let at = Some((i + 1, line));
        let Some(mut words) = split_args(line) else {
            return Err(fatal_at(at, "Unbalanced quotes in configuration line"));
        };
        if words.is_empty() {
            continue;
        }
        words[0].make_ascii_lowercase();
        if words[0] == b"include" && words.len() == 2 {
            if depth >= MAX_INCLUDE_DEPTH {
                return Err(fatal_at(at, "include nested too deeply"));
            }
            let included = read_config(&words[1])?;
            load_text(&included, apply, depth + 1)?;
            continue;
        }
        apply(&words).map_err(|why| fatal_at(at, &why))?;
    }
    Ok(())
}

/// Trims what Redis's `sdstrim(line, " \t\r\n")` trims.
fn trim(mut s: &[u8]) -> &[u8] {
    let strip = |b: &u8| matches!(b, b' ' | b'\t' | b'\r' | b'\n');
    while let Some((first, rest)) = s.split_first()
        && strip(first)
    {
        s = rest;
    }
    while let Some((last, rest)) = s.split_last()
        && strip(last)
    {
        s = rest;
    }
    s
}

/// A config file's text; with `*`, `?` or `[` in the name, every match of
/// the pattern in glob(3)'s order, and no match is no text (an empty
/// `conf.d` is fine), as Redis 7.0.
fn read_config(name: &[u8]) -> Result<Vec<u8>, Fatal> {
    let paths = if name.iter().any(|b| matches!(b, b'*' | b'?' | b'[')) {
        glob(name)
    } else {
        vec![PathBuf::from(String::from_utf8_lossy(name).into_owned())]
    };
    let mut text = Vec::new();
    for path in paths {
        let mut file = std::fs::read(&path).map_err(|e| {
            Fatal(format!(
                "Fatal error, can't open config file '{}': {}",
                path.display(),
                strerror(&e)
            ))
        })?;
        text.append(&mut file);
    }
    Ok(text)
}

/// The paths matching a pattern, from the C library's glob(3) — the
/// function Redis calls, so the matches and their order are the same.
fn glob(pattern: &[u8]) -> Vec<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c_pattern) = std::ffi::CString::new(c_str(pattern)) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    // SAFETY: glob_t is plain data that glob() fills in; it is read only
    // when glob() returns 0 and released with globfree() exactly once.
    unsafe {
        let mut g: libc::glob_t = std::mem::zeroed();
        if libc::glob(c_pattern.as_ptr(), 0, None, &mut g) == 0 {
            for i in 0..g.gl_pathc {
                let p = *g.gl_pathv.add(i);
                if !p.is_null() {
                    let bytes = std::ffi::CStr::from_ptr(p).to_bytes();
                    found.push(PathBuf::from(std::ffi::OsStr::from_bytes(bytes)));
                }
            }
        }
        libc::globfree(&mut g);
    }
    found
}

/// An I/O error as C's `strerror` words it (without Rust's "(os error N)").
pub(crate) fn strerror(e: &std::io::Error) -> String {
    crate::util::strerror(e)
}

/// The signature line above what CONFIG REWRITE appends.
const SIGNATURE: &[u8] = b"# Generated by CONFIG REWRITE";

/// CONFIG REWRITE's edit of the old file (Redis's `rewriteConfigState`):
/// lines of directives the server knows are replaced in place by their
/// current value, extra lines of the same directive blanked, directives
/// not in the file appended; comments and other lines stay.
pub(crate) struct Rewrite {
    lines: Vec<Vec<u8>>,
    /// Directive → its lines in the old file (zero-based), first first.
    at: HashMap<String, VecDeque<usize>>,
    done: HashSet<String>,
    needs_signature: bool,
}

impl Rewrite {
    /// Reads the old file (missing: start empty). `canonical` maps a
    /// directive to the name it is rewritten under (an alias to its main
    /// name), or `None` when the server does not know it: such a line is
    /// kept, commented out with `# ??? `, as Redis does.
    pub(crate) fn read(
        path: &Path,
        canonical: impl Fn(&str) -> Option<String>,
    ) -> std::io::Result<Rewrite> {
        let mut state = Rewrite {
            lines: Vec::new(),
            at: HashMap::new(),
            done: HashSet::new(),
            needs_signature: true,
        };
        let text = match std::fs::read(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(state),
            Err(e) => return Err(e),
        };
        if text.is_empty() {
            return Ok(state);
        }
        for raw in text.split(|&b| b == b'\n') {
            let line = trim(raw).to_vec();
            if line.is_empty() || line[0] == b'#' {
                if line == SIGNATURE {
                    state.needs_signature = false;
                }
                state.lines.push(line);
                continue;
            }
            let name = split_args(&line)
                .and_then(|w| w.into_iter().next())
                .map(|w| String::from_utf8_lossy(&w).to_ascii_lowercase())
                .and_then(|n| canonical(&n));
            match name {
                Some(name) => {
                    state
                        .at
                        .entry(name)
                        .or_default()
                        .push_back(state.lines.len());
                    state.lines.push(line);
                }
                None => {
                    let mut commented = b"# ??? ".to_vec();
                    commented.extend_from_slice(&line);
                    state.lines.push(commented);
                }
            }
        }
        Ok(state)
    }

    /// Writes `line` for `option`: over its next old line, else appended
    /// when `force` (its value is not the default).
    pub(crate) fn line(&mut self, option: &str, line: Vec<u8>, force: bool) {
        self.done.insert(option.to_string());
        if let Some(old) = self.at.get_mut(option).and_then(|l| l.pop_front()) {
            self.lines[old] = line;
            return;
        }
        if !force {
            return;
        }
        if self.needs_signature {
            self.lines.push(SIGNATURE.to_vec());
            self.needs_signature = false;
        }
        self.lines.push(line);
    }

    /// Marks `option` handled with nothing to write: its old lines go.
    pub(crate) fn mark(&mut self, option: &str) {
        self.done.insert(option.to_string());
    }

    /// The new text: old lines of handled options not reused are blanked,
    /// and runs of empty lines become one.
    pub(crate) fn finish(mut self) -> Vec<u8> {
        for (option, lines) in &self.at {
            if self.done.contains(option) {
                for &i in lines {
                    self.lines[i].clear();
                }
            }
        }
        let mut out = Vec::new();
        let mut was_empty = false;
        for line in &self.lines {
            if line.is_empty() {
                if was_empty {
                    continue;
                }
                was_empty = true;
            } else {
                was_empty = false;
            }
            out.extend_from_slice(line);
            out.push(b'\n');
        }
        out
    }
}

/// Replaces `path` with `content` atomically: a temporary file beside it,
/// fsync, mode 0644, rename, fsync of the directory (Redis's
/// `rewriteConfigOverwriteFile`).
pub(crate) fn overwrite(path: &Path, content: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(format!(".{:06x}", rand::random_range(0..0x100_0000u32)));
    let tmp = PathBuf::from(tmp_name);
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(content)?;
        f.sync_all()?;
        f.set_permissions(std::fs::Permissions::from_mode(0o644))?;
        std::fs::rename(&tmp, path)?;
        if let Some(dir) = path.parent() {
            std::fs::File::open(dir)?.sync_all()?;
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Option<Vec<String>> {
        split_args(line.as_bytes()).map(|w| {
            w.into_iter()
                .map(|w| String::from_utf8_lossy(&w).into_owned())
                .collect()
        })
    }

    #[test]
    fn splits_as_sdssplitargs() {
        assert_eq!(words("  port   6380 ").unwrap(), ["port", "6380"]);
        assert_eq!(words(r#"a "b c" 'd e'"#).unwrap(), ["a", "b c", "d e"]);
        assert_eq!(words(r#""\x41\n\t\q""#).unwrap(), ["A\n\tq"]);
        assert_eq!(words(r"'it\'s'").unwrap(), ["it's"]);
        assert_eq!(words(r#"x"y z""#).unwrap(), ["xy z"]);
        assert_eq!(words(r#"save """#).unwrap(), ["save", ""]);
        assert!(words(r#""abc"#).is_none());
        assert!(words(r#""abc"d"#).is_none());
        assert!(words("'abc").is_none());
        assert_eq!(words("").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn repr_reads_back() {
        let odd = b"a\"b\\c\n\x01\xff z";
        let quoted = repr(odd);
        assert_eq!(quoted, r#""a\"b\\c\n\x01\xff z""#);
        assert_eq!(split_args(quoted.as_bytes()).unwrap(), vec![odd.to_vec()]);
    }

    fn argv(args: &[&str]) -> Invocation {
        let v: Vec<Vec<u8>> = std::iter::once("zwindow")
            .chain(args.iter().copied())
            .map(|a| a.as_bytes().to_vec())
            .collect();
        parse_argv(&v)
    }

    fn options(args: &[&str]) -> String {
        match argv(args) {
            Invocation::Run(s) => String::from_utf8(s.options).unwrap(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn command_line_as_redis() {
        assert_eq!(argv(&["-v"]), Invocation::Version);
        assert_eq!(argv(&["--help"]), Invocation::Help);
        assert_eq!(options(&["--port", "6380"]), "port \"6380\" ");
        assert_eq!(
            options(&["--save", "--appendonly", "yes"]),
            "save \"\"\nappendonly \"yes\" "
        );
        assert_eq!(options(&["--save"]), "save \"\"");
        assert_eq!(
            options(&["--save", "900", "1", "--port 7"]),
            "save \"900\" \"1\" \nport 7 "
        );
        assert_eq!(options(&["--bind", "a b"]), "bind \"a b\" ");
        let Invocation::Run(s) = argv(&["redis.conf", "--port", "1", "-"]) else {
            panic!()
        };
        assert!(s.file.unwrap().is_absolute());
        assert!(s.stdin);
        let Invocation::Run(s) = argv(&["-"]) else {
            panic!()
        };
        assert!(s.stdin && s.file.is_none());
        let Invocation::Run(s) = argv(&["--config", "z.conf", "--port", "1"]) else {
            panic!()
        };
        assert!(s.file.unwrap().ends_with("z.conf"));
        assert_eq!(s.options, b"port \"1\" ");
    }

    #[test]
    fn rewrite_keeps_what_it_does_not_own() {
        let dir = std::env::temp_dir().join(format!("zw-rewrite-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.conf");
        std::fs::write(
            &path,
            "# top\nport 1\nsave 1 1\nsave 2 2\n\n\n\nmystery x\nhz 5\n",
        )
        .unwrap();
        let known = |n: &str| (n != "mystery").then(|| n.to_string());
        let mut r = Rewrite::read(&path, known).unwrap();
        r.line("port", b"port 2".to_vec(), true);
        r.line("save", b"save 3 3".to_vec(), true);
        r.mark("save");
        r.line("hz", b"hz 10".to_vec(), false);
        r.line("timeout", b"timeout 0".to_vec(), false);
        r.line("maxclients", b"maxclients 5".to_vec(), true);
        let text = String::from_utf8(r.finish()).unwrap();
        assert_eq!(
            text,
            "# top\nport 2\nsave 3 3\n\n# ??? mystery x\nhz 10\n\n# Generated by CONFIG REWRITE\nmaxclients 5\n"
        );
        overwrite(&path, text.as_bytes()).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
