"""redis-py's own test suite against zwindow and against redis-server 8.0, same run.

Usage: compare.py SUITE_DIR KNOWN_FILE ZWINDOW_URL,ZWINDOW_URL REDIS8_URL,REDIS8_URL

SUITE_DIR is redis-py's source tree (the PyPI sdist: redis/ and tests/).
Every test file runs except those that need a cluster, Sentinel, TLS or a
module (search, JSON, time series, bloom, vector sets). Each server kind
gets two servers, one for the sync test files and one for the asyncio ones,
and the four pytest runs go side by side (most of the suite's time is
sleeps and client timeouts), each writing its per-test outcomes
(outcomes.py). zwindow
still answers as an older Redis than 8.0, so its run reads the version
gates as 8.0.2 (REDIS_PY_VERSION_AS): the tests that would be skipped only
for the version run, and are counted.

Fails (exit 1) when a test that passes on redis-server 8.0 does not pass on
zwindow, unless KNOWN_FILE lists it (`test id<TAB>reason`, one a line; a
listed test that passes again is reported, so the list only shrinks). Such
a test is run once more on zwindow first: a few of the suite's tests time
client-side threads (test_background) and can miss under load.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXCLUDED = (
    "cluster",
    "sentinel",
    "ssl",
    "bloom",
    "json",
    "search",
    "timeseries",
    "vsets",
    "graph",
)
VERSION_AS = "8.0.2"


def test_files(suite):
    """The sync files and the asyncio files."""
    groups = []
    for folder in (suite / "tests", suite / "tests" / "test_asyncio"):
        groups.append(
            [
                str(path.relative_to(suite))
                for path in sorted(folder.glob("test_*.py"))
                if not any(word in path.name for word in EXCLUDED)
            ]
        )
    return groups


def start_run(suite, url, files, outcomes, log, version_as):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(HERE)
    env["REDIS_PY_OUTCOMES"] = str(outcomes)
    env.pop("REDIS_PY_VERSION_AS", None)
    if version_as:
        env["REDIS_PY_VERSION_AS"] = version_as
    args = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "outcomes",
        "-p",
        "no:cacheprovider",
        "--timeout",
        "60",
        "--redis-url",
        url,
    ]
    args += files
    return subprocess.Popen(
        args, cwd=suite, env=env, stdout=log, stderr=subprocess.STDOUT
    )


def rerun_passes(suite, url, test, work):
    out = work / "rerun.json"
    with open(work / "rerun.log", "a") as log:
        start_run(suite, url, [test], out, log, VERSION_AS).wait()
    try:
        return json.loads(out.read_text()).get(test, {}).get("outcome") == "passed"
    except (OSError, ValueError):
        return False


def counts(results):
    out = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    for entry in results.values():
        out[entry["outcome"]] += 1
    return out


def show(counts_):
    return ", ".join(f"{n} {what}" for what, n in counts_.items())


def main():
    suite, known_file, zw_urls, r8_urls = sys.argv[1:5]
    suite = Path(suite)
    known = {}
    for line in Path(known_file).read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            test, _, reason = line.partition("\t")
            known[test.strip()] = reason.strip()
    work = Path(tempfile.mkdtemp(prefix="redis-py-suite-"))
    started = time.monotonic()
    runs = []
    groups = test_files(suite)
    for name, urls, version_as in (
        ("zwindow", zw_urls.split(","), VERSION_AS),
        ("redis-8.0", r8_urls.split(","), None),
    ):
        assert len(urls) == len(groups), "one server URL per group of files"
        for i, (url, files) in enumerate(zip(urls, groups)):
            tag = f"{name}-{i}"
            log = open(work / f"{tag}.log", "w")
            proc = start_run(suite, url, files, work / f"{tag}.json", log, version_as)
            runs.append((name, tag, proc, log))
    results = {"zwindow": {}, "redis-8.0": {}}
    for name, tag, proc, log in runs:
        proc.wait()
        log.close()
        path = work / f"{tag}.json"
        if not path.exists():
            print(f"the {tag} run wrote no outcomes; its log:")
            print((work / f"{tag}.log").read_text()[-5000:])
            return 1
        results[name].update(json.loads(path.read_text()))
    elapsed = time.monotonic() - started
    zw, r8 = results["zwindow"], results["redis-8.0"]
    version_only = [t for t, e in zw.items() if e.get("version_gated")]
    version_passed = [t for t in version_only if zw[t]["outcome"] == "passed"]
    print(f"redis-py suite: {len(r8)} tests, the runs side by side in {elapsed:.0f} s")
    print(f"redis-server 8.0: {show(counts(r8))}")
    print(f"zwindow (version gates read as {VERSION_AS}): {show(counts(zw))}")
    print(
        f"  of which {len(version_only)} would be skipped for the version zwindow reports; "
        f"{len(version_passed)} of them pass"
    )

    cache = {
        name: counts({t: e for t, e in res.items() if "test_cache.py::TestCache::" in t})
        for name, res in results.items()
    }
    for name in ("zwindow", "redis-8.0"):
        print(f"client-side cache (test_cache.py TestCache) on {name}: {show(cache[name])}")

    regressions = []
    known_hit = []
    for test, entry in sorted(r8.items()):
        if entry["outcome"] != "passed":
            continue
        z = zw.get(test, {"outcome": "missing"})
        if z["outcome"] == "passed":
            continue
        why = z.get("message") or z.get("reason") or ""
        if test not in known and z["outcome"] != "skipped" and rerun_passes(
            suite, zw_urls.split(",")[0], test, work
        ):
            print(f"passed on zwindow when run again (timing under load): {test}")
            continue
        if test in known:
            known_hit.append((test, z["outcome"], known[test]))
        else:
            regressions.append((test, z["outcome"], why))
    for test, outcome, reason in known_hit:
        print(f"known difference ({outcome}): {test}: {reason}")
    stale = [
        t for t in known if zw.get(t, {}).get("outcome") == "passed"
    ]
    for test in stale:
        print(f"listed as a known difference but passes now: {test}")
    for test, outcome, why in regressions:
        print(f"REGRESSION ({outcome} on zwindow, passed on redis-server 8.0): {test}")
        print(f"    {why.splitlines()[0] if why else ''}")
    if regressions:
        for _, tag, _, _ in runs:
            print(f"log of the {tag} run: {work / (tag + '.log')}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    passed = sum(1 for e in r8.values() if e["outcome"] == "passed")
    print(
        f"redis-py suite, zwindow vs redis-server 8.0: "
        f"{passed - len(regressions)} passed, {len(regressions)} failed"
    )
    return 1 if regressions else 0


if __name__ == "__main__":
    sys.exit(main())
