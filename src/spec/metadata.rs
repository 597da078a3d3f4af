//! Redis's own metadata for the commands it shares with zwindow: what
//! redis-server 8.0.2 reports about a command beyond its name, arity and
//! flags ([`Meta`]: ACL categories, command tips, key specs, the legacy
//! first/last/step range), one per command and subcommand in the generated
//! [`meta`](super::meta) (and [`meta_later`](super::meta_later) for what
//! it lacks: zwindow's sorted-set member TTLs, later Redis commands); the
//! ACL categories of zwindow's own commands; and finding an
//! invocation's keys from the key specs, or Redis's getkeys procs where
//! they cannot (db.c). `COMMAND INFO/GETKEYS/LIST` print it; ACL rules
//! check keys and categories with it.

use super::Command;
use super::flags::*;
use crate::util::{eq_ic, parse_i64};

/// What redis-server 8.0.2 reports about one of its commands beyond its
/// name, arity and flags; [`meta::META`](super::meta::META) holds one per
/// command and subcommand, generated from Redis's own command JSON files.
pub(crate) struct Meta {
    /// `parent|sub` for subcommands.
    pub(crate) name: &'static str,
    /// Only the test holding zwindow's table to Redis's reads this and
    /// `flags`: replies print the table's own.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) arity: i32,
    /// Every flag Redis declares, hidden ones included (lowercase).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) flags: &'static [&'static str],
    pub(crate) movablekeys: bool,
    /// The legacy (first, last, step) as COMMAND INFO prints it.
    pub(crate) range: [i32; 3],
    /// `@category` names, in the order Redis prints them.
    pub(crate) acl: &'static [&'static str],
    pub(crate) tips: &'static [&'static str],
    pub(crate) getkeys: Option<GetKeysProc>,
    pub(crate) key_specs: &'static [KeySpec],
}

/// One key spec (server.h `keySpec`).
pub(crate) struct KeySpec {
    pub(crate) notes: Option<&'static str>,
    /// [`ks`] bits.
    pub(crate) flags: u16,
    pub(crate) begin: Begin,
    pub(crate) find: Find,
}

/// Where a key spec starts looking.
pub(crate) enum Begin {
    Unknown,
    Index(i32),
    /// The argument after `keyword`, searched from `startfrom` (backwards
    /// from the end when negative).
    Keyword {
        keyword: &'static str,
        startfrom: i32,
    },
}

/// How a key spec finds its keys from where it starts.
pub(crate) enum Find {
    Unknown,
    Range {
        lastkey: i32,
        keystep: i32,
        limit: i32,
    },
    Keynum {
        keynumidx: i32,
        firstkey: i32,
        keystep: i32,
    },
}

/// Redis's key-spec flags (`CMD_KEY_*`).
pub(crate) mod ks {
    pub(crate) const RO: u16 = 1 << 0;
    pub(crate) const RW: u16 = 1 << 1;
    pub(crate) const OW: u16 = 1 << 2;
    pub(crate) const RM: u16 = 1 << 3;
    pub(crate) const ACCESS: u16 = 1 << 4;
    pub(crate) const UPDATE: u16 = 1 << 5;
    pub(crate) const INSERT: u16 = 1 << 6;
    pub(crate) const DELETE: u16 = 1 << 7;
    pub(crate) const NOT_KEY: u16 = 1 << 8;
    pub(crate) const INCOMPLETE: u16 = 1 << 9;
    pub(crate) const VARIABLE_FLAGS: u16 = 1 << 10;

    /// In the order Redis prints them (server.c `addReplyFlagsForKeyArgs`).
    pub(crate) const NAMES: [(u16, &str); 11] = [
        (RO, "RO"),
        (RW, "RW"),
        (OW, "OW"),
        (RM, "RM"),
        (ACCESS, "access"),
        (UPDATE, "update"),
        (INSERT, "insert"),
        (DELETE, "delete"),
        (NOT_KEY, "not_key"),
        (INCOMPLETE, "incomplete"),
        (VARIABLE_FLAGS, "variable_flags"),
    ];
}

/// db.c's getkeys procs, which find keys where the key specs cannot (or
/// cannot flag them): named after Redis's functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GetKeysProc {
    Sintercard,
    ZunionInterDiffStore,
    ZunionInterDiff,
    Eval,
    Function,
    Lmpop,
    Blmpop,
    Zmpop,
    SortRo,
    Sort,
    Migrate,
    Georadius,
    Xread,
    Set,
    Bitfield,
}

/// acl.c `ACLCommandCategories`: the order categories print in.
pub(crate) const ACL_ORDER: [&str; 21] = [
    "@keyspace",
    "@read",
    "@write",
    "@set",
    "@sortedset",
    "@list",
    "@hash",
    "@string",
    "@bitmap",
    "@hyperloglog",
    "@geo",
    "@stream",
    "@pubsub",
    "@admin",
    "@fast",
    "@slow",
    "@blocking",
    "@dangerous",
    "@connection",
    "@transaction",
    "@scripting",
];

/// Redis's metadata of a table entry, if redis-server has that command.
pub(crate) fn meta_of(c: &Command, parent: Option<&Command>) -> Option<&'static Meta> {
    let meta = super::meta::META;
    let (p, sep): (&[u8], &[u8]) = match parent {
        Some(p) => (p.name.as_bytes(), b"|"),
        None => (b"", b""),
    };
    let want = || p.iter().chain(sep).chain(c.name.as_bytes()).copied();
    let find = |meta: &'static [Meta]| {
        meta.binary_search_by(|m| m.name.bytes().cmp(want()))
            .ok()
            .map(|i| &meta[i])
    };
    // Redis 8.0's, else zwindow's own or a newer Redis's (meta_later).
    find(meta).or_else(|| find(super::meta_later::META_LATER))
}

/// A command's ACL categories, in Redis's order: Redis's own for its
/// commands; for zwindow's own, what Redis derives for a command declared
/// with only its group's category (server.c `setImplicitACLCategories`).
pub(crate) fn categories(
    c: &'static Command,
    meta: Option<&'static Meta>,
) -> impl Iterator<Item = &'static str> {
    let group = match c.group {
        "generic" => "@keyspace",
        "string" => "@string",
        "list" => "@list",
        "set" => "@set",
        "sorted-set" => "@sortedset",
        "hash" => "@hash",
        "pubsub" => "@pubsub",
        "connection" => "@connection",
        "transactions" => "@transaction",
        "scripting" => "@scripting",
        _ => "",
    };
    let implied = move |cat: &str| match cat {
        "@write" => c.has(WRITE),
        "@read" => c.has(READONLY) && group != "@scripting",
        "@admin" | "@dangerous" => c.has(ADMIN),
        "@pubsub" => c.has(PUBSUB) || group == cat,
        "@fast" => c.has(FAST),
        "@slow" => !c.has(FAST),
        "@blocking" => c.has(BLOCKING),
        _ => group == cat,
    };
    let own = ACL_ORDER
        .iter()
        .copied()
        .filter(move |cat| meta.is_none() && implied(cat));
    meta.map_or(&[][..], |m| m.acl).iter().copied().chain(own)
}

impl Meta {
    /// db.c `doesCommandHaveKeys`.
    pub(crate) fn has_keys(&self) -> bool {
        self.getkeys.is_some() || self.key_specs.iter().any(|s| s.flags & ks::NOT_KEY == 0)
    }

    /// db.c `getKeysFromCommandWithSpecs`: (argument index, key-spec flags)
    /// of each key of `argv` (the command's own arguments, name first).
    /// The key specs answer when they are reliable; otherwise, or when they
    /// fail on these arguments, the command's getkeys proc does.
    pub(crate) fn keys(&self, argv: &[&[u8]], out: &mut Vec<(usize, u16)>) {
        let specs = self.key_specs;
        let has_keyspec = specs.iter().any(|s| s.flags & ks::NOT_KEY == 0);
        let variable = specs.iter().any(|s| s.flags & ks::VARIABLE_FLAGS != 0);
        if has_keyspec && !variable && keys_from_specs(specs, argv, out) {
            return;
        }
        out.clear();
        if let Some(p) = self.getkeys {
            p.keys(argv, out);
        }
    }
}

/// db.c `getKeysUsingKeySpecs` with the default search flags: `false`
/// where Redis returns -1 (an unknown or incomplete spec, or arguments the
/// spec cannot make sense of).
fn keys_from_specs(specs: &[KeySpec], argv: &[&[u8]], out: &mut Vec<(usize, u16)>) -> bool {
    // i64 throughout: Redis's int arithmetic never overflows on real
    // argument counts, and here nothing client-given can overflow either.
    let argc = argv.len() as i64;
    for spec in specs {
        if spec.flags & ks::NOT_KEY != 0 {
            continue;
        }
        let first = match spec.begin {
            Begin::Index(pos) => pos as i64,
            Begin::Keyword { keyword, startfrom } => {
                let startfrom = startfrom as i64;
                let (start, end) = if startfrom > 0 {
                    (startfrom, argc - 1)
                } else {
                    (argc + startfrom, 1)
                };
                let mut found = 0;
                let mut i = start;
                while i != end && (1..argc).contains(&i) {
                    if argv[i as usize].eq_ignore_ascii_case(keyword.as_bytes()) {
                        found = i + 1;
                        break;
                    }
                    i += if start <= end { 1 } else { -1 };
                }
                if found == 0 {
                    continue;
                }
                found
            }
            Begin::Unknown => return false,
        };
        let (first, last, step) = match spec.find {
            Find::Range {
                lastkey,
                keystep,
                limit,
            } => {
                let (lastkey, limit) = (lastkey as i64, limit as i64);
                let last = if lastkey >= 0 {
                    first + lastkey
                } else if limit == 0 {
                    argc + lastkey
                } else {
                    first + ((argc - first) / limit + lastkey)
                };
                (first, last, keystep as i64)
            }
            Find::Keynum {
                keynumidx,
                firstkey,
                keystep,
            } => {
                // Redis checks the relative index against argc.
                if keynumidx as i64 >= argc {
                    return false;
                }
                let at = usize::try_from(first + keynumidx as i64).ok();
                let numkeys = at.and_then(|at| argv.get(at)).and_then(|a| parse_i64(a));
                let Some(numkeys) = numkeys.filter(|&n| n >= 0) else {
                    return false;
                };
                let first = first + firstkey as i64;
                // Redis takes `(int)numkeys`; the keys are `keystep` apart
                // (MSETEX's pairs: Redis 8.4 scales the span by the step).
                let span = ((numkeys as i32) as i64 - 1) * (keystep as i64).max(1);
                (first, first + span, keystep as i64)
            }
            Find::Unknown => return false,
        };
        if last >= argc || last < first || first >= argc {
            return false;
        }
        let mut i = first;
        while i <= last {
            out.push((i as usize, spec.flags));
            i += step.max(1);
        }
        if spec.flags & ks::INCOMPLETE != 0 {
            return false;
        }
    }
    true
}

/// C's `atoi` (what Redis's genericGetKeys parses numkeys with): leading
/// whitespace, a sign, digits up to the first non-digit; out of range
/// saturates as `strtol` does, then truncates to `int`.
pub(crate) fn c_atoi(s: &[u8]) -> i32 {
    let mut rest = s;
    while let [b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r', tail @ ..] = rest {
        rest = tail;
    }
    let neg = rest.first() == Some(&b'-');
    if let [b'-' | b'+', tail @ ..] = rest {
        rest = tail;
    }
    let mut v: i128 = 0;
    for &d in rest.iter().take_while(|d| d.is_ascii_digit()) {
        v = (v * 10 + (d - b'0') as i128).min(i64::MAX as i128 + 1);
    }
    let v = if neg { -v } else { v };
    v.clamp(i64::MIN as i128, i64::MAX as i128) as i64 as i32
}

impl GetKeysProc {
    /// The keys of `argv` as Redis's proc finds them.
    fn keys(self, argv: &[&[u8]], out: &mut Vec<(usize, u16)>) {
        use GetKeysProc::*;
        use ks::*;
        let arg = |i: usize| argv.get(i).copied().unwrap_or_default();
        let argc = argv.len();
        match self {
            Sintercard | ZunionInterDiff | Lmpop | Zmpop => generic_keys(0, 1, 2, 1, argv, out),
            ZunionInterDiffStore => generic_keys(1, 2, 3, 1, argv, out),
            Eval | Function | Blmpop => generic_keys(0, 2, 3, 1, argv, out),
            SortRo => out.push((1, RO | ACCESS)),
            Sort => {
                out.push((1, RO | ACCESS));
                // The last STORE wins; LIMIT, GET and BY skip their
                // arguments, anything else is taken as a lone option.
                let mut store = None;
                let mut i = 2;
                while i < argc {
                    if eq_ic(arg(i), "limit") {
                        i += 2;
                    } else if eq_ic(arg(i), "store") && i + 1 < argc {
                        store = Some(i + 1);
                    } else if eq_ic(arg(i), "get") || eq_ic(arg(i), "by") {
                        i += 1;
                    }
                    i += 1;
                }
                out.extend(store.map(|s| (s, OW | UPDATE)));
            }
            Migrate => {
                let (mut first, mut num) = (3, 1);
                let mut i = 6;
                while argc > 6 && i < argc {
                    if eq_ic(arg(i), "keys") {
                        if arg(3).is_empty() {
                            first = i + 1;
                            num = argc - first;
                        } else {
                            // A syntax error MIGRATE itself reports.
                            num = 0;
                        }
                        break;
                    }
                    if eq_ic(arg(i), "auth") {
                        i += 1;
                    } else if eq_ic(arg(i), "auth2") {
                        i += 2;
                    }
                    i += 1;
                }
                out.extend((first..first + num).map(|i| (i, RW | ACCESS | DELETE)));
            }
            Georadius => {
                out.push((1, 0));
                let mut stored = None;
                let mut i = 5;
                while i < argc {
                    if (eq_ic(arg(i), "store") || eq_ic(arg(i), "storedist")) && i + 1 < argc {
                        stored = Some(i + 1);
                        i += 1;
                    }
                    i += 1;
                }
                out.extend(stored.map(|s| (s, 0)));
            }
            Xread => {
                let mut streams = None;
                let mut i = 1;
                while i < argc {
                    let a = arg(i);
                    if eq_ic(a, "block") || eq_ic(a, "count") {
                        i += 1;
                    } else if eq_ic(a, "group") {
                        i += 2;
                    } else if eq_ic(a, "streams") {
                        streams = Some(i);
                        break;
                    } else if !eq_ic(a, "noack") {
                        break;
                    }
                    i += 1;
                }
                let Some(at) = streams else { return };
                let num = argc - at - 1;
                if num == 0 || !num.is_multiple_of(2) {
                    return;
                }
                out.extend((at + 1..argc - num / 2).map(|i| (i, 0)));
            }
            Set => {
                // Exactly GET, as a C string (a NUL ends it).
                let is_get = |a: &[u8]| {
                    a.len() >= 3
                        && a[..3].eq_ignore_ascii_case(b"get")
                        && a.get(3).is_none_or(|&b| b == 0)
                };
                let flags = if argv.iter().skip(3).any(|a| is_get(a)) {
                    RW | ACCESS | UPDATE
                } else {
                    OW | UPDATE
                };
                out.push((1, flags));
            }
            Bitfield => {
                let mut readonly = true;
                let mut i = 2;
                while i < argc {
                    let rem = argc - i - 1;
                    let a = arg(i);
                    if eq_ic(a, "get") && rem >= 2 {
                        i += 2;
                    } else if (eq_ic(a, "set") || eq_ic(a, "incrby")) && rem >= 3 {
                        readonly = false;
                        break;
                    } else if eq_ic(a, "overflow") && rem >= 1 {
                        i += 1;
                    } else {
                        // A syntax error: safer to assume a write.
                        readonly = false;
                        break;
                    }
                    i += 1;
                }
                out.push((
                    1,
                    if readonly {
                        RO | ACCESS
                    } else {
                        RW | ACCESS | UPDATE
                    },
                ));
            }
        }
    }
}

/// db.c `genericGetKeys`: `numkeys` keys (atoi-parsed, as Redis does) from
/// `first`, and the destination key, if any, after them. No flags.
fn generic_keys(
    store: usize,
    count_at: usize,
    first: usize,
    step: usize,
    argv: &[&[u8]],
    out: &mut Vec<(usize, u16)>,
) {
    let num = c_atoi(argv.get(count_at).copied().unwrap_or_default());
    if num < 1 || num as usize > (argv.len().saturating_sub(first)) / step {
        return;
    }
    out.extend((0..num as usize).map(|i| (first + i * step, 0)));
    if store != 0 {
        out.push((store, 0));
    }
}

#[cfg(test)]
mod tests {
    use super::super::meta::META;
    use super::*;
    use crate::spec::all_commands;

    #[test]
    fn meta_is_sorted_for_binary_search() {
        for w in META
            .windows(2)
            .chain(super::super::meta_later::META_LATER.windows(2))
        {
            assert!(
                w[0].name.as_bytes() < w[1].name.as_bytes(),
                "{} ≥ {}",
                w[0].name,
                w[1].name
            );
        }
    }

    /// meta_later only holds what the generated metadata lacks (it would
    /// never be read otherwise).
    #[test]
    fn meta_later_is_not_in_meta() {
        for m in super::super::meta_later::META_LATER {
            assert!(
                META.iter().all(|g| g.name != m.name),
                "{} is in the generated metadata",
                m.name
            );
        }
    }

    /// Every table entry Redis also has declares Redis's arity and flags
    /// (the ones zwindow models; `COMMAND INFO` prints the table's).
    #[test]
    fn table_matches_redis_arity_and_flags() {
        // Flags Redis hides and zwindow has no use for.
        const UNMODELED: &[&str] = &[
            "sentinel",
            "only_sentinel",
            "protected",
            "touches_arbitrary_keys",
        ];
        let mut mismatches = Vec::new();
        for c in all_commands() {
            let subs = c.subcommands.iter().map(move |s| (s, Some(c)));
            for (cmd, parent) in std::iter::once((c, None)).chain(subs) {
                let Some(m) = meta_of(cmd, parent) else {
                    continue;
                };
                let mut ours: Vec<&str> = NAMES
                    .iter()
                    .chain(&[(MAY_REPLICATE, "may_replicate")])
                    .filter(|(f, _)| cmd.has(*f))
                    .map(|(_, n)| *n)
                    .collect();
                let mut redis: Vec<&str> = m
                    .flags
                    .iter()
                    .copied()
                    .filter(|f| !UNMODELED.contains(f))
                    .collect();
                ours.sort_unstable();
                redis.sort_unstable();
                // Redis's own xread.json names `blocking` twice.
                redis.dedup();
                if ours != redis || cmd.arity != m.arity {
                    mismatches.push(format!(
                        "{}: arity {} flags {ours:?}, Redis: arity {} flags {redis:?}",
                        m.name, cmd.arity, m.arity
                    ));
                }
            }
        }
        assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    }

    fn keys_of(line: &str) -> Vec<(String, u16)> {
        // `''` stands for an empty argument.
        let argv: Vec<&[u8]> = line
            .split(' ')
            .map(|a| if a == "''" { &b""[..] } else { a.as_bytes() })
            .collect();
        let name = String::from_utf8_lossy(argv[0]).to_lowercase();
        let meta = META
            .iter()
            .find(|m| m.name == name)
            .expect("a Redis command");
        let mut out = Vec::new();
        meta.keys(&argv, &mut out);
        out.into_iter()
            .map(|(i, f)| (String::from_utf8_lossy(argv[i]).into_owned(), f))
            .collect()
    }

    #[test]
    fn keys_from_specs_and_procs() {
        use ks::*;
        let k = |s: &str, f: u16| (s.to_string(), f);
        assert_eq!(keys_of("SET k v"), [k("k", OW | UPDATE)]);
        assert_eq!(keys_of("SET k v GET"), [k("k", RW | ACCESS | UPDATE)]);
        assert_eq!(
            keys_of("ZUNIONSTORE d 2 a b WEIGHTS 1 2"),
            [
                k("d", OW | UPDATE),
                k("a", RO | ACCESS),
                k("b", RO | ACCESS)
            ]
        );
        // numkeys only atoi can read: the proc answers, destination last.
        assert_eq!(
            keys_of("ZUNIONSTORE d +2 a b"),
            [k("a", 0), k("b", 0), k("d", 0)]
        );
        assert_eq!(keys_of("ZUNIONSTORE d 5 a b"), []);
        assert_eq!(keys_of("EVAL s 0 a"), []);
        assert_eq!(
            keys_of("EVAL s 2 a b c"),
            [k("a", RW | ACCESS | UPDATE), k("b", RW | ACCESS | UPDATE)]
        );
        assert_eq!(
            keys_of("MSET a 1 b 2"),
            [k("a", OW | UPDATE), k("b", OW | UPDATE)]
        );
        assert_eq!(
            keys_of("SORT s BY x STORE d LIMIT 0 1"),
            [k("s", RO | ACCESS), k("d", OW | UPDATE)]
        );
        assert_eq!(
            keys_of("XREAD COUNT 2 STREAMS a b 0 0"),
            [k("a", RO | ACCESS), k("b", RO | ACCESS)]
        );
        assert_eq!(keys_of("MIGRATE h p k 0 5"), [k("k", RW | ACCESS | DELETE)]);
        // The KEYS spec is incomplete: the proc answers, and only for an
        // empty key argument.
        let m = RW | ACCESS | DELETE;
        assert_eq!(
            keys_of("MIGRATE h p '' 0 5 COPY KEYS a b"),
            [k("a", m), k("b", m)]
        );
        assert_eq!(keys_of("MIGRATE h p k 0 5 KEYS a b"), []);
    }

    #[test]
    fn atoi_as_c() {
        for (s, n) in [
            ("12", 12),
            (" +3x", 3),
            ("-4", -4),
            ("x", 0),
            ("", 0),
            ("99999999999999999999", -1),
        ] {
            assert_eq!(c_atoi(s.as_bytes()), n, "{s}");
        }
    }
}
