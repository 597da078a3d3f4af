"""A small Celery application for tests/celery.rs: a real Celery worker uses
zwindow as its broker (db 0) and result backend (db 1).

Run as a module by the worker (`celery -A celery_app worker ...`, broker and
backend URLs on the command line); run as a script it is the producer: it
queues tasks (plain calls, a group, a chain, a chord, a failing task) and
checks every result, printing `ok ROUND` on success and exiting non-zero
otherwise. Broker and backend URLs come from CELERY_BROKER / CELERY_BACKEND.
"""

import os
import sys

from celery import Celery, chain, chord, group

app = Celery(
    "celery_app",
    broker=os.environ.get("CELERY_BROKER", "redis://127.0.0.1:6379/0"),
    backend=os.environ.get("CELERY_BACKEND", "redis://127.0.0.1:6379/1"),
)
app.conf.update(
    task_serializer="json",
    result_serializer="json",
    accept_content=["json"],
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
    # Results the test reads back must not be collected early.
    result_expires=600,
)


@app.task
def add(x, y):
    return x + y


@app.task
def mul(x, y):
    return x * y


@app.task
def total(values):
    return sum(values)


@app.task
def echo(text):
    return {"text": text, "length": len(text)}


@app.task
def fail(message):
    raise ValueError(message)


def produce(round_name, timeout=15):
    results = [add.delay(i, i) for i in range(10)]
    got = [r.get(timeout=timeout) for r in results]
    assert got == [2 * i for i in range(10)], got

    e = echo.delay("héllo " + round_name).get(timeout=timeout)
    assert e == {"text": "héllo " + round_name, "length": len("héllo " + round_name)}, e

    g = group(mul.s(i, 3) for i in range(5))().get(timeout=timeout)
    assert g == [0, 3, 6, 9, 12], g

    c = chain(add.s(1, 2), mul.s(10), add.s(5))().get(timeout=timeout)
    assert c == 35, c

    ch = chord((add.s(i, 1) for i in range(4)), total.s())().get(timeout=timeout)
    assert ch == 10, ch

    bad = fail.delay("boom")
    try:
        bad.get(timeout=timeout)
    except ValueError as err:
        assert "boom" in str(err), err
    else:
        raise AssertionError("fail() did not raise")
    assert bad.state == "FAILURE", bad.state

    # A countdown goes through the broker's unacked/visibility path.
    later = add.apply_async((20, 22), countdown=1).get(timeout=timeout)
    assert later == 42, later
    print("ok " + round_name, flush=True)


if __name__ == "__main__":
    produce(sys.argv[1] if len(sys.argv) > 1 else "round")
