"""The seed apps' sorted-set workloads through redis-py's RedisCluster,
unmodified, until the file STOP_FILE appears; run by tests/cluster_mixed.rs
while the cluster under it is resharded and loses a primary.

- heartbeat "who is watching" (seeds/004): every viewer ZADDs
  watchers:{video} now viewer every 30 s; readers ZREMRANGEBYSCORE what is
  older than 65 s, then ZCARD and ZRANGEBYSCORE the live window. Time is
  compressed: the app's clock runs 100 times faster than the wall clock.
- activity feed (seeds/003): ZADD feed:{user} ts item, ZREVRANGE the page,
  trim to the newest 200 (ZREMRANGEBYRANK).

Prints one JSON line: operations done, errors surfaced to the application
(by exception type), and in how many 100 ms windows any surfaced."""

import json
import os
import random
import sys
import threading
import time

from redis.cluster import ClusterNode, RedisCluster

SPEEDUP = 100
seeds = [int(p) for p in os.environ["SEED_PORTS"].split(",")]
stop_file = os.environ["STOP_FILE"]
rc = RedisCluster(
    startup_nodes=[ClusterNode("127.0.0.1", p) for p in seeds],
    decode_responses=True,
    socket_timeout=5,
    socket_connect_timeout=2,
)
t0 = time.time()
lock = threading.Lock()
stats = {"ops": 0, "errors": {}, "windows": set()}


def now():
    """The app's clock: compressed time."""
    return t0 + (time.time() - t0) * SPEEDUP


def op(f, *args):
    try:
        r = f(*args)
        with lock:
            stats["ops"] += 1
        return r
    except Exception as e:  # what the application sees
        with lock:
            name = type(e).__name__
            stats["errors"][name] = stats["errors"].get(name, 0) + 1
            stats["windows"].add(int((time.time() - t0) * 10))
        return None


def heartbeat():
    videos = [f"v{i}" for i in range(20)]
    last_beat = {}
    while not os.path.exists(stop_file):
        viewer = f"viewer{random.randrange(200)}"
        video = videos[hash(viewer) % len(videos)]
        t = now()
        if t - last_beat.get(viewer, 0) >= 30:
            op(rc.zadd, f"watchers:{{{video}}}", {viewer: t})
            last_beat[viewer] = t
        key = f"watchers:{{{random.choice(videos)}}}"
        op(rc.zremrangebyscore, key, "-inf", t - 65)
        op(rc.zcard, key)
        op(rc.zrangebyscore, key, t - 65, "+inf")
        time.sleep(0.005)


def feed():
    n = 0
    while not os.path.exists(stop_file):
        user = f"u{random.randrange(50)}"
        key = f"feed:{{{user}}}"
        n += 1
        op(rc.zadd, key, {f"item{n}": now()})
        op(rc.zrevrange, key, 0, 19)
        op(rc.zremrangebyrank, key, 0, -201)
        time.sleep(0.005)


threads = [threading.Thread(target=f) for f in (heartbeat, feed)]
for t in threads:
    t.start()
for t in threads:
    t.join()
rc.close()
print(
    json.dumps(
        {
            "client": "redis-py",
            "ops": stats["ops"],
            "errors": sum(stats["errors"].values()),
            "by_type": stats["errors"],
            "error_windows": len(stats["windows"]),
        }
    )
)
sys.exit(0)
