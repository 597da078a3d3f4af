// ioredis, unmodified, against a running zwindow (port in ZWINDOW_PORT): strings,
// MULTI/EXEC, and a WATCH aborted by a second connection. Plain asserts; exits non-zero
// on the first failure. Run by tests/client_libraries.rs.
import assert from "node:assert/strict";
import Redis from "ioredis";

const port = Number(process.env.ZWINDOW_PORT);
assert.ok(port > 0, "ZWINDOW_PORT is not set");
const opts = { host: "127.0.0.1", port, maxRetriesPerRequest: 1, lazyConnect: true };
const a = new Redis(opts);
const b = new Redis(opts);
await a.connect();
await b.connect();
try {
  const key = `node:${process.pid}:${Date.now()}`;
  assert.equal(await a.ping(), "PONG");
  assert.equal(await a.set(key, "v"), "OK");
  assert.equal(await a.get(key), "v");
  assert.equal(await a.get(`${key}:missing`), null);

  // MULTI/EXEC: [error, result] pairs.
  const res = await a.multi().set(key, "1").get(key).exec();
  assert.deepEqual(res, [[null, "OK"], [null, "1"]]);

  // A queueing error makes EXEC fail with EXECABORT.
  await assert.rejects(
    a.multi().set(key, "never").call("NOSUCHCOMMAND").exec(),
    /EXECABORT/,
  );
  assert.equal(await a.get(key), "1");

  // WATCH, another connection writes, EXEC yields null.
  assert.equal(await a.watch(key), "OK");
  assert.equal(await b.set(key, "2"), "OK");
  assert.equal(await a.multi().set(key, "3").exec(), null);
  assert.equal(await a.get(key), "2");

  // Untouched WATCH: runs.
  assert.equal(await a.watch(key), "OK");
  assert.deepEqual(await a.multi().set(key, "4").exec(), [[null, "OK"]]);
  assert.equal(await b.get(key), "4");

  console.log("ioredis smoke: ok");
} finally {
  a.disconnect();
  b.disconnect();
}
