// Shared helpers of the throughput benchmark: the throwaway PostgreSQL cluster, database
// resets, child processes that are always cleaned up, timing and statistics.
"use strict";

const fs = require("fs");
const path = require("path");
const { spawn, spawnSync } = require("child_process");
const { performance } = require("perf_hooks");
const pg = require("pg");

// Wall-clock milliseconds with sub-millisecond resolution. Date.now() is whole
// milliseconds; latencies compare a time taken here with one taken in another process
// (a Frugal job's `date +%s%N`), so both sides must be wall clock, and fine.
function wallMs() {
  return performance.timeOrigin + performance.now();
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Nearest-rank percentile of an array of numbers (not modified).
function percentile(values, p) {
  if (values.length === 0) return NaN;
  const sorted = Float64Array.from(values).sort();
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

// The median of the rounds' figures; NaN-free input expected (a failed run is left out
// by the caller and the count of rounds is printed beside it).
function median(values) {
  const v = values.filter((x) => typeof x === "number" && Number.isFinite(x));
  if (v.length === 0) return NaN;
  return percentile(v, 50);
}

// A small deterministic PRNG (mulberry32): the gaps between latency samples are random so
// that they do not lock in phase with any periodic timer, and the same in every run.
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// --- child processes ---------------------------------------------------------------------
// Every process the benchmark starts is recorded here, so that an error or Ctrl-C never
// leaves a scheduler, worker or PostgreSQL behind (they would skew the next run).
const children = new Set();

function startProcess(argv, { env, logFile, cwd } = {}) {
  const out = logFile ? fs.openSync(logFile, "a") : "ignore";
  const child = spawn(argv[0], argv.slice(1), {
    env: env || process.env,
    cwd,
    stdio: ["ignore", out, out],
  });
  if (typeof out === "number") fs.closeSync(out);
  children.add(child);
  child.exited = new Promise((resolve) => {
    child.on("exit", (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    });
    // A program that cannot be started (a missing binary) is an exit, not a crash.
    child.on("error", (err) => {
      children.delete(child);
      child.startError = err;
      if (child.exitCode === null) child.exitCode = 127;
      resolve({ code: 127, signal: null });
    });
  });
  return child;
}

// SIGTERM, then SIGKILL after `graceMs`: a process that hangs on shutdown must not hang
// the benchmark.
async function stopProcess(child, graceMs = 15000) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await child.exited;
  clearTimeout(timer);
}

// SIGTERM to every child still running, the last started first (workers before their
// scheduler, which they report to), each given up to `graceMs` (a worker stops its jobs on
// SIGTERM; SIGKILL would orphan them); then SIGKILL to any left.
async function stopAllChildren(graceMs = 10000) {
  for (const c of [...children].reverse()) {
    c.kill("SIGTERM");
    await Promise.race([c.exited, sleep(graceMs)]);
  }
  killAllChildren();
}

function killAllChildren() {
  for (const c of children) {
    try {
      c.kill("SIGKILL");
    } catch (_) {
      /* already gone */
    }
  }
}

// Runs a command to completion; throws with its output when it fails.
function run(argv, { env, input, user } = {}) {
  const opts = { env: env || process.env, input, encoding: "utf8" };
  if (user) Object.assign(opts, user);
  const r = spawnSync(argv[0], argv.slice(1), opts);
  if (r.error) throw new Error(`${argv.join(" ")}: ${r.error.message}`);
  if (r.status !== 0) {
    throw new Error(`${argv.join(" ")} exited ${r.status}:\n${r.stdout || ""}${r.stderr || ""}`);
  }
  return r.stdout;
}

// Resolves with the first match of `re` in the process's log file, polled (rejects when the
// process exits first or after `timeoutMs`).
async function waitForLog(child, logFile, re, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const text = fs.existsSync(logFile) ? fs.readFileSync(logFile, "utf8") : "";
    const m = text.match(re);
    if (m) return m;
    if (child.startError) throw new Error(`${what}: ${child.startError.message}`);
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${what}: the process exited (${child.exitCode ?? child.signalCode}); ` +
                      `see ${logFile}:\n${text.slice(-2000)}`);
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; see ${logFile}`);
    await sleep(20);
  }
}

// --- PostgreSQL --------------------------------------------------------------------------
function findPgBin() {
  if (process.env.FRUGAL_BENCH_PG_BIN) return process.env.FRUGAL_BENCH_PG_BIN;
  const base = "/usr/lib/postgresql";
  const versions = fs.existsSync(base) ? fs.readdirSync(base) : [];
  versions.sort((a, b) => Number(b) - Number(a));
  for (const v of versions) {
    const bin = path.join(base, v, "bin");
    if (fs.existsSync(path.join(bin, "initdb")) && fs.existsSync(path.join(bin, "pg_ctl"))) return bin;
  }
  throw new Error("PostgreSQL server binaries not found (apt-get install postgresql-15)");
}

// One throwaway cluster for both systems, on a Unix socket in `dir`. PostgreSQL refuses
// to run as root, so as root it runs as the 'postgres' user (as Frugal's embedded database
// does). Its settings are PostgreSQL's defaults plus `extraOptions`: the same for both
// systems, since both use this one server.
class PgCluster {
  constructor(dir, extraOptions) {
    this.dir = dir;
    this.data = path.join(dir, "data");
    this.socketDir = path.join(dir, "run");
    this.port = 5432;
    this.user = "bench";
    this.bin = findPgBin();
    this.extraOptions = extraOptions || "";
    this.clients = new Map();  // query()'s kept connections, by database
    this.asUser = {};
    if (process.getuid() === 0) {
      const uid = Number(run(["id", "-u", "postgres"]).trim());
      const gid = Number(run(["id", "-g", "postgres"]).trim());
      this.asUser = { uid, gid };
    }
  }

  start() {
    fs.mkdirSync(this.socketDir, { recursive: true });
    if (this.asUser.uid !== undefined) {
      fs.chownSync(this.dir, this.asUser.uid, this.asUser.gid);
      fs.chownSync(this.socketDir, this.asUser.uid, this.asUser.gid);
    }
    run([path.join(this.bin, "initdb"), "-D", this.data, "-U", this.user, "--auth=trust",
         "-E", "UTF8", "--locale=C"], { user: this.asUser });
    const opts = `-c listen_addresses='' -k ${this.socketDir} -p ${this.port} ${this.extraOptions}`;
    run([path.join(this.bin, "pg_ctl"), "start", "-w", "-t", "60", "-D", this.data,
         "-l", path.join(this.dir, "server.log"), "-o", opts], { user: this.asUser });
    this.started = true;
  }

  stop() {
    if (!this.started) return;
    this.started = false;
    for (const c of this.clients.values()) c.end().catch(() => {});
    this.clients = new Map();
    spawnSync(path.join(this.bin, "pg_ctl"), ["stop", "-w", "-m", "fast", "-D", this.data],
              Object.assign({ stdio: "ignore" }, this.asUser));
  }

  // libpq's key=value form, for frugal-scheduler.
  conninfo(db) {
    return `host=${this.socketDir} port=${this.port} user=${this.user} dbname=${db}`;
  }

  // node-postgres' form, for Graphile Worker and the benchmark's own queries.
  pgConfig(db, extra) {
    return Object.assign({ host: this.socketDir, port: this.port, user: this.user, database: db }, extra);
  }

  // The benchmark's own queries (the drains' progress polls among them) go over one kept
  // connection per database: a connection per poll started a backend every 100 ms, whose
  // cost fell on whichever system was being measured.
  async query(db, sql, params) {
    let c = this.clients.get(db);
    if (!c) {
      c = new pg.Client(this.pgConfig(db));
      c.on("error", () => this.clients.delete(db));
      this.clients.set(db, c);
      try {
        await c.connect();
      } catch (err) {
        this.clients.delete(db);
        throw err;
      }
    }
    return await c.query(sql, params);
  }

  // Closes the kept connection to `db`, if any.
  async release(db) {
    const c = this.clients.get(db);
    if (!c) return;
    this.clients.delete(db);
    await c.end().catch(() => {});
  }

  // A fresh, empty database: each measurement of each system starts from one.
  async resetDatabase(db) {
    await this.release(db);
    await this.query("postgres", `DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
    await this.query("postgres", `CREATE DATABASE ${db}`);
  }

  async settings() {
    const r = await this.query("postgres",
      "SELECT name, setting, unit FROM pg_settings WHERE name IN ('server_version', " +
      "'shared_buffers', 'max_connections', 'fsync', 'synchronous_commit', 'jit', " +
      "'work_mem', 'max_wal_size', 'autovacuum') ORDER BY name");
    return r.rows.map((x) => `${x.name}=${x.setting}${x.unit ? " " + x.unit : ""}`).join(", ");
  }
}

module.exports = {
  wallMs, sleep, percentile, median, prng,
  startProcess, stopProcess, stopAllChildren, killAllChildren, run, waitForLog,
  PgCluster,
};
