//! Finding commands: the registered table ([`install`]), its name index
//! (what every request's [`lookup`] reads), resolution of a request to the
//! command or subcommand it runs with Redis's unknown-command and arity
//! errors ([`resolve`]), and the config file's `rename-command`s.

use std::sync::OnceLock;

use super::Command;
use crate::protocol::Args;

/// The registered table with its name index. Built once, whole, when the
/// table is installed: nothing derived from an empty table (before it) can
/// outlive the install.
struct Registry {
    table: &'static [&'static [Command]],
    index: Index,
}

static REGISTRY: OnceLock<Registry> = OnceLock::new();

/// Registers the command table: every family's commands, as the commands
/// layer strings them together (`commands::TABLE`, which is the only list
/// of commands; `commands::install` calls this). Each entry point installs
/// it before anything looks a command up — `main` before it reads the
/// config file (`rename-command` checks names), the server at startup.
/// Before that the table reads as empty: a lookup finds nothing, never
/// panics. The first table installed stays; later calls change nothing.
pub(crate) fn install(table: &'static [&'static [Command]]) {
    REGISTRY.get_or_init(|| Registry {
        table,
        index: Index::build(table),
    });
}

fn registry() -> Option<&'static Registry> {
    // Unit tests have no entry point to install the table: the first
    // lookup of a test binary does.
    #[cfg(test)]
    install(tests::table());
    REGISTRY.get()
}

/// Name → command, built once from the table: the commands sorted by
/// (name length, first letter), with where each such bucket starts.
/// Every request looks its name up here, so the lookup hashes nothing and
/// allocates nothing: it picks the bucket from two bytes it already has and
/// compares the name's first eight bytes, lowercased as one word, with
/// those of the one to five commands in it (and the rest of a longer name
/// case-insensitively). (A SipHash map was ~3% of the server's CPU on pipelined ZADD;
/// a foldhash one still ~2% with its lowercased copy of the name.)
struct Index {
    commands: Vec<&'static Command>,
    /// Each command's [`name_word`], by the same index: a bucket is
    /// scanned comparing one word per command rather than its name byte by
    /// byte (that comparison was 5% of a pipelined ZCARD's instructions).
    words: Vec<u64>,
    /// `starts[bucket(len, first)]..starts[bucket + 1]` in `commands`.
    starts: Vec<u16>,
}

/// A name's first eight bytes, lowercased, zero-padded, as one word. Two
/// names of the same length of at most eight bytes are equal ignoring
/// ASCII case exactly when their words are.
fn name_word(name: &[u8]) -> u64 {
    // Gathered from loads of fixed sizes (copying a slice of any other
    // length calls `memcpy`): for 4 to 7 bytes two overlapping 4-byte
    // loads, for 1 to 3 the first, middle and last byte. Overlapping bytes
    // are the same bytes, so OR-ing them is harmless.
    let n = name.len();
    let word = if let Some(eight) = name.first_chunk::<8>() {
        u64::from_le_bytes(*eight)
    } else if let (Some(lo), Some(hi)) = (name.first_chunk::<4>(), name.last_chunk::<4>()) {
        u64::from(u32::from_le_bytes(*lo)) | (u64::from(u32::from_le_bytes(*hi)) << (8 * (n - 4)))
    } else {
        let byte = |i: usize| name.get(i).map_or(0, |&b| u64::from(b) << (8 * i));
        byte(0) | byte(n / 2) | byte(n.saturating_sub(1))
    };
    lowercase_word(word)
}

/// ASCII-lowercases the eight bytes of `w` at once: a byte in `A..=Z`
/// gains 0x20. Adding 0x3f (or 0x25) to a byte's low seven bits sets its
/// top bit exactly when the byte is at least `A` (or above `Z`), and never
/// carries into the next byte; bytes with the top bit set are not ASCII.
fn lowercase_word(w: u64) -> u64 {
    const EACH: u64 = 0x0101_0101_0101_0101;
    let low7 = w & (0x7f * EACH);
    let at_least_a = low7 + 0x3f * EACH;
    let above_z = low7 + 0x25 * EACH;
    let upper = at_least_a & !above_z & !w & (0x80 * EACH);
    w | (upper >> 2)
}

/// Longest command name looked up (Redis's are at most 20 bytes; renamed
/// ones at most 32).
const MAX_NAME: usize = 32;

impl Index {
    /// The bucket of a name: its length and its first byte folded to 32
    /// values (ASCII letters of either case share one; what else collides
    /// is told apart by the comparison).
    fn bucket(name: &[u8]) -> Option<usize> {
        let first = *name.first()?;
        (name.len() <= MAX_NAME).then(|| name.len() * 32 + (first & 0x1f) as usize)
    }

    fn build(table: &'static [&'static [Command]]) -> Index {
        let mut commands: Vec<&'static Command> =
            table.iter().flat_map(|family| family.iter()).collect();
        let key = |c: &Command| Self::bucket(c.name.as_bytes()).expect("command names fit");
        commands.sort_by_key(|c| key(c));
        let buckets = (MAX_NAME + 1) * 32;
        let mut starts = vec![0u16; buckets + 1];
        for c in &commands {
            starts[key(c) + 1] += 1;
        }
        for b in 0..buckets {
            starts[b + 1] += starts[b];
        }
        let words = commands
            .iter()
            .map(|c| name_word(c.name.as_bytes()))
            .collect();
        Index {
            commands,
            words,
            starts,
        }
    }

    fn get(&self, name: &[u8]) -> Option<&'static Command> {
        let b = Self::bucket(name)?;
        let (from, to) = (self.starts[b] as usize, self.starts[b + 1] as usize);
        // A bucket's names all have `name`'s length: for names of up to
        // eight bytes the word says it all.
        let word = name_word(name);
        let long = name.len() > 8;
        let (words, commands) = (&self.words[from..to], &self.commands[from..to]);
        words
            .iter()
            .zip(commands)
            .find(|&(&w, c)| w == word && (!long || c.name.as_bytes().eq_ignore_ascii_case(name)))
            .map(|(_, &c)| c)
    }
}

/// Looks a command up by (any-case) name without allocating.
pub(crate) fn lookup(name: &[u8]) -> Option<&'static Command> {
    if let Some(renamed) = RENAMES.get() {
        let mut buf = [0u8; MAX_NAME];
        let lower = buf.get_mut(..name.len())?;
        for (d, s) in lower.iter_mut().zip(name) {
            *d = s.to_ascii_lowercase();
        }
        if let Some(cmd) = renamed.added.get(&*lower) {
            return Some(cmd);
        }
        if renamed.hidden.iter().any(|h| h.as_slice() == &*lower) {
            return None;
        }
    }
    registry()?.index.get(name)
}

/// The config file's `rename-command`s: new names, and the old names no
/// longer callable. Set once at startup, before any client connects.
struct Renames {
    added: std::collections::HashMap<Vec<u8>, &'static Command>,
    hidden: Vec<Vec<u8>>,
}

static RENAMES: OnceLock<Renames> = OnceLock::new();

/// Applies `rename-command old new` pairs (lower-case; `new` empty removes
/// the command), as Redis edits its command table while loading the config.
pub(crate) fn rename_commands(pairs: &[(Vec<u8>, Vec<u8>)]) -> Result<(), String> {
    if pairs.is_empty() {
        return Ok(());
    }
    let mut renames = Renames {
        added: Default::default(),
        hidden: Vec::new(),
    };
    for (from, to) in pairs {
        let cmd = renames
            .added
            .remove(from)
            .or_else(|| registry()?.index.get(from))
            .ok_or("No such command in rename-command")?;
        renames.hidden.push(from.clone());
        if !to.is_empty() {
            if to.len() > 32 {
                return Err("rename-command: the new name is longer than 32 bytes".into());
            }
            renames.hidden.retain(|h| h != to);
            renames.added.insert(to.clone(), cmd);
        }
    }
    RENAMES
        .set(renames)
        .map_err(|_| "rename-command applied twice".to_string())
}

/// A subcommand of `parent` by (any-case) name.
pub(crate) fn lookup_sub(parent: &'static Command, name: &[u8]) -> Option<&'static Command> {
    parent
        .subcommands
        .iter()
        .find(|s| s.name.as_bytes().eq_ignore_ascii_case(name))
}

/// Every command (not its subcommands), in table order.
pub(crate) fn all_commands() -> impl Iterator<Item = &'static Command> {
    let table = registry().map_or(&[][..], |r| r.table);
    table.iter().flat_map(|family| family.iter())
}

/// Why a request names no command to run: Redis's error reply for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unresolved {
    /// `ERR unknown command '…', with args beginning with: …`, quoting the
    /// client's bytes, which need not be UTF-8.
    UnknownCommand(Vec<u8>),
    /// `ERR unknown subcommand '…'. Try … HELP.`
    UnknownSubcommand(String),
    /// `ERR wrong number of arguments for '…' command`.
    Arity(String),
}

impl Unresolved {
    /// The error reply's text.
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Unresolved::UnknownCommand(b) => b,
            Unresolved::UnknownSubcommand(s) | Unresolved::Arity(s) => s.as_bytes(),
        }
    }
}

/// Resolves `args` to the command (or subcommand) to run, or the
/// unknown-command or arity error if there is none.
pub(crate) fn resolve(args: &Args<'_>) -> Result<&'static Command, Unresolved> {
    let name = args.get(0);
    let Some(cmd) = lookup(name) else {
        return Err(unknown_command(args));
    };
    if !cmd.arity_ok(args.len()) {
        return Err(arity_error(cmd, None));
    }
    if cmd.subcommands.is_empty() || args.len() < 2 {
        return Ok(cmd);
    }
    let Some(sub) = lookup_sub(cmd, args.get(1)) else {
        return Err(Unresolved::UnknownSubcommand(format!(
            "ERR unknown subcommand '{}'. Try {} HELP.",
            String::from_utf8_lossy(&args.get(1)[..args.get(1).len().min(128)]),
            cmd.name.to_ascii_uppercase()
        )));
    };
    if !sub.arity_ok(args.len()) {
        return Err(arity_error(sub, Some(cmd)));
    }
    Ok(sub)
}

fn arity_error(cmd: &Command, parent: Option<&Command>) -> Unresolved {
    match parent {
        Some(p) => Unresolved::Arity(format!(
            "ERR wrong number of arguments for '{}|{}' command",
            p.name, cmd.name
        )),
        None => Unresolved::Arity(format!(
            "ERR wrong number of arguments for '{}' command",
            cmd.name
        )),
    }
}

/// Redis's unknown-command text, quoting at most the first arguments.
fn unknown_command(args: &Args<'_>) -> Unresolved {
    // Mirrors Redis's `%.*s` formatting: each argument is clipped to what is
    // left of a 128-byte budget, and C strings end at the first NUL.
    let cstr = |a: &'_ [u8]| -> Vec<u8> { a.split(|&b| b == 0).next().unwrap_or(&[]).to_vec() };
    let mut quoted: Vec<u8> = Vec::new();
    for a in args.iter().skip(1) {
        if quoted.len() >= 128 {
            break;
        }
        let mut a = cstr(a);
        a.truncate(128 - quoted.len());
        quoted.push(b'\'');
        quoted.extend(a);
        quoted.extend_from_slice(b"' ");
    }
    let mut name = cstr(args.get(0));
    name.truncate(128);
    let mut msg = b"ERR unknown command '".to_vec();
    msg.extend(name);
    msg.extend_from_slice(b"', with args beginning with: ");
    msg.extend(quoted);
    Unresolved::UnknownCommand(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table the commands layer registers at its entry points. Read
    /// at run time, not copied into a static of this module: a copy made
    /// while compiling may be a copy of the entries too, at other
    /// addresses than those the handlers' counters are found by.
    pub(super) fn table() -> &'static [&'static [Command]] {
        crate::commands::TABLE
    }

    #[test]
    fn lookup_is_case_insensitive() {
        assert_eq!(lookup(b"GeT").map(|c| c.name), Some("get"));
        assert!(lookup(b"nosuchcommand").is_none());
        assert!(lookup(&[b'a'; 100]).is_none());
        assert!(lookup(b"").is_none());
        // Names that share a bucket (length and first letter) with others,
        // and bytes that fold onto a letter's bucket.
        assert_eq!(
            lookup(b"ZRANGEBYSCORE").map(|c| c.name),
            Some("zrangebyscore")
        );
        assert!(lookup(b"\x1aadd").is_none());
        assert!(lookup(b"z@dd").is_none());
        // Past the first eight bytes (one word) the rest of the name counts.
        assert!(lookup(b"ZRANGEBYSCORX").is_none());
        assert_eq!(lookup(b"zCaRd").map(|c| c.name), Some("zcard"));
        assert!(lookup(b"zcar\0").is_none());
    }

    #[test]
    fn a_name_word_is_its_first_eight_bytes_lowercased() {
        for name in [
            &b""[..],
            b"a",
            b"Ab",
            b"aBc",
            b"GET",
            b"zcard",
            b"ZADDxy",
            b"ZCOUNTx",
        ] {
            let mut want = [0u8; 8];
            want[..name.len()].copy_from_slice(name);
            want.make_ascii_lowercase();
            assert_eq!(name_word(name), u64::from_le_bytes(want), "{name:?}");
        }
        assert_eq!(
            name_word(b"ZRANGEBYSCORE"),
            u64::from_le_bytes(*b"zrangeby")
        );
        // Every byte value, in every position.
        for b in 0..=255u8 {
            for at in 0..8 {
                let mut bytes = *b"GeT zCaR";
                bytes[at] = b;
                let mut want = bytes;
                want.make_ascii_lowercase();
                let got = lowercase_word(u64::from_le_bytes(bytes));
                assert_eq!(got, u64::from_le_bytes(want), "{b:#x} at {at}");
            }
        }
    }
}
