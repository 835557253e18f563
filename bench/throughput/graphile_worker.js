// Graphile Worker's side of a drain: one worker process, as Graphile Worker is deployed,
// started before the jobs are added (so it waits on LISTEN/NOTIFY, as Frugal's workers
// wait on the scheduler). The driver (run.js) adds the jobs and times the drain.
//
//   node graphile_worker.js CONFIG_JSON
// CONFIG_JSON: {"pg": node-postgres config, "concurrency": 24}
// Prints "ready" once the worker listens; SIGTERM stops it gracefully.
"use strict";

const { spawn } = require("child_process");
const pg = require("pg");
const { run } = require("graphile-worker");

const config = JSON.parse(process.argv[2]);

// The tasks the benchmark adds. The payload carries the command, as a Frugal job spec does.
const taskList = {
  // Spawns the command (/bin/true) and waits for it, as a Frugal worker does for each job;
  // stdio is ignored, the cheapest way to run it (Frugal keeps each job's output).
  bench_true: (payload) =>
    new Promise((resolve, reject) => {
      const child = spawn(payload.command[0], payload.command.slice(1), { stdio: "ignore" });
      child.on("error", reject);
      child.on("exit", (code, signal) =>
        code === 0 ? resolve() : reject(new Error(`exited ${code ?? signal}`)),
      );
    }),
  // Returns at once: the queue's own cost per job.
  bench_noop: async () => {},
};

async function main() {
  // Graphile's documented pool size: "10 or concurrentJobs + 2, whichever is larger".
  const pgPool = new pg.Pool(
    Object.assign({}, config.pg, { max: Math.max(10, config.concurrency + 2) }),
  );
  const report = (err) => console.error(`pool: ${err.message}`);
  pgPool.on("error", report);
  pgPool.on("connect", (client) => client.on("error", report));
  // Everything else at Graphile Worker's defaults (pollInterval 2000 ms, which matters
  // little: new jobs arrive by LISTEN/NOTIFY; no localQueue, no completeJobBatchDelay).
  const runner = await run({ pgPool, concurrency: config.concurrency, taskList, noHandleSignals: true });
  process.on("SIGTERM", async () => {
    await runner.stop();
    await pgPool.end();
    process.exit(0);
  });
  console.log("ready");
  await runner.promise;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
