// scripts/bench throughput (issue 19): Frugal against Graphile Worker on one throwaway
// PostgreSQL that this script starts. Each measurement runs for both systems back to back,
// each on a fresh database of its own; the whole sequence runs in rounds, the order of the
// two systems alternating between rounds (Frugal first in odd rounds) so that drift on a
// shared machine does not favour one. Prints the medians over the rounds, the ratios and
// the bars, and writes them to a Markdown file.
//
//   node run.js --bin BUILD_DIR [--quick] [--rounds N] [--only a,b] [--out FILE] [--keep]
//     --quick       one round, smaller sizes (seconds instead of minutes; not for quoting)
//     --only LIST   some measurements: submit1,submit8,submit32,bulk,drain_true,
//                   drain_noop,latency,rss
//     --keep        keep the scratch directory (logs of every process) at the end
//     --drain-timeout S  stop waiting for a drain after S seconds (default 120, --quick 60):
//                   the rate is then what finished in that time, marked TIMEOUT (it
//                   bounds the run's time; the bar compares the two rates as measured)
//   FRUGAL_BENCH_PG_OPTIONS: extra postgres options for both systems, e.g. "-c fsync=off"
"use strict";

const fs = require("fs");
const os = require("os");
const path = require("path");
const { spawnSync } = require("child_process");
const lib = require("./lib");
const { Frugal, WORKERS, GPUS_PER_WORKER } = require("./frugal");
const { Graphile, CONCURRENCY } = require("./graphile");

const { wallMs, sleep, percentile, median } = lib;

// --- options -----------------------------------------------------------------------------
function parseArgs(argv) {
  const o = { bin: "build-bench", quick: false, rounds: null, only: null, out: null, keep: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === "--bin") o.bin = value();
    else if (a === "--quick") o.quick = true;
    else if (a === "--rounds") o.rounds = Number(value());
    else if (a === "--only") o.only = value().split(",");
    else if (a === "--out") o.out = value();
    else if (a === "--keep") o.keep = true;
    else if (a === "--drain-timeout") o.drainTimeoutS = Number(value());
    else throw new Error(`unknown argument ${a} (see bench/throughput/run.js)`);
  }
  return o;
}

const opts = parseArgs(process.argv.slice(2));
// Sizes: the (full), or a smoke-sized run for development (--quick).
const S = opts.quick
  ? { rounds: 1, submitSeconds: 2, bulk: 10000, drain: 2000, latency: 15, rss: 20000, drainTimeoutS: 60 }
  : { rounds: 3, submitSeconds: 5, bulk: 50000, drain: 20000, latency: 50, rss: 100000, drainTimeoutS: 120 };
if (opts.rounds) S.rounds = opts.rounds;
if (opts.drainTimeoutS) S.drainTimeoutS = opts.drainTimeoutS;

const ALL = ["submit1", "submit8", "submit32", "bulk", "drain_true", "drain_noop", "latency", "rss"];
const selected = opts.only || ALL;
for (const id of selected) if (!ALL.includes(id)) throw new Error(`unknown measurement ${id}`);

// --- the measurements --------------------------------------------------------------------

// Closed loop: `concurrency` clients each submit one job at a time for `seconds`. Each
// client first submits 5 untimed jobs (connections opened, statements prepared).
async function closedLoop(concurrency, seconds, submit) {
  const clients = Array.from({ length: concurrency });
  await Promise.all(clients.map(async () => {
    for (let k = 0; k < 5; k++) await submit();
  }));
  const latencies = [];
  let errors = 0;
  let lastError = "";
  const t0 = wallMs();
  const end = t0 + seconds * 1000;
  await Promise.all(clients.map(async () => {
    while (wallMs() < end && errors < 1000) {
      const s = wallMs();
      try {
        await submit();
        latencies.push(wallMs() - s);
      } catch (err) {
        errors++;
        lastError = String(err.message || err);
      }
    }
  }));
  const elapsed = (wallMs() - t0) / 1000;
  return {
    rate: latencies.length / elapsed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    jobs: latencies.length,
    errors,
    note: errors ? `${errors} errors, last: ${lastError.slice(0, 160)}` : undefined,
  };
}

async function submitRun(sys, concurrency) {
  const client = await sys.submitter(concurrency);
  try {
    return await closedLoop(concurrency, S.submitSeconds, client.submit);
  } finally {
    await client.close();
  }
}

// Bulk submit: time to add S.bulk jobs in batches of 10,000 from one client.
async function bulkRun(sys) {
  const t0 = wallMs();
  await sys.addJobs(S.bulk, "true");
  const seconds = (wallMs() - t0) / 1000;
  return { rate: S.bulk / seconds, seconds };
}

// Drain: workers idle and waiting, then S.drain jobs added in bulk; the time from the
// first add until every job has ended (polled in the database every 100 ms).
async function drainRun(sys, mode) {
  if (mode === "noop" && sys instanceof Frugal && !sys.hasNoop()) return { na: "n/a (no --noop)" };
  await sys.startWorkers(mode);
  const t0 = wallMs();
  await sys.addJobs(S.drain, mode);
  const deadline = t0 + S.drainTimeoutS * 1000;
  let p;
  for (;;) {
    p = await sys.progress(S.drain);
    if (p.done >= S.drain || wallMs() > deadline) break;
    await sleep(100);
  }
  const seconds = (wallMs() - t0) / 1000;
  // Cut short: the exact count, with the jobs that did not succeed (a poll may read only
  // what is left).
  if (p.done < S.drain) p = await sys.progress(S.drain, true);
  const r = { rate: p.done / seconds, seconds, done: p.done, bad: p.bad };
  if (p.done < S.drain) {
    r.timedOut = true;
    r.note = `stopped after ${S.drainTimeoutS} s with ${p.done} of ${S.drain} done`;
  }
  if (p.bad) r.note = (r.note ? r.note + "; " : "") + `${p.bad} did not succeed`;
  return r;
}

// Submit-to-start latency on an idle cluster: one job at a time, each after the previous
// one has finished and a random 100-300 ms gap; the first 2 samples warm up, untimed.
async function latencyRun(sys) {
  await sys.startLatency();
  const rand = lib.prng(19);
  const samples = [];
  for (let i = 0; i < S.latency + 2; i++) {
    await sleep(100 + 200 * rand());
    const ms = await sys.latencySample();
    if (i >= 2) samples.push(ms);
    await sys.waitIdle();
  }
  return { p50: percentile(samples, 50), p99: percentile(samples, 99), n: samples.length };
}

// Frugal only: a full cluster with a backlog. One worker of 8 GPUs runs 8 long jobs
// (sleep), then S.rss jobs of 1 GPU are submitted: every cycle considers the head of that
// queue (max_pending_per_cycle) against a real node and places none. After the submit one
// cycle is let pass, the next two are timed (the histogram's sum and count from /metrics),
// then the scheduler's resident memory is read from /proc.
async function rssRun(sys) {
  await sys.startWorkers("true", 1, GPUS_PER_WORKER);
  await sys.addJobs(GPUS_PER_WORKER, "true", { command: ["/bin/sleep", "3600"], gpus: 1 });
  const deadline = Date.now() + 120000;
  while ((await sys.count("running")) < GPUS_PER_WORKER) {
    if (Date.now() > deadline) throw new Error("the 8 sleep jobs did not start in 120 s");
    await sleep(50);
  }
  const t0 = wallMs();
  await sys.addJobs(S.rss, "true");
  const submitS = (wallMs() - t0) / 1000;
  const pending = await sys.count("pending");
  const waitCycles = async (from, n) => {
    const deadline = Date.now() + 120000;
    for (;;) {
      const m = await sys.cycleMetrics();
      if (m.count >= from.count + n) return m;
      if (Date.now() > deadline) throw new Error("no scheduling cycle in 120 s");
      await sleep(50);
    }
  };
  const m1 = await waitCycles(await sys.cycleMetrics(), 1);
  const m2 = await waitCycles(m1, 2);
  const cycleMs = ((m2.sum - m1.sum) / (m2.count - m1.count)) * 1000;
  const mem = sys.rss();
  return { rssMiB: mem.rssMiB, hwmMiB: mem.hwmMiB, cycleMs, pending, submitS };
}

async function measure(sys, id) {
  await sys.start();
  try {
    switch (id) {
      case "submit1": return await submitRun(sys, 1);
      case "submit8": return await submitRun(sys, 8);
      case "submit32": return await submitRun(sys, 32);
      case "bulk": return await bulkRun(sys);
      case "drain_true": return await drainRun(sys, "true");
      case "drain_noop": return await drainRun(sys, "noop");
      case "latency": return await latencyRun(sys);
      case "rss": return await rssRun(sys);
    }
    throw new Error(`unknown measurement ${id}`);
  } finally {
    await sys.stop();
  }
}

// --- formatting --------------------------------------------------------------------------
const fmtInt = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString("en-US") : "–");
const fmtRate = (x) => (Number.isFinite(x) ? `${fmtInt(x)}/s` : "–");
const fmtMs = (x) => (!Number.isFinite(x) ? "–" : x < 10 ? `${x.toFixed(2)} ms` : x < 100 ? `${x.toFixed(1)} ms` : `${fmtInt(x)} ms`);
const fmtRatio = (x) => (Number.isFinite(x) ? `${x < 0.1 ? x.toFixed(3) : x.toFixed(2)}` : "–");

function fmtResult(kind, r) {
  if (!r) return "–";
  if (r.error) return `error: ${r.error.slice(0, 120)}`;
  if (r.na) return r.na;
  let s;
  switch (kind) {
    case "submit": s = `${fmtRate(r.rate)}, p50 ${fmtMs(r.p50)}, p99 ${fmtMs(r.p99)}`; break;
    case "rate": s = `${fmtRate(r.rate)} (${r.seconds.toFixed(1)} s)`; break;
    case "drain": s = `${fmtRate(r.rate)} (${r.seconds.toFixed(1)} s)`; break;
    case "latency": s = `p50 ${fmtMs(r.p50)}, p99 ${fmtMs(r.p99)}`; break;
    case "rss":
      s = `RSS ${r.rssMiB.toFixed(0)} MiB (peak ${r.hwmMiB.toFixed(0)}), cycle ${fmtMs(r.cycleMs)}`;
      if (r.pending !== undefined) s += ` (${fmtInt(r.pending)} pending)`;
      break;
  }
  if (r.timedOut) s += " TIMEOUT";
  if (r.note) s += ` [${r.note}]`;
  return s;
}

// --- main --------------------------------------------------------------------------------
function rows() {
  return [
    { id: "submit1", kind: "submit", label: "single submit, 1 client, keep-alive" },
    { id: "submit8", kind: "submit", label: "single submit, 8 clients, keep-alive" },
    { id: "submit32", kind: "submit", label: "single submit, 32 clients, keep-alive" },
    { id: "bulk", kind: "rate", label: `bulk submit of ${fmtInt(S.bulk)} jobs (batches of 10,000)` },
    { id: "drain_true", kind: "drain", label: `drain ${fmtInt(S.drain)} \`/bin/true\` jobs, submit to done, 24 slots` },
    { id: "drain_noop", kind: "drain", label: `drain ${fmtInt(S.drain)} no-op jobs, submit to done, 24 slots` },
    { id: "latency", kind: "latency", label: `submit to start, idle cluster (${S.latency} samples)` },
    { id: "rss", kind: "rss", label: `scheduler at ${fmtInt(S.rss)} pending jobs`, frugalOnly: true },
  ].filter((r) => selected.includes(r.id));
}

// The median over rounds of one field of one system's results (failed runs left out).
function med(results, id, system, field) {
  return median(results.filter((x) => x.id === id && x.system === system && x.r && !x.r.error && !x.r.na)
    .map((x) => x.r[field]));
}

function firstNa(results, id, system) {
  const x = results.find((y) => y.id === id && y.system === system && y.r && (y.r.na || y.r.error));
  return x ? (x.r.na || `error: ${x.r.error.slice(0, 80)}`) : null;
}

function anyTimeout(results, id, system) {
  return results.some((y) => y.id === id && y.system === system && y.r && y.r.timedOut);
}

function report(results) {
  const F = "Frugal";
  const G = "Graphile Worker";
  const lines = [];
  lines.push("| measure | Frugal | Graphile Worker | Frugal / Graphile |");
  lines.push("|---|---:|---:|---:|");
  const summary = {};
  for (const row of rows()) {
    const cell = (system) => {
      const na = firstNa(results, row.id, system);
      const fields = { submit: ["rate", "p50", "p99"], rate: ["rate", "seconds"], drain: ["rate", "seconds"],
                       latency: ["p50", "p99"], rss: ["rssMiB", "hwmMiB", "cycleMs"] }[row.kind];
      const m = {};
      for (const f of fields) m[f] = med(results, row.id, system, f);
      if (anyTimeout(results, row.id, system)) m.timedOut = true;
      summary[`${row.id}/${system}`] = m;
      if (fields.every((f) => !Number.isFinite(m[f]))) return na || "–";
      // A median of fewer rounds than were run says so (the others broke: see below).
      const ran = results.filter((x) => x.id === row.id && x.system === system);
      const ok = ran.filter((x) => x.r && !x.r.error && !x.r.na).length;
      return fmtResult(row.kind, m) + (ok < ran.length ? ` (${ok} of ${ran.length} rounds)` : "");
    };
    const f = cell(F);
    const g = row.frugalOnly ? "(no counterpart)" : cell(G);
    let ratio = "";
    if (!row.frugalOnly) {
      const fm = summary[`${row.id}/${F}`];
      const gm = summary[`${row.id}/${G}`];
      if (row.kind === "latency") ratio = `${fmtRatio(fm.p50 / gm.p50)} (p50; lower is better)`;
      else ratio = fmtRatio(fm.rate / gm.rate);
    }
    lines.push(`| ${row.label} | ${f} | ${g} | ${ratio} |`);
  }

  // The bars (issue 19), each a ratio measured side by side in this run.
  const bars = [];
  const bar = (id, text, ok, detail) => {
    if (!selected.includes(id)) return;
    const verdict = ok === null ? "n/a " : ok ? "PASS" : "FAIL";
    bars.push(`${verdict}  ${text}: ${detail}`);
  };
  const s = (id, sys) => summary[`${id}/${sys}`] || {};
  const ratio = (id) => s(id, F).rate / s(id, G).rate;
  const okOrNull = (x, pred) => (Number.isFinite(x) ? pred(x) : null);
  // A drain cut off by --drain-timeout is rated on what finished by then; the bar says so.
  const timeouts = (id) => {
    const who = [F, G].filter((sys) => s(id, sys).timedOut);
    return who.length ? ` (rate of a drain cut at ${S.drainTimeoutS} s: ${who.join(", ")})` : "";
  };
  {
    const r = ratio("bulk");
    bar("bulk", `bulk submit of ${fmtInt(S.bulk)} >= 1.0 x Graphile addJobs`, okOrNull(r, (x) => x >= 1.0), `${fmtRatio(r)} x`);
  }
  {
    const r = ratio("submit32");
    const p99 = s("submit32", F).p99;
    const ok = Number.isFinite(r) && Number.isFinite(p99) ? r >= 3.0 && p99 < 20 : null;
    bar("submit32", "single submit, 32 keep-alive clients >= 3 x Graphile addJob, Frugal p99 < 20 ms", ok,
        `${fmtRatio(r)} x, p99 ${fmtMs(p99)}`);
  }
  {
    const r = ratio("drain_true");
    bar("drain_true", "drain of /bin/true jobs >= 1.0 x Graphile (same command, 24 concurrent)",
        okOrNull(r, (x) => x >= 1.0), `${fmtRatio(r)} x${timeouts("drain_true")}`);
  }
  {
    const r = ratio("drain_noop");
    const na = firstNa(results, "drain_noop", F);
    bar("drain_noop", "drain of no-op jobs >= 0.5 x Graphile", okOrNull(r, (x) => x >= 0.5),
        Number.isFinite(r) ? `${fmtRatio(r)} x${timeouts("drain_noop")}` : na || "–");
  }
  {
    const p50 = s("latency", F).p50;
    bar("latency", "submit to start on an idle cluster, Frugal p50 < 50 ms", okOrNull(p50, (x) => x < 50), fmtMs(p50));
  }
  {
    const m = s("rss", F);
    const ok = Number.isFinite(m.rssMiB) && Number.isFinite(m.cycleMs) ? m.rssMiB < 1024 && m.cycleMs < 1000 : null;
    bar("rss", `scheduler at ${fmtInt(S.rss)} pending: RSS < 1 GiB and cycle < 1 s`, ok,
        `RSS ${Number.isFinite(m.rssMiB) ? m.rssMiB.toFixed(0) : "–"} MiB, cycle ${fmtMs(m.cycleMs)}`);
  }

  // Every round's figures, so the spread behind each median is visible.
  const detail = [];
  const roundsRun = Math.max(0, ...results.map((x) => x.round));
  detail.push(`| measure | system | ${Array.from({ length: roundsRun }, (_, i) => `round ${i + 1}`).join(" | ")} |`);
  detail.push(`|---|---|${"---|".repeat(roundsRun)}`);
  for (const row of rows()) {
    for (const system of row.frugalOnly ? [F] : [F, G]) {
      const cells = [];
      for (let r = 1; r <= roundsRun; r++) {
        const x = results.find((y) => y.id === row.id && y.system === system && y.round === r);
        cells.push(x ? fmtResult(row.kind, x.r) : "–");
      }
      detail.push(`| ${row.label} | ${system} | ${cells.join(" | ")} |`);
    }
  }
  return { table: lines.join("\n"), bars: bars.join("\n"), detail: detail.join("\n") };
}

function gitDescribe(root) {
  const rev = spawnSync("git", ["-C", root, "rev-parse", "--short", "HEAD"], { encoding: "utf8" });
  const dirty = spawnSync("git", ["-C", root, "status", "--porcelain", "--untracked-files=no"], { encoding: "utf8" });
  if (rev.status !== 0) return "unknown";
  return rev.stdout.trim() + (dirty.stdout.trim() ? " (with uncommitted changes)" : "");
}

async function main() {
  const started = Date.now();
  const root = path.resolve(__dirname, "..", "..");
  const bin = path.resolve(root, opts.bin);
  const out = opts.out ? path.resolve(opts.out)
    : opts.quick ? path.join(bin, "throughput-quick.md") : path.join(root, "bench", "results", "throughput.md");
  const command = process.env.FRUGAL_BENCH_COMMAND || `node bench/throughput/run.js ${process.argv.slice(2).join(" ")}`;

  // Scratch directory: the database, every process's log. World-searchable: jobs run under
  // uids of their own and write their start times here (Frugal's latency run).
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "frugal-bench-throughput-"));
  fs.chmodSync(dir, 0o755);
  const cluster = new lib.PgCluster(path.join(dir, "pg"), process.env.FRUGAL_BENCH_PG_OPTIONS || "");
  let failed = false;
  const cleanup = () => {
    lib.killAllChildren();
    cluster.stop();
  };
  // Whatever ends this process (an exception included) stops what it started.
  process.on("exit", cleanup);
  process.on("uncaughtException", (err) => {
    console.error(`throughput: ${err.stack || err}\nlogs in ${dir}`);
    process.exit(1);
  });
  for (const sig of ["SIGINT", "SIGTERM"]) {
    process.on(sig, async () => {
      await lib.stopAllChildren();
      cleanup();
      console.error(`\nstopped by ${sig}; logs in ${dir}`);
      process.exit(130);
    });
  }

  const frugal = new Frugal({ bin, cluster, dir });
  const graphile = new Graphile({ cluster, dir });
  const results = [];
  try {
    fs.mkdirSync(path.join(dir, "pg"));
    cluster.start();
    const pgSettings = await cluster.settings();
    console.error(`throughput: PostgreSQL in ${dir}/pg (${pgSettings})`);
    for (let round = 1; round <= S.rounds; round++) {
      // Frugal first in odd rounds, Graphile first in even ones.
      const order = round % 2 === 1 ? [frugal, graphile] : [graphile, frugal];
      for (const row of rows()) {
        for (const sys of order) {
          if (row.frugalOnly && sys !== frugal) continue;
          const t = Date.now();
          let r;
          try {
            r = await measure(sys, row.id);
          } catch (err) {
            failed = true;
            r = { error: String(err.message || err) };
            try { await sys.stop(); } catch (_) { /* already stopped */ }
          }
          results.push({ round, id: row.id, system: sys.name, r });
          console.error(`[round ${round}/${S.rounds}] ${row.label} | ${sys.name}: ` +
                        `${fmtResult(row.kind, r)} (${((Date.now() - t) / 1000).toFixed(0)} s)`);
        }
      }
    }

    const { table, bars, detail } = report(results);
    const minutes = ((Date.now() - started) / 60000).toFixed(1);
    const gwVersion = require("graphile-worker/package.json").version;
    const cpu = (fs.readFileSync("/proc/cpuinfo", "utf8").match(/model name\s*:\s*(.*)/) || [])[1] || "unknown CPU";
    const text = [
      `# Throughput: Frugal and Graphile Worker on one PostgreSQL${opts.quick ? " (--quick: smaller sizes, one round; not for quoting)" : ""}`,
      "",
      `Command: \`${command}\``,
      "",
      `- When: ${new Date().toISOString()}, ${minutes} min in all; commit ${gitDescribe(root)}`,
      `- Machine: ${os.cpus().length} cores (${cpu}), ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB; Node ${process.version}; graphile-worker ${gwVersion}`,
      `- PostgreSQL (one server, a database per system, fresh for every run): ${pgSettings}` +
        (process.env.FRUGAL_BENCH_PG_OPTIONS ? `; options ${process.env.FRUGAL_BENCH_PG_OPTIONS}` : ""),
      `- ${S.rounds} round(s), each measurement run for both systems back to back, Frugal first in odd rounds; medians below.`,
      `- Frugal: frugal-scheduler at its defaults on that server; ${WORKERS} frugal-worker processes of ${GPUS_PER_WORKER} pretend GPUs (${WORKERS * GPUS_PER_WORKER} slots), jobs of 1 GPU, --noop for the no-op drain; clients over HTTP/1.1 keep-alive.`,
      `- Graphile Worker: its defaults; one worker process with concurrency ${CONCURRENCY} and a pool of ${CONCURRENCY + 2} (its documented advice), the no-op task at the same concurrency; addJob on a pool sized to the clients.`,
      `- Single submit: ${S.submitSeconds} s per point after 5 untimed submits per client. Bulk: batches of 10,000. Drains: submit to every job ended, polled every 100 ms, cut at ${S.drainTimeoutS} s. Latency: Frugal from the POST to the job's \`date +%s%N\`; Graphile from the addJob call to the task function starting.`,
      "",
      table,
      "",
      "## Bars",
      "",
      "```",
      bars,
      "```",
      "",
      "## Every round",
      "",
      detail,
      "",
    ].join("\n");
    fs.mkdirSync(path.dirname(out), { recursive: true });
    fs.writeFileSync(out, text);
    console.log(text);
    console.log(`throughput: written to ${path.relative(process.cwd(), out) || out}`);
  } catch (err) {
    failed = true;
    console.error(`throughput: ${err.stack || err}`);
  } finally {
    cleanup();
    if (opts.keep || failed) console.error(`throughput: logs kept in ${dir}`);
    else fs.rmSync(dir, { recursive: true, force: true });
  }
  // A failed measurement is printed in the table; the exit status says the run was not
  // complete. Bars that FAIL are figures, not errors: the status stays 0.
  process.exit(failed ? 1 : 0);
}

main();
