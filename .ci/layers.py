#!/usr/bin/env python3
"""The layering check: every `crate::` path in `src/` must point down.

ARCHITECTURE.md explains the layers; LAYERS below is their order, bottom
first. A file may name items of its own top-level module and of modules
listed before that module, never of one listed after it. The check reads
every `crate::a::b` path and `use crate::{a, b::c}` group outside comments
and `#[cfg(test)]` blocks (tests may reach anything), so an upward call
made without a `use` line is seen too.

    python3 .ci/layers.py            # the check (CI): exit 1 on an upward path
    python3 .ci/layers.py --stats    # the figures the layering issue asked for

A new top-level module must be placed in LAYERS, or the check fails.
"""

import collections
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")

# Bottom first. Modules on one line are peers only in the sense of this
# comment: the order within the line is still enforced.
LAYERS = [
    # leaves
    "util", "version", "crash", "clock", "alloc", "oom", "protocol", "types", "notify", "spec",
    # users and permissions over the command specs (the config file's
    # `user` lines are checked as they are read)
    "acl",
    # settings and server-wide state every layer may read
    "shutdown", "config_file", "config", "pause", "stats", "latency", "slowlog",
    # the client registry, and which clients wait on which keys
    "clients", "blocked",
    # the data; the seam through which commands run commands; the files
    "keyspace", "dispatch", "rdb", "persistence", "aof",
    # services over the data that commands use
    "pubsub", "tracking", "migrate", "replication",
    # the cluster: its wire format, later its state and bus
    "cluster",
    # the command families, the one path they run on, the sockets
    "commands", "execution", "network",
    # startup
    "server", "healthcheck", "lib", "main",
]
RANK = {m: i for i, m in enumerate(LAYERS)}

# Upward paths not yet inverted, as `file -> module`. The list may only
# shrink: a new upward path fails the check, and so does an entry that no
# longer happens (delete it).
ALLOWED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "layers-allowed.txt")


def strip(src):
    """Source without comments, string literals and `#[cfg(test)]` items."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if src.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif src.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == '"':
            i += 1
            while i < n and src[i] != '"':
                i += 2 if src[i] == "\\" else 1
            i += 1
            out.append('""')
        elif c == "r" and re.match(r'r#*"', src[i:i + 8]) and not (i and (src[i - 1].isalnum() or src[i - 1] == "_")):
            m = re.match(r'r(#*)"', src[i:])
            end = src.find('"' + m.group(1), i + len(m.group(0)))
            i = n if end < 0 else end + 1 + len(m.group(1))
            out.append('""')
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", src[i:i + 4]) or src.startswith("'\\u{", i):
            j = src.find("'", i + 2)
            i = j + 1
        else:
            out.append(c)
            i += 1
    text = "".join(out)
    # Drop `#[cfg(test)]` items: the attribute, then up to the matching
    # brace of the item's first block (or its `;`).
    while True:
        m = re.search(r"#\[cfg\(test\)\]", text)
        if not m:
            return text
        j = m.end()
        while j < len(text) and text[j] not in "{;":
            j += 1
        if j < len(text) and text[j] == "{":
            j = closing(text, j)
        text = text[: m.start()] + text[j + 1:]


def closing(text, start):
    """The index of the `}` that closes the `{` at `start` (or the end)."""
    depth, j = 0, start
    while j < len(text):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return j


def module_of(rel):
    """`keyspace/windows/mod.rs` → `keyspace`; `lib.rs` → `lib`."""
    first = rel.split("/")[0]
    return first[:-3] if first.endswith(".rs") else first


def file_of(parts):
    """The source file a `crate::` path names: its longest prefix that is a
    module file."""
    for k in range(len(parts), 0, -1):
        base = os.path.join(*parts[:k])
        for cand in (base + ".rs", os.path.join(base, "mod.rs")):
            if os.path.isfile(os.path.join(ROOT, cand)):
                return cand
    return None


PATH = re.compile(r"\bcrate((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
GROUP = re.compile(r"\buse\s+crate::\{")


def group_paths(text, start):
    """The paths of a `use crate::{…}` group starting at its `{`."""
    body = text[start + 1: closing(text, start)]

    def expand(prefix, s):
        items, depth, cur = [], 0, ""
        for ch in s + ",":
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                if cur.strip():
                    items.append(cur.strip())
                cur = ""
            else:
                cur += ch
        for it in items:
            if "{" in it:
                head, rest = it.split("{", 1)
                yield from expand(prefix + [p for p in head.strip(": ").split("::") if p], rest.rsplit("}", 1)[0])
            else:
                yield prefix + [p.split(" as ")[0].strip() for p in it.split("::") if p.strip()]

    return list(expand([], body))


def references():
    """(file, target file or None, target module) for every `crate::` path."""
    refs = []
    for dirpath, _, names in os.walk(ROOT):
        for name in sorted(names):
            if not name.endswith(".rs"):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, ROOT)
            text = strip(open(path, encoding="utf-8").read())
            paths = [m.group(1).split("::")[1:] for m in PATH.finditer(text)]
            for m in GROUP.finditer(text):
                paths.extend(group_paths(text, m.end() - 1))
            for parts in paths:
                parts = [p for p in parts if p not in ("self", "*")]
                if not parts or not parts[0][:1].islower():
                    continue  # `crate::SomeItem` at the root, or a macro
                if not os.path.exists(os.path.join(ROOT, parts[0] + ".rs")) and not os.path.isdir(os.path.join(ROOT, parts[0])):
                    continue  # a `#[macro_export]` macro such as `crate::argv!`
                refs.append((rel, file_of(parts), parts[0]))
    return refs


def upward(refs):
    bad, unknown = collections.defaultdict(set), set()
    for rel, _, target in refs:
        src = module_of(rel)
        for m in (src, target):
            if m not in RANK:
                unknown.add(m)
        if src in RANK and target in RANK and RANK[target] > RANK[src]:
            bad[rel].add(target)
    return bad, unknown


def sccs(graph):
    """Strongly connected components (Tarjan, iterative), largest first."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    nodes = set(graph) | {w for vs in graph.values() for w in vs}
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return sorted(out, key=len, reverse=True)


def stats(refs):
    pub = crate = fields_pub = 0
    shared_files, reach_files = set(), set()
    item = re.compile(r"^\s*pub(\([^)]*\))?\s+(?:unsafe\s+|const\s+|async\s+)*(fn|struct|enum|const|static|type|trait|mod|use|union|macro)\b")
    field = re.compile(r"^\s*pub(\([^)]*\))?\s+[a-z_][a-z0-9_]*\s*:")
    for dirpath, _, names in os.walk(ROOT):
        for name in names:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(dirpath, name)
            text = strip(open(path, encoding="utf-8").read())
            for line in text.splitlines():
                m = item.match(line) or field.match(line)
                if not m:
                    continue
                if m.group(1):
                    crate += 1
                elif item.match(line):
                    pub += 1
                else:
                    fields_pub += 1
            if re.search(r"\bShared\b", text):
                shared_files.add(os.path.relpath(path, ROOT))
            if re.search(r"\bShared\b|\.shared\b", text):
                reach_files.add(os.path.relpath(path, ROOT))
    bad, _ = upward(refs)
    modgraph = collections.defaultdict(set)
    filegraph = collections.defaultdict(set)
    for rel, target_file, target in refs:
        if module_of(rel) != target:
            modgraph[module_of(rel)].add(target)
        if target_file and target_file != rel:
            filegraph[rel].add(target_file)
    files = sum(1 for d, _, ns in os.walk(ROOT) for n in ns if n.endswith(".rs"))
    print(f"files: {files}")
    print(f"pub items: {pub}, pub fields: {fields_pub}, pub(restricted) items and fields: {crate}")
    print(f"files naming Shared: {len(shared_files)}; reaching it (the type or a `.shared` field): {len(reach_files)}")
    print(f"files with an upward path: {len(bad)} ({sum(len(v) for v in bad.values())} file→module paths)")
    comps = sccs(modgraph)
    print(f"module cycles: {len(comps)}" + "".join(f"\n  {' '.join(c)}" for c in comps))
    comps = sccs(filegraph)
    print(f"file cycles (crate::paths only): largest {len(comps[0]) if comps else 0} files" + "".join(f"\n  {len(c)}: {' '.join(c)}" for c in comps[:6]))
    same = collections.defaultdict(set)
    for rel, target_file, target in refs:
        if target_file and module_of(rel) == target and target_file != rel:
            same[rel].add(target_file)
    comps = sccs(same)
    print(f"cycles within a module folder: largest {len(comps[0]) if comps else 0} files" + "".join(f"\n  {len(c)}: {' '.join(c)}" for c in comps[:6]))


def self_test():
    """The check must catch what it exists for: an upward path through a
    `use` group, a bare path in code, and neither in comments or tests."""
    import tempfile

    global ROOT
    saved = ROOT
    with tempfile.TemporaryDirectory() as root:
        files = {
            "server.rs": "pub struct Shared;\n",
            "keyspace/mod.rs": "use crate::{types::Dict, server::Shared};\n",
            "types/mod.rs": "fn f() { let _ = crate::execution::call; }\n// crate::server::x\n"
            "#[cfg(test)]\nmod tests { use crate::server::Shared; }\n",
            "execution/mod.rs": "pub fn call() {}\n",
        }
        for rel, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
                f.write(text)
        ROOT = root
        try:
            bad, _ = upward(references())
        finally:
            ROOT = saved
    want = {"keyspace/mod.rs": {"server"}, "types/mod.rs": {"execution"}}
    if dict(bad) != want:
        print(f"layers: self-test failed: found {dict(bad)}, expected {want}")
        return False
    return True


def main():
    if not self_test():
        return 1
    refs = references()
    if "--stats" in sys.argv:
        stats(refs)
        return 0
    bad, unknown = upward(refs)
    if unknown:
        print(f"layers: modules missing from LAYERS in .ci/layers.py: {' '.join(sorted(unknown))}")
        return 1
    found = {f"{rel} -> {t}" for rel, ts in bad.items() for t in ts}
    allowed = set()
    if os.path.exists(ALLOWED):
        for line in open(ALLOWED, encoding="utf-8"):
            line = line.split("#", 1)[0].strip()
            if line:
                allowed.add(line)
    new, stale = sorted(found - allowed), sorted(allowed - found)
    for e in new:
        print(f"layers: upward path {e} (see ARCHITECTURE.md: invert it through a seam)")
    for e in stale:
        print(f"layers: {e} no longer happens: delete it from .ci/layers-allowed.txt")
    if new or stale:
        return 1
    print(f"layers: ok ({len(allowed)} upward paths still allowed)" if allowed else "layers: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
