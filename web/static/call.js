// The synthetic call: the session protocol of docs/PROTOCOL.md over
// /v1/session, with typed turns, streamed replies, reply audio, barge-in,
// prompts and the fallback offer (callback or handoff).

import {$, el, wsURL, logTo, ms, closeText} from './util.js';
import {Player} from './audio.js';
import {CallState, OfferPanel, logger} from './offer.js';

export function initCall() {
  const ui = {
    connect: $('call-connect'), hangup: $('call-hangup'), barge: $('call-barge'),
    session: $('call-session'), gen: $('call-gen'), audio: $('call-audio'), audioMS: $('call-audio-ms'),
    form: $('call-form'), text: $('call-text'), send: $('call-send'), log: $('call-log'),
  };
  const state = new CallState($('call-state'));
  const offer = new OfferPanel('call', {send: (m) => send(m), log: logger(ui.log), state});
  const player = new Player();
  let ws = null;
  let gen = 0;
  let seq = 0;
  let admitted = false;
  const replies = new Map(); // turn id -> reply <li>

  function setSession(disposition, detail) {
    ui.session.dataset.disposition = disposition;
    ui.session.textContent = disposition + (detail ? ' · ' + detail : '');
  }

  function setConnected(on) {
    ui.connect.disabled = on;
    ui.hangup.disabled = !on;
    if (!on) {
      admitted = false;
      ui.barge.disabled = true;
      ui.text.disabled = ui.send.disabled = true;
      offer.close();
      setAudio(false);
    }
  }

  function setAudio(on) {
    ui.audio.dataset.playing = on ? 'true' : 'false';
  }

  // The indicator follows what is still scheduled to play (or, with no
  // AudioContext, what is still arriving).
  let audioTimer = 0;
  function audioSoon() {
    clearTimeout(audioTimer);
    audioTimer = setTimeout(() => setAudio(player.playing()), 250);
  }

  function reply(turn) {
    let li = replies.get(turn);
    if (!li) {
      li = logTo(ui.log, 'reply', '');
      li.dataset.turn = turn;
      li.dataset.state = 'waiting';
      replies.set(turn, li);
    }
    return li;
  }

  function meta(li, text) {
    let m = li.querySelector('.meta');
    if (!m) m = li.appendChild(el('span', {class: 'meta'}));
    m.textContent = text;
  }

  function stageNote(li, stage, disposition) {
    li.dataset[stage] = disposition;
    renderMeta(li);
  }

  function renderMeta(li) {
    const parts = [];
    if (li.dataset.understood) parts.push(li.dataset.understood);
    for (const s of ['recognize', 'model', 'synthesis']) {
      if (li.dataset[s]) parts.push(`${s}: ${li.dataset[s]}`);
    }
    if (li.dataset.end) parts.push(`turn: ${li.dataset.end}`);
    if (li.dataset.heard) parts.push(li.dataset.heard);
    meta(li, parts.join(' · '));
  }

  function send(msg) {
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(msg));
  }

  function onMessage(m) {
    switch (m.type) {
    case 'session':
      admitted = m.disposition === 'admitted';
      setSession(m.disposition, m.position ? `position ${m.position}` : `session ${m.session}`);
      ui.text.disabled = ui.send.disabled = !admitted;
      ui.barge.disabled = !admitted;
      if (admitted) ui.text.focus();
      if (m.disposition === 'queued') state.set('queued', m.position ? `position ${m.position}` : '');
      else state.set(admitted ? 'in-call' : 'refused', admitted ? '' : `session ${m.disposition}`);
      break;
    case 'disposition':
      stageNote(reply(m.turn), m.stage, m.disposition + (m.position ? ` (${m.position})` : ''));
      break;
    case 'text': {
      if (m.generation < gen) break; // the server guarantees this; the page checks too
      const li = reply(m.turn);
      li.dataset.state = 'streaming';
      li.querySelector('.text').textContent += m.delta;
      ui.log.scrollTop = ui.log.scrollHeight;
      break;
    }
    case 'transcript': {
      // What the recognizer understood of a spoken turn.
      const li = reply(m.turn);
      li.dataset.understood = m.text ? `understood: “${m.text}”` : 'understood: nothing';
      renderMeta(li);
      break;
    }
    case 'audio_start':
      if (m.generation < gen) break;
      player.start(m.encoding, m.rate);
      reply(m.turn).dataset.audio = `${m.encoding} ${m.rate} Hz`;
      setAudio(true);
      break;
    case 'audio_end':
      audioSoon();
      break;
    case 'turn_end': {
      const li = reply(m.turn);
      li.dataset.end = m.disposition + (m.stage ? ` at ${m.stage}` : '') + (m.error ? ` (${m.error})` : '');
      if (li.dataset.state !== 'interrupted') li.dataset.state = replyState(m.disposition);
      const text = li.querySelector('.text');
      if (!text.textContent) text.textContent = m.disposition === 'completed' ? '(empty reply)' : `(no reply: ${li.dataset.end})`;
      renderMeta(li);
      state.turnEnded(m.disposition);
      break;
    }
    case 'interrupted': {
      gen = m.generation;
      ui.gen.textContent = String(gen);
      player.stop();
      setAudio(false);
      const cut = new Set(m.cancelled || []);
      if (m.heard) cut.add(m.heard.turn);
      for (const [turn, li] of replies) {
        if (cut.has(turn) || li.dataset.state === 'streaming' || li.dataset.state === 'waiting') {
          li.dataset.state = 'interrupted';
        }
      }
      if (m.heard) {
        const li = reply(m.heard.turn);
        li.dataset.heard = `heard ${ms(m.heard.audio_ms)}` + (m.heard.text ? `: “${m.heard.text}”` : '');
        renderMeta(li);
      }
      logTo(ui.log, 'event', `interrupted → generation ${m.generation}` + (cut.size ? `, cancelled ${[...cut].join(', ')}` : ''));
      break;
    }
    case 'prompt':
      logTo(ui.log, 'prompt', m.text, `${m.stage}: ${m.reason}`);
      break;
    case 'offer':
      offer.offer(m);
      break;
    case 'callback':
    case 'handoff':
      offer.answered(m);
      break;
    case 'error':
      offer.error(m);
      logTo(ui.log, 'error', `${m.code}: ${m.message}`);
      break;
    default:
      logTo(ui.log, 'event', `${m.type}: ${JSON.stringify(m)}`);
    }
  }

  ui.connect.addEventListener('click', () => {
    player.unlock();
    gen = 1;
    ui.gen.textContent = '1';
    player.receivedMS = 0;
    ui.audioMS.textContent = ms(0);
    setSession('connecting', '');
    state.clear();
    state.set('connecting');
    offer.reset();
    setConnected(true);
    ws = new WebSocket(wsURL('/v1/session'));
    ws.binaryType = 'arraybuffer';
    const mine = ws;
    ws.addEventListener('message', (ev) => {
      if (ws !== mine) return;
      if (typeof ev.data !== 'string') {
        player.frame(ev.data);
        ui.audioMS.textContent = ms(player.receivedMS);
        ui.audioMS.dataset.ms = Math.round(player.receivedMS);
        setAudio(true);
        audioSoon();
        return;
      }
      let m;
      try { m = JSON.parse(ev.data); } catch (e) { logTo(ui.log, 'error', 'bad JSON from server'); return; }
      onMessage(m);
    });
    ws.addEventListener('close', (ev) => {
      if (ws !== mine) return;
      ws = null;
      const d = ui.session.dataset.disposition;
      setSession(d === 'admitted' || d === 'connecting' ? 'ended' : d, closeText(ev));
      state.set('ended', closeText(ev));
      setConnected(false);
    });
  });

  ui.hangup.addEventListener('click', () => {
    send({type: 'hangup'});
    player.stop();
    const w = ws;
    setTimeout(() => { if (w && w.readyState !== WebSocket.CLOSED) w.close(1000, 'hangup'); }, 500);
  });

  ui.barge.addEventListener('click', () => {
    player.stop(); // stop what this side still has scheduled at once
    setAudio(false);
    send({type: 'barge_in'});
  });

  ui.form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const text = ui.text.value.trim();
    if (!text || !admitted) return;
    player.unlock();
    const id = `t${++seq}`;
    const you = logTo(ui.log, 'you', text);
    you.dataset.turn = id;
    reply(id);
    send({type: 'turn', id, text});
  });
}

// replyState is how a reply is drawn once its turn ended: done (green),
// refused by a stage, or failed (its backend failed: drawn as a failure).
export function replyState(disposition) {
  switch (disposition) {
  case 'completed': return 'done';
  case 'failed': return 'failed';
  case 'cancelled': return 'interrupted';
  default: return 'refused';
  }
}
