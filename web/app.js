// The dashboard's core: the token (sessionStorage), the JSON API client, formatting with
// units, and a hash router (#/overview, #/jobs, #/jobs/ID, #/cost, #/admin). Pages are
// functions registered in Frugal.pages that render into the element they are given.
'use strict';

const Frugal = (() => {
  const kTokenKey = 'frugal.token';
  const pages = {};
  let me = null;  // {team, user, role} from /v1/whoami

  class ApiError extends Error {
    constructor(status, body) {
      super((body && body.error && body.error.message) || `HTTP ${status}`);
      this.status = status;
      this.code = body && body.error && body.error.code;
    }
  }

  async function api(path) {
    const res = await fetch(path, {
      headers: { Authorization: `Bearer ${sessionStorage.getItem(kTokenKey) || ''}` },
    });
    let body = null;
    try { body = await res.json(); } catch (e) { body = null; }
    if (!res.ok) throw new ApiError(res.status, body);
    return body;
  }

  // The answer, or null when the route is missing or refuses (a section the scheduler
  // does not offer yet is shown as absent rather than breaking the page).
  async function optional(path) {
    try { return await api(path); } catch (e) {
      if (e.status === 404 || e.status === 403) return null;
      throw e;
    }
  }

  // DOM helper: el('td', {class: 'num'}, 'text', child, ...).
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v);
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined) continue;
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }

  // Money arrives as micro-dollars (integers) or decimal dollar strings; shown with a $ and
  // cents, or to the micro-dollar where `exact` (totals that must match the CLI).
  function micros(m) { return typeof m === 'string' ? Math.round(Number(m) * 1e6) : m; }
  function money(m, exact) {
    const v = micros(m);
    if (exact) {
      const sign = v < 0 ? '-' : '';
      const a = Math.abs(v);
      return `${sign}$${Math.floor(a / 1e6)}.${String(a % 1e6).padStart(6, '0')}`;
    }
    return (v / 1e6).toLocaleString('en-US', { style: 'currency', currency: 'USD',
      minimumFractionDigits: 2, maximumFractionDigits: v !== 0 && Math.abs(v) < 1e4 ? 4 : 2 });
  }
  function gpuHours(h) { return `${Number(h).toFixed(h < 10 ? 3 : 1)} GPU·h`; }
  function percent(x) { return x === null || x === undefined ? '–' : `${(x * 100).toFixed(1)} %`; }
  function time(t) { return t ? new Date(t).toLocaleString() : '–'; }
  function duration(seconds) {
    if (seconds === null || seconds === undefined) return '–';
    const s = Math.max(0, Math.round(seconds));
    if (s < 60) return `${s} s`;
    if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
    return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  }
  function state(s) { return el('span', { class: `state ${s}` }, s); }
  function table(headers, rows, attrs) {
    return el('table', attrs || {},
      el('thead', {}, el('tr', {}, headers.map((h) =>
        el('th', { class: h.endsWith(' ') ? 'num' : null }, h.trim())))),
      el('tbody', {}, rows));
  }
  function card(title, ...children) { return el('div', { class: 'card' }, el('h2', {}, title), children); }
  function absent(text) { return el('p', { class: 'absent' }, text); }
  function kpi(label, value, id) {
    return el('div', { class: 'kpi' }, el('div', { class: 'label' }, label),
      el('div', { class: 'value', 'data-testid': id }, value));
  }

  function show(id, visible) { document.getElementById(id).hidden = !visible; }

  async function route() {
    const view = document.getElementById('view');
    if (!sessionStorage.getItem(kTokenKey)) {
      show('login', true); show('view', false); show('nav', false); show('logout', false);
      document.getElementById('who').textContent = '';
      return;
    }
    try {
      if (!me) me = await api('/v1/whoami');
    } catch (e) {
      sessionStorage.removeItem(kTokenKey);
      document.getElementById('login-error').textContent = `Sign-in failed: ${e.message}`;
      return route();
    }
    show('login', false); show('view', true); show('nav', true); show('logout', true);
    document.getElementById('who').textContent = `${me.user} · ${me.team} · ${me.role}`;
    document.getElementById('nav-admin').hidden = me.role !== 'admin';
    // #/page/arg?query: the page reads its query from location.hash itself.
    const parts = (location.hash.replace(/^#\/?/, '').split('?')[0] || 'overview').split('/');
    const name = pages[parts[0]] ? parts[0] : 'overview';
    for (const a of document.querySelectorAll('#nav a'))
      a.classList.toggle('active', a.dataset.page === name);
    view.replaceChildren(el('p', { class: 'muted' }, 'Loading…'));
    try {
      const content = el('div', { 'data-page': name });
      await pages[name](content, parts.slice(1), me);
      view.replaceChildren(content);
    } catch (e) {
      view.replaceChildren(el('p', { class: 'error', role: 'alert' }, `Could not load: ${e.message}`));
    }
  }

  function start() {
    document.getElementById('login-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      sessionStorage.setItem(kTokenKey, document.getElementById('token').value.trim());
      document.getElementById('token').value = '';
      document.getElementById('login-error').textContent = '';
      me = null;
      route();
    });
    document.getElementById('logout').addEventListener('click', () => {
      sessionStorage.removeItem(kTokenKey);
      me = null;
      location.hash = '';
      route();
    });
    window.addEventListener('hashchange', route);
    route();
  }

  return { api, optional, el, money, micros, gpuHours, percent, time, duration, state, table,
    card, absent, kpi, pages, start, ApiError };
})();

document.addEventListener('DOMContentLoaded', () => Frugal.start());
