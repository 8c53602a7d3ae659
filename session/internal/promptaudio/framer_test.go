package promptaudio

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/session/backend"
)

// TestFramerMatchesPrompt: a reply's audio framed as it streams, in pieces
// of any size, gives the frames and durations of the same audio encoded
// once as a prompt (Encode), in every format and frame length: a caller
// hears replies and prompts alike.
func TestFramerMatchesPrompt(t *testing.T) {
	for _, tc := range []struct {
		in    int
		out   media.Format
		piece int // samples per synthesizer callback
	}{
		{16000, media.Format{}, 320},
		{16000, media.Format{}, 500}, // (no resampling: pieces framed in place, a rest kept)
		{8000, media.Format{Encoding: media.Mulaw, SampleRate: 8000}, 7},
		{16000, media.Format{Encoding: media.PCM16, SampleRate: 16000}, 960},
		{16000, media.Format{Encoding: media.PCM16, SampleRate: 8000}, 999},
		{22050, media.Format{Encoding: media.Mulaw, SampleRate: 8000}, 4410},
		{24000, media.Format{Encoding: media.Alaw, SampleRate: 8000}, 1},
		{8000, media.Format{Encoding: media.PCM16, SampleRate: 48000}, 7000},
	} {
		t.Run(fmt.Sprint(tc.in, tc.out, tc.piece), func(t *testing.T) {
			a := promptTone(tc.in, 1234*time.Millisecond)
			p, err := Encode(a, orPCM(tc.out.Encoding), orRate(tc.out.SampleRate, tc.in))
			if err != nil {
				t.Fatal(err)
			}
			for _, span := range []int{0, 1, 3, 6} {
				f := NewFramer(tc.out, span)
				var got []Frame
				emit := func(fr Frame) error { got = append(got, fr); return nil }
				for i := 0; i < len(a.Samples); i += tc.piece {
					first, err := f.Start(a.Rate)
					if err != nil || first != (i == 0) {
						t.Fatalf("Start at %d: %v %v", i, first, err)
					}
					if err := f.Write(a.Samples[i:min(i+tc.piece, len(a.Samples))], emit); err != nil {
						t.Fatal(err)
					}
				}
				if err := f.Flush(emit); err != nil {
					t.Fatal(err)
				}
				if f.Encoding() != p.Enc || f.Rate() != p.Rate {
					t.Fatalf("format %s/%d, want %s/%d", f.Encoding(), f.Rate(), p.Enc, p.Rate)
				}
				if len(got) != p.Frames(span) {
					t.Fatalf("span %d: %d frames, want %d", span, len(got), p.Frames(span))
				}
				for i, fr := range got {
					b, wus := p.At(i, span)
					if !bytes.Equal(fr.Audio, b) || fr.US != wus {
						t.Fatalf("span %d: frame %d differs (%d bytes %d µs, want %d bytes %d µs)", span, i, len(fr.Audio), fr.US, len(b), wus)
					}
				}
			}
		})
	}
}

// A piece without a rate is malformed; nothing framed before Start is
// flushed; an emit error stops the framing.
func TestFramerErrors(t *testing.T) {
	f := NewFramer(media.Format{}, 1)
	if _, err := f.Start(0); !errors.Is(err, backend.ErrMalformed) {
		t.Fatalf("no rate: %v", err)
	}
	calls := 0
	emit := func(Frame) error { calls++; return errors.New("gone") }
	if err := f.Flush(emit); err != nil || calls != 0 {
		t.Fatalf("flush before start: %v, %d frames", err, calls)
	}
	if _, err := f.Start(16000); err != nil {
		t.Fatal(err)
	}
	if err := f.Write(make([]int16, 16000), emit); err == nil || calls != 1 {
		t.Fatalf("emit failing: %v after %d frames, want an error after 1", err, calls)
	}
	if _, err := f.Start(-1); !errors.Is(err, backend.ErrMalformed) {
		t.Fatalf("a later piece without a rate: %v", err)
	}
}
