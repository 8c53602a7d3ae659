// Package promptaudio encodes prompt audio once per rendering and call
// format, into the 20 ms frames every call that speaks it slices from one
// buffer, and holds what reply audio shares with it: the frame encoding,
// the pooled frame buffers (framebuf.go) and the Framer that cuts a
// reply's audio into those frames as it streams (framer.go).
package promptaudio

import (
	"sync"
	"time"
	"weak"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/g711"
	"github.com/frontdoorhq/frontdoor/media/pcm"
	"github.com/frontdoorhq/frontdoor/session/backend"
)

// Prompt audio is encoded once per rendering and call format, and every call
// that speaks it streams frames sliced from that one buffer: a refused
// caller's prompt costs its writes, not a resampling, an encoding and an
// allocation per 20 ms frame. At 10x overload thousands of refused callers
// hear the same few prompts at once.

// maxBytes bounds the encoded prompt audio kept for reuse, all
// formats together (the prompt table at 16 kHz PCM16 is some 10 MB).
const maxBytes = 32 << 20

// Prompt is one rendering in one call format: its 20 ms frames back
// to back in data, shared read-only by every call that speaks it (each
// frame is a full slice expression, so an append cannot reach the next).
// A call whose frames are longer (hello.audio.frame_ms) is sent windows of
// span frames of the same buffer: its framing costs no encoding of its own.
type Prompt struct {
	Enc     media.Encoding
	Rate    int
	data    []byte
	frame   int   // bytes in each 20 ms frame; the last may be shorter
	sampleB int   // bytes per sample
	SynthUS int64 // the rendering's duration, as audio_end reports it
}

// Frames returns the number of frames of p in frames of span 20 ms frames.
func (p *Prompt) Frames(span int) int {
	n := max(span, 1) * p.frame
	return (len(p.data) + n - 1) / n
}

// At returns frame i, of span 20 ms frames, and its duration in
// microseconds.
func (p *Prompt) At(i, span int) ([]byte, int64) {
	n := max(span, 1) * p.frame
	lo, hi := i*n, min((i+1)*n, len(p.data))
	return p.data[lo:hi:hi], int64((hi-lo)/p.sampleB) * 1e6 / int64(p.Rate)
}

// key names a rendering by its samples (a weak pointer, so that a
// cached encoding does not keep a rendering the fallback's cache let go),
// their count and rate, and the call format it is encoded in.
type key struct {
	samples weak.Pointer[int16]
	n, rate int
	enc     media.Encoding
	outRate int
}

// Cache holds the encoded prompts, oldest first for eviction.
type Cache struct {
	mu    sync.Mutex
	m     map[key]*Prompt
	order []key
	bytes int
}

// Shared is the process's cache: every engine's calls share it.
var Shared = Cache{m: map[key]*Prompt{}}

// Get returns a's encoding in format f, encoding it on first use. Two
// concurrent first uses may both encode; the results are equal.
func (pc *Cache) Get(a backend.Audio, f media.Format) (*Prompt, error) {
	enc, rate := f.Encoding, f.SampleRate
	if enc == "" {
		enc = media.PCM16
	}
	if rate == 0 {
		rate = a.Rate
	}
	k := key{samples: weak.Make(&a.Samples[0]), n: len(a.Samples), rate: a.Rate, enc: enc, outRate: rate}
	pc.mu.Lock()
	p := pc.m[k]
	pc.mu.Unlock()
	if p != nil {
		return p, nil
	}
	p, err := Encode(a, enc, rate)
	if err != nil {
		return nil, err
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if q := pc.m[k]; q != nil {
		return q, nil
	}
	// Encodings of renderings that are gone are dropped first (an insert
	// is rare: once per rendering and format).
	live := pc.order[:0]
	for _, old := range pc.order {
		if old.samples.Value() == nil {
			pc.bytes -= len(pc.m[old].data)
			delete(pc.m, old)
			continue
		}
		live = append(live, old)
	}
	clear(pc.order[len(live):])
	pc.order = live
	for len(pc.order) > 0 && pc.bytes+len(p.data) > maxBytes {
		old := pc.order[0]
		pc.order = pc.order[1:]
		pc.bytes -= len(pc.m[old].data)
		delete(pc.m, old)
	}
	if len(p.data) <= maxBytes {
		pc.m[k] = p
		pc.order = append(pc.order, k)
		pc.bytes += len(p.data)
	}
	return p, nil
}

// Encode encodes a as the call's reply audio would be: resampled to
// rate and encoded in 20 ms frames, exactly as audioOut does for a
// synthesized reply.
func Encode(a backend.Audio, enc media.Encoding, rate int) (*Prompt, error) {
	samples := a.Samples
	if rate != a.Rate {
		rs, err := pcm.NewResampler(a.Rate, rate)
		if err != nil {
			return nil, err
		}
		samples = rs.Flush(rs.Resample(nil, samples))
	}
	n := FrameSamples(rate, 1)
	p := &Prompt{Enc: enc, Rate: rate, sampleB: 1, SynthUS: int64(len(a.Samples)) * 1e6 / int64(a.Rate)}
	if enc != media.Mulaw && enc != media.Alaw {
		p.sampleB = 2
	}
	p.frame = n * p.sampleB
	p.data = make([]byte, 0, len(samples)*p.sampleB)
	for i := 0; i < len(samples); i += n {
		p.data = EncodeFrame(p.data, enc, samples[i:min(i+n, len(samples))])
	}
	return p, nil
}

// EncodedLen is the length of n samples in enc.
func EncodedLen(enc media.Encoding, n int) int {
	switch enc {
	case media.Mulaw, media.Alaw:
		return n
	}
	return 2 * n
}

// EncodeFrame appends samples to dst in enc.
func EncodeFrame(dst []byte, enc media.Encoding, s []int16) []byte {
	switch enc {
	case media.Mulaw:
		return g711.EncodeMulaw(dst, s)
	case media.Alaw:
		return g711.EncodeAlaw(dst, s)
	}
	return pcm.Encode(dst, s)
}

// FrameSamples is the samples in one frame of reply audio at rate: span
// frames of 20 ms (media.FrameDuration) back to back, so that a longer
// frame holds exactly the 20 ms frames it stands for, at any rate, and
// prompt audio encoded in 20 ms frames is sliced into the same lengths.
func FrameSamples(rate, span int) int {
	return max(span, 1) * (rate * int(media.FrameDuration/time.Millisecond) / 1000)
}

// Encodings counts the encodings held of the rendering whose first sample
// is first (tests: one rendering spoken in two framings is encoded once).
func (pc *Cache) Encodings(first *int16) int {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	n := 0
	for k := range pc.m {
		if k.samples.Value() == first {
			n++
		}
	}
	return n
}
