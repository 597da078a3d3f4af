//! ACL users as data: flags, password hashes and selectors, the rules
//! that change them (`ACL SETUSER`'s `on`, `>pass`, `+@read`, `~key*`,
//! `(…)` …), the text that describes them (`ACL LIST`, `ACL SAVE`) and the
//! permission check of one command — as Redis's acl.c does them (command
//! rules kept as given, as since 7.2), with its error texts.
//!
//! A [`User`] is immutable once built: a change builds a new one and the
//! registry swaps it in, so a check reads a snapshot without a lock.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use super::catalog::{Catalog, category_bit};
use crate::protocol::Args;
use crate::spec::metadata::ks;
use crate::spec::{Command, flags};
use crate::util::{eq_ic, glob_match};

/// A key pattern's permissions (acl.c `ACL_READ_PERMISSION` …).
const READ: u8 = 1;
pub(crate) const WRITE: u8 = 2;
const ALL: u8 = READ | WRITE;

/// Why a rule was refused; the text is `ACLSetUserStringError`'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RuleError {
    Syntax,
    UnknownCommand,
    KeyAfterAll,
    ChannelAfterAll,
    NoSuchPassword,
    BadHash,
    FirstArgOfSubcommand,
}

impl RuleError {
    pub(crate) fn text(self) -> &'static str {
        match self {
            RuleError::Syntax => "Syntax error",
            RuleError::UnknownCommand => "Unknown command or category name in ACL",
            RuleError::KeyAfterAll => {
                "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
            }
            RuleError::ChannelAfterAll => {
                "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels"
            }
            RuleError::NoSuchPassword => {
                "The password you are trying to remove from the user does not exist"
            }
            RuleError::BadHash => {
                "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
            }
            RuleError::FirstArgOfSubcommand => {
                "Allowing first-arg of a subcommand is not supported"
            }
        }
    }
}

/// Why a command was refused (acl.c `ACL_DENIED_*`, ordered as Redis
/// ranks them when no selector allows a command).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Denied {
    Command,
    Key,
    Channel,
}

impl Denied {
    /// What a denial says (acl.c `getAclErrorMessage`): `verbose` (ACL
    /// DRYRUN) names the key or channel, a command's refusal names neither.
    pub(crate) fn message(
        self,
        user: &[u8],
        command: &str,
        errored: &[u8],
        verbose: bool,
    ) -> Vec<u8> {
        let user = String::from_utf8_lossy(user);
        let named = |what: &str| {
            [
                format!("User {user} has no permissions to access the '").as_bytes(),
                errored,
                format!("' {what}").as_bytes(),
            ]
            .concat()
        };
        match self {
            Denied::Command => {
                format!("User {user} has no permissions to run the '{command}' command")
                    .into_bytes()
            }
            Denied::Key if verbose => named("key"),
            Denied::Key => b"No permissions to access a key".to_vec(),
            Denied::Channel if verbose => named("channel"),
            Denied::Channel => b"No permissions to access a channel".to_vec(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct KeyPattern {
    pub(crate) pattern: Vec<u8>,
    perm: u8,
}

impl KeyPattern {
    fn describe(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(match self.perm {
            READ => b"%R~",
            WRITE => b"%W~",
            _ => b"~",
        });
        out.extend_from_slice(&self.pattern);
    }
}

/// One set of permissions: what a command must all fit in one selector
/// of its user to run (acl.c `aclSelector`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Selector {
    root: bool,
    all_keys: bool,
    all_channels: bool,
    all_commands: bool,
    /// Redis's reserved bitmap bit: set by `+@all`, so the rules describe
    /// themselves as `+@all …` (and would allow commands added later).
    future: bool,
    bits: Vec<u64>,
    /// `+select|0`: first arguments allowed for a command whose bit is off.
    firstargs: BTreeMap<usize, Vec<Vec<u8>>>,
    /// acl.c `command_rules` (Redis 7.2+): the command and category rules
    /// as given since the last `+@all`/`-@all`, in order, lower-cased, each
    /// (`+get`, `-@geo`, `+config|get`) replacing an earlier rule about the
    /// same name (or, for a whole command, its `cmd|…` rules). The
    /// description repeats them after `+@all`/`-@all`.
    command_rules: Vec<Vec<u8>>,
    keys: Vec<KeyPattern>,
    channels: Vec<Vec<u8>>,
}

impl Selector {
    /// An empty selector: no commands, keys or channels (but every channel
    /// when `acl-pubsub-default` is `allchannels`).
    fn new(root: bool, all_channels: bool) -> Selector {
        Selector {
            root,
            all_keys: false,
            all_channels,
            all_commands: false,
            future: false,
            bits: vec![0; Catalog::get().len().div_ceil(64)],
            firstargs: BTreeMap::new(),
            command_rules: Vec::new(),
            keys: Vec::new(),
            channels: Vec::new(),
        }
    }

    fn bit(&self, id: usize) -> bool {
        self.bits[id / 64] & (1 << (id % 64)) != 0
    }

    fn set_bit(&mut self, id: usize, on: bool) {
        if on {
            self.bits[id / 64] |= 1 << (id % 64);
        } else {
            self.bits[id / 64] &= !(1 << (id % 64));
            self.all_commands = false;
        }
    }

    /// `ACLChangeSelectorPerm`: a command and all its subcommands.
    fn change_perm(&mut self, id: usize, on: bool) {
        self.set_bit(id, on);
        self.firstargs.remove(&id);
        for sub in Catalog::get().entries[id].subs.clone() {
            self.set_bit(sub, on);
        }
    }

    /// `ACLSetSelectorCommandBitsForCategory`: every command in the
    /// category (a container's match covers its subcommands too).
    fn set_category(&mut self, bit: u32, on: bool) {
        let cat = Catalog::get();
        for id in cat.top_level() {
            if cat.entries[id].categories & bit != 0 {
                self.change_perm(id, on);
            }
            for sub in cat.entries[id].subs.clone() {
                if cat.entries[sub].categories & bit != 0 {
                    self.change_perm(sub, on);
                }
            }
        }
    }

    fn set_all(&mut self, on: bool) {
        let fill = if on { u64::MAX } else { 0 };
        self.bits.iter_mut().for_each(|w| *w = fill);
        self.all_commands = on;
        self.future = on;
        self.firstargs.clear();
        self.command_rules.clear();
    }

    /// acl.c `ACLUpdateCommandRules` with `ACLSelectorRemoveCommandRule`:
    /// `name` (a command's full name, `cmd|arg`, or `@category`) goes last,
    /// after removing the rules about it and, for a command, its `cmd|…`.
    fn update_command_rules(&mut self, name: &[u8], allow: bool) {
        let name = name.to_ascii_lowercase();
        self.command_rules.retain(|rule| {
            let existing = &rule[1..];
            !(existing == name.as_slice()
                || (existing.len() > name.len()
                    && existing.starts_with(&name)
                    && existing[name.len()] == b'|'))
        });
        let mut rule = Vec::with_capacity(name.len() + 1);
        rule.push(if allow { b'+' } else { b'-' });
        rule.extend_from_slice(&name);
        self.command_rules.push(rule);
    }

    /// acl.c `ACLSetSelector`: one rule about commands, keys or channels.
    fn apply(&mut self, op: &[u8]) -> Result<(), RuleError> {
        let cat = Catalog::get();
        if op.is_empty() {
            return Err(RuleError::Syntax);
        }
        if eq_ic(op, "allkeys") || op == b"~*" {
            self.all_keys = true;
            self.keys.clear();
        } else if eq_ic(op, "resetkeys") {
            self.all_keys = false;
            self.keys.clear();
        } else if eq_ic(op, "allchannels") || op == b"&*" {
            self.all_channels = true;
            self.channels.clear();
        } else if eq_ic(op, "resetchannels") {
            self.all_channels = false;
            self.channels.clear();
        } else if eq_ic(op, "allcommands") || eq_ic(op, "+@all") {
            self.set_all(true);
        } else if eq_ic(op, "nocommands") || eq_ic(op, "-@all") {
            self.set_all(false);
        } else if op[0] == b'~' || op[0] == b'%' {
            if self.all_keys {
                return Err(RuleError::KeyAfterAll);
            }
            let (perm, offset) = if op[0] == b'%' {
                let mut perm = 0;
                let mut offset = 1;
                loop {
                    match op.get(offset).map(u8::to_ascii_uppercase) {
                        Some(b'R') if perm & READ == 0 => perm |= READ,
                        Some(b'W') if perm & WRITE == 0 => perm |= WRITE,
                        Some(b'~') => {
                            offset += 1;
                            break;
                        }
                        // Redis also accepts `%R` with no `~` (an empty
                        // pattern); anything else is a syntax error.
                        None => break,
                        _ => return Err(RuleError::Syntax),
                    }
                    offset += 1;
                }
                // `%~` and `%` grant nothing: a syntax error (Redis 7.2+).
                if perm == 0 {
                    return Err(RuleError::Syntax);
                }
                (perm, offset)
            } else {
                (ALL, 1)
            };
            let pattern = &op[offset.min(op.len())..];
            if has_spaces(pattern) {
                return Err(RuleError::Syntax);
            }
            match self.keys.iter_mut().find(|k| k.pattern == pattern) {
                Some(k) => k.perm |= perm,
                None => self.keys.push(KeyPattern {
                    pattern: pattern.to_vec(),
                    perm,
                }),
            }
        } else if op[0] == b'&' {
            if self.all_channels {
                return Err(RuleError::ChannelAfterAll);
            }
            let pattern = &op[1..];
            if has_spaces(pattern) {
                return Err(RuleError::Syntax);
            }
            if !self.channels.iter().any(|c| c == pattern) {
                self.channels.push(pattern.to_vec());
            }
        } else if op[0] == b'+' && op.get(1) != Some(&b'@') {
            let name = &op[1..];
            let Some(bar) = name.iter().rposition(|&b| b == b'|') else {
                let id = cat.lookup(name).ok_or(RuleError::UnknownCommand)?;
                self.change_perm(id, true);
                self.update_command_rules(cat.entries[id].fullname.as_bytes(), true);
                return Ok(());
            };
            let (base, sub) = (&name[..bar], &name[bar + 1..]);
            let id = cat.lookup(base).ok_or(RuleError::UnknownCommand)?;
            let entry = &cat.entries[id];
            if entry.parent.is_some() {
                return Err(RuleError::FirstArgOfSubcommand);
            }
            if sub.is_empty() {
                return Err(RuleError::Syntax);
            }
            if !entry.subs.is_empty() {
                let id = cat.lookup(name).ok_or(RuleError::UnknownCommand)?;
                self.change_perm(id, true);
            } else {
                // SELECT|0, DEBUG|OBJECT: a first argument Redis lets
                // through while the command itself stays denied.
                tracing::warn!(
                    "Deprecation warning: Allowing a first arg of an otherwise blocked command is a misuse of ACL and may get disabled in the future (offender: +{})",
                    String::from_utf8_lossy(name)
                );
                let list = self.firstargs.entry(id).or_default();
                if !list.iter().any(|a| a.eq_ignore_ascii_case(sub)) {
                    list.push(sub.to_vec());
                }
            }
            self.update_command_rules(name, true);
        } else if op[0] == b'-' && op.get(1) != Some(&b'@') {
            let id = cat.lookup(&op[1..]).ok_or(RuleError::UnknownCommand)?;
            self.change_perm(id, false);
            self.update_command_rules(cat.entries[id].fullname.as_bytes(), false);
        } else if (op[0] == b'+' || op[0] == b'-') && op.get(1) == Some(&b'@') {
            let bit = category_bit(&op[2..]).ok_or(RuleError::UnknownCommand)?;
            self.update_command_rules(&op[1..], op[0] == b'+');
            self.set_category(bit, op[0] == b'+');
        } else {
            return Err(RuleError::Syntax);
        }
        Ok(())
    }

    /// acl.c `ACLDescribeSelectorCommandRules` (Redis 7.2+): `+@all` or
    /// `-@all` (whether commands added later would be allowed), then the
    /// retained rules as given, so that applying the text to an empty
    /// selector gives this one's bitmap.
    fn describe_commands(&self) -> Vec<u8> {
        let mut rules: Vec<u8> = Vec::new();
        rules.extend_from_slice(if self.future { b"+@all" } else { b"-@all" });
        for rule in &self.command_rules {
            rules.push(b' ');
            rules.extend_from_slice(rule);
        }
        debug_assert!(
            {
                let mut fake = Selector::new(false, false);
                fake.set_all(self.future);
                self.command_rules.iter().all(|r| fake.apply(r).is_ok()) && fake.bits == self.bits
            },
            "ACL rules do not rebuild the selector's bitmap: {}",
            String::from_utf8_lossy(&rules)
        );
        rules
    }

    /// acl.c `ACLDescribeSelector`: keys, channels, commands.
    fn describe(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if self.all_keys {
            out.extend_from_slice(b"~* ");
        } else {
            for k in &self.keys {
                k.describe(&mut out);
                out.push(b' ');
            }
        }
        if self.all_channels {
            out.extend_from_slice(b"&* ");
        } else {
            out.extend_from_slice(b"resetchannels ");
            for c in &self.channels {
                out.push(b'&');
                out.extend_from_slice(c);
                out.push(b' ');
            }
        }
        out.extend(self.describe_commands());
        out
    }

    /// ACL GETUSER's `keys` field.
    pub(crate) fn keys_text(&self) -> Vec<u8> {
        if self.all_keys {
            return b"~*".to_vec();
        }
        let mut out = Vec::new();
        for (i, k) in self.keys.iter().enumerate() {
            if i > 0 {
                out.push(b' ');
            }
            k.describe(&mut out);
        }
        out
    }

    /// ACL GETUSER's `channels` field.
    pub(crate) fn channels_text(&self) -> Vec<u8> {
        if self.all_channels {
            return b"&*".to_vec();
        }
        let mut out = Vec::new();
        for (i, c) in self.channels.iter().enumerate() {
            if i > 0 {
                out.push(b' ');
            }
            out.push(b'&');
            out.extend_from_slice(c);
        }
        out
    }

    /// ACL GETUSER's `commands` field.
    pub(crate) fn commands_text(&self) -> Vec<u8> {
        self.describe_commands()
    }

    /// Whether this selector alone allows everything.
    fn unrestricted(&self) -> bool {
        self.all_commands && self.all_keys && self.all_channels
    }

    /// acl.c `ACLSelectorHasUnrestrictedKeyAccess` for reading: `allkeys`,
    /// or a `*` pattern that grants reading.
    fn reads_every_key(&self) -> bool {
        self.all_keys
            || self
                .keys
                .iter()
                .any(|p| p.perm & READ == READ && p.pattern == b"*")
    }

    /// acl.c `ACLSelectorCheckCmd`: Err((reason, argument index)).
    fn check(
        &self,
        id: usize,
        cmd: &Command,
        args: &Args<'_>,
        keys: &mut Option<Vec<(usize, u16)>>,
    ) -> Result<(), (Denied, usize)> {
        let cat = Catalog::get();
        if !self.all_commands && !cmd.has(flags::NO_AUTH) && !self.bit(id) {
            let idx = if cat.entries[id].parent.is_some() {
                2
            } else {
                1
            };
            let allowed = args.len() >= 2
                && self
                    .firstargs
                    .get(&id)
                    .is_some_and(|list| list.iter().any(|a| a.eq_ignore_ascii_case(&args[idx])));
            if !allowed {
                return Err((Denied::Command, 0));
            }
        }
        if !self.all_keys && cat.has_keys(id) {
            let keys = keys.get_or_insert_with(|| {
                let mut v = Vec::new();
                cat.keys(id, args, &mut v);
                v
            });
            for &(pos, spec) in keys.iter() {
                if !self.key_allowed(args.get(pos), spec) {
                    return Err((Denied::Key, pos));
                }
            }
        }
        if !self.all_channels
            && let Some((first, end, pattern)) = cat.channels(id, args.len())
        {
            for pos in first..end {
                if !self.channel_allowed(args.get(pos), pattern) {
                    return Err((Denied::Channel, pos));
                }
            }
        }
        Ok(())
    }

    /// acl.c `ACLSelectorCheckKey`: a pattern must grant every access the
    /// key spec says the command makes.
    fn key_allowed(&self, key: &[u8], spec: u16) -> bool {
        if self.all_keys {
            return true;
        }
        let mut need = 0;
        if spec & ks::ACCESS != 0 {
            need |= READ;
        }
        if spec & (ks::INSERT | ks::DELETE | ks::UPDATE) != 0 {
            need |= WRITE;
        }
        self.keys
            .iter()
            .any(|k| k.perm & need == need && glob_match(&k.pattern, key, false))
    }

    /// acl.c `ACLCheckChannelAgainstList`: a channel matches the patterns;
    /// a PSUBSCRIBE pattern must equal one of them.
    fn channel_allowed(&self, channel: &[u8], is_pattern: bool) -> bool {
        self.all_channels
            || self.channels.iter().any(|p| {
                if is_pattern {
                    p == channel
                } else {
                    glob_match(p, channel, false)
                }
            })
    }
}

/// Redis's `ACLStringHasSpaces`: usernames and patterns may hold no
/// whitespace or NUL, so ACL LIST and the ACL file stay parseable.
pub(crate) fn has_spaces(s: &[u8]) -> bool {
    s.iter()
        .any(|&b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c | 0))
}

/// SHA-256 of a password as 64 lowercase hex digits (`ACLHashPassword`).
fn hash_password(pass: &[u8]) -> String {
    let digest = Sha256::digest(pass);
    let mut hex = String::with_capacity(64);
    for b in digest {
        hex.push(char::from(b"0123456789abcdef"[(b >> 4) as usize]));
        hex.push(char::from(b"0123456789abcdef"[(b & 15) as usize]));
    }
    hex
}

fn valid_hash(h: &[u8]) -> bool {
    h.len() == 64 && h.iter().all(|&c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

/// One ACL user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct User {
    pub(crate) name: Vec<u8>,
    enabled: bool,
    nopass: bool,
    /// None, or Some(true) for `sanitize-payload`, Some(false) for
    /// `skip-sanitize-payload` (under `sanitize-dump-payload clients`, its
    /// RESTOREs do not count as sanitized; zwindow checks them in full
    /// all the same).
    sanitize: Option<bool>,
    passwords: Vec<String>,
    /// The root selector first, then the `(…)` ones.
    selectors: Vec<Selector>,
    /// Some selector allows every command, key and channel: the check
    /// costs nothing (the default user's case).
    unrestricted: bool,
}

impl User {
    /// `skip-sanitize-payload`: Redis skips the deep check of this user's
    /// RESTORE payloads under `sanitize-dump-payload clients`.
    pub(crate) fn skips_sanitize(&self) -> bool {
        self.sanitize == Some(false)
    }

    /// A new user as `ACLCreateUser` makes it: off, no passwords, no
    /// permissions, `sanitize-payload` (Redis 7.2+).
    pub(crate) fn new(name: &[u8], all_channels: bool) -> User {
        User {
            name: name.to_vec(),
            enabled: false,
            nopass: false,
            sanitize: Some(true),
            passwords: Vec::new(),
            selectors: vec![Selector::new(true, all_channels)],
            unrestricted: false,
        }
    }

    /// `ACLCreateDefaultUser`: `+@all ~* &* on nopass`.
    pub(crate) fn default_user(all_channels: bool) -> User {
        let mut u = User::new(b"default", all_channels);
        for op in ["+@all", "~*", "&*", "on", "nopass"] {
            let _ = u.apply(op.as_bytes(), all_channels);
        }
        u.finish();
        u
    }

    pub(crate) fn name(&self) -> &[u8] {
        &self.name
    }

    pub(crate) fn enabled(&self) -> bool {
        self.enabled
    }

    pub(crate) fn nopass(&self) -> bool {
        self.nopass
    }

    pub(crate) fn unrestricted(&self) -> bool {
        self.unrestricted
    }

    pub(crate) fn passwords(&self) -> &[String] {
        &self.passwords
    }

    pub(crate) fn root(&self) -> &Selector {
        &self.selectors[0]
    }

    pub(crate) fn extra_selectors(&self) -> &[Selector] {
        &self.selectors[1..]
    }

    /// The flags in Redis's order (`ACLUserFlags`).
    pub(crate) fn flag_names(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        v.push(if self.enabled { "on" } else { "off" });
        if self.nopass {
            v.push("nopass");
        }
        match self.sanitize {
            Some(false) => v.push("skip-sanitize-payload"),
            Some(true) => v.push("sanitize-payload"),
            None => {}
        }
        v
    }

    /// Recomputes what the check path reads; call after changing rules.
    pub(crate) fn finish(&mut self) {
        self.unrestricted = self.selectors.iter().any(Selector::unrestricted);
    }

    /// acl.c `ACLSetUser`: one rule. `all_channels` is
    /// `acl-pubsub-default` (what new selectors and `reset` start with).
    pub(crate) fn apply(&mut self, op: &[u8], all_channels: bool) -> Result<(), RuleError> {
        if op.is_empty() {
            return Ok(());
        }
        if eq_ic(op, "on") {
            self.enabled = true;
        } else if eq_ic(op, "off") {
            self.enabled = false;
        } else if eq_ic(op, "skip-sanitize-payload") {
            self.sanitize = Some(false);
        } else if eq_ic(op, "sanitize-payload") {
            self.sanitize = Some(true);
        } else if eq_ic(op, "nopass") {
            self.nopass = true;
            self.passwords.clear();
        } else if eq_ic(op, "resetpass") {
            self.nopass = false;
            self.passwords.clear();
        } else if op[0] == b'>' || op[0] == b'#' {
            let hash = if op[0] == b'>' {
                hash_password(&op[1..])
            } else if valid_hash(&op[1..]) {
                String::from_utf8_lossy(&op[1..]).into_owned()
            } else {
                return Err(RuleError::BadHash);
            };
            if !self.passwords.contains(&hash) {
                self.passwords.push(hash);
            }
            self.nopass = false;
        } else if op[0] == b'<' || op[0] == b'!' {
            let hash = if op[0] == b'<' {
                hash_password(&op[1..])
            } else if valid_hash(&op[1..]) {
                String::from_utf8_lossy(&op[1..]).into_owned()
            } else {
                return Err(RuleError::BadHash);
            };
            let at = self.passwords.iter().position(|p| *p == hash);
            self.passwords.remove(at.ok_or(RuleError::NoSuchPassword)?);
        } else if op[0] == b'(' && op[op.len() - 1] == b')' {
            let mut s = Selector::new(false, all_channels);
            let (mut words, mut spans) = (Vec::new(), Vec::new());
            // Unbalanced quotes leave an empty selector, as sdssplitargs's
            // NULL does in Redis.
            if crate::protocol::parser::split_args(&op[1..op.len() - 1], &mut words, &mut spans)
                .is_ok()
            {
                for &(a, b) in &spans {
                    s.apply(&words[a..b])?;
                }
            }
            self.selectors.push(s);
        } else if eq_ic(op, "clearselectors") {
            self.selectors.truncate(1);
        } else if eq_ic(op, "reset") {
            for r in ["resetpass", "resetkeys", "resetchannels"] {
                self.apply(r.as_bytes(), all_channels)?;
            }
            if all_channels {
                self.apply(b"allchannels", all_channels)?;
            }
            for r in ["off", "sanitize-payload", "clearselectors", "-@all"] {
                self.apply(r.as_bytes(), all_channels)?;
            }
        } else {
            self.selectors[0].apply(op)?;
        }
        Ok(())
    }

    /// acl.c `ACLStringSetUser`: applies every rule (selectors spread over
    /// several arguments joined first) to a copy, which replaces `self`
    /// only if all of them are valid; Err is the reply's text.
    pub(crate) fn apply_all(&mut self, ops: &[&[u8]], all_channels: bool) -> Result<(), Vec<u8>> {
        let merged = merge_selector_args(ops).map_err(|at| {
            let mut e = b"ERR Unmatched parenthesis in acl selector starting at '".to_vec();
            e.extend_from_slice(ops[at]);
            e.extend_from_slice(b"'.");
            e
        })?;
        let mut copy = self.clone();
        for op in &merged {
            if let Err(why) = copy.apply(op, all_channels) {
                let mut e = b"ERR Error in ACL SETUSER modifier '".to_vec();
                e.extend_from_slice(op);
                e.extend_from_slice(b"': ");
                e.extend_from_slice(why.text().as_bytes());
                return Err(e);
            }
        }
        copy.finish();
        *self = copy;
        Ok(())
    }

    /// acl.c `ACLDescribeUser`: flags, password hashes, selectors — the
    /// text after `user <name> ` in ACL LIST and the ACL file.
    pub(crate) fn describe(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for f in self.flag_names() {
            out.extend_from_slice(f.as_bytes());
            out.push(b' ');
        }
        for p in &self.passwords {
            out.push(b'#');
            out.extend_from_slice(p.as_bytes());
            out.push(b' ');
        }
        for s in &self.selectors {
            if s.root {
                out.extend(s.describe());
            } else {
                out.extend_from_slice(b" (");
                out.extend(s.describe());
                out.push(b')');
            }
        }
        out
    }

    /// acl.c `ACLCheckUserCredentials` (for an enabled user): nopass, or a
    /// password whose hash matches in constant time.
    pub(crate) fn password_ok(&self, pass: &[u8]) -> bool {
        if !self.enabled {
            return false;
        }
        if self.nopass {
            return true;
        }
        let hash = hash_password(pass);
        self.passwords.iter().any(|p| {
            p.len() == hash.len()
                && p.bytes()
                    .zip(hash.bytes())
                    .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                    == 0
        })
    }

    /// acl.c `ACLCheckAllUserCommandPerm`: Ok if one selector allows the
    /// whole command; else the reason Redis reports (a command denial
    /// only if no selector got past the command) and the argument index
    /// of the key or channel.
    pub(crate) fn check(
        &self,
        cmd: &'static Command,
        args: &Args<'_>,
    ) -> Result<(), (Denied, usize)> {
        if self.unrestricted {
            return Ok(());
        }
        let Some(id) = Catalog::get().id_of(cmd) else {
            return Ok(());
        };
        let mut keys = None;
        let mut worst = (Denied::Command, 0);
        for s in &self.selectors {
            match s.check(id, cmd, args, &mut keys) {
                Ok(()) => return Ok(()),
                Err(e) if e > worst => worst = e,
                Err(_) => {}
            }
        }
        Err(worst)
    }

    /// acl.c `ACLUserCheckCmdWithUnrestrictedKeyAccess` for reading:
    /// whether one selector both allows this command with these arguments
    /// and may read every key. SORT's BY and GET patterns name keys that
    /// no key spec reports, so Redis accepts them only from such a user.
    pub(crate) fn may_read_any_key(&self, cmd: &'static Command, args: &Args<'_>) -> bool {
        if self.unrestricted {
            return true;
        }
        let Some(id) = Catalog::get().id_of(cmd) else {
            return true;
        };
        let mut keys = None;
        self.selectors
            .iter()
            .any(|s| s.reads_every_key() && s.check(id, cmd, args, &mut keys).is_ok())
    }

    /// Whether some selector allows every channel.
    pub(crate) fn all_channels(&self) -> bool {
        self.selectors.iter().any(|s| s.all_channels)
    }

    /// Every channel pattern of every selector.
    pub(crate) fn channel_patterns(&self) -> impl Iterator<Item = &[u8]> {
        self.selectors
            .iter()
            .flat_map(|s| s.channels.iter().map(Vec::as_slice))
    }
}

/// acl.c `ACLMergeSelectorArguments`: `(` … `)` spread over arguments
/// become one; Err is the index of an unclosed `(`.
pub(crate) fn merge_selector_args(ops: &[&[u8]]) -> Result<Vec<Vec<u8>>, usize> {
    let mut out = Vec::with_capacity(ops.len());
    let mut open: Option<(usize, Vec<u8>)> = None;
    for (j, op) in ops.iter().enumerate() {
        if let Some((_, sel)) = &mut open {
            sel.push(b' ');
            sel.extend_from_slice(op);
            if op.last() == Some(&b')') {
                out.push(std::mem::take(sel));
                open = None;
            }
            continue;
        }
        if op.first() == Some(&b'(') && op.last() != Some(&b')') {
            open = Some((j, op.to_vec()));
            continue;
        }
        out.push(op.to_vec());
    }
    match open {
        Some((j, _)) => Err(j),
        None => Ok(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::OwnedArgs;
    use crate::spec::resolve;

    fn user(rules: &str) -> User {
        let mut u = User::new(b"u", false);
        let ops: Vec<&[u8]> = rules.split(' ').map(str::as_bytes).collect();
        u.apply_all(&ops, false).unwrap();
        u
    }

    fn check(u: &User, cmd: &str) -> Result<(), (Denied, usize)> {
        let parts: Vec<&[u8]> = cmd.split(' ').map(str::as_bytes).collect();
        let owned = OwnedArgs::from_slices(&parts);
        let c = resolve(&owned.args()).unwrap();
        u.check(c, &owned.args())
    }

    #[test]
    fn default_user_describes_as_redis() {
        let u = User::default_user(false);
        assert_eq!(
            String::from_utf8(u.describe()).unwrap(),
            "on nopass sanitize-payload ~* &* +@all"
        );
        assert!(u.unrestricted());
    }

    #[test]
    fn new_user_is_off_and_denied() {
        let u = User::new(b"x", false);
        assert_eq!(
            String::from_utf8(u.describe()).unwrap(),
            "off sanitize-payload resetchannels -@all"
        );
        assert_eq!(check(&u, "get k"), Err((Denied::Command, 0)));
    }

    #[test]
    fn categories_and_commands() {
        let u = user("on +@all -@dangerous");
        assert!(
            String::from_utf8(u.describe())
                .unwrap()
                .ends_with("+@all -@dangerous")
        );
        let u = user("+@read -get +set ~*");
        assert!(check(&u, "get k").is_err());
        assert!(check(&u, "set k v").is_ok());
        assert!(check(&u, "strlen k").is_ok());
        let u = user("+config|get ~*");
        assert!(check(&u, "config get x").is_ok());
        assert!(check(&u, "config set x y").is_err());
        assert_eq!(
            String::from_utf8(u.root().commands_text()).unwrap(),
            "-@all +config|get"
        );
    }

    #[test]
    fn first_args() {
        let u = user("-@all +select|0");
        assert!(check(&u, "select 0").is_ok());
        assert!(check(&u, "select 1").is_err());
        assert_eq!(
            String::from_utf8(u.root().commands_text()).unwrap(),
            "-@all +select|0"
        );
        let mut u = User::new(b"x", false);
        assert_eq!(
            u.apply(b"+config|get|x", false),
            Err(RuleError::FirstArgOfSubcommand)
        );
        assert_eq!(u.apply(b"+select|", false), Err(RuleError::Syntax));
        assert_eq!(u.apply(b"-select|0", false), Err(RuleError::UnknownCommand));
    }

    #[test]
    fn key_permissions() {
        let u = user("+@all %R~read* %W~write* ~rw*");
        assert!(check(&u, "get read1").is_ok());
        assert_eq!(check(&u, "set read1 v"), Err((Denied::Key, 1)));
        assert!(check(&u, "set write1 v").is_ok());
        assert!(check(&u, "get write1").is_err());
        assert!(check(&u, "copy read1 write1").is_ok());
        assert!(check(&u, "lmove rw1 rw2 left right").is_ok());
        assert_eq!(
            String::from_utf8(u.root().keys_text()).unwrap(),
            "%R~read* %W~write* ~rw*"
        );
        let mut u = user("~*");
        assert_eq!(u.apply(b"~x", false), Err(RuleError::KeyAfterAll));
        assert_eq!(u.apply(b"%X~x", false), Err(RuleError::KeyAfterAll));
        let mut u = user("%RW~x");
        assert_eq!(String::from_utf8(u.root().keys_text()).unwrap(), "~x");
        assert_eq!(u.apply(b"%RR~x", false), Err(RuleError::Syntax));
    }

    #[test]
    fn channels() {
        let u = user("+@all ~* &news.*");
        assert!(check(&u, "publish news.1 m").is_ok());
        assert_eq!(check(&u, "publish other m"), Err((Denied::Channel, 1)));
        assert!(check(&u, "psubscribe news.*").is_ok());
        assert!(check(&u, "psubscribe news.1").is_err());
        assert!(check(&u, "unsubscribe other").is_ok());
    }

    #[test]
    fn selectors() {
        let u = user("+get ~a* (+set ~b*)");
        assert!(check(&u, "get a1").is_ok());
        assert!(check(&u, "set b1 v").is_ok());
        assert_eq!(check(&u, "set a1 v"), Err((Denied::Key, 1)));
        assert_eq!(check(&u, "get b1"), Err((Denied::Key, 1)));
        assert_eq!(
            String::from_utf8(u.describe()).unwrap(),
            "off sanitize-payload ~a* resetchannels -@all +get (~b* resetchannels -@all +set)"
        );
        let mut u = User::new(b"x", false);
        assert!(u.apply_all(&[b"(+get", b"~x"], false).is_err());
        assert!(u.apply_all(&[b"(+get", b"~x)"], false).is_ok());
        assert_eq!(u.extra_selectors().len(), 1);
    }

    #[test]
    fn passwords() {
        let mut u = user("on >secret");
        assert!(u.password_ok(b"secret"));
        assert!(!u.password_ok(b"other"));
        assert_eq!(
            u.passwords()[0],
            "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b"
        );
        assert_eq!(u.apply(b"<nope", false), Err(RuleError::NoSuchPassword));
        assert_eq!(u.apply(b"#abc", false), Err(RuleError::BadHash));
        u.apply(b"<secret", false).unwrap();
        assert!(!u.password_ok(b"secret"));
        let err = u.apply_all(&[b"on", b"bogus"], false).unwrap_err();
        assert_eq!(
            String::from_utf8(err).unwrap(),
            "ERR Error in ACL SETUSER modifier 'bogus': Syntax error"
        );
    }
}
