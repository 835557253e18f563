// Admin (admin token): pools, nodes (GET /v1/admin/nodes), the exec provider's cloud
// instances (GET /v1/admin/instances?all=true), teams with their quotas and budgets,
// read-only, and the same as YAML in the shape of the cluster file (`frugal admin apply -f`).
'use strict';

(() => {
  const { el, money, table, card, absent } = Frugal;

  // A small YAML writer for plain JSON values (objects, arrays, scalars).
  function yaml(value, indent = '') {
    const scalar = (v) => (v === null ? 'null' : typeof v === 'string'
      ? (/^[A-Za-z0-9_.\/-]+$/.test(v) && !/^(true|false|null|[0-9.]+)$/.test(v) ? v : JSON.stringify(v))
      : String(v));
    if (Array.isArray(value)) {
      if (!value.length) return ' []';
      return value.map((v) => {
        if (v && typeof v === 'object') {
          const inner = yaml(v, `${indent}  `).replace(/^\n\s*/, '');
          return `\n${indent}- ${inner}`;
        }
        return `\n${indent}- ${scalar(v)}`;
      }).join('');
    }
    if (value && typeof value === 'object') {
      const keys = Object.keys(value);
      if (!keys.length) return ' {}';
      return keys.map((k) => {
        const v = value[k];
        return v && typeof v === 'object' ? `\n${indent}${k}:${yaml(v, `${indent}  `)}` : `\n${indent}${k}: ${scalar(v)}`;
      }).join('');
    }
    return ` ${scalar(value)}`;
  }

  function kinds(q) {
    if (!q) return '–';
    const part = (k, label) => (q[k] === null || q[k] === undefined ? null : `${label} ${q[k]} GPUs`);
    const out = [part('reserved_gpus', 'reserved'), part('on_demand_gpus', 'on-demand'), part('spot_gpus', 'spot'),
      ...Object.entries(q.pools || {}).map(([p, n]) => `${p} ${n} GPUs`)].filter(Boolean);
    return out.length ? out.join(', ') : 'no limit';
  }

  function budgetText(b) {
    if (!b) return '–';
    const limit = b.limit_micros !== undefined ? b.limit_micros : b.limit !== undefined ? Frugal.micros(b.limit) : null;
    if (limit === null) return JSON.stringify(b);
    return `${money(limit)} ${b.period || ''}${b.hard !== undefined ? (b.hard ? ', hard' : ', soft') : ''}`;
  }

  const kEndedShown = 50;  // the newest ended instances listed under "Recently ended"
  const kDetailChars = 80;  // a failed command's output, cut to this in the table

  // Seconds from an API timestamp to `to` (a timestamp, or now); null without one.
  function since(t, to) {
    if (!t) return null;
    return ((to ? Date.parse(to) : Date.now()) - Date.parse(t)) / 1000;
  }

  // The exec provider's instances (decision 0029). Per pool one line: on their way up
  // (creating, booting), running (and of those, idle: the node is ready and runs nothing),
  // being destroyed, leaked (found by list, not yet gone), those ended in the list counted
  // by reason, and what they cost. Then the live instances, and the newest ended ones.
  function instancesCard(data, nodes) {
    if (!data) return card('Instances', absent('This scheduler has no instance route.'));
    const all = data.instances || [];
    if (!all.length) {
      return card('Instances', el('p', { class: 'absent', 'data-testid': 'instances-empty' },
        'No exec-pool instances.'));
    }
    const byNode = new Map(((nodes && nodes.nodes) || []).map((n) => [n.name, n]));
    const idle = (x) => {
      const n = byNode.get(x.node);
      return x.state === 'running' && !!n && n.state === 'ready' && n.running_attempts === 0;
    };
    const pools = new Map();
    for (const x of all) {
      if (!pools.has(x.pool)) {
        pools.set(x.pool, { starting: 0, running: 0, idle: 0, destroying: 0, leaked: 0, ended: 0,
          reasons: new Map(), micros: 0 });
      }
      const p = pools.get(x.pool);
      p.micros += x.cost_micros;
      if (x.state === 'gone') {
        p.ended += 1;
        const r = x.reason || 'unknown';
        p.reasons.set(r, (p.reasons.get(r) || 0) + 1);
      } else if (x.leaked) {
        p.leaked += 1;
      } else if (x.state === 'creating' || x.state === 'booting') {
        p.starting += 1;
      } else if (x.state === 'running') {
        p.running += 1;
        if (idle(x)) p.idle += 1;
      } else {
        p.destroying += 1;
      }
    }
    const summary = el('ul', { class: 'instance-summary', 'data-testid': 'instance-summary' },
      [...pools.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([name, p]) => {
        const reasons = [...p.reasons.entries()].sort(([a, m], [b, n]) => n - m || a.localeCompare(b))
          .map(([r, n]) => `${r} ${n}`).join(', ');
        return el('li', { 'data-pool': name }, el('b', {}, name), ': ',
          `starting ${p.starting}, running ${p.running}${p.idle ? ` (idle ${p.idle})` : ''}, `,
          `destroying ${p.destroying}, `,
          el('span', { class: p.leaked ? 'error' : null }, `leaked ${p.leaked}`),
          `; ended ${p.ended}${reasons ? ` (${reasons})` : ''}; cost `,
          el('span', { 'data-micros': p.micros }, money(p.micros)));
      }));
    const cloudId = (x) => el('td', {}, x.instance_id || '–');
    const why = (x) => {
      const detail = (x.detail || '').replace(/\s+/g, ' ').trim();
      const cut = detail.length > kDetailChars ? `${detail.slice(0, kDetailChars - 1)}…` : detail;
      return el('td', { class: 'reason', title: x.detail || null },
        x.reason || (detail ? '' : '–'), x.reason && cut ? ': ' : '', cut);
    };
    const stateCell = (x) => el('td', {}, Frugal.state(x.state),
      x.leaked ? [' ', Frugal.state('leaked')] : null, idle(x) ? [' ', Frugal.state('idle')] : null);
    const when = (x) => [`requested ${Frugal.time(x.requested_at)}`, `created ${Frugal.time(x.created_at)}`,
      `registered ${Frugal.time(x.registered_at)}`, x.ended_at ? `ended ${Frugal.time(x.ended_at)}` : null]
      .filter(Boolean).join('\n');
    const live = all.filter((x) => x.state !== 'gone');
    const liveRows = live.map((x) => el('tr', { 'data-instance': x.id, 'data-node': x.node },
      el('td', {}, x.node), el('td', {}, x.pool), cloudId(x), stateCell(x),
      el('td', { class: 'num', title: when(x) }, Frugal.duration(since(x.requested_at))),
      el('td', { class: 'num', 'data-micros': x.cost_micros }, money(x.cost_micros)), why(x)));
    const ended = all.filter((x) => x.state === 'gone')
      .sort((a, b) => Date.parse(b.ended_at || b.requested_at) - Date.parse(a.ended_at || a.requested_at) || b.id - a.id);
    const endedRows = ended.slice(0, kEndedShown).map((x) => el('tr', { 'data-instance': x.id, 'data-node': x.node },
      el('td', {}, x.node), el('td', {}, x.pool), cloudId(x), stateCell(x),
      el('td', { class: 'num', title: when(x) }, Frugal.duration(since(x.created_at || x.requested_at, x.ended_at))),
      el('td', { class: 'num', title: Frugal.time(x.ended_at) }, `${Frugal.duration(since(x.ended_at))} ago`),
      el('td', { class: 'num', 'data-micros': x.cost_micros }, money(x.cost_micros)), why(x)));
    return card('Instances', summary,
      liveRows.length ? table(['node', 'pool', 'cloud id', 'state', 'age ', 'cost ', 'reason'], liveRows,
        { 'data-testid': 'admin-instances' }) : absent('No live instances.'),
      endedRows.length ? el('details', { 'data-testid': 'admin-instances-ended' },
        el('summary', {}, ended.length > endedRows.length
          ? `Recently ended: the newest ${endedRows.length} of ${ended.length}` : `Recently ended: ${ended.length}`),
        table(['node', 'pool', 'cloud id', 'state', 'lived ', 'ended ', 'cost ', 'reason'], endedRows)) : null,
      el('p', { class: 'note' }, 'Total of the instances listed: ',
        el('span', { 'data-testid': 'instances-cost', 'data-micros': data.cost_micros }, money(data.cost_micros, true)),
        '. Idle: running, its node ready with no running attempt.'));
  }

  Frugal.pages.admin = async (root, _args, me) => {
    if (me.role !== 'admin') {
      root.append(el('h1', {}, 'Admin'), absent('The admin pages need an admin token.'));
      return;
    }
    const [pools, teams, nodes, instances] = await Promise.all([Frugal.api('/v1/admin/pools'),
      Frugal.api('/v1/admin/teams'), Frugal.optional('/v1/admin/nodes'),
      Frugal.optional('/v1/admin/instances?all=true')]);
    const details = await Promise.all(teams.teams.map(async (t) => {
      const name = encodeURIComponent(t.name);
      const [quota, budget] = await Promise.all([
        Frugal.optional(`/v1/admin/teams/${name}/quota`),
        Frugal.optional(`/v1/admin/teams/${name}/budget`).catch(() => null)]);
      return { name: t.name, quota, budget };
    }));
    const poolRows = pools.pools.map((p) => el('tr', {},
      el('td', {}, p.name), el('td', {}, p.capacity_kind.replace('_', '-')), el('td', {}, p.gpu_type),
      el('td', { class: 'num' }, `${p.gpu_mem_gb} GB`), el('td', { class: 'num' }, `${p.live_gpus} of ${p.max_gpus} GPUs`),
      el('td', { class: 'num' }, `${money(p.price_per_gpu_hour)} /GPU·h`),
      el('td', { class: 'num' }, `${p.speed}×`),
      el('td', { class: 'num' }, p.capacity_kind === 'spot'
        ? `${Number(p.preemption_rate_per_node_hour || 0).toFixed(3)} /node·h, outages ${Number(p.mean_outage_hours || 0).toFixed(1)} h` : '–')));
    // One row per node: state with why it drains (admin, notice, shutdown), the lease's age
    // (since the last heartbeat), its running attempts, the last mean GPU utilisation.
    const nodeRows = ((nodes && nodes.nodes) || []).map((n) => el('tr', { 'data-node': n.name },
      el('td', {}, n.name), el('td', {}, n.pool),
      el('td', {}, `${n.gpus} × ${n.gpu_type} ${n.gpu_mem_gb} GB`),
      el('td', {}, Frugal.state(n.state), n.drain ? ` (${n.drain}${n.drained_by ? ` by ${n.drained_by}` : ''})` : ''),
      el('td', { class: 'num' }, Frugal.duration(n.lease_age_seconds)),
      el('td', { class: 'num' }, String(n.running_attempts)),
      el('td', { class: 'num' }, n.gpu_utilization === null ? '–' : `${Number(n.gpu_utilization).toFixed(0)} %`),
      el('td', { class: 'num' }, Frugal.duration(n.credential_age_seconds))));
    const teamRows = details.map((t) => el('tr', {},
      el('td', {}, t.name), el('td', {}, kinds(t.quota)), el('td', {}, budgetText(t.budget))));
    const anyBudget = details.some((t) => t.budget);
    // The cluster file's shape (config/cluster.example.yaml, `frugal admin apply -f`): only
    // the keys an admin writes, name first; budgets are set by their own route, so they
    // follow as a comment.
    const kPoolKeys = ['name', 'capacity_kind', 'gpu_type', 'gpu_mem_gb', 'price_per_gpu_hour', 'max_gpus',
      'speed', 'startup_delay_seconds', 'idle_timeout_seconds'];
    const poolDoc = (p) => Object.fromEntries([...kPoolKeys, ...(p.capacity_kind === 'spot'
      ? ['preemption_prior_per_node_hour'] : []), ...(p.capacity_kind === 'reserved' && p.committed_gpus
      ? ['committed_gpus'] : [])].filter((k) => p[k] !== undefined).map((k) => [k, p[k]]));
    const quotaDoc = (q) => {
      if (!q) return null;
      const out = {};
      for (const k of ['reserved_gpus', 'on_demand_gpus', 'spot_gpus'])
        if (q[k] !== null && q[k] !== undefined) out[k] = q[k];
      if (q.pools && Object.keys(q.pools).length) out.pools = q.pools;
      return Object.keys(out).length ? out : null;
    };
    const doc = { pools: pools.pools.map(poolDoc), teams: details.map((t) => {
      const q = quotaDoc(t.quota);
      return q ? { name: t.name, quota: q } : { name: t.name };
    }) };
    const budgetLines = details.filter((t) => t.budget).map((t) =>
      `#   ${t.name}: ${budgetText(t.budget)}${t.budget.alert_at_pct && t.budget.alert_at_pct.length
        ? `, alerts at ${t.budget.alert_at_pct.join(', ')} %` : ''}`);
    const yamlText = `${yaml(doc).replace(/^\n/, '')}\n${budgetLines.length
      ? `# budgets (POST /v1/admin/teams/{team}/budget):\n${budgetLines.join('\n')}\n` : ''}`;
    root.append(el('h1', {}, 'Admin'),
      el('p', { class: 'muted' }, 'Read-only. Change these with frugal admin pool set, frugal admin quota set and the admin API.'),
      card('Pools', poolRows.length ? table(['pool', 'kind', 'GPU type', 'GPU memory ', 'live of max ', 'price ',
        'speed ', 'learned reclaims and mean outage '], poolRows, { 'data-testid': 'admin-pools' }) : absent('No pools.')),
      card('Nodes', nodeRows.length ? table(['node', 'pool', 'GPUs', 'state', 'lease age ', 'running ',
        'GPU util ', 'credential age '], nodeRows, { 'data-testid': 'admin-nodes' })
        : absent(nodes ? 'No nodes.' : 'This scheduler has no node route.')),
      el('p', { class: 'muted' }, 'Drain, undrain or remove a node with frugal admin node drain|undrain|remove NODE.'),
      instancesCard(instances, nodes),
      card('Teams: quotas and budgets', table(['team', 'quota (concurrent GPUs)', 'budget'], teamRows,
        { 'data-testid': 'admin-teams' }),
      anyBudget ? null : absent('No budgets: this scheduler has no budget route, or no team has a budget.')),
      card('As YAML (the cluster file of frugal admin apply -f)', el('pre', { class: 'yaml', 'data-testid': 'admin-yaml' }, yamlText)));
  };
})();
