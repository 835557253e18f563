// The dashboard in headless Chromium against the real thing: frugal-scheduler on its
// embedded PostgreSQL (a temporary FRUGAL_HOME, a free port) with local workers, jobs
// submitted with the real `frugal` CLI. Steps:
//   a. sign in with a token in the page;
//   b. a job submitted with the CLI appears in the Jobs table; follow it to its job page;
//   c. a spot interruption notice moves it: the Overview lists the preemption and its
//      recovery, the job page shows both attempts and its checkpoints; the Jobs table shows
//      every row's pool and cost with one list request (no timeline per row), and at
//      1280x800 the Overview's budget column fits its card;
//   d. the Cost page's totals equal `frugal cost -o json`'s, to the micro-dollar; the Admin
//      page's YAML, applied with `frugal admin apply --dry-run`, changes nothing; its Nodes
//      card lists the workers and shows a node drained with `frugal admin node drain`; its
//      Instances card, with no exec pool here, shows its empty state;
//   e. a job array is one row of the Jobs table (its tasks by state, the sweep's cost), its
//      name with HTML in it shown as text, that expands on a click into its tasks with their
//      indices, 50 at a time; a page that ends inside an array goes on below it;
//   f. no page threw a script error. Screenshots of every page go to FRUGAL_ARTIFACTS.
// Environment: FRUGAL_SCHEDULER_BIN, FRUGAL_CLI_BIN, FRUGAL_SOURCE_DIR, FRUGAL_ARTIFACTS,
// CHROMIUM (default /usr/bin/chromium).
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (run this through ctest: ctest -R browser)`);
  return v;
};
const SCHEDULER = env('FRUGAL_SCHEDULER_BIN');
const CLI = env('FRUGAL_CLI_BIN');
const SOURCE = env('FRUGAL_SOURCE_DIR');
const ARTIFACTS = env('FRUGAL_ARTIFACTS');
const kLimitMs = 90_000;  // how long to wait for any one condition before failing
const kViewport = { width: 1280, height: 800 };  // issue 7: usable at 1280 px

const home = fs.mkdtempSync(path.join(os.tmpdir(), 'frugal-browser-'));
fs.chmodSync(home, 0o755);
let scheduler = null;

function log(msg) { console.log(`[browser] ${msg}`); }

async function waitFor(what, fn, limit = kLimitMs) {
  const until = Date.now() + limit;
  for (;;) {
    let value;
    try { value = await fn(); } catch (e) { value = undefined; }
    if (value) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

function cli(token, args) {
  return execFileSync(CLI, args, {
    env: { ...process.env, FRUGAL_URL: url, FRUGAL_TOKEN: token, HOME: home, FRUGAL_HOME: home },
    encoding: 'utf8',
  });
}

async function startScheduler() {
  const config = path.join(home, 'scheduler.yaml');
  fs.writeFileSync(config, [
    'listen: 127.0.0.1:0', 'lease_ttl: 6s', 'heartbeat_interval: 1s', 'cycle_interval: 1s',
    'local_workers:',
    '  - {pool: a100-ondemand, nodes: 1, gpus_per_node: 2}',
    '  - {pool: a100-spot, nodes: 2, gpus_per_node: 2, grace: 5s, restart_delay: 2s}', ''].join('\n'));
  scheduler = spawn(SCHEDULER, ['--config', config], {
    env: { ...process.env, FRUGAL_HOME: home, FRUGAL_DATABASE_URL: '' },
    stdio: ['ignore', 'pipe', fs.openSync(path.join(home, 'scheduler.log'), 'w')],
  });
  let out = '';
  scheduler.stdout.on('data', (d) => { out += d; });
  const exited = new Promise((r) => scheduler.once('exit', (code) => r(`exited with ${code}`)));
  const found = await Promise.race([exited, waitFor('the scheduler to listen', () => out.match(/http:\/\/[0-9.:]+/))]);
  if (typeof found === 'string') throw new Error(`frugal-scheduler ${found}: see ${home}/scheduler.log`);
  return found[0];
}

async function stopScheduler() {
  if (!scheduler || scheduler.exitCode !== null) return;
  const exited = new Promise((r) => scheduler.once('exit', r));
  scheduler.kill('SIGTERM');
  await exited;
}

// The first dollar amount in `text` ("$1,234.56 of $100.00" -> 1234.56).
function dollarsIn(text) {
  const m = /\$?([\d,]+(?:\.\d+)?)/.exec(String(text));
  return m ? Number(m[1].replace(/,/g, '')) : NaN;
}

function money(micros) {  // as the page shows exact money: $D.DDDDDD
  const sign = micros < 0 ? '-' : '';
  const a = Math.abs(micros);
  return `${sign}$${Math.floor(a / 1e6)}.${String(a % 1e6).padStart(6, '0')}`;
}

let url = '';
const shots = [];
let failed = false;
try {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  url = await startScheduler();
  log(`scheduler at ${url}, FRUGAL_HOME ${home}`);
  const admin = execFileSync(SCHEDULER, ['bootstrap'], {
    env: { ...process.env, FRUGAL_HOME: home, FRUGAL_DATABASE_URL: '' }, encoding: 'utf8' }).trim();
  cli(admin, ['admin', 'team', 'create', 'vision']);
  const alice = cli(admin, ['admin', 'token', 'create', '--team', 'vision', '--user', 'alice',
    '--role', 'researcher']).trim();
  cli(admin, ['admin', 'pool', 'set', 'a100-ondemand', '--kind', 'on_demand', '--gpu-type', 'a100',
    '--gpu-mem', '80', '--max-gpus', '2', '--price', '3.06']);
  cli(admin, ['admin', 'pool', 'set', 'a100-spot', '--kind', 'spot', '--gpu-type', 'a100',
    '--gpu-mem', '80', '--max-gpus', '4', '--price', '0.92']);
  // A soft monthly budget for the team, for the Overview and Admin pages.
  const budget = await fetch(`${url}/v1/admin/teams/vision/budget`, { method: 'POST',
    headers: { Authorization: `Bearer ${admin}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ period: 'monthly', limit: '100.00' }) });
  assert.equal(budget.status, 200, await budget.text());
  const api = async (p, token = admin) => (await fetch(url + p, { headers: { Authorization: `Bearer ${token}` } })).json();
  await waitFor('the local workers to register', async () =>
    (await api('/v1/overview')).pools.reduce((n, p) => n + p.allocated_gpus, 0) >= 6);

  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox'], headless: true });
  const page = await browser.newPage({ viewport: kViewport });
  const scriptErrors = [];
  page.on('pageerror', (e) => scriptErrors.push(e.message));
  let apiCalls = [];  // paths of the API requests since the last reset
  page.on('request', (r) => {
    const p = new URL(r.url()).pathname;
    if (p.startsWith('/v1/')) apiCalls.push(p);
  });
  const shot = async (name) => {
    const file = path.join(ARTIFACTS, `${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    shots.push(file);
  };
  let loads = 0;  // a fresh query string makes every open a full page load
  const open = async (hash, selector) => {
    await page.goto(`${url}/?load=${++loads}${hash}`);
    await page.waitForSelector(selector, { timeout: kLimitMs });
  };

  // a. Sign in: the token form, then the Overview.
  await page.goto(`${url}/`);
  await page.fill('#token', admin);
  await page.click('#login-form button');
  await page.waitForSelector('[data-testid=pools]', { timeout: kLimitMs });
  assert.match(await page.textContent('#who'), /admin · admin · admin/);
  assert.equal(await page.locator('[data-testid=pools] tr[data-pool]').count(), 2);

  // b. A job submitted with the CLI appears in the Jobs table.
  const submitted = JSON.parse(cli(alice, ['submit', '--name', 'browser-train', '--gpus', '1',
    '--tolerance', 'checkpointed', '--output', 'json', '--', 'env', 'TRAIN_STEPS=40',
    'CHECKPOINT_EVERY=2', 'STEP_SECONDS=0.25', `FRUGAL_CLI=${CLI}`, 'bash',
    path.join(SOURCE, 'examples/train.sh')]));
  const id = submitted.id;
  log(`submitted job ${id}`);
  await waitFor(`job ${id} in the Jobs table`, async () => {
    await open('#/jobs', '[data-testid=jobs-table]');
    return (await page.locator(`tr[data-job="${id}"]`).count()) === 1;
  });
  const row = page.locator(`tr[data-job="${id}"]`);
  assert.match(await row.textContent(), /browser-train/);
  assert.match(await row.textContent(), /vision/);
  await page.fill('[data-testid=job-search]', 'no-such-job-name');
  assert.equal(await page.locator(`tr[data-job="${id}"]`).count(), 0, 'search hides non-matching jobs');
  await page.fill('[data-testid=job-search]', 'browser-train');
  assert.equal(await page.locator(`tr[data-job="${id}"]`).count(), 1, 'search keeps matching jobs');
  await page.click(`tr[data-job="${id}"] a`);
  await page.waitForSelector('[data-testid=job-title]', { timeout: kLimitMs });
  assert.match(await page.textContent('[data-testid=job-title]'), new RegExp(`Job ${id} browser-train`));

  // c. Preempt it on spot once it has a checkpoint (the cloud's notice, as scripts/demo does).
  const status = () => JSON.parse(cli(alice, ['status', String(id), '--output', 'json']));
  const first = await waitFor('a checkpoint on spot', () => {
    const s = status();
    const a = s.attempt_history[s.attempt_history.length - 1];
    return s.latest_checkpoint && a && a.pool === 'a100-spot' && !a.ended_at ? a : null;
  });
  fs.writeFileSync(path.join(home, 'local', first.node, 'notice'), 'browser test: spot interruption\n');
  log(`sent ${first.node} an interruption notice`);
  await waitFor(`job ${id} to succeed`, () => status().state === 'succeeded', 180_000);
  await open(`#/jobs/${id}`, '[data-testid=timeline]');
  assert.equal(await page.textContent('[data-testid=job-state]'), 'succeeded');
  const attempts = Number(await page.textContent('[data-testid=job-attempts]'));
  assert.ok(attempts >= 2, `the job page shows ${attempts} attempts, expected the preempted one and its recovery`);
  assert.ok(Number(await page.textContent('[data-testid=job-checkpoints]')) >= 1);
  const byJob = JSON.parse(cli(admin, ['cost', '--by', 'job', '--output', 'json']));
  const jobRow = byJob.rows.find((r) => r.key === String(id));
  assert.equal(await page.textContent('[data-testid=job-cost]'), money(jobRow.spend_micros));
  await shot('job');

  // The Jobs table: pool and cost so far for every row from the one list request. Two more
  // jobs that run, so the page has several rows with attempts: a page asking each row's
  // timeline would make three timeline requests here.
  const quick = [1, 2].map((n) => JSON.parse(cli(alice, ['submit', '--name', `browser-quick-${n}`,
    '--gpus', '1', '--output', 'json', '--', 'true'])).id);
  for (const q of quick) {
    await waitFor(`job ${q} to succeed`, () =>
      JSON.parse(cli(alice, ['status', String(q), '--output', 'json'])).state === 'succeeded');
  }
  apiCalls = [];
  await open('#/jobs', '[data-testid=jobs-table]');
  const listed = await page.locator('[data-testid=jobs-table] tbody tr').count();
  assert.ok(listed >= 3, `the Jobs table lists ${listed} jobs`);
  const timelineCalls = apiCalls.filter((p) => /^\/v1\/jobs\/\d+\/timeline$/.test(p));
  assert.equal(timelineCalls.length, 0,
    `the Jobs page asked for ${timelineCalls.length} timelines for ${listed} rows: ${timelineCalls}`);
  assert.deepEqual(apiCalls, ['/v1/whoami', '/v1/jobs'], 'one list request for the whole page');
  for (const j of [id, ...quick]) {
    const t = await api(`/v1/jobs/${j}/timeline`);
    const r = page.locator(`tr[data-job="${j}"]`);
    assert.equal(await r.locator('[data-testid=job-row-cost]').getAttribute('data-micros'),
      String(t.cost_micros), `job ${j}'s cost in the table is its timeline's`);
    assert.ok(t.attempts.length >= 1, `job ${j} ran`);
    assert.equal(await r.locator('[data-testid=job-pool]').textContent(),
      t.attempts[t.attempts.length - 1].pool, `job ${j}'s pool in the table is its latest attempt's`);
  }
  await shot('jobs');

  await open('#/overview', '[data-testid=interruptions]');
  const preempted = page.locator('[data-testid=interruptions] tbody tr', { hasText: 'browser-train' });
  assert.ok(await preempted.count() >= 1, 'the Overview lists the preemption');
  assert.match(await preempted.first().textContent(), /preempted/);
  assert.match(await preempted.first().textContent(), /#2 on a100-/);
  assert.match(await page.textContent('[data-testid=spend] tbody tr'), /vision.*\$100\.00 monthly/);
  // The admin sees what the team used, as the researcher does (issue 17: it showed 0 %).
  const visionBudget = await api('/v1/teams/vision/budget');
  assert.ok(dollarsIn(visionBudget.used) > 0, `vision used nothing: ${JSON.stringify(visionBudget)}`);
  const usedBar = page.locator('[data-testid=spend] td[data-testid=budget-used] .bar span');
  assert.equal(await usedBar.count(), 1, 'the admin\'s Overview shows vision\'s budget as unused');
  const usedTitle = await usedBar.getAttribute('title');
  assert.ok(dollarsIn(usedTitle) > 0, `budget bar: ${usedTitle}`);
  // At 1280x800 the "budget used" column (header, bar and percentage) is whole on screen
  // and inside its card, and the card does not scroll sideways (it did: issue 7's gap).
  const spendCard = page.locator('.card', { has: page.locator('[data-testid=spend]') });
  assert.equal(await spendCard.evaluate((c) => c.scrollWidth - c.clientWidth), 0,
    'the Spend card overflows sideways at 1280 px');
  const usedParts = [page.locator('[data-testid=spend] th', { hasText: 'budget used' }),
    ...await page.locator('[data-testid=spend] td[data-testid=budget-used]').all(),
    ...await page.locator('[data-testid=spend] td[data-testid=budget-used] .pct').all()];
  assert.ok(usedParts.length >= 3, 'the budget column has a header, a cell and a percentage');
  for (const part of usedParts) {
    await part.scrollIntoViewIfNeeded();
    const b = await part.boundingBox();
    const c = await spendCard.boundingBox();
    const what = `"${(await part.textContent()).trim()}" at x ${b.x}..${b.x + b.width}, y ${b.y}..${b.y + b.height}`;
    assert.ok(b.width > 0 && b.height > 0, `${what} is empty`);
    assert.ok(b.x >= 0 && b.y >= 0 && b.x + b.width <= kViewport.width && b.y + b.height <= kViewport.height,
      `${what} is not fully inside the ${kViewport.width}x${kViewport.height} viewport`);
    assert.ok(b.x >= c.x && b.x + b.width <= c.x + c.width,
      `${what} is not inside its card (x ${c.x}..${c.x + c.width})`);
  }
  await shot('overview');

  // d. The Cost page's totals are `frugal cost`'s.
  const report = JSON.parse(cli(admin, ['cost', '--output', 'json']));
  await open('#/cost', '[data-testid=total-spend]');
  const shown = async (tid) => [await page.getAttribute(`[data-testid=${tid}]`, 'data-micros'),
    await page.textContent(`[data-testid=${tid}]`)];
  assert.ok(report.total.spend_micros > 0);
  assert.deepEqual(await shown('total-spend'), [String(report.total.spend_micros), money(report.total.spend_micros)]);
  assert.deepEqual(await shown('total-wasted'), [String(report.total.wasted_micros), money(report.total.wasted_micros)]);
  const useful = report.total.spend_micros - report.total.wasted_micros;
  assert.deepEqual(await shown('total-useful'), [String(useful), money(useful)]);
  const savings = Math.round(Number(report.total.spot_savings) * 1e6);
  assert.deepEqual(await shown('total-spot-savings'), [String(savings), money(savings)]);
  assert.equal(await page.locator('[data-testid=cost-by-team] tr[data-key=vision]').count(), 1);
  await shot('cost');

  await open('#/admin', '[data-testid=admin-yaml]');
  assert.match(await page.textContent('[data-testid=admin-yaml]'), /name: a100-spot/);
  assert.equal(await page.locator('[data-testid=admin-pools] tbody tr').count(), 2);
  assert.match(await page.textContent('[data-testid=admin-teams]'), /vision.*\$100\.00 monthly, soft/);
  // The YAML is a cluster file that describes the cluster as it is: applying it changes nothing.
  const clusterFile = path.join(home, 'cluster.yaml');
  fs.writeFileSync(clusterFile, await page.textContent('[data-testid=admin-yaml]'));
  const diff = JSON.parse(cli(admin, ['admin', 'apply', '-f', clusterFile, '--dry-run', '--output', 'json']));
  assert.equal(diff.summary.created + diff.summary.updated, 0, JSON.stringify(diff.changes));
  // The Nodes card lists every local worker; a node drained with the CLI shows it, by whom.
  const nodes = (await api('/v1/admin/nodes')).nodes;
  assert.equal(await page.locator('[data-testid=admin-nodes] tbody tr').count(), nodes.length);
  assert.ok(nodes.length >= 3, JSON.stringify(nodes));
  const spot = nodes.find((n) => n.pool === 'a100-spot').name;
  cli(admin, ['admin', 'node', 'drain', spot]);
  await open('#/admin', '[data-testid=admin-nodes]');
  assert.match(await page.textContent(`[data-testid=admin-nodes] tr[data-node="${spot}"]`),
    /a100-spot.*2 × a100 80 GB.*draining \(admin by admin\)/);
  // The Instances card (exec pools' cloud instances): none here, so its empty state.
  assert.deepEqual((await api('/v1/admin/instances?all=true')).instances, []);
  assert.equal(await page.textContent('[data-testid=instances-empty]'), 'No exec-pool instances.');
  await shot('admin');
  cli(admin, ['admin', 'node', 'undrain', spot]);

  // e. A job array is one row of the Jobs table. Its name is other teams' input: HTML in it
  // is text. Odd indices fail (once: no retry), so its tasks end in two states.
  const sweepName = '<img src=x onerror="window.__xss=1">sweep<b>';
  const sweep = JSON.parse(cli(alice, ['submit', '--array', '0-4', '--name', sweepName, '--gpus', '1',
    '--max-attempts', '1', '--output', 'json', '--', 'bash', '-c', 'exit $((FRUGAL_ARRAY_INDEX % 2))']));
  log(`submitted array ${sweep.id}`);
  const sweepDone = await waitFor(`array ${sweep.id} to end`, async () => {
    const a = await api(`/v1/arrays/${sweep.id}`);
    return a.states.succeeded === 3 && a.states.failed === 2 ? a : null;
  }, 180_000);
  const sweepTasks = (await api(`/v1/jobs?array=${sweep.id}`)).jobs;
  assert.equal(sweepTasks.length, 5);
  apiCalls = [];
  await open('#/jobs', '[data-testid=jobs-table]');
  const sweepRow = page.locator(`tr[data-array="${sweep.id}"]`);
  assert.equal(await sweepRow.count(), 1, 'the array is one row');
  for (const t of sweepTasks)
    assert.equal(await page.locator(`tr[data-job="${t.id}"]`).count(), 0, `task ${t.id} listed before the array is expanded`);
  assert.equal(await sweepRow.locator('[data-testid=array-states]').textContent(), '3 succeeded · 2 failed');
  assert.equal(await sweepRow.locator('[data-testid=array-cost]').getAttribute('data-micros'),
    String(sweepDone.cost_micros), 'the row shows the sweep\'s cost');
  assert.ok((await sweepRow.textContent()).includes(sweepName), 'the array\'s name, as text');
  assert.equal(await page.locator('[data-testid=jobs-table] img, [data-testid=jobs-table] b').count(), 0,
    'the name was parsed as HTML');
  assert.deepEqual(apiCalls, ['/v1/whoami', '/v1/jobs', `/v1/arrays/${sweep.id}`],
    'one list request, and one per array on the page');
  await sweepRow.click();
  await page.waitForSelector(`tr[data-array-task="${sweep.id}"]`, { timeout: kLimitMs });
  const taskRows = page.locator(`tr[data-array-task="${sweep.id}"][data-job]`);
  assert.equal(await taskRows.count(), 5);
  for (const t of sweepTasks) {
    const r = page.locator(`tr[data-job="${t.id}"]`);
    assert.equal(await r.locator('[data-testid=task-index]').textContent(), `[${t.array_index}] `);
    assert.ok((await r.textContent()).includes(t.state), `task ${t.id} shows its state ${t.state}`);
  }
  assert.deepEqual((await taskRows.locator('[data-testid=task-index]').allTextContents()).sort(),
    ['[0] ', '[1] ', '[2] ', '[3] ', '[4] ']);
  assert.equal(await page.locator('[data-testid=jobs-table] img, [data-testid=jobs-table] b').count(), 0);
  assert.equal(await sweepRow.locator('[data-testid=array-toggle]').getAttribute('aria-expanded'), 'true');
  await shot('jobs-array');
  await sweepRow.click();
  await waitFor('a second click to fold the tasks away', async () => (await taskRows.count()) === 0);
  assert.equal(await page.evaluate(() => window.__xss), undefined, 'the name ran as HTML');

  // An array longer than a page: one task runs at a time, so 54 wait. The first page is
  // all its tasks, one row; expanded, its tasks come 50 at a time; the older page goes on
  // below the array, with the first one and the jobs before it.
  const long = JSON.parse(cli(alice, ['submit', '--array', '0-54%1', '--name', 'browser-long',
    '--gpus', '1', '--output', 'json', '--', 'sleep', '600']));
  log(`submitted array ${long.id}`);
  await waitFor(`array ${long.id} to run a task`, async () => (await api(`/v1/arrays/${long.id}`)).states.running === 1);
  await open('#/jobs', '[data-testid=jobs-table]');
  const longRow = page.locator(`tr[data-array="${long.id}"]`);
  assert.equal(await page.locator('[data-testid=jobs-table] tbody tr').count(), 1, 'the first page is the array, one row');
  assert.equal(await longRow.locator('[data-testid=array-states]').textContent(), '54 pending · 1 running');
  assert.match(await longRow.textContent(), /runs at most 1 task at once/);
  await longRow.locator('[data-testid=array-toggle]').click();
  await page.waitForSelector('[data-testid=more-tasks]', { timeout: kLimitMs });
  const longTasks = page.locator(`tr[data-array-task="${long.id}"][data-job]`);
  assert.equal(await longTasks.count(), 50);
  assert.match(await page.textContent('[data-testid=more-tasks]'), /50 of 55 shown/);
  await page.click('[data-testid=more-tasks]');
  await waitFor('the rest of the tasks', async () => (await longTasks.count()) === 55);
  assert.ok(await page.isHidden('[data-testid=more-tasks]'), 'no more tasks to show');
  assert.deepEqual((await longTasks.locator('[data-testid=task-index]').allTextContents())
    .map((t) => Number(t.slice(1, -2))).sort((x, y) => x - y), [...Array(55).keys()]);
  await page.click('[data-testid=older-jobs]');
  await page.waitForSelector(`tr[data-array="${sweep.id}"]`, { timeout: kLimitMs });
  assert.equal(await page.locator(`tr[data-array="${long.id}"]`).count(), 0, 'the older page repeats the array');
  assert.equal(await page.locator(`tr[data-job="${id}"]`).count(), 1, 'the older page goes on with the jobs');
  cli(alice, ['cancel', '--array', String(long.id)]);

  // A researcher sees the same dashboard, scoped to the team, without the Admin page.
  await page.click('#logout');
  await page.fill('#token', alice);
  await page.click('#login-form button');
  await page.waitForSelector('[data-testid=pools]', { timeout: kLimitMs });
  assert.equal(await page.isHidden('#nav-admin'), true);

  assert.deepEqual(scriptErrors, [], 'no script errors on any page');
  await browser.close();
  log('PASS');
} catch (e) {
  failed = true;
  console.error(`[browser] FAIL: ${e.stack || e}`);
  try { console.error(fs.readFileSync(path.join(home, 'scheduler.log'), 'utf8').split('\n').slice(-30).join('\n')); } catch (_) { /* none */ }
} finally {
  await stopScheduler();
  for (const f of shots) log(`screenshot: ${f}`);
  if (!failed) fs.rmSync(home, { recursive: true, force: true });
  else log(`kept ${home} for inspection`);
}
process.exit(failed ? 1 : 0);
