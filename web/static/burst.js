// The burst control: POST /v1/burst starts synthetic callers from the
// server's load generator; GET /v1/burst follows it.

import {$} from './util.js';

export function initBurst() {
  const ui = {
    form: $('burst-form'), callers: $('burst-callers'), rate: $('burst-rate'), turns: $('burst-turns'),
    start: $('burst-start'), stop: $('burst-stop'), status: $('burst-status'), report: $('burst-report'),
    outcome: $('burst-outcome'), chart: $('burst-chart'), raw: $('burst-raw'),
  };
  let timer = 0;

  function show(s) {
    ui.status.dataset.state = !s.enabled ? 'disabled' : s.running ? 'running' : s.id ? 'ended' : 'idle';
    ui.start.disabled = !s.enabled || s.running;
    ui.stop.disabled = !s.running;
    if (!s.enabled) {
      ui.status.textContent = 'This server has no load generator configured.';
    } else if (!s.id) {
      ui.status.textContent = 'No burst yet.';
    } else {
      const b = s.burst;
      const what = `burst ${s.id}: ${b.callers} callers at ${b.rate}/s, ${b.turns} turn${b.turns === 1 ? '' : 's'} each`;
      const p = s.progress;
      const live = p && typeof p === 'object' && 'offered' in p
        ? ` · offered ${p.offered}/${p.callers}, on the line ${p.active || 0}, done ${p.done}, turns ${p.turns} (good ${p.good})` : '';
      ui.status.textContent = (s.running ? `${what} — running` : `${what} — ${s.stopped ? 'stopped' : 'ended'}${s.error ? ': ' + s.error : ''}`) + live;
    }
    if (s.report !== undefined && s.report !== null) {
      ui.report.hidden = false;
      ui.raw.textContent = JSON.stringify(s.report, null, 2);
      showOutcome(s.report);
    }
    if (s.limits) {
      ui.callers.max = s.limits.callers;
      ui.rate.max = s.limits.rate;
      ui.turns.max = s.limits.turns;
    }
    clearTimeout(timer);
    if (s.running) timer = setTimeout(refresh, 500);
  }

  // showOutcome says the burst's result in words, with the reason for
  // every class of refused or expired turn, and draws one bar of the
  // turns' ends.
  function showOutcome(r) {
    const c = r.callers || {}, t = r.turns || {}, g = r.goodput || {};
    const lines = [];
    const callerEnds = Object.entries(c.by_end || {}).sort((a, b) => b[1] - a[1])
      .map(([k, n]) => `${n} ${CALLER_ENDS[k] || k}`);
    lines.push(`${c.offered || 0} callers: ${callerEnds.join('; ') || 'none'}.`);
    const deadline = Math.round((g.deadline_ms || 0));
    lines.push(`${t.offered || 0} turns: ${g.good || 0} good (first audio within ${deadline} ms), ` +
      `${g.late || 0} late, ${g.completed || 0} completed in all.`);
    for (const [k, n] of Object.entries(t.by_end || {}).sort((a, b) => b[1] - a[1])) {
      const [stage, d] = k.includes(':') ? k.split(':') : ['', k];
      if (d === 'completed') continue;
      const why = TURN_ENDS[stage === 'none' ? 'none' : d] || d;
      lines.push(`${n} ${stage && stage !== 'none' ? `${d} at ${stage}` : d}: ${why}.`);
    }
    ui.outcome.replaceChildren(...lines.map((l) => { const li = document.createElement('li'); li.textContent = l; return li; }));
    drawBar(t);
  }

  // drawBar is one stacked bar of the turns' ends, labelled below.
  function drawBar(t) {
    const ends = Object.entries(t.by_end || {}).sort((a, b) => b[1] - a[1]);
    const total = ends.reduce((s, [, n]) => s + n, 0);
    const ns = 'http://www.w3.org/2000/svg';
    const svg = ui.chart;
    svg.replaceChildren();
    if (!total) return;
    const W = 600, colors = ['#2a7', '#d93', '#c44', '#58c', '#999', '#a6c', '#6aa', '#ca6'];
    let x = 0;
    const legend = [];
    ends.forEach(([k, n], i) => {
      const w = (n / total) * W;
      const rect = document.createElementNS(ns, 'rect');
      Object.entries({x, y: 0, width: Math.max(w, 0.5), height: 24, fill: k === 'completed' ? '#2a7' : colors[1 + (i % 7)]})
        .forEach(([a, v]) => rect.setAttribute(a, v));
      rect.dataset.end = k;
      rect.dataset.n = n;
      const title = document.createElementNS(ns, 'title');
      title.textContent = `${k}: ${n}`;
      rect.append(title);
      svg.append(rect);
      legend.push([k, n, rect.getAttribute('fill')]);
      x += w;
    });
    legend.forEach(([k, n, fill], i) => {
      const y = 40 + 16 * i;
      const sw = document.createElementNS(ns, 'rect');
      Object.entries({x: 0, y: y - 10, width: 10, height: 10, fill}).forEach(([a, v]) => sw.setAttribute(a, v));
      const tx = document.createElementNS(ns, 'text');
      tx.setAttribute('x', 16);
      tx.setAttribute('y', y);
      tx.textContent = `${k}: ${n} (${Math.round((100 * n) / total)}%)`;
      svg.append(sw, tx);
    });
    svg.setAttribute('viewBox', `0 0 ${W} ${40 + 16 * legend.length}`);
    svg.setAttribute('aria-label', `turns of the burst by how they ended (${total} turns)`);
  }

  async function call(method, body) {
    const r = await fetch('/v1/burst', {
      method, cache: 'no-store',
      headers: body ? {'Content-Type': 'application/json'} : {},
      body: body ? JSON.stringify(body) : undefined,
    });
    const v = await r.json();
    if (!r.ok) throw new Error(v.message || `HTTP ${r.status}`);
    return v;
  }

  async function refresh() {
    try { show(await call('GET')); } catch (e) { ui.status.textContent = `burst status: ${e.message}`; }
  }

  ui.form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      show(await call('POST', {callers: +ui.callers.value, rate: +ui.rate.value, turns: +ui.turns.value}));
    } catch (e) {
      ui.status.dataset.state = 'error';
      ui.status.textContent = `could not start: ${e.message}`;
    }
  });
  ui.stop.addEventListener('click', async () => {
    try { show(await call('DELETE')); } catch (e) { ui.status.textContent = `stop: ${e.message}`; }
  });
  refresh();
}

// What each end of a burst's caller means, in words.
const CALLER_ENDS = {
  served: 'admitted and served',
  refused: 'refused at the door (the session stage was full)',
  queued: 'still waiting for a session at the end',
  active: 'still on the line at the end',
  expired: 'waited too long for a session (-session-max-wait)',
  abandoned: 'hung up while waiting',
  dropped: 'ended by the server',
  error: 'could not connect',
};

// Why a turn ended as it did, in words.
const TURN_ENDS = {
  cancelled: 'the caller spoke over the reply or left',
  failed: 'a backend failed (the server\'s /readyz and logs say which)',
  overloaded: 'the stage\'s slots and queue were all taken',
  expired: 'it waited in the stage\'s queue longer than its max wait',
  stale: 'a newer turn of the same call replaced it',
  closed: 'the stage was closed (draining or quarantined)',
  'out-of-order': 'it came behind a newer turn of the same call',
  none: 'no turn_end: the call ended first',
};
