// The agent console: the handoff queue over /v1/agents?agent=ID. The server
// sends the waiting and claimed handoffs whenever they change; the agent
// claims one, then acknowledges the transfer (or releases it).

import {$, el, wsURL, logTo, ms, closeText} from './util.js';

export function initAgent() {
  const ui = {
    form: $('agent-form'), id: $('agent-id'), connect: $('agent-connect'), disconnect: $('agent-disconnect'),
    state: $('agent-state'), list: $('agent-list'), log: $('agent-log'),
  };
  let ws = null;
  let me = '';

  function setState(s, text) {
    ui.state.dataset.state = s;
    ui.state.textContent = text;
  }

  function send(m) {
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(m));
  }

  function render(handoffs) {
    if (!handoffs.length) {
      ui.list.replaceChildren(el('li', {class: 'empty', text: 'No one is waiting for an agent.'}));
      return;
    }
    ui.list.replaceChildren(...handoffs.map((h) => {
      const mine = h.agent === me;
      const who = el('span', {class: 'who'},
        el('strong', {text: h.ticket}), ` call ${h.call}`,
        el('span', {class: 'meta', text: (h.position ? `#${h.position} in line · ` : h.agent ? `with ${h.agent} · ` : '') + `waiting ${ms(h.age_ms)}` + (h.summary ? ` · ${h.summary}` : '')}));
      const li = el('li', {'data-ticket': h.ticket, 'data-mine': mine ? 'true' : 'false'}, who);
      if (mine) {
        li.append(
          el('button', {type: 'button', text: 'Acknowledge', onclick: () => send({type: 'ack', ticket: h.ticket})}),
          el('button', {type: 'button', class: 'warn', text: 'Release', onclick: () => send({type: 'release', ticket: h.ticket})}),
        );
      } else if (!h.agent) {
        li.append(el('button', {type: 'button', text: 'Claim', onclick: () => send({type: 'claim', ticket: h.ticket})}));
      }
      return li;
    }));
  }

  ui.form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    me = ui.id.value.trim();
    if (!me || ws) return;
    const u = new URL(wsURL('/v1/agents'));
    u.searchParams.set('agent', me);
    ws = new WebSocket(u.href);
    const mine = ws;
    setState('connecting', 'connecting…');
    ui.connect.disabled = true;
    ui.disconnect.disabled = false;
    ws.addEventListener('open', () => setState('connected', `connected as ${me}`));
    ws.addEventListener('message', (ev) => {
      let m;
      try { m = JSON.parse(ev.data); } catch (e) { return; }
      switch (m.type) {
      case 'waiting':
        render(m.handoffs || []);
        break;
      case 'claimed':
        logTo(ui.log, 'event', `claimed ${m.ticket}: connect the caller, then acknowledge`);
        break;
      case 'resolved':
        logTo(ui.log, 'event', `${m.ticket}: ${m.disposition}`);
        break;
      case 'released':
        logTo(ui.log, 'event', `released ${m.ticket} back to the queue`);
        break;
      case 'error':
        logTo(ui.log, 'error', `${m.ticket ? m.ticket + ': ' : ''}${m.code}: ${m.message}`);
        break;
      default:
        logTo(ui.log, 'event', m.type);
      }
    });
    ws.addEventListener('close', (ev) => {
      if (ws !== mine) return;
      ws = null;
      setState('idle', `not connected (${closeText(ev)})`);
      ui.connect.disabled = false;
      ui.disconnect.disabled = true;
      ui.list.replaceChildren();
    });
  });
  ui.disconnect.addEventListener('click', () => { if (ws) ws.close(1000, 'agent left'); });
}
