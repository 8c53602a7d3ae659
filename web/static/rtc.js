// The microphone call: getUserMedia audio sent over an RTCPeerConnection,
// signalled over the /v1/webrtc WebSocket (offer, answer, trickled
// candidates), the session protocol's events on a data channel, and the
// reply played from the remote track. Its Call line is the call's state
// (in call, refused · offer open, callback booked, ended), its Media link
// line the peer connection's; a fallback offer is answered as on the
// synthetic call's card (offer.js).

import {$, wsURL, logTo, closeText} from './util.js';
import {replyState} from './call.js';
import {CallState, OfferPanel} from './offer.js';

export function initRTC() {
  const ui = {
    start: $('rtc-start'), stop: $('rtc-stop'), media: $('rtc-media'), mic: $('rtc-mic'),
    sent: $('rtc-sent'), recv: $('rtc-recv'), audio: $('rtc-audio'), log: $('rtc-log'),
  };
  let call = null;
  const state = new CallState($('rtc-state'));
  const offer = new OfferPanel('rtc', {send: (m) => { if (call) call.send(m); }, log, state});

  function setState(s, detail) { state.set(s, detail); }

  // The peer connection's state, in words that are not the call's: the
  // link can be up while the call is refused or over.
  const MEDIA = {new: '–', connecting: 'connecting', connected: 'up', disconnected: 'interrupted', failed: 'failed', closed: 'closed'};
  function setMedia(s) {
    ui.media.dataset.state = s;
    ui.media.textContent = MEDIA[s] || s;
  }

  function log(cls, text, meta) { return logTo(ui.log, cls, text, meta); }

  ui.start.addEventListener('click', async () => {
    ui.start.disabled = true;
    ui.stop.disabled = false;
    state.clear();
    offer.reset();
    setMedia('new');
    call = new RTCCall();
    try {
      await call.start();
    } catch (e) {
      log('error', `could not start: ${e.name || ''} ${e.message || e}`);
      end();
    }
  });
  ui.stop.addEventListener('click', () => {
    if (call) call.send({type: 'hangup'});
    end();
  });

  function end(detail) {
    if (call) call.close(detail);
    call = null;
    offer.close();
    ui.start.disabled = false;
    ui.stop.disabled = true;
  }

  class RTCCall {
    constructor() {
      this.replies = new Map();
      this.pending = []; // remote candidates before the answer
      this.closed = false;
    }

    async start() {
      setState('microphone');
      this.stream = await navigator.mediaDevices.getUserMedia({audio: {echoCancellation: true, noiseSuppression: false, autoGainControl: false}});
      if (this.closed) return;
      this.meter(this.stream);
      setState('signalling');
      this.ws = new WebSocket(wsURL('/v1/webrtc'));
      const pc = this.pc = new RTCPeerConnection({iceServers: []});
      for (const t of this.stream.getAudioTracks()) pc.addTrack(t, this.stream);
      this.dc = pc.createDataChannel('events');
      this.dc.addEventListener('open', () => log('event', 'events channel open'));
      this.dc.addEventListener('close', () => { if (!this.closed) end('events channel closed'); });
      this.dc.addEventListener('message', (ev) => this.onEvent(ev.data));
      pc.addEventListener('datachannel', (ev) => {
        ev.channel.addEventListener('message', (m) => this.onEvent(m.data));
      });
      pc.addEventListener('track', (ev) => {
        ui.audio.srcObject = ev.streams[0] || new MediaStream([ev.track]);
        ui.audio.play().catch(() => {});
      });
      pc.addEventListener('icecandidate', (ev) => {
        // The end of gathering (a null candidate) is not signalled: the
        // server's signalling accepts only real candidates.
        if (ev.candidate && ev.candidate.candidate) this.signal({type: 'candidate', candidate: ev.candidate.toJSON()});
      });
      pc.addEventListener('connectionstatechange', () => {
        setMedia(pc.connectionState);
        if (pc.connectionState === 'failed') {
          log('error', 'connection failed');
          end('connection failed');
        }
      });
      this.ws.addEventListener('message', (ev) => this.onSignal(ev.data));
      this.ws.addEventListener('close', (ev) => {
        // The call ends with its signalling socket (a refused call: 1013).
        if (this.closed) return;
        if (pc.connectionState !== 'connected') log('error', `signalling ${closeText(ev)}`);
        end(closeText(ev));
      });
      await new Promise((resolve, reject) => {
        this.ws.addEventListener('open', resolve, {once: true});
        this.ws.addEventListener('error', () => reject(new Error('signalling socket failed')), {once: true});
      });
      const offer = await pc.createOffer();
      await pc.setLocalDescription(offer);
      this.signal({type: 'offer', sdp: pc.localDescription.sdp});
      setState('connecting');
      this.stats = setInterval(() => this.poll(), 1000);
    }

    signal(m) {
      if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(m));
    }

    send(m) {
      if (this.dc && this.dc.readyState === 'open') this.dc.send(JSON.stringify(m));
    }

    async onSignal(data) {
      let m;
      try { m = JSON.parse(data); } catch (e) { return; }
      try {
        switch (m.type) {
        case 'answer': {
          const sdp = typeof m.sdp === 'string' ? m.sdp : m.sdp.sdp;
          await this.pc.setRemoteDescription({type: 'answer', sdp});
          for (const c of this.pending.splice(0)) await this.pc.addIceCandidate(c);
          break;
        }
        case 'candidate':
          if (!m.candidate) break;
          if (this.pc.remoteDescription) await this.pc.addIceCandidate(m.candidate);
          else this.pending.push(m.candidate);
          break;
        case 'error':
          log('error', `${m.code}: ${m.message}`);
          break;
        default:
          this.onEvent(data); // a session event sent on the socket
        }
      } catch (e) {
        log('error', `signalling: ${e.message}`);
      }
    }

    reply(turn) {
      let li = this.replies.get(turn);
      if (!li) {
        li = log('reply', '');
        li.dataset.turn = turn;
        li.dataset.state = 'waiting';
        this.replies.set(turn, li);
      }
      return li;
    }

    onEvent(data) {
      let m;
      try { m = JSON.parse(data); } catch (e) { return; }
      switch (m.type) {
      case 'session':
        log('event', `session ${m.disposition}` + (m.position ? ` (position ${m.position})` : ''));
        if (m.disposition === 'queued') setState('queued', m.position ? `position ${m.position}` : '');
        else if (m.disposition === 'admitted') setState('in-call');
        else setState('refused', `session ${m.disposition}`);
        break;
      case 'text': {
        const li = this.reply(m.turn);
        li.dataset.state = 'streaming';
        li.querySelector('.text').textContent += m.delta;
        break;
      }
      case 'transcript':
      case 'recognized':
        log('you', m.text || '');
        break;
      case 'turn_end': {
        // A turn refused or failed before any reply (no text) is shown
        // too, drawn as what it was.
        const li = (this.replies.get(m.turn) || m.disposition !== 'completed') ? this.reply(m.turn) : null;
        const end = m.disposition + (m.stage ? ` at ${m.stage}` : '') + (m.error ? ` (${m.error})` : '');
        if (li) {
          if (li.dataset.state !== 'interrupted') li.dataset.state = replyState(m.disposition);
          li.dataset.end = end;
          const text = li.querySelector('.text');
          if (!text.textContent) text.textContent = m.disposition === 'completed' ? '(empty reply)' : `(no reply: ${end})`;
        }
        log('event', `turn ${m.turn}: ${end}`);
        state.turnEnded(m.disposition);
        break;
      }
      case 'interrupted':
        for (const li of this.replies.values()) {
          if (li.dataset.state === 'streaming') li.dataset.state = 'interrupted';
        }
        log('event', `interrupted → generation ${m.generation}`);
        break;
      case 'prompt':
        log('prompt', m.text, `${m.stage}: ${m.reason}`);
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
        log('error', `${m.code}: ${m.message}`);
        break;
      case 'audio_start':
      case 'audio_end':
      case 'disposition':
        log('event', `${m.type} ${m.turn || ''} ${m.stage || ''} ${m.disposition || ''}${m.error ? ' (' + m.error + ')' : ''}`.trim());
        break;
      default:
        log('event', `${m.type}`);
      }
    }

    async poll() {
      if (!this.pc) return;
      const r = await this.pc.getStats();
      r.forEach((s) => {
        if (s.kind !== 'audio') return;
        if (s.type === 'outbound-rtp') {
          ui.sent.dataset.packets = s.packetsSent;
          ui.sent.textContent = `${s.packetsSent} packets`;
        } else if (s.type === 'inbound-rtp') {
          ui.recv.dataset.packets = s.packetsReceived;
          ui.recv.dataset.energy = s.totalAudioEnergy || 0;
          ui.recv.textContent = `${s.packetsReceived} packets` + (s.totalAudioEnergy ? ` · energy ${s.totalAudioEnergy.toFixed(3)}` : '');
        }
      });
    }

    meter(stream) {
      const AC = window.AudioContext || window.webkitAudioContext;
      if (!AC) return;
      this.actx = new AC();
      const an = this.actx.createAnalyser();
      an.fftSize = 512;
      this.actx.createMediaStreamSource(stream).connect(an);
      const buf = new Float32Array(an.fftSize);
      const bar = ui.mic.firstElementChild;
      const tick = () => {
        if (this.closed) return;
        an.getFloatTimeDomainData(buf);
        let sum = 0;
        for (const v of buf) sum += v * v;
        bar.style.width = Math.min(100, Math.sqrt(sum / buf.length) * 400).toFixed(0) + '%';
        this.raf = requestAnimationFrame(tick);
      };
      tick();
    }

    close(detail) {
      this.closed = true;
      clearInterval(this.stats);
      cancelAnimationFrame(this.raf);
      if (this.dc) this.dc.close();
      if (this.pc) this.pc.close();
      if (this.ws) this.ws.close(1000, 'hangup');
      if (this.stream) for (const t of this.stream.getTracks()) t.stop();
      if (this.actx) this.actx.close().catch(() => {});
      ui.audio.srcObject = null;
      ui.mic.firstElementChild.style.width = '0';
      if (this.pc) setMedia(this.pc.connectionState);
      setState('ended', detail || '');
    }
  }
}
