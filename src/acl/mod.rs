//! Access control lists, as Redis 7.0 has them: the users, their rules,
//! the permission check and the security log.
//!
//! [`user`] is the data (a user's flags, passwords and selectors, the rule
//! language, the descriptions and the check of one command), [`catalog`]
//! the command table as rules name it, [`log`] the `ACL LOG`. This module
//! is the registry: the users by name, the `default` user's auth state,
//! `ACL LOAD`/`SAVE`'s file format and the startup rules (`user` lines,
//! `aclfile`, `requirepass`).
//!
//! The check sits on every command's path, so it reads no shared lock: a
//! change builds a new [`User`] and bumps [`Acl::generation`]; each client
//! keeps its user's `Arc` and re-reads it only when the generation moved.
//! A user allowed everything (the default user: `+@all ~* &*`) is marked
//! `unrestricted` and costs one branch.

pub(crate) mod catalog;
pub(crate) mod log;
pub(crate) mod user;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};

pub(crate) use user::User;
use user::has_spaces;

/// A `user` line as the config loader checks it (acl.c
/// `ACLAppendUserForLoading`): `words` are the name and its rules; the
/// rules come back with their selectors merged (`(~k` `+get)` → one rule),
/// each tried on a new user. A command or category unknown here is left to
/// `Acl::load_configured`, as Redis leaves ENOENT to its later load. The
/// error is Redis's text, naming the word Redis names: it counts the bad
/// rule's position among the rules but reads it from the whole line
/// (`user`, the name, the rules).
pub(crate) fn check_configured_user(words: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, String> {
    let line: Vec<&[u8]> = std::iter::once(&b"user"[..])
        .chain(words.iter().map(Vec::as_slice))
        .collect();
    let fail = |at: usize, why: &str| {
        format!(
            "Error in user declaration '{}': {why}",
            String::from_utf8_lossy(line.get(at).copied().unwrap_or_default())
        )
    };
    // An unclosed selector sets no errno in Redis: the text is the one
    // the errno left by its startup gives, which for redis-server 8.0 is
    // none of the ACL ones (7.0's was ENOENT's): the default text.
    let ops = user::merge_selector_args(&line[2..]).map_err(|at| fail(at, "Wrong format"))?;
    let mut fake = User::new(words.first().map_or(&b""[..], Vec::as_slice), false);
    for (j, op) in ops.iter().enumerate() {
        match fake.apply(op, false) {
            Ok(()) | Err(user::RuleError::UnknownCommand) => {}
            Err(e) => return Err(fail(j, e.text())),
        }
    }
    Ok(ops)
}

/// A user before (if it existed) and after a change.
type UserChange = (Option<Arc<User>>, Arc<User>);

/// A user ACL LOAD replaced, and its successor of the same name if any.
pub(crate) type Replaced = (Arc<User>, Option<Arc<User>>);

/// The users and the log.
pub(crate) struct Acl {
    /// By name, in byte order (as Redis's radix tree lists them).
    users: RwLock<BTreeMap<Vec<u8>, Arc<User>>>,
    /// Bumped on every change of any user.
    generation: AtomicU64,
    /// Redis's `authRequired` for a connection that has not authenticated:
    /// the default user has passwords, or is off.
    default_needs_auth: AtomicBool,
    /// The default user is `nopass` (protected mode looks at this).
    default_nopass: AtomicBool,
    pub(crate) log: Mutex<log::AclLog>,
}

impl Acl {
    pub(crate) fn new() -> Acl {
        let acl = Acl {
            users: RwLock::new(BTreeMap::new()),
            generation: AtomicU64::new(0),
            default_needs_auth: AtomicBool::new(false),
            default_nopass: AtomicBool::new(true),
            log: Mutex::new(log::AclLog::default()),
        };
        acl.install(vec![Arc::new(User::default_user(false))]);
        acl
    }

    /// Changes whenever a user changes: a client re-reads its user then.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    pub(crate) fn get(&self, name: &[u8]) -> Option<Arc<User>> {
        self.users.read().get(name).cloned()
    }

    pub(crate) fn default_user(&self) -> Arc<User> {
        // The default user can be changed but never removed.
        self.get(b"default")
            .unwrap_or_else(|| Arc::new(User::default_user(false)))
    }

    /// Whether a connection that has not authenticated must (networking.c
    /// `authRequired`).
    pub(crate) fn default_needs_auth(&self) -> bool {
        self.default_needs_auth.load(Ordering::Relaxed)
    }

    pub(crate) fn default_nopass(&self) -> bool {
        self.default_nopass.load(Ordering::Relaxed)
    }

    pub(crate) fn all(&self) -> Vec<Arc<User>> {
        self.users.read().values().cloned().collect()
    }

    /// Puts users in (replacing those of the same name) and publishes.
    fn install(&self, users: Vec<Arc<User>>) {
        let mut map = self.users.write();
        for u in users {
            map.insert(u.name.clone(), u);
        }
        self.publish(&map);
    }

    fn publish(&self, map: &BTreeMap<Vec<u8>, Arc<User>>) {
        if let Some(d) = map.get(&b"default"[..]) {
            self.default_nopass.store(d.nopass(), Ordering::Relaxed);
            self.default_needs_auth
                .store(!d.nopass() || !d.enabled(), Ordering::Relaxed);
        }
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// ACL SETUSER: applies `ops` to the user (created if missing), all
    /// or nothing. Returns the user before and after.
    pub(crate) fn set_user(
        &self,
        name: &[u8],
        ops: &[&[u8]],
        all_channels: bool,
    ) -> Result<UserChange, Vec<u8>> {
        let mut map = self.users.write();
        let before = map.get(name).cloned();
        let mut u = match &before {
            Some(u) => User::clone(u),
            None => User::new(name, all_channels),
        };
        u.apply_all(ops, all_channels)?;
        let after = Arc::new(u);
        map.insert(name.to_vec(), after.clone());
        self.publish(&map);
        Ok((before, after))
    }

    /// ACL DELUSER: the names that existed and are now gone.
    pub(crate) fn del_users(&self, names: &[&[u8]]) -> Vec<Vec<u8>> {
        let mut map = self.users.write();
        let gone: Vec<Vec<u8>> = names
            .iter()
            .filter_map(|n| map.remove(*n).map(|u| u.name.clone()))
            .collect();
        self.publish(&map);
        gone
    }

    /// acl.c `ACLCheckUserCredentials`: the user, if it exists, is on and
    /// the password fits.
    pub(crate) fn authenticate(&self, name: &[u8], pass: &[u8]) -> Option<Arc<User>> {
        self.get(name).filter(|u| u.password_ok(pass))
    }

    /// `requirepass`: the default user's only password, or `nopass` when
    /// empty (acl.c `ACLUpdateDefaultUserPassword`).
    pub(crate) fn set_default_password(&self, pass: Option<&[u8]>) {
        let mut map = self.users.write();
        let mut d = map
            .get(&b"default"[..])
            .map(|u| User::clone(u))
            .unwrap_or_else(|| User::default_user(false));
        let _ = d.apply(b"resetpass", false);
        match pass {
            Some(p) => {
                let mut op = vec![b'>'];
                op.extend_from_slice(p);
                let _ = d.apply(&op, false);
            }
            None => {
                let _ = d.apply(b"nopass", false);
            }
        }
        d.finish();
        map.insert(b"default".to_vec(), Arc::new(d));
        self.publish(&map);
    }

    /// Startup `user` lines (acl.c `ACLLoadConfiguredUsers`): each creates
    /// its user (the default one is reset first). Err is the log line.
    pub(crate) fn load_configured(
        &self,
        lines: &[Vec<Vec<u8>>],
        all_channels: bool,
    ) -> Result<(), String> {
        let mut users = Vec::new();
        for words in lines {
            let Some((name, ops)) = words.split_first() else {
                continue;
            };
            if has_spaces(name) {
                return Err("Spaces not allowed in ACL usernames".into());
            }
            let mut u = if name == b"default" {
                let mut d = User::default_user(all_channels);
                let _ = d.apply(b"reset", all_channels);
                d
            } else {
                User::new(name, all_channels)
            };
            for op in ops {
                u.apply(op, all_channels).map_err(|e| {
                    format!(
                        "Error loading ACL rule '{}' for the user named '{}': {}",
                        String::from_utf8_lossy(op),
                        String::from_utf8_lossy(name),
                        e.text()
                    )
                })?;
            }
            u.finish();
            if !u.enabled() {
                tracing::info!(
                    "The user '{}' is disabled (there is no 'on' modifier in the user description). Make sure this is not a configuration error.",
                    String::from_utf8_lossy(name)
                );
            }
            users.push(Arc::new(u));
        }
        self.install(users);
        Ok(())
    }

    /// ACL LOAD (acl.c `ACLLoadFromFile`): replaces every user with the
    /// file's, or changes nothing if any line is wrong. Returns each
    /// replaced user (all but `default`, which Redis updates in place)
    /// with its successor of the same name, if the file has one: Redis 7.2+
    /// moves a client to its user's successor, and disconnects it only when
    /// there is none or its subscriptions are no longer allowed.
    pub(crate) fn load_file(
        &self,
        path: &str,
        all_channels: bool,
    ) -> Result<Vec<Replaced>, String> {
        let text = std::fs::read(path).map_err(|e| {
            format!(
                "Error loading ACLs, opening file '{path}': {}",
                crate::util::strerror(&e)
            )
        })?;
        let users = parse_acl_file(&text, path, all_channels)?;
        let mut map = self.users.write();
        let old = std::mem::take(&mut *map);
        for u in users {
            map.insert(u.name.clone(), Arc::new(u));
        }
        if !map.contains_key(&b"default"[..]) {
            map.insert(
                b"default".to_vec(),
                Arc::new(User::default_user(all_channels)),
            );
        }
        let replaced = old
            .into_iter()
            .filter(|(name, _)| name != b"default")
            .map(|(name, before)| {
                let after = map.get(&name).cloned();
                (before, after)
            })
            .collect();
        self.publish(&map);
        Ok(replaced)
    }

    /// ACL SAVE's text: one `user <name> <rules>` line per user.
    pub(crate) fn file_text(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for u in self.users.read().values() {
            out.extend_from_slice(b"user ");
            out.extend_from_slice(&u.name);
            out.push(b' ');
            out.extend(u.describe());
            out.push(b'\n');
        }
        out
    }

    /// ACL SAVE (acl.c `ACLSaveToFile`): a temporary file renamed over
    /// the ACL file, so a reader never sees half of it.
    pub(crate) fn save_file(&self, path: &str) -> std::io::Result<()> {
        let tmp = format!(
            "{path}.tmp-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis())
        );
        let result =
            std::fs::write(&tmp, self.file_text()).and_then(|_| std::fs::rename(&tmp, path));
        if let Err(e) = &result {
            tracing::warn!("ACL SAVE: {e}");
            let _ = std::fs::remove_file(&tmp);
        }
        result
    }
}

impl Default for Acl {
    fn default() -> Acl {
        Acl::new()
    }
}

/// The users of an ACL file, or Redis's one-line description of every
/// problem (then nothing may be loaded).
fn parse_acl_file(text: &[u8], path: &str, all_channels: bool) -> Result<Vec<User>, String> {
    let mut errors = String::new();
    let mut users: Vec<User> = Vec::new();
    for (i, line) in text.split(|&b| b == b'\n').enumerate() {
        let linenum = i + 1;
        let line = trim(line, b" \t\r\n");
        if line.is_empty() {
            continue;
        }
        let argv: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
        if argv[0] != b"user" || argv.len() < 2 {
            errors.push_str(&format!(
                "{path}:{linenum} should start with user keyword followed by the username. "
            ));
            continue;
        }
        let name = argv[1];
        if has_spaces(name) {
            errors.push_str(&format!(
                "'{path}:{linenum}: username '{}' contains invalid characters. ",
                String::from_utf8_lossy(name)
            ));
            continue;
        }
        if users.iter().any(|u| u.name == name) {
            errors.push_str(&format!(
                "WARNING: Duplicate user '{}' found on line {linenum}. ",
                String::from_utf8_lossy(name)
            ));
            continue;
        }
        let mut u = User::new(name, all_channels);
        match user::merge_selector_args(&argv[2..]) {
            Err(_) => errors.push_str(&format!(
                "{path}:{linenum}: Unmatched parenthesis in selector definition."
            )),
            Ok(ops) => {
                let mut syntax_error = false;
                for op in &ops {
                    let op = trim(op, b"\t\r\n");
                    match u.apply(op, all_channels) {
                        Ok(()) => {}
                        Err(user::RuleError::UnknownCommand) => errors.push_str(&format!(
                            "{path}:{linenum}: Error in applying operation '{}': {}. ",
                            String::from_utf8_lossy(op),
                            user::RuleError::UnknownCommand.text()
                        )),
                        Err(e) if !syntax_error => {
                            errors.push_str(&format!("{path}:{linenum}: {}. ", e.text()));
                            syntax_error = true;
                        }
                        Err(_) => {}
                    }
                }
            }
        }
        u.finish();
        users.push(u);
    }
    if errors.is_empty() {
        Ok(users)
    } else {
        errors.push_str(
            "WARNING: ACL errors detected, no change to the previously active ACL rules was performed",
        );
        Err(errors)
    }
}

fn trim<'a>(mut s: &'a [u8], set: &[u8]) -> &'a [u8] {
    while let [first, rest @ ..] = s
        && set.contains(first)
    {
        s = rest;
    }
    while let [rest @ .., last] = s
        && set.contains(last)
    {
        s = rest;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirepass_is_the_default_users_password() {
        let acl = Acl::new();
        assert!(!acl.default_needs_auth());
        acl.set_default_password(Some(b"pw"));
        assert!(acl.default_needs_auth());
        assert!(acl.authenticate(b"default", b"pw").is_some());
        assert!(acl.authenticate(b"default", b"no").is_none());
        acl.set_default_password(None);
        assert!(!acl.default_needs_auth());
    }

    #[test]
    fn set_and_delete_users() {
        let acl = Acl::new();
        let g = acl.generation();
        acl.set_user(b"alice", &[b"on", b">pw", b"~*", b"+get"], false)
            .unwrap();
        assert!(acl.generation() > g);
        assert!(acl.authenticate(b"alice", b"pw").is_some());
        assert!(acl.set_user(b"alice", &[b"off", b"bogus"], false).is_err());
        assert!(acl.get(b"alice").unwrap().enabled(), "all or nothing");
        assert_eq!(acl.del_users(&[b"alice", b"bob"]), vec![b"alice".to_vec()]);
        assert_eq!(
            String::from_utf8(acl.file_text()).unwrap(),
            "user default on nopass sanitize-payload ~* &* +@all\n"
        );
    }

    #[test]
    fn acl_file_errors() {
        let text = b"user a on >x ~* +@all\nbogus line\nuser a on\nuser b on +nosuch\n";
        let err = parse_acl_file(text, "f.acl", false).unwrap_err();
        assert_eq!(
            err,
            "f.acl:2 should start with user keyword followed by the username. WARNING: Duplicate user 'a' found on line 3. f.acl:4: Error in applying operation '+nosuch': Unknown command or category name in ACL. WARNING: ACL errors detected, no change to the previously active ACL rules was performed"
        );
        let ok = parse_acl_file(b"user a on nopass ~* &* +@all\n\n", "f", false).unwrap();
        assert_eq!(ok.len(), 1);
    }
}
