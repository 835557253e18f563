// Plain SVG charts (no library, nothing fetched at run time): stacked bars for pools and
// money over time, and a job's attempts on a timeline. Colours are the Okabe-Ito palette,
// which stays distinct for colour-blind readers.
'use strict';

const Charts = (() => {
  const kPalette = ['#0072b2', '#e69f00', '#009e73', '#cc79a7', '#56b4e9', '#d55e00',
    '#f0e442', '#999999'];
  const kKindColour = { reserved: '#009e73', on_demand: '#0072b2', spot: '#e69f00' };
  const NS = 'http://www.w3.org/2000/svg';

  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    for (const c of children) {
      if (c === null || c === undefined) continue;
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }
  function title(text) { return svg('title', {}, text); }

  function legend(items) {
    const { el } = Frugal;
    return el('div', { class: 'legend' },
      items.map(([name, colour]) => el('span', {}, el('i', { style: `background:${colour}` }), name)));
  }

  // A horizontal bar split into parts [{value, colour, label}] of `total`.
  function splitBar(parts, total) {
    const { el } = Frugal;
    return el('div', { class: 'bar' }, parts.filter((p) => p.value > 0).map((p) =>
      el('span', { style: `width:${(100 * p.value) / Math.max(total, 1)}%;background:${p.colour}`,
        title: p.label })));
  }

  // Stacked columns over time: buckets [{label, values: {series: number}}], series names in
  // order; `format` labels the y axis (e.g. dollars).
  function stackedColumns(buckets, series, format, height = 220) {
    const width = 1000, left = 70, bottom = 26, top = 8;
    const max = Math.max(1e-9, ...buckets.map((b) => series.reduce((s, k) => s + (b.values[k] || 0), 0)));
    const colW = (width - left - 10) / Math.max(1, buckets.length);
    const y = (v) => top + (height - top - bottom) * (1 - v / max);
    const g = svg('svg', { viewBox: `0 0 ${width} ${height}`, width: '100%', role: 'img' });
    for (let i = 0; i <= 4; ++i) {
      const v = (max * i) / 4;
      g.append(svg('line', { x1: left, x2: width - 10, y1: y(v), y2: y(v), stroke: '#e3e6ea' }),
        svg('text', { x: left - 6, y: y(v) + 4, 'text-anchor': 'end' }, format(v)));
    }
    buckets.forEach((b, i) => {
      let acc = 0;
      series.forEach((k, si) => {
        const v = b.values[k] || 0;
        if (v <= 0) return;
        const rect = svg('rect', { x: left + i * colW + 1, width: Math.max(1, colW - 2),
          y: y(acc + v), height: Math.max(0.5, y(acc) - y(acc + v)),
          fill: kPalette[si % kPalette.length] }, title(`${k}: ${format(v)} (${b.label})`));
        g.append(rect);
        acc += v;
      });
      if (i % Math.ceil(buckets.length / 8) === 0)
        g.append(svg('text', { x: left + i * colW, y: height - 8 }, b.label));
    });
    const box = document.createElement('div');
    box.append(legend(series.map((k, i) => [k, kPalette[i % kPalette.length]])), g);
    return box;
  }

  // A job's attempts as rows on one time axis: a bar per attempt coloured by capacity kind,
  // a tick per checkpoint, a red end cap where it was preempted or its node lost.
  function timeline(t) {
    const rows = t.attempts.length;
    const width = 1000, left = 210, rowH = 30, top = 8, axis = 24;
    const height = top + rows * rowH + axis;
    const start = Math.min(...t.attempts.map((a) => Date.parse(a.started_at)));
    const end = Math.max(start + 1000, ...t.attempts.map((a) => Date.parse(a.ended_at || t.now)));
    const x = (ms) => left + ((width - left - 10) * (ms - start)) / (end - start);
    const g = svg('svg', { viewBox: `0 0 ${width} ${height}`, width: '100%', role: 'img',
      'data-testid': 'timeline' });
    t.attempts.forEach((a, i) => {
      const y0 = top + i * rowH;
      const s = Date.parse(a.started_at), e = Date.parse(a.ended_at || t.now);
      g.append(svg('text', { x: 4, y: y0 + 18 }, `#${a.number} ${a.pool} (${a.node})`));
      g.append(svg('rect', { x: x(s), y: y0 + 5, width: Math.max(2, x(e) - x(s)), height: rowH - 10,
        rx: 3, fill: kKindColour[a.capacity_kind] || '#999',
        opacity: a.ended_at ? 1 : 0.6 },
        title(`attempt ${a.number} on ${a.pool}: ${a.end_reason || 'running'}${a.stop_kind ? ` (${a.stop_kind})` : ''}, ${Frugal.money(a.cost_micros)}`)));
      // Interruptions, including the idle-GPU guardrail's stops (stop_kind idle_reclaim).
      if (a.end_reason === 'preempted' || a.end_reason === 'node_lost' ||
          (a.ended_at && a.stop_kind === 'idle_reclaim'))
        g.append(svg('rect', { x: x(e) - 3, y: y0 + 2, width: 4, height: rowH - 4, fill: '#b3261e' },
          title(`${a.end_reason}${a.stop_kind ? ` (${a.stop_kind})` : ''} at ${Frugal.time(a.ended_at)}`)));
      for (const c of t.checkpoints.filter((c) => c.attempt_id === a.id)) {
        const cx = x(Date.parse(c.created_at));
        g.append(svg('line', { x1: cx, x2: cx, y1: y0 + 3, y2: y0 + rowH - 3, stroke: '#1d2430',
          'stroke-width': 1.5 }, title(`checkpoint step ${c.step} (${(c.progress * 100).toFixed(0)} %)`)));
      }
    });
    const yAxis = top + rows * rowH + 14;
    g.append(svg('text', { x: left, y: yAxis }, Frugal.time(new Date(start).toISOString())),
      svg('text', { x: width - 10, y: yAxis, 'text-anchor': 'end' },
        `${Frugal.time(new Date(end).toISOString())} (${Frugal.duration((end - start) / 1000)})`));
    const box = document.createElement('div');
    box.append(legend([['reserved', kKindColour.reserved], ['on-demand', kKindColour.on_demand],
      ['spot', kKindColour.spot], ['preempted / node lost', '#b3261e'], ['checkpoint', '#1d2430']]), g);
    return box;
  }

  return { splitBar, stackedColumns, timeline, legend, kPalette };
})();
