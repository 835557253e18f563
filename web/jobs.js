// Jobs: a searchable table (state, team, pool, cost so far, wait reason), newest first, 50
// a page, where a job array is one row (its tasks by state, the sweep's cost) that expands
// into its tasks; and a job's page (#/jobs/ID) with its attempts on a timeline and its cost.
'use strict';

(() => {
  const { el, money, table, card, absent, kpi, state } = Frugal;
  const kStates = ['', 'pending', 'held', 'running', 'succeeded', 'failed', 'cancelled', 'timed_out'];

  // Pool and cost so far come with each job of the list (GET /v1/jobs sums its timeline in
  // the same request), so a page of 50 jobs is one request, not one more per row. A task of
  // an array shows its index before its name.
  function row(j) {
    const task = j.array_id !== null && j.array_id !== undefined;
    return el('tr', { 'data-job': j.id, 'data-array-task': task ? j.array_id : null, class: task ? 'task' : null },
      el('td', { class: 'num' }, el('a', { href: `#/jobs/${j.id}` }, j.id)),
      el('td', {}, task ? el('span', { class: 'muted', 'data-testid': 'task-index' }, `[${j.array_index}] `) : null,
        j.name || el('span', { class: 'muted' }, '(no name)')),
      el('td', {}, state(j.state)),
      el('td', {}, j.team), el('td', {}, j.user), el('td', {}, j.priority),
      el('td', { class: 'num' }, `${j.gpus} GPU${j.gpus === 1 ? '' : 's'}`),
      el('td', { 'data-testid': 'job-pool' }, j.pool || '–'),
      el('td', { class: 'num', 'data-testid': 'job-row-cost', 'data-micros': j.cost_micros },
        money(j.cost_micros)),
      el('td', {}, Frugal.time(j.created_at)),
      el('td', { class: 'reason' }, j.state === 'pending' || j.state === 'held' ? j.reason || '' : ''));
  }

  function plural(n, word) { return `${n} ${word}${n === 1 ? '' : 's'}`; }

  // An array's tasks by state, most first ("812 succeeded · 100 running · 88 pending"):
  // what a sweep's owner asks first is how much of it is done.
  function stateSummary(states) {
    const order = (s) => (kStates.includes(s) ? kStates.indexOf(s) : kStates.length);
    const parts = Object.entries(states || {}).filter(([, n]) => n > 0)
      .sort(([s1, n1], [s2, n2]) => n2 - n1 || order(s1) - order(s2));
    return el('span', { 'data-testid': 'array-states' },
      parts.flatMap(([s, n], i) => [i ? ' · ' : '', el('span', { class: `state ${s}` }, `${n} ${s}`)]));
  }

  // The row of a whole array, from GET /v1/arrays/{id}: its tasks by state and the sweep's
  // cost, all tasks counted, not only those on this page. Priority, GPUs and command are the
  // spec every task shares, read from one of its tasks; a pool is per task, so none here.
  function arrayRow(e, onToggle) {
    const a = e.array;
    const t = e.tasks[0];
    const throttled = a.max_running && (a.states.pending || 0) > 0;
    e.toggle = el('button', { type: 'button', class: 'toggle', 'data-testid': 'array-toggle',
      'aria-expanded': 'false', title: 'Show its tasks' }, `▸ array ${a.id}`);
    // The whole row toggles (a click anywhere on it), the button is there for the keyboard.
    return el('tr', { 'data-array': a.id, class: 'array', onclick: onToggle },
      el('td', { class: 'num' }, e.toggle),
      el('td', {}, a.name || el('span', { class: 'muted' }, t.command.join(' ')),
        el('span', { class: 'muted' }, ` · ${plural(a.task_count, 'task')}`)),
      el('td', {}, stateSummary(a.states)),
      el('td', {}, a.team), el('td', {}, a.user), el('td', {}, t.priority),
      el('td', { class: 'num' }, `${t.gpus} GPU${t.gpus === 1 ? '' : 's'} each`),
      el('td', {}, '–'),
      el('td', { class: 'num', 'data-testid': 'array-cost', 'data-micros': a.cost_micros },
        money(a.cost_micros)),
      el('td', {}, Frugal.time(a.created_at)),
      el('td', { class: 'reason' }, throttled ? `runs at most ${plural(a.max_running, 'task')} at once` : ''));
  }

  // A page of jobs as entries of the table: a job alone, or all the tasks of one array on
  // this page as one entry, in the place of the newest of them (the list is newest first).
  function group(jobs) {
    const entries = [];
    const arrays = new Map();
    for (const j of jobs) {
      if (j.array_id === null || j.array_id === undefined) { entries.push({ job: j }); continue; }
      if (!arrays.has(j.array_id)) {
        const e = { arrayId: j.array_id, tasks: [] };
        arrays.set(j.array_id, e);
        entries.push(e);
      }
      arrays.get(j.array_id).tasks.push(j);
    }
    return entries;
  }

  // Each array of the page, one request per array (not per task). One that cannot be read
  // shows its tasks as jobs, as before arrays had a row.
  async function withArrays(entries) {
    await Promise.all(entries.filter((e) => e.arrayId).map(async (e) => {
      e.array = await Frugal.optional(`/v1/arrays/${e.arrayId}`);
    }));
    return entries.flatMap((e) => (e.arrayId && !e.array ? e.tasks.map((j) => ({ job: j })) : [e]));
  }

  // Where the older page starts. A page that ends inside an array would make the next pages
  // repeat its row for the rest of its tasks (a 10,000-task sweep: 200 pages), so they start
  // below its first task, but only when its tasks have consecutive ids: a job submitted
  // while the array was stored may be numbered between them and must not be skipped.
  function olderCursor(page, entries) {
    if (!page.next_cursor || !page.jobs.length) return page.next_cursor;
    const last = page.jobs[page.jobs.length - 1];
    const e = entries.find((x) => x.array && x.array.id === last.array_id);
    const a = e && e.array;
    if (a && a.last_job - a.first_job + 1 === a.task_count && a.first_job < Number(page.next_cursor))
      return String(a.first_job);
    return page.next_cursor;
  }

  // An expanded array's tasks, a page of 50 at a time as the jobs list, with the state the
  // list is filtered by.
  async function loadTasks(e, stateFilter) {
    const q = new URLSearchParams({ array: String(e.array.id), limit: '50' });
    if (stateFilter) q.set('state', stateFilter);
    if (e.taskCursor) q.set('cursor', e.taskCursor);
    const page = await Frugal.api(`/v1/jobs?${q}`);
    e.taskRows = e.taskRows.concat(page.jobs.map(row));
    e.taskCursor = page.next_cursor;
    e.taskTotal = stateFilter ? e.array.states[stateFilter] || 0 : e.array.task_count;
  }

  // The line under an expanded array's tasks: a button for more of them, or why they could
  // not be read. Made once an expand and updated, so the button keeps the keyboard's focus.
  function tasksFooter(onMore) {
    const note = el('span', {});
    const button = el('button', { type: 'button', 'data-testid': 'more-tasks', onclick: onMore });
    return { tr: el('tr', { class: 'task', hidden: true }, el('td', { colspan: '11' }, note, button)), note, button };
  }

  function updateFooter(e) {
    const f = e.footer;
    f.note.className = e.error ? 'error' : 'muted';
    f.note.textContent = e.error ? `Could not load its tasks: ${e.error} ` : e.taskRows.length ? '' : 'No tasks here.';
    f.button.hidden = !e.taskCursor;  // after an error too: it tries that page again
    f.button.textContent = `More tasks (${e.taskRows.length} of ${e.taskTotal} shown) →`;
    f.tr.hidden = !f.note.textContent && f.button.hidden;
  }

  async function list(root, params) {
    const q = new URLSearchParams({ limit: '50' });
    if (params.get('state')) q.set('state', params.get('state'));
    if (params.get('cursor')) q.set('cursor', params.get('cursor'));
    const page = await Frugal.api(`/v1/jobs?${q}`);
    const entries = await withArrays(group(page.jobs));
    const search = el('input', { type: 'search', placeholder: 'Search id, name, team, user, pool, reason',
      'data-testid': 'job-search', value: params.get('q') || '' });
    const stateSel = el('select', { 'data-testid': 'job-state' },
      kStates.map((s) => el('option', { value: s, selected: s === (params.get('state') || '') }, s || 'any state')));
    const body = el('tbody', {});
    const text = (e) => (e.job ? [e.job.id, e.job.name, e.job.team, e.job.user, e.job.pool, e.job.reason, e.job.state]
      : ['array', e.array.id, e.array.name, e.tasks[0].command.join(' '), e.array.team, e.array.user,
        ...Object.keys(e.array.states)]).join(' ');
    // Rows are made once and kept, so an expanded array stays open while the search changes.
    const rows = (e) => (e.job ? [e.el || (e.el = row(e.job))]
      : [e.el || (e.el = arrayRow(e, () => toggle(e))), ...(e.open ? [...e.taskRows, e.footer.tr] : [])]);
    const apply = () => {
      const needle = search.value.trim().toLowerCase();
      body.replaceChildren(...entries.filter((e) => !needle || text(e).toLowerCase().includes(needle)).flatMap(rows));
    };
    // A page of tasks, or the error that stopped it; the rows it added.
    const fetchTasks = async (e) => {
      const had = e.taskRows.length;
      e.loading = true;
      e.error = null;
      try { await loadTasks(e, params.get('state')); } catch (err) { e.error = err.message; }
      e.loading = false;
      updateFooter(e);
      return e.taskRows.slice(had);
    };
    // Only the array's own rows go in and out (after its row, when the search shows it): the
    // rest of the table, and the focus, stay where they are. Each expand reads the tasks
    // afresh, as their states move while the page is open.
    const toggle = async (e) => {
      if (e.loading) return;
      if (e.open) for (const r of [...e.taskRows, e.footer.tr]) r.remove();
      e.open = !e.open;
      e.toggle.setAttribute('aria-expanded', String(e.open));
      e.toggle.textContent = `${e.open ? '▾' : '▸'} array ${e.array.id}`;
      if (!e.open) return;
      e.taskRows = [];
      e.taskCursor = null;
      e.footer = tasksFooter(() => more(e));
      await fetchTasks(e);
      if (e.open && e.el.isConnected) e.el.after(...e.taskRows, e.footer.tr);
    };
    const more = async (e) => {
      if (e.loading) return;
      const rowsAdded = await fetchTasks(e);
      if (e.footer.tr.isConnected) e.footer.tr.before(...rowsAdded);
      // The last page hides the button: the focus goes back to the array's toggle.
      if (e.footer.button.hidden) e.toggle.focus();
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
    const cursor = olderCursor(page, entries);
    const next = cursor
      ? el('a', { href: `#/jobs?${new URLSearchParams({ ...(params.get('state') ? { state: params.get('state') } : {}), cursor })}`,
        'data-testid': 'older-jobs' }, 'Older jobs →')
      : null;
    const arrays = entries.filter((e) => e.array).length;
    const jobs = entries.length - arrays;
    const title = arrays ? [jobs ? plural(jobs, 'job') : '', plural(arrays, 'array')].filter(Boolean).join(' and ')
      : plural(jobs, 'job');
    root.append(el('h1', {}, 'Jobs'),
      card(`${title}${params.get('cursor') ? ' (older)' : ''}`,
        el('div', { class: 'toolbar' }, search, stateSel), entries.length ? tableEl : absent('No jobs.'), next));
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
