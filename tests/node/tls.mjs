// ioredis, unmodified, over TLS (`tls:`) against a running zwindow: the port in
// ZWINDOW_TLS_PORT, Redis's test certificates in ZWINDOW_TLS_CERTS, the server
// with `tls-auth-clients optional`. With and without a client certificate.
// Plain asserts; exits non-zero on the first failure. Run by tests/tls.rs.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import Redis from "ioredis";

const port = Number(process.env.ZWINDOW_TLS_PORT);
const certs = process.env.ZWINDOW_TLS_CERTS;
assert.ok(port > 0 && certs, "ZWINDOW_TLS_PORT and ZWINDOW_TLS_CERTS must be set");
const read = (name) => fs.readFileSync(path.join(certs, name));

for (const clientCert of [true, false]) {
  const tls = {
    ca: read("ca.crt"),
    // The suite's certificates name no host.
    checkServerIdentity: () => undefined,
  };
  if (clientCert) {
    tls.cert = read("client.crt");
    tls.key = read("client.key");
  }
  const r = new Redis({ host: "127.0.0.1", port, tls, maxRetriesPerRequest: 1, lazyConnect: true });
  await r.connect();
  try {
    const key = `tls:node:${clientCert}:${process.pid}`;
    assert.equal(await r.ping(), "PONG");
    assert.equal(await r.set(key, "v"), "OK");
    assert.equal(await r.get(key), "v");
    const res = await r.multi().incr(`${key}:n`).incr(`${key}:n`).exec();
    assert.deepEqual(res, [[null, 1], [null, 2]]);
  } finally {
    r.disconnect();
  }
}
console.log("ok");
