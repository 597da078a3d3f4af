"""redis-py, unmodified, over TLS (`ssl=True`) against a running zwindow.

Run by tests/tls.rs, which starts zwindow with `tls-auth-clients optional` on
the port in ZWINDOW_TLS_PORT, with the certificates in ZWINDOW_TLS_CERTS
(Redis's utils/gen-test-certs.sh). Not a pytest module: it needs that server.
Exits non-zero on the first failure.
"""

import os
import sys

import redis

port = int(os.environ["ZWINDOW_TLS_PORT"])
certs = os.environ["ZWINDOW_TLS_CERTS"]


def connect(client_cert, protocol):
    extra = {}
    if client_cert:
        extra = dict(
            ssl_certfile=os.path.join(certs, "client.crt"),
            ssl_keyfile=os.path.join(certs, "client.key"),
        )
    return redis.Redis(
        host="127.0.0.1",
        port=port,
        ssl=True,
        ssl_ca_certs=os.path.join(certs, "ca.crt"),
        # The suite's certificates name no host.
        ssl_check_hostname=False,
        protocol=protocol,
        socket_timeout=10,
        **extra,
    )


for client_cert in (True, False):
    for protocol in (2, 3):
        r = connect(client_cert, protocol)
        key = f"tls:py:{client_cert}:{protocol}"
        assert r.ping() is True
        assert r.set(key, "v") is True
        assert r.get(key) == b"v"
        p = r.pipeline()
        p.incr(f"{key}:n").incr(f"{key}:n").get(f"{key}:n")
        assert p.execute() == [1, 2, b"2"]
        ps = r.pubsub()
        ps.subscribe(f"{key}:ch")
        assert ps.get_message(timeout=5)["type"] == "subscribe"
        r.publish(f"{key}:ch", "hello")
        msg = ps.get_message(timeout=5)
        assert msg and msg["data"] == b"hello", msg
        ps.close()
        r.close()
print("ok")
sys.exit(0)
