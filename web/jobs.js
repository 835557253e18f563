// Jobs: a searchable table (state, team, pool, cost so far, wait reason), newest first, 50
// a page; and a job's page (#/jobs/ID) with its attempts on a timeline and its cost.
'use strict';

(() => {
  const { el, money, table, card, absent, kpi, state } = Frugal;
  const kStates = ['', 'pending', 'held', 'running', 'succeeded', 'failed', 'cancelled', 'timed_out'];

  // Pool and cost so far come with each job of the list (GET /v1/jobs sums its timeline in
  // the same request), so a page of 50 jobs is one request, not one more per row.
  function row(j) {
    return el('tr', { 'data-job': j.id },
      el('td', { class: 'num' }, el('a', { href: `#/jobs/${j.id}` }, j.id)),
      el('td', {}, j.name || el('span', { class: 'muted' }, '(no name)')),
      el('td', {}, state(j.state)),
      el('td', {}, j.team), el('td', {}, j.user), el('td', {}, j.priority),
      el('td', { class: 'num' }, `${j.gpus} GPU${j.gpus === 1 ? '' : 's'}`),
      el('td', { 'data-testid': 'job-pool' }, j.pool || '–'),
      el('td', { class: 'num', 'data-testid': 'job-row-cost', 'data-micros': j.cost_micros },
        money(j.cost_micros)),
      el('td', {}, Frugal.time(j.created_at)),
      el('td', { class: 'reason' }, j.state === 'pending' || j.state === 'held' ? j.reason || '' : ''));
  }

  async function list(root, params) {
    const q = new URLSearchParams({ limit: '50' });
    if (params.get('state')) q.set('state', params.get('state'));
    if (params.get('cursor')) q.set('cursor', params.get('cursor'));
    const page = await Frugal.api(`/v1/jobs?${q}`);
    const rows = page.jobs;
    const search = el('input', { type: 'search', placeholder: 'Search id, name, team, user, pool, reason',
      'data-testid': 'job-search', value: params.get('q') || '' });
    const stateSel = el('select', { 'data-testid': 'job-state' },
      kStates.map((s) => el('option', { value: s, selected: s === (params.get('state') || '') }, s || 'any state')));
    const body = el('tbody', {});
    const apply = () => {
      const needle = search.value.trim().toLowerCase();
      body.replaceChildren(...rows.filter((j) => !needle || [j.id, j.name, j.team, j.user, j.pool,
        j.reason, j.state].join(' ').toLowerCase().includes(needle)).map(row));
    };
    search.addEventListener('input', apply);
    stateSel.addEventListener('change', () => {
      location.hash = `#/jobs${stateSel.value ? `?state=${stateSel.value}` : ''}`;
    });
    apply();
    const headers = ['id ', 'name', 'state', 'team', 'user', 'priority', 'GPUs ', 'pool',
      'cost so far ', 'submitted', 'wait reason'];
    const tableEl = table(headers, [], { 'data-testid': 'jobs-table' });
    tableEl.replaceChild(body, tableEl.querySelector('tbody'));
    const next = page.next_cursor
      ? el('a', { href: `#/jobs?${new URLSearchParams({ ...(params.get('state') ? { state: params.get('state') } : {}), cursor: page.next_cursor })}` }, 'Older jobs →')
      : null;
    root.append(el('h1', {}, 'Jobs'),
      card(`${rows.length} jobs${params.get('cursor') ? ' (older)' : ''}`,
        el('div', { class: 'toolbar' }, search, stateSel), rows.length ? tableEl : absent('No jobs.'), next));
  }

  async function detail(root, id) {
    const [job, t] = await Promise.all([Frugal.api(`/v1/jobs/${id}`), Frugal.api(`/v1/jobs/${id}/timeline`)]);
    const attempts = t.attempts.map((a) => el('tr', {},
      el('td', { class: 'num' }, `#${a.number}`), el('td', {}, a.pool),
      el('td', { class: 'muted' }, a.capacity_kind.replace('_', '-')), el('td', {}, a.node),
      el('td', { class: 'num' }, `${a.gpus} GPU${a.gpus === 1 ? '' : 's'}`),
      el('td', {}, Frugal.time(a.started_at)), el('td', {}, a.ended_at ? Frugal.time(a.ended_at) : 'running'),
      el('td', { class: 'num' }, Frugal.duration((Date.parse(a.ended_at || t.now) - Date.parse(a.started_at)) / 1000)),
      el('td', {}, a.end_reason || '–'),
      el('td', { class: 'num' }, `${t.checkpoints.filter((c) => c.attempt_id === a.id).length}`),
      el('td', { class: 'num' }, money(a.cost_micros)), el('td', { class: 'num' }, money(a.lost_micros))));
    // right_sizing: advice for an ended job, null when there is none, absent when the
    // scheduler does not offer it.
    const advice = job.right_sizing === undefined
      ? absent('This scheduler does not offer right-sizing advice.')
      : job.right_sizing === null
        ? absent(job.finished_at ? 'No advice: this job was the right size.' : 'Advice comes when the job has ended.')
        : el('div', {}, el('p', {}, job.right_sizing.message),
          el('p', { class: 'muted' }, `cost ${money(job.right_sizing.actual)}, would have cost ${money(job.right_sizing.alternative)}: saving ${money(job.right_sizing.saving)}`));
    root.append(
      el('p', {}, el('a', { href: '#/jobs' }, '← Jobs')),
      el('h1', { 'data-testid': 'job-title' }, `Job ${job.id} ${job.name || ''}`),
      el('div', { class: 'kpis' },
        kpi('State', job.state, 'job-state'),
        kpi('Cost so far', money(t.cost_micros, true), 'job-cost'),
        kpi('Work lost to interruptions', money(t.wasted_micros), 'job-wasted'),
        kpi('Attempts', `${t.attempts.length}`, 'job-attempts'),
        kpi('Checkpoints', `${t.checkpoints.length}`, 'job-checkpoints')),
      card('Attempts on a timeline', t.attempts.length ? Charts.timeline(t) : absent(`Not started: ${job.reason || job.state}`),
        t.attempts.length ? table(['attempt ', 'pool', 'kind', 'node', 'GPUs ', 'started', 'ended',
          'ran ', 'end', 'checkpoints ', 'cost ', 'lost '], attempts, { 'data-testid': 'attempts' }) : null),
      el('div', { class: 'grid' },
        card('Job',
          table(['', ''], [
            ['team / user', `${job.team} / ${job.user}`], ['project', job.project || '–'],
            ['command', job.command.join(' ')], ['GPUs', `${job.gpus}`], ['priority', job.priority],
            ['tolerance', job.tolerance], ['deadline', Frugal.time(job.deadline)],
            ['submitted', Frugal.time(job.created_at)], ['finished', Frugal.time(job.finished_at)],
            ['reason', job.reason || '–']].map(([k, v]) => el('tr', {}, el('td', { class: 'muted' }, k), el('td', { class: 'reason' }, v))))),
        card('Right-sizing advice', advice)),
      el('div', { style: 'height:16px' }),
      card('Events', table(['at', 'event', 'from', 'to', 'message'], job.events.map((e) => el('tr', {},
        el('td', {}, Frugal.time(e.at)), el('td', {}, e.kind), el('td', {}, e.from || ''), el('td', {}, e.to || ''),
        el('td', { class: 'reason' }, e.message || ''))))));
  }

  Frugal.pages.jobs = async (root, args) => {
    if (args[0] && /^\d+$/.test(args[0])) return detail(root, args[0]);
    return list(root, new URLSearchParams(location.hash.split('?')[1] || ''));
  };
})();
