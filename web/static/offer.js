// What both call cards share: the call's state as the caller would say it
// (in call, refused · offer open, callback booked, ended) and the fallback
// offer of docs/PROTOCOL.md (a callback to a number with consent, or a
// person), answered with `callback` or `handoff` and its outcome shown.

import {$, logTo} from './util.js';

const PHASES = {
  idle: 'idle', microphone: 'microphone', signalling: 'signalling', connecting: 'connecting',
  queued: 'queued', 'in-call': 'in call', refused: 'refused', failed: 'failed', ended: 'ended',
};

// What an answered offer became, by message type and disposition.
function outcomeOf(m) {
  if (m.type === 'callback') {
    return m.disposition === 'queued' ? ['callback-booked', 'callback booked'] : ['callback-refused', `callback not booked (${m.disposition})`];
  }
  switch (m.disposition) {
  case 'queued': return ['handoff-waiting', 'waiting for a person' + (m.position ? ` (position ${m.position})` : '')];
  case 'completed': return ['handoff-completed', 'with a person' + (m.agent ? ` (${m.agent})` : '')];
  default: return ['handoff-ended', `no person (${m.disposition})`];
  }
}

// CallState shows a call's state in one element: data-state is the phase
// (idle, connecting, queued, in-call, refused, failed, ended, and the
// microphone card's microphone and signalling), data-offer the offer's
// (open, callback-booked, callback-refused, handoff-waiting,
// handoff-completed, handoff-ended, or empty).
export class CallState {
  constructor(elem) {
    this.elem = elem;
    this.phase = 'idle';
    this.offer = '';
    this.offerText = '';
    this.detail = '';
    this.render();
  }

  set(phase, detail = '') {
    this.phase = phase;
    this.detail = detail;
    this.render();
  }

  // turnEnded follows a turn_end: a refusal or a failure is the call's
  // state until a turn completes again.
  turnEnded(disposition) {
    if (this.phase === 'ended') return;
    if (disposition === 'completed') this.set('in-call');
    else if (disposition === 'failed') this.set('failed');
    else if (disposition !== 'cancelled') this.set('refused');
  }

  setOffer(slug, text) {
    this.offer = slug;
    this.offerText = text;
    this.render();
  }

  clear() {
    this.offer = this.offerText = '';
    this.set('idle');
  }

  render() {
    const parts = [];
    const answered = this.offer && this.offer !== 'open';
    // Once an offer is answered its outcome says what the call is now.
    if (!(answered && (this.phase === 'refused' || this.phase === 'failed'))) parts.push(PHASES[this.phase] || this.phase);
    if (this.offerText) parts.push(this.offerText);
    if (this.detail) parts.push(this.detail);
    this.elem.dataset.state = this.phase;
    this.elem.dataset.offer = this.offer;
    this.elem.textContent = parts.join(' · ');
  }
}

// OfferPanel is one card's offer: the elements PREFIX-offer (rows with
// data-kind callback and handoff), PREFIX-number, PREFIX-consent,
// PREFIX-callback, PREFIX-handoff and PREFIX-outcome. send(msg) sends a
// client message on the card's channel; answers and their outcomes go to
// the card's log and its CallState.
export class OfferPanel {
  constructor(prefix, {send, log, state}) {
    this.root = $(`${prefix}-offer`);
    this.number = $(`${prefix}-number`);
    this.consent = $(`${prefix}-consent`);
    this.callbackBtn = $(`${prefix}-callback`);
    this.handoffBtn = $(`${prefix}-handoff`);
    this.outcome = $(`${prefix}-outcome`);
    this.send = send;
    this.log = log;
    this.state = state;
    this.pending = ''; // the answer sent and not yet answered
    this.callbackBtn.addEventListener('click', () => this.answer('callback'));
    this.handoffBtn.addEventListener('click', () => this.answer('handoff'));
  }

  // offer shows the kinds of an `offer` message, with the prompt it follows.
  offer(m) {
    const kinds = m.kinds || [];
    this.root.hidden = kinds.length === 0;
    this.root.dataset.state = 'open';
    this.root.firstElementChild.textContent = 'Offered:';
    for (const row of this.root.querySelectorAll('[data-kind]')) {
      row.hidden = !kinds.includes(row.dataset.kind);
    }
    this.callbackBtn.disabled = this.handoffBtn.disabled = false;
    this.pending = '';
    this.showOutcome('', '');
    if (kinds.length) this.state.setOffer('open', 'offer open');
  }

  answer(kind) {
    if (kind === 'callback') {
      this.send({type: 'callback', consent: this.consent.checked, number: this.number.value.trim()});
    } else {
      this.send({type: 'handoff'});
    }
    this.pending = kind;
    this.callbackBtn.disabled = this.handoffBtn.disabled = true;
    this.root.dataset.state = 'answering';
  }

  // answered shows a `callback` or `handoff` message from the server.
  answered(m) {
    this.pending = '';
    const [slug, text] = outcomeOf(m);
    for (const row of this.root.querySelectorAll('[data-kind]')) row.hidden = true;
    this.root.hidden = false;
    this.root.dataset.state = slug;
    this.root.firstElementChild.textContent = 'Your answer:';
    this.showOutcome(slug, text + (m.ticket ? ` · ticket ${m.ticket}` : ''));
    this.state.setOffer(slug, text);
    this.log('prompt', `${m.type}: ${m.disposition}` + (m.ticket ? `, ticket ${m.ticket}` : ''), m.text || '');
  }

  // error shows an `error` message; one that answers the pending answer
  // (no consent, a bad number) leaves the offer open to try again.
  error(m) {
    if (!this.pending) return false;
    this.pending = '';
    this.callbackBtn.disabled = this.handoffBtn.disabled = false;
    this.root.dataset.state = 'open';
    this.showOutcome('error', `${m.code}: ${m.message}`);
    return true;
  }

  showOutcome(slug, text) {
    this.outcome.dataset.outcome = slug;
    this.outcome.textContent = text;
    this.outcome.hidden = !text;
  }

  // close ends the offer with the call: nothing can be answered any more,
  // but an outcome stays shown.
  close() {
    this.pending = '';
    for (const row of this.root.querySelectorAll('[data-kind]')) row.hidden = true;
    if (this.root.dataset.state === 'open' || this.root.dataset.state === 'answering') this.root.dataset.state = 'closed';
    this.root.hidden = this.outcome.hidden;
  }

  reset() {
    this.root.hidden = true;
    this.pending = '';
    this.showOutcome('', '');
  }
}

// logger returns a card's log function (util.logTo on its list).
export function logger(list) {
  return (cls, text, meta) => logTo(list, cls, text, meta);
}
