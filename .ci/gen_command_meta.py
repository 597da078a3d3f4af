#!/usr/bin/env python3
"""Generates src/spec/meta.rs from Redis 8.0.2's command JSON files.

What `COMMAND INFO` reports beyond a command's name, arity and behaviour
flags (its ACL categories, command tips, key specs, legacy first/last/step
key range and the `movablekeys` flag) is data Redis itself generates from
`src/commands/*.json`; this script computes the same values the same way
redis-server does at startup, so zwindow's replies match it exactly:

* ACL categories: the JSON's `acl_categories` plus the implicit ones of
  server.c `setImplicitACLCategories` (write, read unless scripting, admin
  and dangerous, pubsub, fast, blocking, and slow for every non-fast
  command), printed in the order of acl.c's `ACLCommandCategories`.
* Tips: `command_tips`, lowercased as utils/generate-command-code.py does.
* Key specs: as declared, including their notes.
* first/last/step and `movablekeys`: server.c
  `populateCommandLegacyRangeSpec`.
* The command's flags (all of them, hidden ones included) so a unit test
  can hold zwindow's own table to them, and the name of its getkeys proc.
* Commands flagged EXPERIMENTAL (8.0's SFLUSH) are left out, as
  utils/generate-command-code.py leaves them out of redis-server.

Redis 8.0 kept 7.0's rules for all of these (server.c
`setImplicitACLCategories` and `populateCommandLegacyRangeSpec`, acl.c
`ACLDefaultCommandCategories`: the same 21 categories in the same order;
8.0 adds categories only at runtime, for modules).

Usage (stdlib only):

    python3 .ci/gen_command_meta.py [--check] [SOURCE]

SOURCE is a directory of Redis's command JSON files or a Redis source
tarball (default: .cache/download-trixie/redis_8.0.2.orig.tar.gz, the
one .ci/test downloads). Writes src/spec/meta.rs; with --check, only
compares it and exits 1 if it is stale.
"""

import glob
import json
import os
import sys
import tarfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
OUT = os.path.join(ROOT, "src", "spec", "meta.rs")
DEFAULT_SOURCE = os.path.join(ROOT, ".cache", "download-trixie", "redis_8.0.2.orig.tar.gz")

# acl.c ACLCommandCategories: the order COMMAND INFO prints categories in.
ACL_ORDER = [
    "keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
    "bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast",
    "slow", "blocking", "dangerous", "connection", "transaction", "scripting",
]

# server.h CMD_KEY_* flags, as named by the Rust `ks` constants.
KEY_FLAGS = {
    "RO", "RW", "OW", "RM", "ACCESS", "UPDATE", "INSERT", "DELETE",
    "NOT_KEY", "INCOMPLETE", "VARIABLE_FLAGS",
}

# db.c getkeys procs, as named by the Rust `GetKeysProc` variants.
GETKEYS = {
    "sintercardGetKeys": "Sintercard",
    "zunionInterDiffStoreGetKeys": "ZunionInterDiffStore",
    "zunionInterDiffGetKeys": "ZunionInterDiff",
    "evalGetKeys": "Eval",
    "functionGetKeys": "Function",
    "lmpopGetKeys": "Lmpop",
    "blmpopGetKeys": "Blmpop",
    "zmpopGetKeys": "Zmpop",
    "sortROGetKeys": "SortRo",
    "sortGetKeys": "Sort",
    "migrateGetKeys": "Migrate",
    "georadiusGetKeys": "Georadius",
    "xreadGetKeys": "Xread",
    "setGetKeys": "Set",
    "bitfieldGetKeys": "Bitfield",
}


def load(source):
    """{file name: parsed JSON} of every src/commands/*.json in `source`."""
    docs = {}
    if os.path.isdir(source):
        for path in sorted(glob.glob(os.path.join(source, "*.json"))):
            with open(path, encoding="utf-8") as f:
                docs[os.path.basename(path)] = json.load(f)
    else:
        with tarfile.open(source) as tar:
            for member in tar.getmembers():
                parts = member.name.split("/")
                if len(parts) == 4 and parts[1:3] == ["src", "commands"] and parts[3].endswith(".json"):
                    docs[parts[3]] = json.load(tar.extractfile(member))
    if not docs:
        sys.exit(f"no command JSON files found in {source}")
    return docs


def acl_categories(desc):
    """server.c setImplicitACLCategories over the declared categories."""
    flags = set(desc.get("command_flags", []))
    cats = {c.lower() for c in desc.get("acl_categories", [])}
    if "WRITE" in flags:
        cats.add("write")
    # Scripting commands are kept out of @read.
    if "READONLY" in flags and "scripting" not in cats:
        cats.add("read")
    if "ADMIN" in flags:
        cats.update(["admin", "dangerous"])
    if "PUBSUB" in flags:
        cats.add("pubsub")
    if "FAST" in flags:
        cats.add("fast")
    if "BLOCKING" in flags:
        cats.add("blocking")
    if "fast" not in cats:
        cats.add("slow")
    unknown = cats - set(ACL_ORDER)
    if unknown:
        sys.exit(f"unknown ACL categories {unknown}")
    return ["@" + c for c in ACL_ORDER if c in cats]


def spec_kind(spec):
    bs, fk = spec["begin_search"], spec["find_keys"]
    return ("index" if "index" in bs else "keyword" if "keyword" in bs else "unknown",
            "range" if "range" in fk else "keynum" if "keynum" in fk else "unknown")


def legacy_range(specs):
    """server.c populateCommandLegacyRangeSpec: (first, last, step) as
    COMMAND INFO prints them, and whether the command gets `movablekeys`."""
    def u32(x):
        return x & 0xFFFFFFFF

    def s32(x):
        x &= 0xFFFFFFFF
        return x - (1 << 32) if x >= 1 << 31 else x

    def printed(pos, lastkey, step):
        return (pos, lastkey + pos if lastkey >= 0 else lastkey, step)

    if not specs:
        return (0, 0, 0), False
    if len(specs) == 1 and spec_kind(specs[0]) == ("index", "range"):
        rng = specs[0]["find_keys"]["range"]
        movable = "INCOMPLETE" in specs[0]["flags"]
        return printed(specs[0]["begin_search"]["index"]["pos"], rng["lastkey"], rng["step"]), movable
    movable = False
    first, last, prev_last = None, 0, 0
    for spec in specs:
        if spec_kind(spec) != ("index", "range"):
            movable = True
            continue
        pos = spec["begin_search"]["index"]["pos"]
        rng = spec["find_keys"]["range"]
        if rng["step"] != 1 or (prev_last and prev_last != pos - 1):
            movable = True
            continue
        if "INCOMPLETE" in spec["flags"]:
            movable = True
        first = pos if first is None else min(first, pos)
        abs_last = rng["lastkey"] + pos if rng["lastkey"] >= 0 else rng["lastkey"]
        # Redis compares as unsigned, so a negative (counted from the end)
        # last key wins over any positive one.
        last = s32(max(u32(last), u32(abs_last)))
        prev_last = last
    if first is None:
        return (0, 0, 0), True
    return printed(first, last if last < 0 else last - first, 1), movable


def rust_str(s):
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            out.append("\\u{%x}" % ord(ch))
    return '"' + "".join(out) + '"'


def rust_strs(items):
    return "&[" + ", ".join(rust_str(i) for i in items) + "]"


def key_spec(spec):
    flags = spec["flags"]
    unknown = set(flags) - KEY_FLAGS
    if unknown:
        sys.exit(f"unknown key-spec flags {unknown}")
    # Declared order is free; the Rust side prints in Redis's order.
    flag_code = " | ".join(sorted(flags)) if flags else "0"
    bs, fk = spec["begin_search"], spec["find_keys"]
    kind = spec_kind(spec)
    if kind[0] == "index":
        begin = "B::Index(%d)" % bs["index"]["pos"]
    elif kind[0] == "keyword":
        begin = "B::Keyword { keyword: %s, startfrom: %d }" % (
            rust_str(bs["keyword"]["keyword"]), bs["keyword"]["startfrom"])
    else:
        begin = "B::Unknown"
    if kind[1] == "range":
        r = fk["range"]
        find = "F::Range { lastkey: %d, keystep: %d, limit: %d }" % (r["lastkey"], r["step"], r["limit"])
    elif kind[1] == "keynum":
        k = fk["keynum"]
        find = "F::Keynum { keynumidx: %d, firstkey: %d, keystep: %d }" % (
            k["keynumidx"], k["firstkey"], k["step"])
    else:
        find = "F::Unknown"
    notes = "Some(%s)" % rust_str(spec["notes"]) if spec.get("notes") else "None"
    return "KeySpec { notes: %s, flags: %s, begin: %s, find: %s }" % (notes, flag_code, begin, find)


def entry(name, desc):
    specs = desc.get("key_specs", [])
    (first, last, step), movable = legacy_range(specs)
    getkeys = desc.get("get_keys_function")
    if getkeys and getkeys not in GETKEYS:
        sys.exit(f"{name}: unknown getkeys proc {getkeys}")
    head = "    Meta { name: %s, arity: %d, flags: %s, movablekeys: %s, range: [%d, %d, %d]," % (
        rust_str(name), desc["arity"],
        rust_strs(f.lower() for f in desc.get("command_flags", [])),
        "true" if movable else "false", first, last, step)
    tail = "        acl: %s, tips: %s, getkeys: %s," % (
        rust_strs(acl_categories(desc)),
        rust_strs(t.lower() for t in desc.get("command_tips", [])),
        "Some(P::%s)" % GETKEYS[getkeys] if getkeys else "None")
    lines = [head, tail]
    if specs:
        lines.append("        key_specs: &[")
        lines.extend("            %s," % key_spec(s) for s in specs)
        lines.append("        ] },")
    else:
        lines[-1] += " key_specs: &[] },"
    return "\n".join(lines)


def generate(source):
    docs = load(source)
    entries = {}
    for fname, doc in docs.items():
        for name, desc in doc.items():
            # Sentinel-only commands do not exist in a plain redis-server,
            # nor do experimental ones (generate-command-code.py skips them).
            flags = desc.get("command_flags", [])
            if "ONLY_SENTINEL" in flags or "EXPERIMENTAL" in flags:
                continue
            full = name.lower()
            if desc.get("container"):
                full = desc["container"].lower() + "|" + full
            if full in entries:
                sys.exit(f"{fname}: {full} declared twice")
            entries[full] = desc
    # Containers whose subcommands are all sentinel-only would still be
    # listed; none exist in 8.0, but a subcommand without its container
    # would be a broken source.
    for full in entries:
        if "|" in full and full.split("|")[0] not in entries:
            sys.exit(f"{full}: no container")
    # Byte order, for the Rust side's binary search.
    names = sorted(entries, key=lambda n: n.encode())
    body = "\n".join(entry(n, entries[n]) for n in names)
    return f"""//! Redis 8.0.2's command metadata: ACL categories, tips, key specs, the
//! legacy first/last/step key range, `movablekeys`, flags and getkeys proc
//! of every command and subcommand of a plain (non-sentinel) redis-server
//! (its core: no module commands), sorted by `name` (`parent|sub` for
//! subcommands). It may describe commands zwindow does not have: only the
//! command table decides what zwindow lists.
//!
//! GENERATED by `.ci/gen_command_meta.py` from Redis 8.0.2's
//! `src/commands/*.json` ({len(names)} commands and subcommands); do not edit.
//! Regenerate with `python3 .ci/gen_command_meta.py [redis-src/src/commands |
//! redis_8.0.2.orig.tar.gz]` (the default source is the tarball
//! `.ci/test` downloads into `.cache/download-trixie/`).

use super::metadata::{{Begin as B, Find as F, GetKeysProc as P, KeySpec, Meta, ks::*}};

pub(crate) static META: &[Meta] = &[
{body}
];
"""


def main(argv):
    check = "--check" in argv
    rest = [a for a in argv if a != "--check"]
    source = rest[0] if rest else DEFAULT_SOURCE
    if not os.path.exists(source):
        sys.exit(f"{source} not found: pass Redis 8.0.2's src/commands directory or source tarball")
    text = generate(source)
    if check:
        with open(OUT, encoding="utf-8") as f:
            if f.read() != text:
                sys.exit(f"{OUT} is stale: rerun .ci/gen_command_meta.py")
        return
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main(sys.argv[1:])
