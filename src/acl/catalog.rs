//! The command table as ACL rules see it: every command and subcommand
//! with a dense id (the bit it owns in a selector's bitmap), its full name
//! (`config|get`), its ACL categories as a bit set, and how to find the
//! keys and channels of one invocation.
//!
//! Built once from the command table as [`crate::spec`] holds it; the
//! categories are the ones `COMMAND INFO` reports (Redis 7.0.15's own from
//! `spec/meta.rs`, or those Redis would derive for zwindow's own commands),
//! so an `ACL SETUSER +@sortedset` allows exactly what `COMMAND INFO` says
//! is `@sortedset`.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::protocol::Args;
use crate::spec::metadata::{ACL_ORDER, Meta, categories, ks, meta_of};
use crate::spec::{Command, Keys, all_commands, flags, lookup, lookup_sub};

/// Redis 7.0's ACL categories (acl.c `ACLCommandCategories`), in the order
/// `ACL CAT` lists them; a category's bit is `1 << index`.
pub(crate) fn category_names() -> impl Iterator<Item = &'static str> {
    ACL_ORDER.iter().map(|c| &c[1..])
}

/// The bit of a category named without its `@` (any case).
pub(crate) fn category_bit(name: &[u8]) -> Option<u32> {
    category_names()
        .position(|c| c.as_bytes().eq_ignore_ascii_case(name))
        .map(|i| 1 << i)
}

/// One command or subcommand.
pub(crate) struct Entry {
    pub(crate) cmd: &'static Command,
    pub(crate) parent: Option<&'static Command>,
    /// `name` or `parent|name`, as ACL rules and NOPERM errors print it.
    pub(crate) fullname: String,
    pub(crate) categories: u32,
    /// The ids of its subcommands (empty for a plain command).
    pub(crate) subs: std::ops::Range<usize>,
    meta: Option<&'static Meta>,
}

pub(crate) struct Catalog {
    pub(crate) entries: Vec<Entry>,
    /// Table entry address → id: no hashing of names on the check path.
    by_addr: HashMap<usize, usize, foldhash::fast::FixedState>,
}

/// Which channel arguments a pub/sub command names (db.c
/// `commands_with_channels`): (command, pattern?, publish-or-subscribe?,
/// first, count or all).
const CHANNEL_COMMANDS: &[(&str, bool, bool, usize, Option<usize>)] = &[
    ("subscribe", false, true, 1, None),
    ("ssubscribe", false, true, 1, None),
    ("psubscribe", true, true, 1, None),
    ("publish", false, true, 1, Some(1)),
    ("spublish", false, true, 1, Some(1)),
    ("unsubscribe", false, false, 1, None),
    ("sunsubscribe", false, false, 1, None),
    ("punsubscribe", true, false, 1, None),
];

impl Catalog {
    pub(crate) fn get() -> &'static Catalog {
        static CATALOG: OnceLock<Catalog> = OnceLock::new();
        CATALOG.get_or_init(Catalog::build)
    }

    fn build() -> Catalog {
        let mut entries = Vec::new();
        let bits = |c: &'static Command, p: Option<&'static Command>| {
            categories(c, meta_of(c, p))
                .filter_map(|name| category_bit(name.trim_start_matches('@').as_bytes()))
                .fold(0, |acc, b| acc | b)
        };
        for cmd in all_commands() {
            let id = entries.len();
            let first_sub = id + 1;
            entries.push(Entry {
                cmd,
                parent: None,
                fullname: cmd.name.to_string(),
                categories: bits(cmd, None),
                subs: first_sub..first_sub + cmd.subcommands.len(),
                meta: meta_of(cmd, None),
            });
            for sub in cmd.subcommands {
                let i = entries.len();
                entries.push(Entry {
                    cmd: sub,
                    parent: Some(cmd),
                    fullname: format!("{}|{}", cmd.name, sub.name),
                    categories: bits(sub, Some(cmd)),
                    subs: i..i,
                    meta: meta_of(sub, Some(cmd)),
                });
            }
        }
        let by_addr = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.cmd as *const Command as usize, i))
            .collect();
        Catalog { entries, by_addr }
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The id of a table entry (a command or subcommand).
    pub(crate) fn id_of(&self, cmd: &'static Command) -> Option<usize> {
        self.by_addr.get(&(cmd as *const Command as usize)).copied()
    }

    /// `name` or `parent|name` of a table entry.
    pub(crate) fn fullname(&self, cmd: &'static Command) -> &str {
        self.id_of(cmd)
            .map_or(cmd.name, |id| self.entries[id].fullname.as_str())
    }

    /// acl.c `ACLLookupCommand`: `name` or `name|sub`, any case; a
    /// `name|sub` of a command without subcommands is no command.
    pub(crate) fn lookup(&self, name: &[u8]) -> Option<usize> {
        let mut parts = name.split(|&b| b == b'|');
        let base = lookup(parts.next()?)?;
        let cmd = match (parts.next(), parts.next()) {
            (None, _) => base,
            (Some(sub), None) if !base.subcommands.is_empty() => lookup_sub(base, sub)?,
            _ => return None,
        };
        self.id_of(cmd)
    }

    /// Ids of the commands that are not subcommands, in table order.
    pub(crate) fn top_level(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.entries.len()).filter(|&i| self.entries[i].parent.is_none())
    }

    /// db.c `doesCommandHaveKeys`.
    pub(crate) fn has_keys(&self, id: usize) -> bool {
        let e = &self.entries[id];
        match e.meta {
            Some(m) => m.has_keys(),
            None => !matches!(e.cmd.keys, Keys::None | Keys::All),
        }
    }

    /// The keys of one invocation with their key-spec flags (db.c
    /// `getKeysFromCommandWithSpecs`), as the ACL check reads them.
    /// zwindow's own commands have no key specs: their table positions
    /// are flagged as a read (and an update for a write command).
    pub(crate) fn keys(&self, id: usize, args: &Args<'_>, out: &mut Vec<(usize, u16)>) {
        let e = &self.entries[id];
        match e.meta {
            Some(m) => {
                let argv: Vec<&[u8]> = args.iter().collect();
                m.keys(&argv, out);
            }
            None => {
                let flags = if e.cmd.has(flags::WRITE) {
                    ks::RW | ks::ACCESS | ks::UPDATE
                } else {
                    ks::RO | ks::ACCESS
                };
                e.cmd.key_indices(args, |i| out.push((i, flags)));
            }
        }
    }

    /// The channel arguments a permission check looks at: (first index,
    /// one past the last, pattern?) for a command that publishes or
    /// subscribes, None otherwise (the unsubscribe family is never denied).
    pub(crate) fn channels(&self, id: usize, argc: usize) -> Option<(usize, usize, bool)> {
        let e = &self.entries[id];
        if e.parent.is_some() {
            return None;
        }
        let &(_, pattern, checked, first, count) =
            CHANNEL_COMMANDS.iter().find(|c| c.0 == e.cmd.name)?;
        if !checked {
            return None;
        }
        let end = count.map_or(argc, |n| (first + n).min(argc));
        Some((first, end, pattern))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_categories() {
        let c = Catalog::get();
        let get = c.lookup(b"GET").unwrap();
        assert_eq!(c.entries[get].fullname, "get");
        let bits = c.entries[get].categories;
        for cat in ["read", "string", "fast"] {
            assert!(bits & category_bit(cat.as_bytes()).unwrap() != 0, "{cat}");
        }
        let cg = c.lookup(b"config|GET").unwrap();
        assert_eq!(c.entries[cg].fullname, "config|get");
        assert!(c.lookup(b"get|x").is_none());
        assert!(c.lookup(b"config|nosuch").is_none());
        assert!(c.lookup(b"config|get|x").is_none());
        assert_eq!(category_names().count(), 21);
        assert_eq!(category_bit(b"SortedSet"), Some(1 << 4));
    }
}
