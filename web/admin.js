// Admin (admin token): pools, nodes (GET /v1/admin/nodes), teams with their quotas and
// budgets, read-only, and the same as YAML in the shape of the cluster file
// (`frugal admin apply -f`).
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

  Frugal.pages.admin = async (root, _args, me) => {
    if (me.role !== 'admin') {
      root.append(el('h1', {}, 'Admin'), absent('The admin pages need an admin token.'));
      return;
    }
    const [pools, teams, nodes] = await Promise.all([Frugal.api('/v1/admin/pools'),
      Frugal.api('/v1/admin/teams'), Frugal.optional('/v1/admin/nodes')]);
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
      card('Teams: quotas and budgets', table(['team', 'quota (concurrent GPUs)', 'budget'], teamRows,
        { 'data-testid': 'admin-teams' }),
      anyBudget ? null : absent('No budgets: this scheduler has no budget route, or no team has a budget.')),
      card('As YAML (the cluster file of frugal admin apply -f)', el('pre', { class: 'yaml', 'data-testid': 'admin-yaml' }, yamlText)));
  };
})();
