// The microphone call: getUserMedia audio sent over an RTCPeerConnection,
// signalled over the /v1/webrtc WebSocket (offer, answer, trickled
// candidates), the session protocol's events on a data channel, and the
// reply played from the remote track.

import {$, el, wsURL, logTo, closeText} from './util.js';

export function initRTC() {
  const ui = {
    start: $('rtc-start'), stop: $('rtc-stop'), state: $('rtc-state'), mic: $('rtc-mic'),
    sent: $('rtc-sent'), recv: $('rtc-recv'), audio: $('rtc-audio'), log: $('rtc-log'),
  };
  let call = null;

  function setState(s, detail) {
    ui.state.dataset.state = s;
    ui.state.textContent = s + (detail ? ' · ' + detail : '');
  }

  function log(cls, text, meta) { return logTo(ui.log, cls, text, meta); }

  ui.start.addEventListener('click', async () => {
    ui.start.disabled = true;
    ui.stop.disabled = false;
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

  function end() {
    if (call) call.close();
    call = null;
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
        setState(pc.connectionState);
        if (pc.connectionState === 'failed') log('error', 'connection failed');
      });
      this.ws.addEventListener('message', (ev) => this.onSignal(ev.data));
      this.ws.addEventListener('close', (ev) => {
        if (!this.closed && pc.connectionState !== 'connected') {
          log('error', `signalling ${closeText(ev)}`);
          end();
        }
      });
      await new Promise((resolve, reject) => {
        this.ws.addEventListener('open', resolve, {once: true});
        this.ws.addEventListener('error', () => reject(new Error('signalling socket failed')), {once: true});
      });
      const offer = await pc.createOffer();
      await pc.setLocalDescription(offer);
      this.signal({type: 'offer', sdp: pc.localDescription.sdp});
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

    onEvent(data) {
      let m;
      try { m = JSON.parse(data); } catch (e) { return; }
      switch (m.type) {
      case 'session':
        log('event', `session ${m.disposition}` + (m.position ? ` (position ${m.position})` : ''));
        break;
      case 'text': {
        let li = this.replies.get(m.turn);
        if (!li) {
          li = log('reply', '');
          li.dataset.turn = m.turn;
          this.replies.set(m.turn, li);
        }
        li.dataset.state = 'streaming';
        li.querySelector('.text').textContent += m.delta;
        break;
      }
      case 'transcript':
      case 'recognized':
        log('you', m.text || '');
        break;
      case 'turn_end': {
        const li = this.replies.get(m.turn);
        if (li && li.dataset.state !== 'interrupted') li.dataset.state = m.disposition === 'completed' ? 'done' : 'refused';
        log('event', `turn ${m.turn}: ${m.disposition}`);
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
      case 'audio_start':
      case 'audio_end':
      case 'disposition':
        log('event', `${m.type} ${m.turn || ''} ${m.stage || ''} ${m.disposition || ''}`.trim());
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

    close() {
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
      setState('ended');
    }
  }
}
