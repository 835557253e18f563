// Frugal's side of the benchmark: frugal-scheduler on the benchmark's PostgreSQL (an
// external database_url, so both systems share one server), tokens and a pool made with
// the CLI as scripts/demo does, frugal-worker processes with pretend GPUs, and jobs
// submitted over the REST API with HTTP keep-alive.
"use strict";

const fs = require("fs");
const http = require("http");
const path = require("path");
const { wallMs, sleep, startProcess, stopProcess, run, waitForLog } = require("./lib");

const DB = "frugal_bench";
const POOL = "bench";
const GPU_TYPE = "bench";
// The drain cluster: 3 workers of 8 pretend GPUs, 24 slots as Graphile's concurrency 24.
const WORKERS = 3;
const GPUS_PER_WORKER = 8;
const TERMINAL = "('succeeded','failed','cancelled','timed_out')";

// One HTTP/1.1 request with a JSON body; resolves with {status, body} (body parsed).
function request(agent, base, method, urlPath, token, body) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body);
    const req = http.request(
      base + urlPath,
      {
        method,
        agent,
        headers: Object.assign(
          { Authorization: `Bearer ${token}` },
          payload !== undefined
            ? { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(payload) }
            : {},
        ),
      },
      (res) => {
        const chunks = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString();
          let parsed = text;
          if ((res.headers["content-type"] || "").includes("json")) {
            try {
              parsed = JSON.parse(text);
            } catch (_) {
              /* keep the text */
            }
          }
          resolve({ status: res.statusCode, body: parsed });
        });
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

class Frugal {
  constructor({ bin, cluster, dir }) {
    this.name = "Frugal";
    this.bin = bin;
    this.cluster = cluster;
    this.dir = dir; // this run's scratch directory (logs, worker directories)
    this.workers = [];
    this.starts = 0;
  }

  // Whether this frugal-worker has --noop (run nothing, report success at once).
  hasNoop() {
    if (this._hasNoop === undefined) {
      const help = run([path.join(this.bin, "frugal-worker"), "--help"]);
      this._hasNoop = /--noop\b/.test(help);
    }
    return this._hasNoop;
  }

  cli(args, token) {
    const env = Object.assign({}, process.env, { FRUGAL_URL: this.url, FRUGAL_TOKEN: token });
    return run([path.join(this.bin, "frugal"), ...args], { env }).trim();
  }

  // A fresh database and a scheduler on it, with an admin token (bootstrap), a team, a
  // researcher token, a worker token and the pool the workers join.
  async start() {
    await this.cluster.resetDatabase(DB);
    this.starts += 1;
    const log = path.join(this.dir, `scheduler-${this.starts}.log`);
    const conninfo = this.cluster.conninfo(DB);
    // Everything at its defaults (cycle, heartbeat, pool of 8 connections, log level
    // info) except where it listens (a free port) and where its state would go.
    this.scheduler = startProcess(
      [path.join(this.bin, "frugal-scheduler"), "--database-url", conninfo, "--listen",
       "127.0.0.1:0", "--state-dir", path.join(this.dir, "scheduler-state")],
      { logFile: log },
    );
    const m = await waitForLog(this.scheduler, log, /listening on (http:\/\/[0-9.:]+)/, 120000,
                               "frugal-scheduler to listen");
    this.url = m[1];
    this.admin = run([path.join(this.bin, "frugal-scheduler"), "bootstrap", "--database-url", conninfo]).trim();
    this.cli(["admin", "team", "create", "bench"], this.admin);
    this.token = this.cli(["admin", "token", "create", "--team", "bench", "--user", "alice",
                           "--role", "researcher"], this.admin);
    this.workerToken = this.cli(["admin", "token", "create", "--team", "bench", "--user",
                                 "workers", "--role", "worker"], this.admin);
    this.cli(["admin", "pool", "set", POOL, "--kind", "reserved", "--gpu-type", GPU_TYPE,
              "--gpu-mem", "80", "--max-gpus", String(WORKERS * GPUS_PER_WORKER), "--price",
              "1.00"], this.admin);
    this.agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  }

  async stop() {
    await this.stopWorkers();
    if (this.agent) this.agent.destroy();
    await stopProcess(this.scheduler);
    this.scheduler = null;
  }

  // `count` frugal-worker processes of `gpus` pretend GPUs each, registered before this
  // returns. mode 'noop' starts them with --noop.
  async startWorkers(mode, count = WORKERS, gpus = GPUS_PER_WORKER) {
    const root = path.join(this.dir, `workers-${this.starts}`);
    fs.mkdirSync(root, { recursive: true, mode: 0o755 });
    for (let i = 0; i < count; i++) {
      const node = `bench-${i + 1}`;
      const args = [path.join(this.bin, "frugal-worker"), "--url", this.url, "--pool", POOL,
                    "--node", node, "--gpus", String(gpus), "--gpu-type", GPU_TYPE,
                    "--gpu-mem-gb", "80", "--work-dir", path.join(root, node),
                    "--checkpoint-root", path.join(root, "checkpoints"),
                    // Pretend GPUs even where nvidia-smi exists: the pool's type is 'bench'.
                    "--nvidia-smi", "/nonexistent/nvidia-smi"];
      if (mode === "noop") args.push("--noop");
      const env = Object.assign({}, process.env, { FRUGAL_WORKER_TOKEN: this.workerToken });
      this.workers.push(startProcess(args, { env, logFile: path.join(root, `${node}.log`) }));
    }
    const deadline = Date.now() + 60000;
    for (;;) {
      const r = await this.cluster.query(DB, "SELECT count(*)::int AS n FROM nodes WHERE state = 'live'");
      if (r.rows[0].n >= count) break;
      for (const w of this.workers) {
        if (w.exitCode !== null) throw new Error(`frugal-worker exited ${w.exitCode}; see ${root}`);
      }
      if (Date.now() > deadline) throw new Error(`frugal-workers did not register; see ${root}`);
      await sleep(50);
    }
  }

  async stopWorkers() {
    await Promise.all(this.workers.map((w) => stopProcess(w)));
    this.workers = [];
  }

  // A closed-loop client for the single-submit runs: POST /v1/jobs over `concurrency`
  // keep-alive connections with a researcher token.
  submitter(concurrency) {
    const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
    const body = JSON.stringify({ command: ["/bin/true"], gpus: 1 });
    return {
      submit: async () => {
        const r = await request(agent, this.url, "POST", "/v1/jobs", this.token, body);
        if (r.status !== 201) throw new Error(`POST /v1/jobs: ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
      },
      close: async () => agent.destroy(),
    };
  }

  // Adds `count` jobs with POST /v1/jobs:batch, 10,000 per request (its limit; what
  // `frugal submit --file` sends). The body is built inside the timed part, as a client
  // builds it. `spec` replaces the default job (1 GPU, /bin/true) for the RSS run.
  async addJobs(count, mode, spec = { command: ["/bin/true"], gpus: 1 }) {
    for (let done = 0; done < count; done += 10000) {
      const n = Math.min(10000, count - done);
      const body = JSON.stringify({ jobs: new Array(n).fill(spec) });
      const r = await request(this.agent, this.url, "POST", "/v1/jobs:batch", this.token, body);
      if (r.status !== 201) throw new Error(`POST /v1/jobs:batch: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
    }
  }

  // How many of the jobs ended, and how many of those did not succeed. Polled every 100 ms
  // during a drain, so it reads what is left, as Graphile's does, not every row the drain
  // wrote: the jobs still pending by their partial index, and the attempts still open by
  // theirs (a running job has one). The planner, its statistics taken before the drain,
  // would scan the whole table for the pending ones; the observer's own transaction turns
  // that off. A whole-table count here cost PostgreSQL 10 ms a poll (a tenth of a core
  // during Frugal's drain, Graphile's count 1.8 ms); by the indexes, 5 ms with three
  // quarters of the drain left and under 1 ms with a quarter. When nothing seems left, the
  // whole table is counted once, which also sees a job held, or between its attempt's end
  // and its own. `exact`: that whole count now.
  async progress(total, exact = false) {
    if (!exact) {
      const r = await this.cluster.query(DB,
        `BEGIN; SET LOCAL enable_seqscan = off;
         SELECT (SELECT count(*) FROM jobs WHERE state = 'pending')
              + (SELECT count(*) FROM attempts WHERE ended_at IS NULL) AS left;
         COMMIT`);
      const left = Number(r[2].rows[0].left);
      if (left > 0) return { done: total - left, bad: 0 };
    }
    const all = await this.cluster.query(DB,
      `SELECT count(*) FILTER (WHERE state IN ${TERMINAL})::int AS done,
              count(*) FILTER (WHERE state IN ${TERMINAL} AND state <> 'succeeded')::int AS bad
         FROM jobs`);
    return all.rows[0];
  }

  // Latency runs: each job writes the time its process started (date +%s%N, wall clock,
  // nanoseconds) to a file named after the job; jobs run under uids of their own, so the
  // directory is writable by all (sticky).
  async startLatency() {
    await this.startWorkers("true");
    this.stampDir = path.join(this.dir, `stamps-${this.starts}`);
    fs.mkdirSync(this.stampDir, { recursive: true });
    fs.chmodSync(this.stampDir, 0o1777);
  }

  // Submits one job and returns the milliseconds from the POST to its process starting.
  async latencySample() {
    const t0 = wallMs();
    const r = await request(this.agent, this.url, "POST", "/v1/jobs", this.token, {
      command: ["/bin/sh", "-c", `date +%s%N > ${this.stampDir}/$FRUGAL_JOB_ID`],
      gpus: 1,
    });
    if (r.status !== 201) throw new Error(`POST /v1/jobs: ${r.status}`);
    const file = path.join(this.stampDir, String(r.body.id));
    const deadline = Date.now() + 60000;
    for (;;) {
      // The shell creates the file before date writes to it: wait for a whole line.
      const text = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : "";
      if (/^\d+\n$/.test(text)) return Number(BigInt(text.trim()) / 1000n) / 1000 - t0;
      if (Date.now() > deadline) throw new Error(`job ${r.body.id} did not start within 60 s`);
      await sleep(1);
    }
  }

  // Waits until no job is left unfinished (the cluster is idle again).
  async waitIdle(timeoutMs = 60000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const r = await this.cluster.query(DB, `SELECT count(*)::int AS n FROM jobs WHERE state NOT IN ${TERMINAL}`);
      if (r.rows[0].n === 0) return;
      if (Date.now() > deadline) throw new Error("jobs still unfinished");
      await sleep(5);
    }
  }

  // Scheduler memory and cycle time (the RSS run).
  rss() {
    const status = fs.readFileSync(`/proc/${this.scheduler.pid}/status`, "utf8");
    const kb = (key) => Number((status.match(new RegExp(`${key}:\\s+(\\d+) kB`)) || [])[1]);
    return { rssMiB: kb("VmRSS") / 1024, hwmMiB: kb("VmHWM") / 1024 };
  }

  // The cycle histogram's count and sum from /metrics (admin token).
  async cycleMetrics() {
    const r = await request(this.agent, this.url, "GET", "/metrics", this.admin);
    if (r.status !== 200) throw new Error(`GET /metrics: ${r.status}`);
    const get = (name) => {
      const m = String(r.body).match(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)$`, "m"));
      return m ? Number(m[1]) : NaN;
    };
    return {
      count: get("frugal_scheduling_cycle_duration_seconds_count"),
      sum: get("frugal_scheduling_cycle_duration_seconds_sum"),
    };
  }

  async count(state) {
    const r = await this.cluster.query(DB, "SELECT count(*)::int AS n FROM jobs WHERE state = $1", [state]);
    return r.rows[0].n;
  }
}

module.exports = { Frugal, WORKERS, GPUS_PER_WORKER };
