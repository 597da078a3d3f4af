// BullMQ, unmodified, end to end against a server given on the command line (a port or a
// redis://host:port URL): a Queue, two Workers (concurrency 2 each), a QueueEvents
// listener (XREAD BLOCK on the events stream), plain jobs, a prioritized job, a delayed
// job, a job that fails once and succeeds on its retry, and a job that fails for good.
// Prints one canonical JSON summary (nothing timing-dependent) and exits 0; exits
// non-zero with the error on any failure or after 30 s. Run by tests/client_libraries.rs
// against zwindow and against redis-server, whose summaries must be identical.
import { Queue, QueueEvents, Worker } from "bullmq";
import Redis from "ioredis";

const OVERALL_TIMEOUT_MS = 30_000;
const timer = setTimeout(() => {
  console.error(`bullmq scenario: timed out after ${OVERALL_TIMEOUT_MS} ms`);
  process.exit(3);
}, OVERALL_TIMEOUT_MS);

function fail(error) {
  console.error("bullmq scenario failed:", error);
  process.exit(1);
}
process.on("unhandledRejection", fail);
process.on("uncaughtException", fail);

function connectionFromArg(arg) {
  if (!arg) throw new Error("usage: node bullmq.mjs <port | redis://host:port>");
  if (/^\d+$/.test(arg)) return { host: "127.0.0.1", port: Number(arg) };
  const url = new URL(arg);
  return { host: url.hostname || "127.0.0.1", port: Number(url.port || 6379) };
}

// Sort object keys recursively so the JSON text is canonical.
function canonical(value) {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, canonical(value[k])]),
    );
  }
  return value;
}

const connection = { ...connectionFromArg(process.argv[2]), maxRetriesPerRequest: null };
const name = "zwindow-e2e";

// Every event a job goes through, as QueueEvents delivers it from the stream.
const eventsByJobId = new Map();
const workerErrors = [];

// Records the job events a QueueEvents emits (event name → jobId), as they come off the stream.
function recordEvents(queueEvents, byJobId) {
  const plainEmit = queueEvents.emit.bind(queueEvents);
  queueEvents.emit = (event, ...args) => {
    const info = args[0];
    if (!event.includes(":") && info && typeof info === "object" && info.jobId) {
      if (!byJobId.has(info.jobId)) byJobId.set(info.jobId, []);
      byJobId.get(info.jobId).push(event);
    }
    return plainEmit(event, ...args);
  };
  queueEvents.on("error", fail);
  return queueEvents;
}
// Replays the stream from its start: it sees every event whenever its XREADs run (it is
// started once the live listener below is blocked, so that one is the only XREAD then).
const queueEvents = recordEvents(
  new QueueEvents(name, { connection, lastEventId: "0-0", blockingTimeout: 200, autorun: false }),
  eventsByJobId,
);
// Follows the stream from `$` with a long XREAD BLOCK, which the jobs' XADDs must wake.
const liveEventsByJobId = new Map();
const liveEvents = recordEvents(
  new QueueEvents(name, { connection, blockingTimeout: 10_000 }),
  liveEventsByJobId,
);

async function processor(job) {
  await job.log(`processing ${job.name} attempt ${job.attemptsMade + 1}`);
  switch (job.name) {
    case "flaky":
      if (job.attemptsMade === 0) throw new Error("flaky: first attempt fails");
      return { recovered: true, attempt: job.attemptsMade + 1 };
    case "doomed":
      throw new Error("doomed: always fails");
    case "delayed":
      return "late but done";
    default:
      await job.updateProgress(50);
      await new Promise((r) => setTimeout(r, 20));
      await job.updateProgress(100);
      return { doubled: job.data.n * 2 };
  }
}

const queue = new Queue(name, { connection });
queue.on("error", fail);
const workers = [1, 2].map((i) => {
  const w = new Worker(name, processor, { connection, concurrency: 2, autorun: false });
  w.on("error", (e) => workerErrors.push(`worker ${i}: ${e.message}`));
  return w;
});

try {
  await Promise.all([
    queue.waitUntilReady(),
    queueEvents.waitUntilReady(),
    liveEvents.waitUntilReady(),
  ]);
  // Wait until the live listener is parked in its XREAD BLOCK before adding jobs.
  const raw = new Redis({ ...connection, lazyConnect: true });
  await raw.connect();
  for (;;) {
    const clients = (await raw.client("LIST")).split("\n");
    if (clients.some((line) => / cmd=xread( |$)/.test(line) && / flags=b /.test(line))) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  queueEvents.run().catch(fail);

  const jobs = [];
  for (let n = 1; n <= 5; n++) jobs.push(await queue.add(`plain-${n}`, { n }));
  jobs.push(await queue.add("prioritized", { n: 10 }, { priority: 5 }));
  jobs.push(await queue.add("delayed", { n: 0 }, { delay: 300 }));
  jobs.push(
    await queue.add("flaky", { n: 0 }, { attempts: 2, backoff: { type: "fixed", delay: 100 } }),
  );
  jobs.push(await queue.add("doomed", { n: 0 }, { attempts: 1 }));
  const countsBefore = await queue.getJobCounts("wait", "prioritized", "delayed", "active");

  for (const w of workers) w.run().catch(fail);

  // Every job's final event (completed, or failed with no attempts left) has arrived.
  const finished = (job) => {
    const seen = eventsByJobId.get(job.id) ?? [];
    return job.name === "doomed" ? seen.includes("failed") : seen.includes("completed");
  };
  while (!jobs.every(finished)) await new Promise((r) => setTimeout(r, 25));
  const sortedEvents = (byJobId) =>
    JSON.stringify([...byJobId].map(([id, evs]) => [id, [...evs].sort()]).sort());
  while (sortedEvents(liveEventsByJobId) !== sortedEvents(eventsByJobId)) {
    await new Promise((r) => setTimeout(r, 25));
  }

  const summary = { countsBeforeWorkers: countsBefore, jobs: {} };
  for (const added of jobs) {
    const job = await queue.getJob(added.id);
    const { logs, count } = await queue.getJobLogs(added.id);
    summary.jobs[job.name] = {
      state: await job.getState(),
      returnvalue: job.returnvalue ?? null,
      attemptsMade: job.attemptsMade,
      failedReason: job.failedReason ?? null,
      progress: job.progress,
      logs: { count, lines: logs },
      data: job.data,
      events: [...(eventsByJobId.get(added.id) ?? [])].sort(),
    };
  }
  summary.counts = await queue.getJobCounts();
  summary.completedIds = (await queue.getCompleted()).length;
  summary.failedIds = (await queue.getFailed()).length;
  summary.workerErrors = workerErrors;
  // The `$` follower woke for every event the replaying listener read (the loop above).
  summary.liveListenerSawEveryEvent = true;

  await Promise.all(workers.map((w) => w.close()));
  await Promise.all([queueEvents.close(), liveEvents.close()]);

  // With no workers left: pause, add, resume; clean the failed set; obliterate.
  await queue.pause();
  await queue.add("while-paused", { n: 0 });
  summary.paused = {
    isPaused: await queue.isPaused(),
    counts: await queue.getJobCounts("paused", "wait"),
  };
  await queue.resume();
  summary.resumed = {
    isPaused: await queue.isPaused(),
    counts: await queue.getJobCounts("paused", "wait"),
  };
  summary.cleanedFailed = (await queue.clean(0, 100, "failed")).length;
  summary.countsAfterClean = await queue.getJobCounts("failed", "completed", "wait");
  await queue.obliterate({ force: true });
  summary.keysAfterObliterate = (await raw.keys(`bull:${name}:*`)).sort();
  raw.disconnect();
  await queue.close();
  clearTimeout(timer);
  process.stdout.write(`${JSON.stringify(canonical(summary), null, 1)}\n`);
  process.exit(0);
} catch (error) {
  fail(error);
}
