// The burst control: POST /v1/burst starts synthetic callers from the
// server's load generator; GET /v1/burst follows it.

import {$} from './util.js';

export function initBurst() {
  const ui = {
    form: $('burst-form'), callers: $('burst-callers'), rate: $('burst-rate'), turns: $('burst-turns'),
    start: $('burst-start'), stop: $('burst-stop'), status: $('burst-status'), report: $('burst-report'),
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
      ui.report.textContent = JSON.stringify(s.report, null, 2);
    }
    if (s.limits) {
      ui.callers.max = s.limits.callers;
      ui.rate.max = s.limits.rate;
      ui.turns.max = s.limits.turns;
    }
    clearTimeout(timer);
    if (s.running) timer = setTimeout(refresh, 500);
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
