// bee-queue 2.0, unmodified, end to end against a server given on the command line (a
// port): a producer and two workers in one process, as its README sets them up. The
// producer saves JOBS jobs (pipelined EVALSHAs on one connection) and waits for each job
// object's `succeeded` event, which it gets from the queue's pub/sub channel — and can only
// match to the job once the reply to that job's EVALSHA has arrived. Redis writes that
// reply before anything the script caused another client to receive (the worker's
// BRPOPLPUSH, and so the worker's PUBLISH), so every job sees its event. Prints one JSON
// summary and exits 0 when all JOBS jobs saw `succeeded` with the right result; exits 1
// (with the summary) when some did not within the time allowed, 3 on an error.
import Queue from "bee-queue";

const JOBS = 120;
// After the workers have finished every job, how long the producer's job objects have to
// see their events (they are on their way already; redis-server needs a few ms).
const SETTLE_MS = 2_000;
const OVERALL_TIMEOUT_MS = 30_000;

function fail(error) {
  console.error("bee-queue scenario failed:", error);
  process.exit(3);
}
process.on("unhandledRejection", fail);
process.on("uncaughtException", fail);

const port = Number(process.argv[2]);
if (!port) fail(new Error("usage: node bee_queue.mjs <port>"));
const redis = { host: "127.0.0.1", port };
const name = `zwindow-bq-${process.pid}`;

const producer = new Queue(name, { redis, isWorker: false, getEvents: true });
const workers = [1, 2].map(
  () => new Queue(name, { redis, isWorker: true, getEvents: false, sendEvents: true }),
);
await Promise.all([producer.ready(), ...workers.map((w) => w.ready())]);

let processed = 0;
let allProcessed;
const processedAll = new Promise((resolve) => (allProcessed = resolve));
for (const worker of workers) {
  worker.process(2, async (job) => {
    processed += 1;
    if (processed === JOBS) allProcessed();
    return job.data.n * 2;
  });
}

let succeeded = 0;
let wrongResults = 0;
let saved = 0;
let allSucceeded;
const succeededAll = new Promise((resolve) => (allSucceeded = resolve));
for (let n = 0; n < JOBS; n++) {
  const job = producer.createJob({ n });
  job.on("succeeded", (result) => {
    succeeded += 1;
    if (result !== n * 2) wrongResults += 1;
    if (succeeded === JOBS) allSucceeded();
  });
  job.save().then(() => (saved += 1), fail);
}

const overall = setTimeout(() => report(4), OVERALL_TIMEOUT_MS);
await processedAll;
await Promise.race([succeededAll, new Promise((r) => setTimeout(r, SETTLE_MS))]);
report(succeeded === JOBS && wrongResults === 0 && saved === JOBS ? 0 : 1);

async function report(code) {
  clearTimeout(overall);
  console.log(JSON.stringify({ jobs: JOBS, saved, processed, succeeded, wrongResults }));
  await Promise.all([producer, ...workers].map((q) => q.close(1000).catch(() => {})));
  process.exit(code);
}
