#!/usr/bin/env python3
"""Writes tests/tcl/skip.txt: the tests of Redis 7.0.15's TCL units that use
a command zwindow does not implement yet, found by reading each test's body.

Usage: python3 tests/tcl/make_skip.py SUITE_DIR UNIT... > tests/tcl/skip.txt
Rerun it when a command lands (and drop the command from MISSING), then raise
tests/tcl/baseline.txt. Test names with TCL variables become `/regexp` lines,
as the harness's --skipfile accepts.
"""
import re
import sys

# Commands (and `command subcommand`s) zwindow does not have yet.
MISSING = """
""".split()
MISSING_SUB = [
    # Not Redis 7.0 subcommands either (7.0 has STRINGMATCH-TEST).
    ("debug", "stringmatch-len"), ("debug", "jmap"),
]


# Tests skipped for a known zwindow bug, each with its reason (fix, then
# remove the line and raise the baseline).
KNOWN_BUGS = []

CORRUPT_DUMP_WHY = ("RESTOREs (outside a catch) a payload that redis-server 7.0 accepts under sanitize-dump-payload no an"
                    "d then asserts on (the test counts its ASSERTION FAILED); zwindow checks every payload in full and refuses it with Bad data format, which would abort the unit")

# Tests that use a feature zwindow leaves out on purpose without the tag
# that would exclude them (an error there aborts the whole unit).
UNTAGGED = [
    ("other", "Don't rehash if redis has child process",
     "expects the keyspace's table not to grow while a BGSAVE child runs (Redis avoids copy-on-write of "
     "a forked dataset); zwindow serializes on a thread of its own and its tables grow at once"),
    # tls runs in the TLS pass (tests/tcl/baseline-tls.txt).
    ("tls", "TLS: Verify tls-cert-file is also used as a client cert if none specified",
     "makes a replica; externally its overrides are set one CONFIG SET at a time, "
     "a certificate before its key, which redis-server 7.0.15 refuses too"),
    # integration/replication runs in the replication pass
    # (tests/tcl/baseline-repl.txt). zwindow's snapshot is fork-free: these
    # look for the fork child (its pid, its death) or the parent's pipe
    # from it (its log lines), which zwindow has no equivalent of.
    ("integration/replication", "diskless $all_drop replicas drop during rdb pipe",
     "reads the log lines of the parent's pipe from the RDB fork child (zwindow's snapshot is fork-free)"),
    ("integration/replication", "diskless replication child being killed is collected",
     "kills the RDB fork child by its pid (zwindow's snapshot is fork-free)"),
    ("integration/replication", "replication child dies when parent is killed - diskless: $mdl",
     "looks for the RDB fork child by its pid (zwindow's snapshot is fork-free)"),
    ("integration/replication", "diskless replication read pipe cleanup",
     "the parent's pipe from the RDB fork child, and its pid in the log (zwindow's snapshot is fork-free)"),
    ("integration/replication", "replica can handle EINTR if use diskless load",
     "sets watchdog-period: Redis's SIGALRM software watchdog (a debugging aid for its C stack), which zwindow does not have"),
    # integration/corrupt-dump: Redis's shallow check under
    # sanitize-dump-payload no lets these through to crash later; zwindow
    # always checks in full (see src/rdb/value.rs).
    ("integration/corrupt-dump", "corrupt payload: fuzzer findings - stream bad lp_count - unsanitized",
     CORRUPT_DUMP_WHY),
    ("integration/corrupt-dump", "corrupt payload: fuzzer findings - infinite loop",
     CORRUPT_DUMP_WHY),
    ("integration/corrupt-dump", "corrupt payload: fuzzer findings - negative reply length",
     CORRUPT_DUMP_WHY),
    ("integration/corrupt-dump", "corrupt payload: fuzzer findings - stream with no records",
     CORRUPT_DUMP_WHY),
    ("integration/corrupt-dump", "corrupt payload: fuzzer findings - stream listpack valgrind issue",
     CORRUPT_DUMP_WHY),
    ("integration/corrupt-dump", "corrupt payload: fuzzer findings - stream listpack lpPrev valgrind issue",
     CORRUPT_DUMP_WHY),
    ("integration/corrupt-dump", "corrupt payload: fuzzer findings - lpFind invalid access",
     CORRUPT_DUMP_WHY),
]


def uses_missing(body):
    # A command appears after `r `, `$rd `, `$r `, a `[` or in a redis.call
    # / a list of arguments: match the word anywhere a command could start.
    low = body.lower()
    for cmd in MISSING:
        if re.search(r"(?:\br|\$\w+|\[|\{|'|\"|assert_error\s+\S+\s+\{\w*)\s*" + re.escape(cmd) + r"\b(?![-_])", low) or \
           re.search(r"redis\.p?call\(\s*['\"]" + re.escape(cmd) + r"['\"]", low):
            return cmd
    for cmd, sub in MISSING_SUB:
        if re.search(r"\b" + cmd + r"\s+" + re.escape(sub) + r"\b", low):
            return f"{cmd} {sub}"
    return None


def tests_of(text):
    """Yields (name, body) for every `test name {body}` in a unit."""
    for m in re.finditer(r"(?m)^\s*test\s+", text):
        i = m.end()
        name, i = word(text, i)
        while i < len(text) and text[i] in " \t":
            i += 1
        body, _ = word(text, i)
        if name is not None and body is not None:
            yield name, body


def word(text, i):
    """A TCL word at i: {braced}, "quoted" or bare; returns (text, next)."""
    if i >= len(text):
        return None, i
    if text[i] == "{":
        depth, j = 0, i
        while j < len(text):
            c = text[j]
            if c == "\\":
                j += 2
                continue
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    return text[i + 1 : j], j + 1
            j += 1
        return None, j
    if text[i] == '"':
        j = i + 1
        while j < len(text) and text[j] != '"':
            j += 2 if text[j] == "\\" else 1
        return text[i + 1 : j], j + 1
    m = re.compile(r"\S+").match(text, i)
    return (m.group(0), m.end()) if m else (None, i)


def skip_line(name):
    if "$" in name or "[" in name:
        parts = re.split(r"\$\{?\w+\}?|\[[^\]]*\]", name)
        return "/^" + ".*".join(re.escape(p) for p in parts) + "$"
    return name


def main():
    suite, units = sys.argv[1], sys.argv[2:]
    print("# Tests the harness skips (generated by tests/tcl/make_skip.py; see tests/tcl_suite.rs).")
    print("# Each uses a command zwindow does not implement yet, named in the comment above it.")
    for unit, name, why in KNOWN_BUGS:
        if unit in units:
            print(f"# {unit}: known bug: {why}")
            print(name)
    for unit, name, why in UNTAGGED:
        if unit in units:
            print(f"# {unit}: {why}")
            print(skip_line(name))
    for unit in units:
        path = unit if unit.startswith("integration/") else f"unit/{unit}"
        text = open(f"{suite}/tests/{path}.tcl").read()
        seen = set()
        for name, body in tests_of(text):
            cmd = uses_missing(body)
            if cmd and name not in seen:
                seen.add(name)
                print(f"# {unit}: needs {cmd.upper()}")
                print(skip_line(name))


main()
