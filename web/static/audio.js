// Player plays the reply audio of the session protocol with WebAudio:
// binary frames of PCM16 little-endian (or G.711) at the rate announced by
// audio_start, scheduled back to back. stop() silences everything scheduled,
// which is what a barge-in must do on the caller's side too.

const MULAW = new Float32Array(256);
const ALAW = new Float32Array(256);
for (let i = 0; i < 256; i++) {
  let u = ~i & 0xff;
  let t = ((u & 0x0f) << 3) + 0x84;
  t <<= (u & 0x70) >> 4;
  MULAW[i] = ((u & 0x80) ? (0x84 - t) : (t - 0x84)) / 32768;
  let a = i ^ 0x55;
  let s = (a & 0x0f) << 4;
  const seg = (a & 0x70) >> 4;
  if (seg === 0) s += 8; else if (seg === 1) s += 0x108; else s = (s + 0x108) << (seg - 1);
  ALAW[i] = ((a & 0x80) ? s : -s) / 32768;
}

export class Player {
  constructor() {
    this.ctx = null;
    this.sources = new Set();
    this.next = 0;
    this.encoding = 'pcm16';
    this.rate = 16000;
    this.receivedMS = 0;
  }

  // unlock creates or resumes the AudioContext; call it from a user gesture.
  unlock() {
    const AC = window.AudioContext || window.webkitAudioContext;
    if (!AC) return;
    if (!this.ctx) this.ctx = new AC();
    if (this.ctx.state === 'suspended') this.ctx.resume().catch(() => {});
  }

  start(encoding, rate) {
    this.encoding = encoding || 'pcm16';
    this.rate = rate || 16000;
  }

  // frame schedules one binary frame and returns its duration in ms.
  frame(buf) {
    let samples;
    if (this.encoding === 'mulaw' || this.encoding === 'alaw') {
      const table = this.encoding === 'mulaw' ? MULAW : ALAW;
      const b = new Uint8Array(buf);
      samples = new Float32Array(b.length);
      for (let i = 0; i < b.length; i++) samples[i] = table[b[i]];
    } else {
      const v = new DataView(buf);
      samples = new Float32Array(buf.byteLength >> 1);
      for (let i = 0; i < samples.length; i++) samples[i] = v.getInt16(2 * i, true) / 32768;
    }
    const dur = samples.length / this.rate * 1000;
    this.receivedMS += dur;
    if (!this.ctx || this.ctx.state !== 'running' || samples.length === 0) return dur;
    try {
      const ab = this.ctx.createBuffer(1, samples.length, this.rate);
      ab.copyToChannel(samples, 0);
      const src = this.ctx.createBufferSource();
      src.buffer = ab;
      src.connect(this.ctx.destination);
      const at = Math.max(this.ctx.currentTime + 0.05, this.next);
      src.start(at);
      this.next = at + ab.duration;
      this.sources.add(src);
      src.onended = () => this.sources.delete(src);
    } catch (e) {
      // A rate the AudioContext cannot resample: show, do not play.
      console.info('audio not played:', e.message);
    }
    return dur;
  }

  // playing reports whether scheduled audio is still to be heard.
  playing() {
    return !!this.ctx && this.sources.size > 0 && this.next > this.ctx.currentTime;
  }

  stop() {
    for (const s of this.sources) {
      try { s.stop(); } catch (e) { /* already stopped */ }
    }
    this.sources.clear();
    this.next = 0;
  }
}
