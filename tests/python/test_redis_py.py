"""redis-py, unmodified, against a running zwindow.

Run by tests/client_libraries.rs, which starts zwindow on an ephemeral port and passes it
in ZWINDOW_PORT. Every test runs in RESP2 and RESP3 (redis-py's `protocol=3`), which
exercises what redis-py does at connect time (HELLO, CLIENT SETINFO, and over RESP3 its
maintenance-notification handshake) exactly as an application would see it.
"""

import os
import threading
import uuid

import pytest
import redis

HOST = os.environ.get("ZWINDOW_HOST", "127.0.0.1")
PORT = int(os.environ.get("ZWINDOW_PORT", "0"))


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def protocol(request):
    return request.param


def connect(protocol, **kwargs):
    if not PORT:
        pytest.fail("ZWINDOW_PORT is not set: run these tests through `cargo test --test client_libraries`")
    return redis.Redis(host=HOST, port=PORT, protocol=protocol, socket_timeout=10, **kwargs)


@pytest.fixture
def r(protocol):
    c = connect(protocol, decode_responses=True)
    yield c
    c.close()


@pytest.fixture
def key():
    """A key no other test (or protocol run) uses, so tests need no FLUSHALL."""
    return f"pytest:{uuid.uuid4().hex}"


def test_connect_handshake_and_ping(r, protocol):
    assert r.ping() is True
    assert r.echo("hello") == "hello"
    # The connection really speaks the protocol asked for.
    hello = r.execute_command("HELLO", protocol)
    if isinstance(hello, list):  # RESP2 has no maps: a flat field/value list
        hello = dict(zip(hello[::2], hello[1::2]))
    assert hello["proto"] == protocol
    assert r.execute_command("CLIENT", "ID") > 0
    # redis-py sends this at connect time over RESP3 and tolerates an error reply, which is
    # what Redis 7.0 (which predates it) answers.
    with pytest.raises(redis.ResponseError, match="unknown subcommand"):
        r.execute_command("CLIENT", "MAINT_NOTIFICATIONS", "ON", "moving-endpoint-type", "none")


def test_set_get_and_expiry(r, protocol, key):
    assert r.set(key, "v") is True
    assert r.get(key) == "v"
    assert r.get(key + ":missing") is None
    assert r.set(key, "w", nx=True) is None
    assert r.set(key, "w", xx=True, get=True) == "v"
    assert r.set(key + ":ttl", "x", ex=100) is True
    assert 99 <= r.ttl(key + ":ttl") <= 100
    assert r.exists(key, key + ":ttl", key + ":missing") == 2
    assert r.delete(key, key + ":ttl") == 2
    assert r.get(key) is None


def test_binary_values(protocol, key):
    c = connect(protocol)
    try:
        blob = bytes(range(256)) * 4
        assert c.set(key, blob) is True
        assert c.get(key) == blob
    finally:
        c.close()


def test_transaction_pipeline(r, key):
    with r.pipeline(transaction=True) as pipe:
        pipe.set(key, "1").get(key).set(key + ":b", "2").get(key + ":b")
        assert pipe.execute() == [True, "1", True, "2"]


def test_runtime_error_inside_transaction(r, key):
    # SET with a non-positive expiry fails at run time: EXEC still runs the rest.
    with r.pipeline(transaction=True) as pipe:
        pipe.set(key, "a").set(key, "b", ex=0).get(key)
        results = pipe.execute(raise_on_error=False)
    assert results[0] is True
    assert isinstance(results[1], redis.ResponseError)
    assert results[2] == "a"


def test_queueing_error_aborts_transaction(r, key):
    with r.pipeline(transaction=True) as pipe:
        pipe.set(key, "never").execute_command("NOSUCHCOMMAND", "x")
        with pytest.raises(redis.ResponseError):
            pipe.execute()
    assert r.get(key) is None


def test_watch_retry_after_interference(r, protocol, key):
    """The documented optimistic-locking loop: the first attempt loses to another client."""
    other = connect(protocol, decode_responses=True)
    r.set(key, 10)
    attempts = 0
    try:
        with r.pipeline() as pipe:
            while True:
                attempts += 1
                try:
                    pipe.watch(key)
                    current = int(pipe.get(key))
                    if attempts == 1:
                        other.set(key, current + 5)
                    pipe.multi()
                    pipe.set(key, int(current) * 2)
                    pipe.execute()
                    break
                except redis.WatchError:
                    continue
    finally:
        other.close()
    assert attempts == 2
    assert r.get(key) == "30"


def test_watch_transaction_helper_under_contention(protocol, key):
    """redis-py's `transaction()` helper from several threads: no lost updates."""
    threads, per_thread = 4, 25
    connect(protocol).set(key, 0)

    def worker():
        c = connect(protocol, decode_responses=True)
        try:
            for _ in range(per_thread):

                def bump(pipe):
                    value = int(pipe.get(key))
                    pipe.multi()
                    pipe.set(key, value + 1)

                c.transaction(bump, key)
        finally:
            c.close()

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert int(connect(protocol).get(key)) == threads * per_thread


# Needs SUBSCRIBE/PUBLISH (the pub/sub family).
def test_pubsub_subscribe_publish(r, protocol, key):
    channel = key + ":channel"
    p = r.pubsub()
    try:
        p.subscribe(channel)
        confirm = p.get_message(timeout=5)
        assert confirm["type"] == "subscribe"
        assert confirm["channel"] == channel
        assert r.publish(channel, "hello") == 1
        msg = p.get_message(timeout=5)
        assert msg is not None, "no message delivered"
        assert (msg["type"], msg["channel"], msg["data"]) == ("message", channel, "hello")

        p.psubscribe(key + ":*")
        confirm = p.get_message(timeout=5)
        assert confirm["type"] == "psubscribe"
        assert r.publish(channel, "again") == 2
        got = sorted(
            (m["type"], m["data"]) for m in (p.get_message(timeout=5), p.get_message(timeout=5)) if m
        )
        assert got == [("message", "again"), ("pmessage", "again")]

        p.unsubscribe(channel)
        p.punsubscribe()
        kinds = {p.get_message(timeout=5)["type"] for _ in range(2)}
        assert kinds == {"unsubscribe", "punsubscribe"}
        assert r.publish(channel, "nobody") == 0
    finally:
        p.close()



def test_client_side_cache_serves_reads_and_sees_writes():
    """redis-py (>= 5.1) enables its client-side cache only for servers that
    say 7.4 or later in HELLO; zwindow answers as Redis 8.0.2, so the cache
    runs: a repeated GET is served locally (the server counts one call), and
    another client's write invalidates it (CLIENT TRACKING's push)."""
    from redis.cache import CacheConfig

    c = connect(3, decode_responses=True, cache_config=CacheConfig())
    w = connect(2, decode_responses=True)
    k = "csc:" + uuid.uuid4().hex
    w.set(k, "v1")
    w.config_resetstat()
    assert c.get(k) == "v1"
    assert c.get(k) == "v1"
    assert c.get(k) == "v1"
    calls = w.info("commandstats").get("cmdstat_get", {}).get("calls", 0)
    assert calls == 1, f"the cache served the repeats: {calls} GETs reached the server"
    w.set(k, "v2")
    # The invalidation is a push on the cached connection, read before its
    # next command.
    assert c.get(k) == "v2"
    c.close()
    w.close()
