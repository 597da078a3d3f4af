//! LCS: the longest common subsequence of two strings (Redis's
//! `lcsCommand` in `t_string.c`).
//!
//! The classic dynamic-programming table of `(len(a)+1) * (len(b)+1)` u32
//! lengths, walked back from the end to rebuild the subsequence and its
//! matching ranges. The table is transient memory proportional to the
//! product of the lengths, so, as Redis does, it is refused when it would
//! exceed proto-max-bulk-len, and an allocation failure is an error reply
//! rather than an abort.

use super::flags::*;
use super::strings::lookup_str;
use super::{CmdResult, Command, Ctx, Done, Error, Handler, Keys, int_arg};
use crate::util::eq_ic;

pub(crate) static COMMANDS: &[Command] =
    &[
        Command::new("lcs", -3, READONLY, Keys::TWO, &(lcs as Handler))
            .doc(
                "string",
                "7.0.0",
                "O(N*M) where N and M are the lengths of s1 and s2, respectively",
                "Finds the longest common substring.",
            )
            .syntax("key1 key2 [LEN] [IDX] [MINMATCHLEN min-match-len] [WITHMATCHLEN]"),
    ];

/// One matching range, emitted from the end of the strings backwards.
struct Match {
    a: (u32, u32),
    b: (u32, u32),
}

fn lcs(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    let not_strings = |_| Error::Static("ERR The specified keys must contain string values");
    // Both keys are looked up (and counted as reads) before either's type
    // is judged, as in Redis.
    let a = lookup_str(ctx.ks, args.get(1), true).map(|s| s.map(|s| s.data.clone()));
    let b = lookup_str(ctx.ks, args.get(2), true).map(|s| s.map(|s| s.data.clone()));
    let (a, b) = (
        a.map_err(not_strings)?.unwrap_or_default(),
        b.map_err(not_strings)?.unwrap_or_default(),
    );
    let (mut idx, mut len, mut withmatchlen, mut minmatchlen) = (false, false, false, 0i64);
    let mut j = 3;
    while j < args.len() {
        let opt = args.get(j);
        if eq_ic(opt, "IDX") {
            idx = true;
        } else if eq_ic(opt, "LEN") {
            len = true;
        } else if eq_ic(opt, "WITHMATCHLEN") {
            withmatchlen = true;
        } else if eq_ic(opt, "MINMATCHLEN") && j + 1 < args.len() {
            minmatchlen = int_arg(args.get(j + 1))?.max(0);
            j += 1;
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    if idx && len {
        return Err(Error::Static(
            "ERR If you want both the length and indexes, please just use IDX.",
        ));
    }
    if a.len() >= u32::MAX as usize - 1 || b.len() >= u32::MAX as usize - 1 {
        return Err(Error::Static("ERR String too long for LCS"));
    }
    let (alen, blen) = (a.len(), b.len());
    let cells = (alen as u64 + 1) * (blen as u64 + 1);
    let bytes = cells.checked_mul(4);
    if bytes.is_some_and(|n| n > ctx.shared.config.proto_max_bulk_len().max(0) as u64) {
        return Err(Error::Static(
            "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
        ));
    }
    let mut table: Vec<u32> = Vec::new();
    if bytes.is_none() || table.try_reserve_exact(cells as usize).is_err() {
        return Err(Error::Static(
            "ERR Insufficient memory, failed allocating transient memory for LCS",
        ));
    }
    table.resize(cells as usize, 0);
    let w = blen + 1;
    for i in 1..=alen {
        for j in 1..=blen {
            table[i * w + j] = if a[i - 1] == b[j - 1] {
                table[(i - 1) * w + j - 1] + 1
            } else {
                table[(i - 1) * w + j].max(table[i * w + j - 1])
            };
        }
    }
    let total = table[alen * w + blen];
    if len && !idx {
        ctx.out.int(i64::from(total));
        return Ok(Done);
    }

    // Walk back from the end, rebuilding the subsequence and its ranges
    // exactly as Redis does (ranges grow backwards while matches stay
    // contiguous in both strings).
    let mut result = vec![0u8; total as usize];
    let mut k = total as usize;
    let mut matches: Vec<Match> = Vec::new();
    let none = alen as u32; // "no range open", as Redis marks it
    let (mut a_start, mut a_end, mut b_start, mut b_end) = (none, 0u32, 0u32, 0u32);
    let (mut i, mut j) = (alen, blen);
    while i > 0 && j > 0 {
        let mut emit = false;
        if a[i - 1] == b[j - 1] {
            result[k - 1] = a[i - 1];
            if a_start == none {
                (a_start, a_end) = ((i - 1) as u32, (i - 1) as u32);
                (b_start, b_end) = ((j - 1) as u32, (j - 1) as u32);
            } else if a_start == i as u32 && b_start == j as u32 {
                a_start -= 1;
                b_start -= 1;
            } else {
                emit = true;
            }
            if a_start == 0 || b_start == 0 {
                emit = true;
            }
            k -= 1;
            i -= 1;
            j -= 1;
        } else {
            if table[(i - 1) * w + j] > table[i * w + j - 1] {
                i -= 1;
            } else {
                j -= 1;
            }
            if a_start != none {
                emit = true;
            }
        }
        if emit {
            let match_len = a_end.wrapping_sub(a_start).wrapping_add(1);
            if minmatchlen == 0 || i64::from(match_len) >= minmatchlen {
                matches.push(Match {
                    a: (a_start, a_end),
                    b: (b_start, b_end),
                });
            }
            a_start = none;
        }
    }
    if !idx {
        ctx.out.bulk(&result);
        return Ok(Done);
    }
    ctx.out.map(2);
    ctx.out.bulk(b"matches");
    ctx.out.array(matches.len());
    for m in &matches {
        ctx.out.array(2 + usize::from(withmatchlen));
        for (s, e) in [m.a, m.b] {
            ctx.out.array(2);
            ctx.out.int(i64::from(s));
            ctx.out.int(i64::from(e));
        }
        if withmatchlen {
            ctx.out
                .int(i64::from(m.a.1.wrapping_sub(m.a.0).wrapping_add(1)));
        }
    }
    ctx.out.bulk(b"len");
    ctx.out.int(i64::from(total));
    Ok(Done)
}
