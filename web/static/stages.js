// The live view of every stage: /v1/stages polled every 500 ms, the calls in
// progress by transport, each stage's slots, cleanup, queue and ledger, and
// a chart of dispositions per second.

import {$, el, ms} from './util.js';

const POLL_MS = 500;
const HISTORY = 120; // samples: 60 s at 500 ms
const MAX_SLOTS_DRAWN = 64;

// The chart's series: name, colour, and how to read it from a ledger.
const SERIES = [
  ['admitted', '#1b8a4a', (l) => l.admitted],
  ['queued', '#b7791f', (l) => l.queued],
  ['overloaded', '#c53030', (l) => l.refused.overloaded],
  ['expired', '#8a4fbf', (l) => l.expired + l.refused.expired],
  ['cancelled', '#718096', (l) => l.cancelled_queued + l.cancelled_active],
  ['completed', '#2459d6', (l) => l.completed],
  ['failed', '#7b1e1e', (l) => l.failed || 0],
];

// The ledger counts shown under each stage.
const COUNTS = [
  ['offered', (l) => l.offered],
  ['admitted', (l) => l.admitted],
  ['queued', (l) => l.queued],
  ['overloaded', (l) => l.refused.overloaded],
  ['expired', (l) => l.expired + l.refused.expired],
  ['stale', (l) => l.refused.stale + l.refused.out_of_order],
  ['closed', (l) => l.refused.closed],
  ['cancelled', (l) => l.cancelled_queued + l.cancelled_active],
  ['completed', (l) => l.completed],
  ['failed', (l) => l.failed || 0], // released after the backend failed (absent: none)
];

export function initStages() {
  const list = $('stage-list');
  const pill = $('server');
  const select = $('chart-stage');
  const svg = $('chart-svg');
  const legend = $('chart-legend');
  const maxLabel = $('chart-max');
  const transportRows = $('transport-rows');
  const transportTotal = $('transport-total');
  const transportEmpty = $('transport-empty');
  const cards = new Map(); // stage name -> elements
  const history = []; // {t, ledgers: {name: ledger}}

  for (const [name, colour] of SERIES) {
    legend.append(el('li', {}, el('i', {style: `background:${colour}`}), name));
  }
  select.addEventListener('change', () => drawChart());

  function card(s) {
    let c = cards.get(s.name);
    if (c) return c;
    const root = el('div', {class: 'stage', 'data-stage': s.name});
    c = {
      root,
      title: el('small'),
      slots: el('div', {class: 'slots', 'aria-label': 'slots'}),
      lease: el('p', {class: 'line'}),
      queueLine: el('p', {class: 'line'}),
      queue: el('div', {class: 'queue', 'aria-label': 'waiting tickets'}),
      counts: el('ul', {class: 'counts'}),
      countEls: {},
    };
    for (const [name] of COUNTS) {
      const li = el('li', {'data-count': name, 'data-nonzero': 'false'});
      c.countEls[name] = li;
      c.counts.append(li);
    }
    root.append(el('h3', {}, el('span', {text: s.name}), c.title), c.slots, c.lease, c.queueLine, c.queue, c.counts);
    list.append(root);
    cards.set(s.name, c);
    select.append(el('option', {value: s.name, text: s.name}));
    return c;
  }

  // adaptive describes an adaptive slot limit (-STAGE-slots auto): its
  // bounds, the latency it measured and why it last moved.
  function adaptive(s) {
    const a = s.snapshot && s.snapshot.adaptive;
    if (!a) return '';
    const e = a.estimate;
    const lat = e.window_latency_ns ? ` · latency ${ms(e.window_latency_ns / 1e6)} (min ${ms(e.min_latency_ns / 1e6)})` : '';
    return ` (auto ${a.config.min}–${a.config.max}${e.reason ? ', ' + e.reason : ''})${lat}`;
  }

  // fair says that the queue is served to the tenants in turn.
  function fair(s) {
    const l = s.snapshot && s.snapshot.limits;
    return l && l.order === 'fair' ? ' (fair)' : '';
  }

  function render(s) {
    const c = card(s);
    const overdue = s.cleanup_overdue > 0 || (s.cleanup_pending > 0 && s.oldest_cleanup_ms > s.cleanup_timeout_ms);
    c.root.dataset.overdue = overdue ? 'true' : 'false';
    c.root.dataset.closed = s.closed ? 'true' : 'false';
    c.root.dataset.leased = s.leased;
    c.root.dataset.queued = s.queued;
    c.title.textContent = `${s.slots} slot${s.slots === 1 ? '' : 's'}${adaptive(s)} · queue ${s.queue_limit}${fair(s)} · max wait ${ms(s.max_wait_ms)}${s.closed ? ' · closed' : ''}`;

    // Slots: leased work, of which the last ones are cancelled and waiting
    // for their backend to confirm it stopped (overdue ones in red).
    const drawn = Math.min(Math.max(s.slots, s.leased), MAX_SLOTS_DRAWN);
    const cleanup = Math.min(s.cleanup_pending, s.leased);
    const late = Math.min(s.cleanup_overdue, cleanup);
    const boxes = [];
    for (let i = 0; i < drawn; i++) {
      let cls = 'slot';
      if (i < s.leased - cleanup) cls += ' leased';
      else if (i < s.leased - late) cls += ' cleanup';
      else if (i < s.leased) cls += ' overdue';
      boxes.push(el('span', {class: cls}));
    }
    if (s.slots > drawn) boxes.push(el('span', {class: 'more', text: `+${s.slots - drawn}`}));
    c.slots.replaceChildren(...boxes);

    c.lease.replaceChildren(
      `leased ${s.leased}/${s.slots} · cleanup pending ${s.cleanup_pending}`,
      s.cleanup_pending ? ` (oldest ${ms(s.oldest_cleanup_ms)})` : '',
      s.cleanup_overdue ? el('span', {class: 'warn', text: ` · ${s.cleanup_overdue} overdue (> ${ms(s.cleanup_timeout_ms)})`}) : '',
    );
    c.queueLine.textContent = `queued ${s.queued}/${s.queue_limit}` + (s.queued ? ` · oldest ${ms(s.oldest_queued_ms)}` : '');

    const bars = (s.waiting || []).slice(0, 50).map((w) => {
      const frac = s.max_wait_ms > 0 ? Math.min(1, w.age_ms / s.max_wait_ms) : 0;
      return el('div', {class: 'ticket', title: `${w.id}: ${ms(w.age_ms)} of ${ms(s.max_wait_ms)}`, 'data-late': frac >= 0.8 ? 'true' : 'false'},
        el('span', {style: `width:${(frac * 100).toFixed(1)}%`}));
    });
    c.queue.replaceChildren(...bars);

    for (const [name, get] of COUNTS) {
      const n = get(s.ledger) || 0;
      const li = c.countEls[name];
      li.textContent = `${name} ${n}`;
      li.dataset.n = n;
      li.dataset.nonzero = n > 0 ? 'true' : 'false';
    }
  }

  // renderTransports shows calls_by_transport: a row per transport with
  // calls in progress, by name; a transport's row goes once its calls end.
  function renderTransports(byTransport, calls) {
    const rows = Object.entries(byTransport || {}).filter(([, n]) => n > 0)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, n]) => el('tr', {'data-transport': name, 'data-n': n},
        el('th', {scope: 'row', text: name}), el('td', {text: String(n)})));
    transportRows.replaceChildren(...rows);
    transportTotal.textContent = String(calls);
    transportTotal.dataset.n = calls;
    transportEmpty.hidden = rows.length > 0;
  }

  function drawChart() {
    const W = 600, H = 200, PAD = 14;
    const want = select.value;
    const rates = SERIES.map(() => []);
    for (let i = 1; i < history.length; i++) {
      const a = history[i - 1], b = history[i];
      const dt = Math.max(0.05, (b.t - a.t) / 1000);
      SERIES.forEach(([, , get], k) => {
        let d = 0;
        for (const [name, lb] of Object.entries(b.ledgers)) {
          if (want && name !== want) continue;
          const la = a.ledgers[name];
          if (la) d += Math.max(0, get(lb) - get(la));
        }
        rates[k].push(d / dt);
      });
    }
    let max = 1;
    for (const r of rates) for (const v of r) max = Math.max(max, v);
    const x = (i) => (W * (HISTORY - 1 - (rates[0].length - 1 - i)) / (HISTORY - 1)).toFixed(1);
    const y = (v) => (H - PAD - (H - 2 * PAD) * v / max).toFixed(1);
    const ns = 'http://www.w3.org/2000/svg';
    const nodes = [];
    for (const f of [0, 0.5, 1]) {
      const g = document.createElementNS(ns, 'line');
      g.setAttribute('class', 'grid');
      g.setAttribute('x1', 0); g.setAttribute('x2', W);
      g.setAttribute('y1', y(max * f)); g.setAttribute('y2', y(max * f));
      nodes.push(g);
    }
    maxLabel.textContent = `top ${max.toFixed(max < 10 ? 1 : 0)}/s`;
    SERIES.forEach(([name, colour], k) => {
      if (rates[k].length < 2) return;
      const p = document.createElementNS(ns, 'polyline');
      p.setAttribute('points', rates[k].map((v, i) => `${x(i)},${y(v)}`).join(' '));
      p.setAttribute('stroke', colour);
      p.setAttribute('data-series', name);
      p.setAttribute('data-max', Math.max(...rates[k]).toFixed(2));
      nodes.push(p);
    });
    svg.replaceChildren(...nodes);
  }

  async function poll() {
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), 3000);
    try {
      const r = await fetch('/v1/stages', {signal: ctl.signal, cache: 'no-store'});
      if (!r.ok) throw new Error(`HTTP ${r.status}`);
      const v = await r.json();
      pill.dataset.state = v.draining ? 'draining' : 'ready';
      pill.textContent = `${v.draining ? 'draining' : 'ready'} · ${v.calls} call${v.calls === 1 ? '' : 's'}`;
      renderTransports(v.calls_by_transport, v.calls);
      const ledgers = {};
      for (const s of v.stages || []) {
        render(s);
        ledgers[s.name] = s.ledger;
      }
      history.push({t: performance.now(), ledgers});
      if (history.length > HISTORY + 1) history.shift();
      drawChart();
    } catch (e) {
      pill.dataset.state = 'down';
      pill.textContent = 'server unreachable';
    } finally {
      clearTimeout(timer);
      setTimeout(poll, POLL_MS);
    }
  }
  poll();
}
