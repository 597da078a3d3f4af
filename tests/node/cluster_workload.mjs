// The seed apps' sorted-set workloads through a Node cluster client,
// unmodified: `node cluster_workload.mjs ioredis` (ioredis's Cluster) or
// `node cluster_workload.mjs node-redis` (node-redis's createCluster), until
// the file STOP_FILE appears; run by tests/cluster_mixed.rs while the
// cluster under it is resharded and loses a primary. The same workloads as
// tests/python/cluster_workload.py: heartbeats (ZADD watchers:{video} now
// viewer every 30 s of compressed time, ZREMRANGEBYSCORE older than 65 s,
// ZCARD, ZRANGEBYSCORE) and an activity feed (ZADD feed:{user} ts item, the
// newest page, trim to 200). Prints one JSON line: operations done, errors
// surfaced to the application, and in how many 100 ms windows any surfaced.
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster } from 'ioredis';
import { createCluster, ErrorReply } from 'redis';

const which = process.argv[2];
const seeds = process.env.SEED_PORTS.split(',').map(Number);
const stopFile = process.env.STOP_FILE;
const SPEEDUP = 100;
const t0 = Date.now();
const now = () => (t0 + (Date.now() - t0) * SPEEDUP) / 1000;
const stats = { ops: 0, errors: {}, windows: new Set(), events: 0, renewed: 0, renew_failed: {}, messages: {} };
// What the app does after an error that is not the server's reply.
let renew = () => {};
let isReplyError = () => true;

// One API for both clients: what the app calls.
let api;
let close;
if (which === 'ioredis') {
  const c = new Cluster(seeds.map((port) => ({ host: '127.0.0.1', port })));
  c.on('error', () => { stats.events += 1; });
  api = {
    zadd: (k, score, m) => c.zadd(k, score, m),
    zremrangebyscore: (k, min, max) => c.zremrangebyscore(k, min, max),
    zcard: (k) => c.zcard(k),
    zrangebyscore: (k, min, max) => c.zrangebyscore(k, min, max),
    zrevrange: (k, a, b) => c.zrevrange(k, a, b),
    zremrangebyrank: (k, a, b) => c.zremrangebyrank(k, a, b),
  };
  close = () => c.quit();
} else if (which === 'node-redis') {
  // node-redis's cluster refreshes its slot map only on MOVED and ASK: a
  // command for a dead primary's slots would wait in its offline queue
  // forever, on any server. The app does what node-redis's users do: fail
  // fast (no offline queue, a command timeout, a few reconnects) and, after
  // a connection error, make a new cluster client, which discovers the new
  // primary.
  const make = async () => {
    const c = createCluster({
      rootNodes: seeds.map((port) => ({ url: `redis://127.0.0.1:${port}` })),
      defaults: {
        disableOfflineQueue: true,
        socket: { connectTimeout: 2000, reconnectStrategy: (n) => (n < 3 ? 100 : false) },
        commandOptions: { timeout: 2000 },
      },
    });
    c.on('error', () => { stats.events += 1; });
    let timer;
    try {
      await Promise.race([
        c.connect(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('connect timed out')), 5000);
        }),
      ]);
    } catch (e) {
      c.destroy();
      throw e;
    } finally {
      clearTimeout(timer);
    }
    return c;
  };
  let c = await make();
  let renewing = null;
  renew = () => {
    renewing ??= (async () => {
      await sleep(200);
      const old = c;
      try {
        c = await make();
        stats.renewed += 1;
        old.close().catch(() => {});
      } catch (e) {
        // No seed answered yet: the next error tries again.
        const type = e?.constructor?.name ?? 'Error';
        stats.renew_failed[type] = (stats.renew_failed[type] ?? 0) + 1;
      }
    })().finally(() => { renewing = null; });
  };
  isReplyError = (e) => e instanceof ErrorReply;
  api = {
    zadd: (k, score, m) => c.zAdd(k, { score, value: m }),
    zremrangebyscore: (k, min, max) => c.zRemRangeByScore(k, min, max),
    zcard: (k) => c.zCard(k),
    zrangebyscore: (k, min, max) => c.zRangeByScore(k, min, max),
    zrevrange: (k, a, b) => c.zRange(k, a, b, { REV: true }),
    zremrangebyrank: (k, a, b) => c.zRemRangeByRank(k, a, b),
  };
  close = () => c.close();
} else {
  throw new Error(`unknown client ${which}`);
}

async function op(name, ...args) {
  try {
    const r = await api[name](...args);
    stats.ops += 1;
    return r;
  } catch (e) {
    const type = e?.constructor?.name ?? 'Error';
    stats.errors[type] = (stats.errors[type] ?? 0) + 1;
    stats.messages[type] ??= String(e?.message).slice(0, 80);
    stats.windows.add(Math.floor((Date.now() - t0) / 100));
    if (!isReplyError(e)) renew();
    return null;
  }
}

const rand = (n) => Math.floor(Math.random() * n);

async function heartbeat() {
  const lastBeat = new Map();
  while (!existsSync(stopFile)) {
    const v = rand(200);
    const viewer = `viewer${v}`;
    const t = now();
    if (t - (lastBeat.get(viewer) ?? 0) >= 30) {
      await op('zadd', `watchers:{v${v % 20}}`, t, viewer);
      lastBeat.set(viewer, t);
    }
    const key = `watchers:{v${rand(20)}}`;
    await op('zremrangebyscore', key, '-inf', t - 65);
    await op('zcard', key);
    await op('zrangebyscore', key, t - 65, '+inf');
    await sleep(5);
  }
}

async function feed() {
  let n = 0;
  while (!existsSync(stopFile)) {
    const key = `feed:{u${rand(50)}}`;
    n += 1;
    await op('zadd', key, now(), `item${n}`);
    await op('zrevrange', key, 0, 19);
    await op('zremrangebyrank', key, 0, -201);
    await sleep(5);
  }
}

await Promise.all([heartbeat(), feed()]);
await Promise.race([close().catch(() => {}), sleep(3000)]);
const errors = Object.values(stats.errors).reduce((a, b) => a + b, 0);
console.log(JSON.stringify({
  client: which,
  ops: stats.ops,
  errors,
  by_type: stats.errors,
  error_windows: stats.windows.size,
  error_events: stats.events,
  renewed: stats.renewed,
  renew_failed: stats.renew_failed,
  messages: stats.messages,
}));
process.exit(0);
