"""Writes through redis-py's Sentinel client until told to stop.

Usage: sentinel_writer.py SENTINEL_PORT[,PORT...] SECONDS

Discovers `mymaster` through the Sentinels, then for SECONDS writes
`SET w:<i> <i>` followed by `WAIT 1 1000`; a write whose WAIT answered 1
was acknowledged by a replica, and its key is printed (`acked w:<i>`).
Connection errors during a failover are retried (the client asks the
Sentinels again). Prints `primary <host>:<port>` for every primary it
wrote to, in order, and `done <writes> <acked>` at the end.
"""

import sys
import time

import redis
from redis.sentinel import MasterNotFoundError, Sentinel

ports = [int(p) for p in sys.argv[1].split(",")]
seconds = float(sys.argv[2])
sentinel = Sentinel([("127.0.0.1", p) for p in ports], socket_timeout=0.5)
master = sentinel.master_for("mymaster", socket_timeout=2, retry_on_timeout=False)
deadline = time.time() + seconds
i = writes = acked = 0
last = None
while time.time() < deadline:
    try:
        addr = sentinel.discover_master("mymaster")
        if addr != last:
            print(f"primary {addr[0]}:{addr[1]}", flush=True)
            last = addr
        master.set(f"w:{i}", i)
        writes += 1
        if master.execute_command("WAIT", 1, 1000) >= 1:
            acked += 1
            print(f"acked w:{i}", flush=True)
        i += 1
    except (redis.ConnectionError, redis.TimeoutError, redis.ReadOnlyError,
            MasterNotFoundError, redis.ResponseError) as e:
        print(f"retry {type(e).__name__}", flush=True)
        time.sleep(0.1)
        i += 1
print(f"done {writes} {acked}", flush=True)
