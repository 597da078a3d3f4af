"""pytest plugin: writes each test's outcome to $REDIS_PY_OUTCOMES as JSON.

One entry per test id: "passed", "failed", "error" (setup or teardown
failed), or "skipped" with its reason. With $REDIS_PY_VERSION_AS set, the
suite's version gates (skip_if_server_version_lt/gte) read that version
instead of the one the server reports, so tests gated on a newer Redis run,
and redis-py's client-side cache takes that version's word too (its
CacheProxyConnection refuses a HELLO `version` below 7.4.0: that check
alone is lifted, the cache's tracking and invalidation run as they are).
"""

import json
import os

import pytest

_results = {}


def pytest_configure(config):
    # conftest.py traces every allocation for the whole session (a leak
    # hunt), which costs the run several times its CPU and checks nothing.
    import tracemalloc

    tracemalloc.start = lambda *args: None
    version = os.environ.get("REDIS_PY_VERSION_AS")
    if version:
        from redis.connection import CacheProxyConnection

        CacheProxyConnection.MIN_ALLOWED_VERSION = min(
            CacheProxyConnection.MIN_ALLOWED_VERSION, "7.0.0"
        )


@pytest.hookimpl(tryfirst=True)
def pytest_collectstart(collector):
    # conftest.py's pytest_sessionstart filled REDIS_INFO from INFO; the
    # version gates are evaluated as the test modules are imported, which
    # is after it and before this collector's first module.
    version = os.environ.get("REDIS_PY_VERSION_AS")
    if version:
        try:
            from tests.conftest import REDIS_INFO
        except ImportError:
            return
        if REDIS_INFO.get("version") not in (None, version):
            REDIS_INFO["reported_version"] = REDIS_INFO["version"]
            REDIS_INFO["version"] = version


def pytest_collection_modifyitems(items):
    """Marks the tests that the reported version would skip and the
    version read instead (REDIS_PY_VERSION_AS) does not."""
    try:
        from tests.conftest import REDIS_INFO
    except ImportError:
        return
    reported = REDIS_INFO.get("reported_version")
    if not reported:
        return
    from packaging.version import Version

    for item in items:
        for mark in item.iter_markers("skipif"):
            reason = mark.kwargs.get("reason", "")
            for prefix, older in (
                ("Redis version required >= ", True),
                ("Redis version required < ", False),
            ):
                if reason.startswith(prefix):
                    needed = Version(reason[len(prefix) :])
                    as_reported = (Version(reported) < needed) == older
                    as_version = (Version(REDIS_INFO["version"]) < needed) == older
                    if as_reported and not as_version:
                        _results.setdefault(item.nodeid, {"outcome": "passed"})[
                            "version_gated"
                        ] = True


def pytest_runtest_logreport(report):
    entry = _results.setdefault(report.nodeid, {"outcome": "passed"})
    if report.when == "call":
        if report.skipped:
            entry["outcome"] = "skipped"
            entry["reason"] = _reason(report)
        elif report.failed:
            entry["outcome"] = "failed"
            entry["message"] = _message(report)
    elif report.skipped:
        entry["outcome"] = "skipped"
        entry["reason"] = _reason(report)
    elif report.failed and entry["outcome"] != "failed":
        entry["outcome"] = "error"
        entry["message"] = _message(report)


def _reason(report):
    if isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])
    return str(report.longrepr)


def _message(report):
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message[:500]
    return str(report.longrepr)[-500:]


def pytest_sessionfinish(session):
    path = os.environ.get("REDIS_PY_OUTCOMES")
    if path:
        with open(path, "w") as f:
            json.dump(_results, f, indent=0, sort_keys=True)
