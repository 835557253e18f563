// Graphile Worker's side of the benchmark: its own database on the same PostgreSQL,
// migrated by Graphile itself, jobs added through WorkerUtils (addJob, addJobs), drains
// run by a separate worker process (graphile_worker.js), latency by a runner in this
// process (the task records when it starts; the same clock as the addJob call).
"use strict";

const fs = require("fs");
const path = require("path");
const pg = require("pg");
const { makeWorkerUtils, run, Logger } = require("graphile-worker");
const { wallMs, sleep, startProcess, stopProcess, waitForLog } = require("./lib");

const DB = "graphile_bench";
// The same 24 slots as Frugal's 3 workers x 8 GPUs.
const CONCURRENCY = 24;
const COMMAND = ["/bin/true"];

// A pool with an error handler, as Graphile asks: an idle client's error (the database
// dropped at a reset) must not crash the benchmark.
function makePool(config) {
  const pool = new pg.Pool(config);
  const report = (err) => console.error(`graphile pool: ${err.message}`);
  pool.on("error", report);
  pool.on("connect", (client) => client.on("error", report));
  return pool;
}

class Graphile {
  constructor({ cluster, dir }) {
    this.name = "Graphile Worker";
    this.cluster = cluster;
    this.dir = dir;
    this.starts = 0;
  }

  // Graphile's per-job log lines (info, as by default) go to a file, not the terminal.
  logger() {
    const out = fs.createWriteStream(path.join(this.dir, `graphile-${this.starts}.log`), { flags: "a" });
    this.logStream = out;
    return new Logger(() => (level, message) => out.write(`[${level}] ${message}\n`));
  }

  // A fresh database with Graphile's schema (its own migrations), and a WorkerUtils on a
  // one-connection pool for bulk adds.
  async start() {
    await this.cluster.resetDatabase(DB);
    this.starts += 1;
    this.log = this.logger();
    this.pool = makePool(this.cluster.pgConfig(DB, { max: 1 }));
    this.utils = await makeWorkerUtils({ pgPool: this.pool, logger: this.log });
    await this.utils.migrate();
  }

  async stop() {
    await this.stopWorkers();
    if (this.runner) {
      await this.runner.stop();
      await this.runnerPool.end();
      this.runner = null;
    }
    await this.utils.release();
    await this.pool.end();
    this.logStream.end();
  }

  // A closed-loop client for the single-submit runs: WorkerUtils.addJob on a pool sized to
  // the concurrency (quickAddJob would open a pool per call).
  async submitter(concurrency) {
    const pool = makePool(this.cluster.pgConfig(DB, { max: concurrency }));
    const utils = await makeWorkerUtils({ pgPool: pool, logger: this.log });
    const payload = { command: COMMAND };
    return {
      submit: async () => {
        await utils.addJob("bench_true", payload);
      },
      close: async () => {
        await utils.release();
        await pool.end();
      },
    };
  }

  // Adds `count` jobs with WorkerUtils.addJobs (the add_jobs SQL function), in calls of
  // 10,000 as Frugal's batches; mode picks the task ('true' spawns /bin/true, 'noop'
  // returns at once).
  async addJobs(count, mode) {
    const spec = { identifier: mode === "noop" ? "bench_noop" : "bench_true", payload: { command: COMMAND } };
    for (let done = 0; done < count; done += 10000) {
      const n = Math.min(10000, count - done);
      await this.utils.addJobs(new Array(n).fill(spec));
    }
  }

  // One worker process with concurrency 24; mode only names what the jobs do (the
  // process knows both tasks).
  async startWorkers() {
    const log = path.join(this.dir, `graphile-worker-${this.starts}.log`);
    const config = { pg: this.cluster.pgConfig(DB), concurrency: CONCURRENCY };
    this.worker = startProcess([process.execPath, path.join(__dirname, "graphile_worker.js"),
                                JSON.stringify(config)], { logFile: log });
    await waitForLog(this.worker, log, /^ready$/m, 60000, "the Graphile worker to start");
  }

  async stopWorkers() {
    await stopProcess(this.worker);
    this.worker = null;
  }

  // Graphile deletes a job when it succeeds: done = added - left. A failed job stays, with
  // last_error set, and is retried later (counted as bad).
  async progress(total) {
    const r = await this.cluster.query(DB,
      `SELECT count(*)::int AS left, count(*) FILTER (WHERE last_error IS NOT NULL)::int AS bad
         FROM graphile_worker._private_jobs`);
    return { done: total - r.rows[0].left, bad: r.rows[0].bad };
  }

  // Latency runs: a runner in this process (concurrency 24) whose task notes when it starts.
  async startLatency() {
    this.started = new Map();
    this.runnerPool = makePool(this.cluster.pgConfig(DB, { max: CONCURRENCY + 2 }));
    this.runner = await run({
      pgPool: this.runnerPool,
      concurrency: CONCURRENCY,
      noHandleSignals: true,
      logger: this.log,
      taskList: {
        bench_latency: async (payload) => {
          const at = wallMs();
          const waiter = this.started.get(payload.i);
          if (waiter) waiter(at);
        },
      },
    });
    this.sample = 0;
  }

  // Adds one job and returns the milliseconds from the addJob call to its task starting.
  async latencySample() {
    const i = this.sample++;
    const startedAt = new Promise((resolve) => this.started.set(i, resolve));
    const t0 = wallMs();
    await this.utils.addJob("bench_latency", { i });
    const timeout = sleep(60000).then(() => NaN);
    const at = await Promise.race([startedAt, timeout]);
    this.started.delete(i);
    if (Number.isNaN(at)) throw new Error(`job ${i} did not start within 60 s`);
    return at - t0;
  }

  async waitIdle(timeoutMs = 60000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const r = await this.cluster.query(DB, "SELECT count(*)::int AS n FROM graphile_worker._private_jobs");
      if (r.rows[0].n === 0) return;
      if (Date.now() > deadline) throw new Error("jobs still unfinished");
      await sleep(5);
    }
  }
}

module.exports = { Graphile, CONCURRENCY };
