// Overview: GPUs per pool by state, spend today and this month per team (against the
// team's budget when the scheduler has budget routes), the queue by priority, and recent
// preemptions with the attempt that recovered each.
'use strict';

(() => {
  const { el, money, table, card, absent, kpi } = Frugal;
  const kPriorities = ['critical', 'high', 'normal', 'low'];

  function startOfTodayUtc() {
    const d = new Date();
    return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate())).toISOString();
  }
  function startOfMonthUtc() {
    const d = new Date();
    return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)).toISOString();
  }

  function poolsCard(pools) {
    if (!pools.length) return card('GPUs by pool', absent('No pools yet (frugal admin pool set ...).'));
    const colours = { busy: 'var(--busy)', idle: 'var(--idle)', free: 'var(--free)' };
    const rows = pools.map((p) => el('tr', { 'data-pool': p.pool },
      el('td', {}, p.pool), el('td', { class: 'muted' }, p.capacity_kind.replace('_', '-')),
      el('td', { style: 'width:40%' }, Charts.splitBar([
        { value: p.busy_gpus, colour: colours.busy, label: `${p.busy_gpus} busy` },
        { value: p.idle_paid_gpus, colour: colours.idle, label: `${p.idle_paid_gpus} idle (paid)` },
        { value: p.free_gpus, colour: colours.free, label: `${p.free_gpus} free` }], p.max_gpus)),
      el('td', { class: 'num' }, `${p.busy_gpus} GPUs`),
      el('td', { class: 'num' }, `${p.idle_paid_gpus} GPUs`),
      el('td', { class: 'num' }, `${p.free_gpus} GPUs`),
      el('td', { class: 'num' }, `${p.max_gpus} GPUs`)));
    return card('GPUs by pool',
      Charts.legend([['busy', colours.busy], ['idle but paid for', colours.idle],
        ['free (not provisioned)', '#b9c0c9']]),
      table(['pool', 'kind', '', 'busy ', 'idle, paid ', 'free ', 'max '], rows,
        { 'data-testid': 'pools' }));
  }

  // A budget answer, whatever the exact field names: money as micros or dollar strings.
  function budgetFigures(b) {
    if (!b) return null;
    const pick = (name) => (b[`${name}_micros`] !== undefined ? b[`${name}_micros`]
      : b[name] !== undefined && b[name] !== null ? Frugal.micros(b[name]) : null);
    const limit = pick('limit');
    if (limit === null) return null;
    // `used` (spent + committed by running paid attempts) is what admission compares.
    return { limit, spent: pick('used') !== null ? pick('used') : pick('spent') || 0, period: b.period || '',
      hard: b.hard };
  }

  // The status route for everyone: it has what was used. (The admin route is the budget's
  // configuration only; reading it showed admins every team at 0 % used.)
  async function budgetOf(team) {
    const path = `/v1/teams/${encodeURIComponent(team)}/budget`;
    try { return budgetFigures(await Frugal.optional(path)); } catch (e) { return null; }
  }

  async function spendCard(me) {
    const [today, month] = await Promise.all([
      Frugal.api(`/v1/reports/cost?by=team&from=${encodeURIComponent(startOfTodayUtc())}`),
      Frugal.api(`/v1/reports/cost?by=team&from=${encodeURIComponent(startOfMonthUtc())}`)]);
    const teams = [...new Set([...month.rows.map((r) => r.key), ...(me.role === 'admin' ? [] : [me.team])])];
    const budgets = await Promise.all(teams.map((t) => budgetOf(t)));
    const anyBudget = budgets.some((b) => b);
    const rows = teams.map((team, i) => {
      const d = today.rows.find((r) => r.key === team);
      const m = month.rows.find((r) => r.key === team);
      const b = budgets[i];
      const spent = b ? b.spent : m ? m.spend_micros : 0;
      return el('tr', {},
        el('td', {}, team),
        el('td', { class: 'num' }, money(d ? d.spend_micros : 0)),
        el('td', { class: 'num' }, money(m ? m.spend_micros : 0)),
        el('td', { class: 'num' }, b ? `${money(b.limit)} ${b.period}${b.hard ? ' (hard)' : ''}` : '–'),
        // Bar and percentage share one cell that takes the width left over (style.css), so
        // the column shrinks with the card instead of pushing past it at 1280 px.
        el('td', { class: 'budget-used', 'data-testid': 'budget-used' }, b ? el('div', { class: 'used' },
          Charts.splitBar([{ value: spent, colour: spent > b.limit ? 'var(--bad)' : 'var(--useful)',
            label: `${money(spent)} of ${money(b.limit)}` }], b.limit),
          el('span', { class: 'pct' }, `${((100 * spent) / Math.max(1, b.limit)).toFixed(0)} %`)) : ''));
    });
    return card('Spend per team (UTC)',
      rows.length ? table(['team', 'today ', 'this month ', 'budget ', 'budget used'], rows, { 'data-testid': 'spend' })
        : absent('No spend yet.'),
      anyBudget ? el('p', { class: 'note' }, 'Budget used counts what running paid attempts are expected to cost still, as admission does.')
        : absent('No team budgets: this scheduler has no budget route, or no team has a budget.'));
  }

  function queueCard(queue) {
    const states = ['pending', 'held', 'running'];
    const count = (p, s) => queue.filter((q) => q.priority === p && q.state === s)
      .reduce((n, q) => n + q.jobs, 0);
    const rows = kPriorities.map((p) => el('tr', {}, el('td', {}, p),
      states.map((s) => el('td', { class: 'num' }, `${count(p, s)} jobs`))));
    return card('Queue by priority', table(['priority', 'pending ', 'held ', 'running '], rows,
      { 'data-testid': 'queue' }));
  }

  function interruptionsCard(list) {
    if (!list.length) return card('Recent preemptions and recoveries', absent('No preemptions or lost nodes.'));
    const rows = list.map((x) => {
      const wait = x.next_started_at ? (Date.parse(x.next_started_at) - Date.parse(x.ended_at)) / 1000 : null;
      return el('tr', {},
        el('td', {}, Frugal.time(x.ended_at)),
        el('td', {}, el('a', { href: `#/jobs/${x.job}` }, `${x.job} ${x.job_name}`)),
        el('td', {}, x.team),
        el('td', {}, `#${x.attempt} on ${x.pool}`),
        el('td', {}, `${x.reason} (${x.cause})`),
        el('td', { class: 'num' }, money(x.lost_micros)),
        el('td', {}, x.next_attempt ? `#${x.next_attempt} on ${x.next_pool} after ${Frugal.duration(wait)}`
          : el('span', { class: 'muted' }, 'not yet')));
    });
    return card('Recent preemptions and recoveries',
      table(['ended', 'job', 'team', 'attempt', 'why', 'work lost ', 'recovered by'], rows,
        { 'data-testid': 'interruptions' }));
  }

  Frugal.pages.overview = async (root, _args, me) => {
    const [overview, spend] = await Promise.all([Frugal.api('/v1/overview'), spendCard(me)]);
    const sum = (k) => overview.pools.reduce((n, p) => n + p[k], 0);
    const waiting = overview.queue.filter((q) => q.state !== 'running').reduce((n, q) => n + q.jobs, 0);
    root.append(el('h1', {}, 'Overview'),
      el('div', { class: 'kpis' },
        // Of the GPUs that exist and are paid for, not of what pools may grow to (issue 17).
        kpi('GPUs busy', `${sum('busy_gpus')} of ${sum('paid_gpus')} GPUs`, 'kpi-busy'),
        kpi('GPUs idle but paid', `${sum('idle_paid_gpus')} GPUs`, 'kpi-idle'),
        kpi('Jobs waiting', `${waiting} jobs`, 'kpi-waiting'),
        kpi('Interruptions (recent)', `${overview.interruptions.length}`, 'kpi-interruptions')),
      poolsCard(overview.pools),
      el('div', { class: 'grid' }, spend, queueCard(overview.queue)),
      el('div', { style: 'height:16px' }),
      interruptionsCard(overview.interruptions));
  };
})();
