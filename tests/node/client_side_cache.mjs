// node-redis 5's client-side cache, unmodified, against a running server (port in
// ZWINDOW_PORT): a cached GET is served locally until another client's write, an expiry
// or (on zwindow, ZWINDOW_WINDOWS=1) a window trim invalidates it. An invalidation reaches
// the reader asynchronously, so each check waits (up to 2 s) for the fresh value.
// Plain asserts; exits non-zero on the first failure. Run by tests/client_libraries.rs.
import assert from "node:assert/strict";
import { createClient, BasicClientSideCache } from "redis";

const port = Number(process.env.ZWINDOW_PORT);
assert.ok(port > 0, "ZWINDOW_PORT is not set");
const url = `redis://127.0.0.1:${port}`;
const cache = new BasicClientSideCache({ ttl: 0, maxEntries: 0, evictPolicy: "LRU" });
const reader = createClient({ url, RESP: 3, clientSideCache: cache });
const writer = createClient({ url });
await reader.connect();
await writer.connect();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/// Waits until the reader sees `want` (an invalidation is asynchronous).
async function eventually(read, want) {
  for (let i = 0; i < 100; i++) {
    const got = await read();
    if (JSON.stringify(got) === JSON.stringify(want)) return;
    await sleep(20);
  }
  assert.deepEqual(await read(), want);
}

try {
  const key = `csc:${process.pid}`;
  await writer.set(key, "1");
  await eventually(() => reader.get(key), "1");
  const hits = cache.stats().hitCount;
  assert.equal(await reader.get(key), "1");
  assert.equal(cache.stats().hitCount, hits + 1, "the second GET is served from the cache");

  // Another client's write invalidates the cached value.
  await writer.set(key, "2");
  await eventually(() => reader.get(key), "2");

  // Many writes: the reader never keeps an old value once the writer is done.
  for (let i = 0; i < 50; i++) {
    await writer.incr(key);
    await reader.get(key);
  }
  await eventually(() => reader.get(key), "52");

  // Expiry invalidates too.
  await writer.set(key, "x", { PX: 100 });
  await eventually(() => reader.get(key), "x");
  await sleep(300);
  await eventually(() => reader.get(key), null);

  // Hashes and sorted sets are cached per command and invalidated per key.
  await writer.hSet(`${key}:h`, { f: "1" });
  await eventually(() => reader.hGetAll(`${key}:h`), { f: "1" });
  await writer.hSet(`${key}:h`, { f: "2" });
  await eventually(() => reader.hGetAll(`${key}:h`), { f: "2" });

  if (process.env.ZWINDOW_WINDOWS === "1") {
    // A window trim by the sweeper invalidates the reader's ZCARD.
    await writer.sendCommand(["ZWINDOW", "SET", `${key}:w`, "300ms", "MS"]);
    await writer.zAdd(`${key}:w`, { score: Date.now(), value: "m" });
    assert.equal(await reader.zCard(`${key}:w`), 1);
    await sleep(600);
    await eventually(() => reader.zCard(`${key}:w`), 0);
  }

  // A flush invalidates everything.
  await writer.set(key, "before");
  await eventually(() => reader.get(key), "before");
  await writer.flushAll();
  await eventually(() => reader.get(key), null);
  console.log("node-redis client-side cache ok");
} finally {
  await reader.quit();
  await writer.quit();
}
