package promptaudio

import (
	"fmt"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/pcm"
	"github.com/frontdoorhq/frontdoor/session/backend"
)

// Framer cuts a synthesizer's audio, as it streams, into the frames of one
// call's format: resampled to the call's rate (the audio's own when the
// call named none), encoded (PCM16 when the call named no encoding) into
// pooled buffers of span times 20 ms each (FrameSamples). The audio's
// rate is fixed by its first piece.
type Framer struct {
	format media.Format
	span   int

	started bool
	enc     media.Encoding
	rate    int
	rs      *pcm.Resampler
	buf     []int16
}

// Frame is one encoded frame: Audio in a buffer from FrameBuf (Pooled: to
// be given back with PutFrameBuf once written), US microseconds of audio.
type Frame struct {
	Audio  []byte
	Pooled bool
	US     int64
}

// NewFramer returns a framer into f in frames of span 20 ms frames (0 is 1).
func NewFramer(f media.Format, span int) *Framer {
	return &Framer{format: f, span: span}
}

// Start is called with each piece's rate before its Write: the first
// fixes the output, and Start reports whether it did so now. It fails
// for audio without a rate (backend.ErrMalformed) and for a first rate
// that cannot be resampled to the call's.
func (f *Framer) Start(rate int) (bool, error) {
	if rate <= 0 {
		return false, fmt.Errorf("session: synthesizer audio without a rate: %w", backend.ErrMalformed)
	}
	if f.started {
		return false, nil
	}
	f.enc, f.rate = f.format.Encoding, f.format.SampleRate
	if f.enc == "" {
		f.enc = media.PCM16
	}
	if f.rate == 0 {
		f.rate = rate
	}
	if f.rate != rate {
		rs, err := pcm.NewResampler(rate, f.rate)
		if err != nil {
			return false, err
		}
		f.rs = rs
	}
	f.started = true
	return true, nil
}

// Started reports whether Start has fixed the output.
func (f *Framer) Started() bool { return f.started }

// Encoding and Rate are the output's, once started.
func (f *Framer) Encoding() media.Encoding { return f.enc }

// Rate is the output's sample rate, once started.
func (f *Framer) Rate() int { return f.rate }

// Write adds samples (at the rate Start was given) and emits every whole
// frame they complete; the rest waits for more, or for Flush.
func (f *Framer) Write(samples []int16, emit func(Frame) error) error {
	if f.rs != nil {
		samples = f.rs.Resample(nil, samples)
	}
	if len(f.buf) == 0 {
		// Nothing waits: the whole frames are encoded from samples as they
		// are, and only the rest is kept. (A streaming synthesizer's piece
		// is often one frame: it then costs no copy into the framer.)
		i, err := f.emit(samples, false, emit)
		if err != nil {
			return err
		}
		f.buf = append(f.buf, samples[i:]...)
		return nil
	}
	f.buf = append(f.buf, samples...)
	return f.frames(false, emit)
}

// Flush emits what remains, the last frame short; nothing if never started.
func (f *Framer) Flush(emit func(Frame) error) error {
	if !f.started {
		return nil
	}
	if f.rs != nil {
		f.buf = f.rs.Flush(f.buf)
	}
	return f.frames(true, emit)
}

// frames emits whole frames, and with all, the remainder.
func (f *Framer) frames(all bool, emit func(Frame) error) error {
	i, err := f.emit(f.buf, all, emit)
	if err != nil {
		return err
	}
	f.buf = append(f.buf[:0], f.buf[i:]...)
	return nil
}

// emit emits the whole frames of buf, and with all, the remainder; it
// returns how many samples it emitted.
func (f *Framer) emit(buf []int16, all bool, emit func(Frame) error) (int, error) {
	n := FrameSamples(f.rate, f.span)
	i := 0
	for ; len(buf)-i >= n || (all && i < len(buf)); i += n {
		s := buf[i:min(i+n, len(buf))]
		dst, pooled := FrameBuf(EncodedLen(f.enc, len(s)))
		if err := emit(Frame{Audio: EncodeFrame(dst, f.enc, s), Pooled: pooled, US: int64(len(s)) * 1e6 / int64(f.rate)}); err != nil {
			return i, err
		}
	}
	return min(i, len(buf)), nil
}
