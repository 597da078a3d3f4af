//! What a redis-server replica receives in place of zwindow's own commands.
//!
//! The replication stream is one byte stream with one offset space: PSYNC
//! offsets, `REPLCONF ACK`s and WAIT compare positions in it, whoever the
//! replica is. A redis-server replica must never receive a command it
//! cannot run, so each command Redis 7.0 does not have is swapped, in the
//! bytes sent to such a replica, for what it amounts to in Redis 7.0
//! followed by `PING`s that make up the same byte length:
//!
//! - `HSETEX key … FIELDS n f v …` (Redis 8.0) sets values: `HSET key f v …`;
//! - `SADDEX key … MEMBERS n m …` (Redis 8.12) adds members: `SADD key m …`;
//! - everything else of the kind only sets TTLs on members or fields, or a
//!   window rule (`ZWINDOW`, the `ZEXPIRE` family as `ZPEXPIREAT`,
//!   `ZPERSIST`, `HPEXPIREAT`, `HPERSIST`): nothing, since the effects
//!   reach the replica anyway as the `ZREM`s / `HDEL`s the primary logs
//!   when members and fields expire or windows trim.
//!
//! A `PING` from the primary is a no-op on a Redis replica (its reply is
//! never sent), so the padding changes nothing but the bytes.

use std::collections::VecDeque;

use bytes::Bytes;

use crate::util::eq_ic;

/// The commands redis-server 7.0 does not have, and a filter that tells
/// almost every other name apart without comparing it to them.
struct Unknown {
    names: Vec<&'static str>,
    /// Per name length below 32: the first letters (bit `letter - 'a'`,
    /// either case) that a listed name of that length starts with.
    first: [u32; 32],
    /// A listed name the filter cannot hold (32 bytes or more, or not
    /// starting with a letter): such names are compared.
    odd: bool,
}

/// A name's filter slot: its length and its first letter's bit.
fn slot(name: &[u8]) -> Option<(usize, u32)> {
    let letter = (name.first()? | 0x20).wrapping_sub(b'a');
    (name.len() < 32 && letter < 26).then(|| (name.len(), 1 << letter))
}

/// Whether a command is one redis-server 7.0 does not have: zwindow's own
/// (their `since` is zwindow's version, below 1.0) or a newer Redis's.
/// Every propagated command is asked, so the answer for one Redis 7.0 has
/// is a load from a table of 32 words (one cache line or two) nearly
/// always.
pub(crate) fn unknown_to_redis_7_0(name: &[u8]) -> bool {
    static UNKNOWN: std::sync::OnceLock<Unknown> = std::sync::OnceLock::new();
    let u = UNKNOWN.get_or_init(|| {
        let mut u = Unknown {
            names: Vec::new(),
            first: [0; 32],
            odd: false,
        };
        for cmd in crate::spec::table::all_commands() {
            let v: Vec<u32> = cmd
                .since
                .split('.')
                .filter_map(|p| p.parse().ok())
                .collect();
            if v.as_slice() < [1].as_slice() || v.as_slice() > [7, 0, 15].as_slice() {
                u.names.push(cmd.name);
                match slot(cmd.name.as_bytes()) {
                    Some((len, bit)) => u.first[len] |= bit,
                    None => u.odd = true,
                }
            }
        }
        u
    });
    let maybe = match slot(name) {
        Some((len, bit)) => u.first[len] & bit != 0,
        None => u.odd,
    };
    maybe && u.names.iter().any(|n| eq_ic(name, n))
}

/// The bytes a redis-server 7.0 replica gets instead of a command of
/// `len` encoded bytes, if it is one it does not have, and whether a Redis
/// 8.0 replica lacks it too (then gets the same bytes).
pub(crate) fn replacement(argv: &[impl AsRef<[u8]>], len: usize) -> Option<(Bytes, bool)> {
    let name = argv.first()?.as_ref();
    if !unknown_to_redis_7_0(name) {
        return None;
    }
    let to_8 = unknown_to_redis_8_0(name);
    let mut out = Vec::with_capacity(len);
    if eq_ic(name, "hsetex")
        && let Some(hset) = hsetex_as_hset(argv)
    {
        super::encode(&mut out, &hset);
    }
    if eq_ic(name, "saddex")
        && let Some(sadd) = saddex_as_sadd(argv)
    {
        super::encode(&mut out, &sadd);
    }
    if out.len() > len {
        out.clear();
    }
    let rest = len - out.len();
    pad(&mut out, rest);
    Some((Bytes::from(out), to_8))
}

/// Whether a command is one redis-server 8.0 does not have: zwindow's own
/// or a Redis newer than 8.0.2's (asked only of those 7.0 lacks).
fn unknown_to_redis_8_0(name: &[u8]) -> bool {
    crate::spec::table::all_commands()
        .find(|c| eq_ic(name, c.name))
        .is_none_or(|c| {
            let v: Vec<u32> = c.since.split('.').filter_map(|p| p.parse().ok()).collect();
            v.as_slice() < [1].as_slice() || v.as_slice() > [8, 0, 2].as_slice()
        })
}

/// `HSETEX key [cond] [ttl] FIELDS n f v …` as `HSET key f v …`.
fn hsetex_as_hset(argv: &[impl AsRef<[u8]>]) -> Option<Vec<&[u8]>> {
    let fields = argv.iter().position(|a| eq_ic(a.as_ref(), "fields"))?;
    let pairs = argv.get(fields + 2..)?;
    if pairs.is_empty() || pairs.len() % 2 != 0 {
        return None;
    }
    let mut hset: Vec<&[u8]> = vec![b"HSET", argv.get(1)?.as_ref()];
    hset.extend(pairs.iter().map(|a| a.as_ref()));
    Some(hset)
}

/// `SADDEX key [cond] [ttl] MEMBERS n m …` as `SADD key m …` (the options
/// before MEMBERS are words and numbers: the first `MEMBERS` from the third
/// argument on is the block's).
fn saddex_as_sadd(argv: &[impl AsRef<[u8]>]) -> Option<Vec<&[u8]>> {
    let at = 2 + argv
        .get(2..)?
        .iter()
        .position(|a| eq_ic(a.as_ref(), "members"))?;
    let members = argv.get(at + 2..)?;
    if members.is_empty() {
        return None;
    }
    let mut sadd: Vec<&[u8]> = vec![b"SADD", argv.get(1)?.as_ref()];
    sadd.extend(members.iter().map(|a| a.as_ref()));
    Some(sadd)
}

/// The length of `PING <arg>` with an argument of `n` bytes.
fn ping_len(n: usize) -> usize {
    // *2\r\n $4\r\n PING\r\n $<n>\r\n <n bytes>\r\n
    4 + 4 + 6 + 1 + n.to_string().len() + 2 + n + 2
}

/// The argument length that makes `PING <arg>` exactly `len` bytes, if
/// one does (a bare `PING` is 14 bytes, one with an argument 20 or more,
/// skipping a length where the argument's length gains a digit).
fn ping_arg_for(len: usize) -> Option<usize> {
    if len < 20 {
        return None;
    }
    // The digits of n make the length jump: try the two candidates.
    (len.saturating_sub(25)..=len - 20)
        .rev()
        .find(|&n| ping_len(n) == len)
}

/// Appends `len` bytes of `PING`s (at most three), or, for the few
/// lengths none add up to (1–13, 15–19, 29, 30), spaces: inline-protocol
/// padding that a Redis replica skips as an empty line would be read as
/// nothing. Those lengths never occur: every replaced command is longer.
pub(crate) fn pad(out: &mut Vec<u8>, len: usize) {
    fn ping(out: &mut Vec<u8>, arg: Option<usize>) {
        match arg {
            None => super::encode(out, &[b"PING"]),
            Some(n) => super::encode(out, &[&b"PING"[..], &vec![b'-'; n]]),
        }
    }
    if len == 0 {
        return;
    }
    if len == 14 {
        return ping(out, None);
    }
    if let Some(n) = ping_arg_for(len) {
        return ping(out, Some(n));
    }
    for first in [14usize, 20, 21] {
        if len > first
            && let Some(n) = ping_arg_for(len - first)
        {
            ping(
                out,
                if first == 14 {
                    None
                } else {
                    ping_arg_for(first)
                },
            );
            return ping(out, Some(n));
        }
    }
    for (a, b) in [(14usize, 14usize), (14, 20), (20, 20)] {
        if len > a + b
            && let Some(n) = ping_arg_for(len - a - b)
        {
            ping(out, if a == 14 { None } else { Some(0) });
            ping(out, if b == 14 { None } else { Some(0) });
            return ping(out, Some(n));
        }
    }
    out.resize(out.len() + len, b' ');
}

/// Overwrites, in `bytes` (the stream from offset `from` on), each
/// command that has a patch.
/// A Redis 8.0 replica (`redis8`) gets only the patches of commands it
/// does not have either.
pub(crate) fn apply_patches(
    patches: &VecDeque<(u64, Bytes, bool)>,
    from: u64,
    bytes: &mut [u8],
    redis8: bool,
) {
    let end = from + bytes.len() as u64;
    // Patches are in offset order; the first that may overlap.
    let first = patches.partition_point(|(at, p, _)| at + p.len() as u64 <= from);
    for (at, p, to_8) in patches
        .iter()
        .skip(first)
        .take_while(|(at, _, _)| *at < end)
    {
        if redis8 && !to_8 {
            continue;
        }
        // The overlap of [at, at+len) with [from, end).
        let start = (*at).max(from);
        let stop = (at + p.len() as u64).min(end);
        let src = &p[(start - at) as usize..(stop - at) as usize];
        bytes[(start - from) as usize..(stop - from) as usize].copy_from_slice(src);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saddex_is_sent_as_sadd_of_its_members() {
        let argv = |a: &[&str]| a.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>();
        let sadd = |a: &[&str]| {
            saddex_as_sadd(&argv(a)).map(|v| v.iter().map(|x| x.to_vec()).collect::<Vec<_>>())
        };
        assert_eq!(
            sadd(&[
                "SADDEX", "members", "MNX", "PXAT", "5", "MEMBERS", "2", "members", "x"
            ]),
            Some(argv(&["SADD", "members", "members", "x"]))
        );
        assert_eq!(sadd(&["SADDEX", "k", "MEMBERS"]), None);
        let full = argv(&["SADDEX", "k", "PXAT", "1700000000000", "MEMBERS", "1", "m"]);
        let mut enc = Vec::new();
        crate::replication::encode(&mut enc, &full);
        let (out, to_8) = replacement(&full, enc.len()).expect("Redis 7.0 lacks SADDEX");
        assert!(to_8, "Redis 8.0 lacks SADDEX too");
        assert_eq!(out.len(), enc.len());
        assert!(out.starts_with(b"*3\r\n$4\r\nSADD\r\n$1\r\nk\r\n$1\r\nm\r\n"));
        // The TTL commands amount to nothing there.
        let exp = argv(&["SPEXPIREAT", "k", "1700000000000", "MEMBERS", "1", "m"]);
        let mut enc = Vec::new();
        crate::replication::encode(&mut enc, &exp);
        let (out, _) = replacement(&exp, enc.len()).unwrap();
        assert!(!out.windows(4).any(|w| w == b"SADD"));
    }

    #[test]
    fn padding_is_exact_from_31_bytes_on() {
        for len in (20..=28).chain(31..=200_000).chain([14]) {
            let mut out = Vec::new();
            pad(&mut out, len);
            assert_eq!(out.len(), len, "{len}");
            assert!(out.starts_with(b"*"), "{len}: PINGs, not spaces");
        }
    }

    #[test]
    fn zwindow_commands_are_swapped_and_redis_ones_kept() {
        let argv = |a: &[&str]| a.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>();
        let len = |a: &[Vec<u8>]| {
            let mut v = Vec::new();
            crate::replication::encode(&mut v, a);
            v.len()
        };
        let set = argv(&["SET", "k", "v"]);
        assert!(replacement(&set, len(&set)).is_none());
        for name in ["zadd", "ZADD", "hset", "set", "", "x", "zwindowx"] {
            assert!(!unknown_to_redis_7_0(name.as_bytes()), "{name}");
        }
        for name in ["ZWINDOW", "zwindow", "HSetEx", "zpexpireat", "hpersist"] {
            assert!(unknown_to_redis_7_0(name.as_bytes()), "{name}");
        }
        let z = argv(&["ZPEXPIREAT", "z", "1700000000000", "MEMBERS", "1", "m"]);
        let (r, to_8) = replacement(&z, len(&z)).unwrap();
        assert!(to_8, "zwindow's own: a Redis 8.0 replica lacks it too");
        assert_eq!(r.len(), len(&z));
        assert!(r.starts_with(b"*2\r\n$4\r\nPING\r\n"));
        let h = argv(&[
            "HSETEX",
            "h",
            "PXAT",
            "1700000000000",
            "FIELDS",
            "2",
            "a",
            "1",
            "b",
            "2",
        ]);
        let (r, to_8) = replacement(&h, len(&h)).unwrap();
        assert!(!to_8, "Redis 8.0 runs it");
        assert_eq!(r.len(), len(&h));
        let mut hset = Vec::new();
        crate::replication::encode(&mut hset, &argv(&["HSET", "h", "a", "1", "b", "2"]));
        assert!(r.starts_with(&hset));
    }

    #[test]
    fn patches_overwrite_only_their_range() {
        let stream = Bytes::from_static(b"0123456789abcdefghij");
        let mut patches = VecDeque::new();
        patches.push_back((105u64, Bytes::from_static(b"XXXX"), true));
        patches.push_back((118u64, Bytes::from_static(b"YYYY"), true));
        // The stream starts at offset 100; read 103..=119.
        let mut bytes = stream.slice(3..20).to_vec();
        apply_patches(&patches, 103, &mut bytes, false);
        assert_eq!(&bytes[..], b"34XXXX9abcdefghYY");
    }
}
