// Cost: spend over time by team and by pool, useful vs wasted, spot savings, reserved
// utilisation (admins), right-sizing advice (when the scheduler offers it). Totals are shown
// to the micro-dollar so they can be checked against `frugal cost`.
'use strict';

(() => {
  const { el, money, table, card, absent } = Frugal;

  function exactKpi(label, micros, id) {
    return el('div', { class: 'kpi' }, el('div', { class: 'label' }, label),
      el('div', { class: 'value', 'data-testid': id, 'data-micros': micros }, money(micros, true)));
  }

  function bucketLabel(b, spanMs) {
    const d = new Date(b.from);
    return spanMs > 2 * 86400e3 ? d.toLocaleDateString() : d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  }

  // Series → stacked columns in dollars; `pick` chooses what each bucket contributes.
  function chart(series, keys, pick) {
    const span = Date.parse(series.to) - Date.parse(series.from);
    const buckets = series.buckets.map((b) => ({ label: bucketLabel(b, span), values: pick(b) }));
    // Axis labels with as many decimals as the largest bucket needs (down to micro-dollars).
    const max = Math.max(0, ...buckets.map((b) => Object.values(b.values).reduce((a, v) => a + v, 0)));
    const digits = max >= 100 ? 0 : max >= 1 ? 2 : max >= 0.01 ? 4 : 6;
    const fmt = (v) => `$${v.toFixed(digits)}`;
    return Charts.stackedColumns(buckets, keys, fmt);
  }

  function byKey(series) {
    const keys = [...new Set(series.buckets.flatMap((b) => b.rows.map((r) => r.key)))].sort();
    return chart(series, keys, (b) => Object.fromEntries(b.rows.map((r) => [r.key, r.spend_micros / 1e6])));
  }

  function rowsTable(rep, what) {
    const rows = rep.rows.map((r) => el('tr', { 'data-key': r.key },
      el('td', {}, r.key), el('td', { class: 'num' }, money(r.spend_micros)),
      el('td', { class: 'num' }, money(r.spend_micros - r.wasted_micros)),
      el('td', { class: 'num' }, money(r.wasted_micros)), el('td', { class: 'num' }, Frugal.gpuHours(r.gpu_hours)),
      el('td', { class: 'num' }, `${r.jobs}`), el('td', { class: 'num' }, `${r.succeeded_jobs}`),
      el('td', { class: 'num' }, r.cost_per_successful_job === null ? '–' : money(r.cost_per_successful_job)),
      el('td', { class: 'num' }, money(r.spot_savings))));
    return table([what, 'spend ', 'useful ', 'wasted ', 'GPU time ', 'jobs ', 'succeeded ',
      'per successful job ', 'spot savings '], rows, { 'data-testid': `cost-by-${what}` });
  }

  function poolsTable(pools) {
    const rows = pools.map((p) => el('tr', {},
      el('td', {}, p.pool), el('td', { class: 'muted' }, p.capacity_kind.replace('_', '-')),
      el('td', { class: 'num' }, Frugal.gpuHours(p.busy_gpu_hours)),
      el('td', { class: 'num' }, Frugal.gpuHours(p.paid_gpu_hours)),
      el('td', { class: 'num' }, Frugal.percent(p.utilisation)),
      el('td', { class: 'num' }, money(p.spend)),
      el('td', { class: 'num' }, p.capacity_kind === 'reserved' ? money(p.idle_reserved) : '–')));
    return table(['pool', 'kind', 'busy ', 'paid ', 'utilisation ', 'spend ', 'idle reserved (waste) '], rows,
      { 'data-testid': 'pool-use' });
  }

  // The report's right_sizing: {jobs: [{job_id, message, actual, alternative, saving}],
  // potential_saving}; absent when the scheduler does not offer advice.
  function advice(rep) {
    const a = rep.right_sizing;
    if (a === undefined) return absent('This scheduler does not offer right-sizing advice.');
    if (!a || !a.jobs || !a.jobs.length)
      return absent('No advice: no ended job in this window would have been cheaper on other GPUs.');
    const rows = a.jobs.map((j) => el('tr', {},
      el('td', { class: 'num' }, el('a', { href: `#/jobs/${j.job_id}` }, j.job_id)),
      el('td', { class: 'reason' }, j.message), el('td', { class: 'num' }, money(j.actual)),
      el('td', { class: 'num' }, money(j.alternative)), el('td', { class: 'num' }, money(j.saving))));
    return el('div', {}, el('p', {}, `Potential saving: ${money(a.potential_saving)}`),
      table(['job ', 'advice', 'cost ', 'would have cost ', 'saving '], rows, { 'data-testid': 'right-sizing' }));
  }

  Frugal.pages.cost = async (root, _args, me) => {
    const [team, pool, byTeam, byPool] = await Promise.all([
      Frugal.api('/v1/reports/cost?by=team'), Frugal.api('/v1/reports/cost?by=pool'),
      Frugal.api('/v1/reports/cost/series?by=team&buckets=24'),
      Frugal.api('/v1/reports/cost/series?by=pool&buckets=24')]);
    const t = team.total;
    const reserved = team.pools.filter((p) => p.capacity_kind === 'reserved');
    const busy = reserved.reduce((n, p) => n + p.busy_gpu_hours, 0);
    const paid = reserved.reduce((n, p) => n + p.paid_gpu_hours, 0);
    root.append(el('h1', {}, 'Cost'),
      el('p', { class: 'muted' }, `${Frugal.time(team.from)} – ${Frugal.time(team.to)}${me.role === 'admin' ? '' : ` · team ${me.team}`}`),
      el('div', { class: 'kpis' },
        exactKpi('Spend', t.spend_micros, 'total-spend'),
        exactKpi('Useful', t.spend_micros - t.wasted_micros, 'total-useful'),
        exactKpi('Wasted (work lost)', t.wasted_micros, 'total-wasted'),
        exactKpi('Spot savings vs on-demand', Frugal.micros(t.spot_savings), 'total-spot-savings'),
        el('div', { class: 'kpi' }, el('div', { class: 'label' }, 'GPU time'),
          el('div', { class: 'value', 'data-testid': 'total-gpu-hours' }, Frugal.gpuHours(t.gpu_hours))),
        el('div', { class: 'kpi' }, el('div', { class: 'label' }, 'Reserved utilisation'),
          el('div', { class: 'value', 'data-testid': 'reserved-utilisation' },
            paid > 0 ? Frugal.percent(busy / paid) : '–'))),
      card('Spend over time by team', byKey(byTeam)),
      card('Spend over time by pool', byKey(byPool)),
      card('Useful vs wasted over time', chart(byTeam, ['useful', 'wasted'], (b) => ({
        useful: (b.spend_micros - b.wasted_micros) / 1e6, wasted: b.wasted_micros / 1e6 }))),
      card('By team', rowsTable(team, 'team')),
      card('By pool', rowsTable(pool, 'pool')),
      card('Pool utilisation and reserved capacity', me.role === 'admin' ? poolsTable(team.pools)
        : absent('Pool utilisation is shown to admins only.')),
      card('Right-sizing advice', advice(team)));
  };
})();
