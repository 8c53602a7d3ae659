package gateway

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media"
)

// pipe is an in-memory Link: frames written to it are read back from in.
type pipe struct {
	in  chan Frame
	out chan Frame
}

func newPipe() *pipe { return &pipe{in: make(chan Frame, 16), out: make(chan Frame, 1024)} }

func (p *pipe) ReadFrame(ctx context.Context) (Frame, error) {
	select {
	case f, ok := <-p.in:
		if !ok {
			return Frame{}, errors.New("closed")
		}
		return f, nil
	case <-ctx.Done():
		return Frame{}, ctx.Err()
	}
}

func (p *pipe) WriteFrame(ctx context.Context, f Frame) error {
	p.out <- Frame{Binary: f.Binary, Data: append([]byte(nil), f.Data...)}
	return nil
}

func (p *pipe) Close() error { return nil }

// textCodec is a toy dialect: "start <id>", "media <bytes>", "mark <name>",
// "info"; commands "audio", "mark <name>", "clear".
type textCodec struct{ caps Capabilities }

func (textCodec) Name() string                 { return "toy" }
func (c textCodec) Capabilities() Capabilities { return c.caps }

func (textCodec) Decode(f Frame) (Event, error) {
	verb, arg, _ := strings.Cut(string(f.Data), " ")
	switch verb {
	case "start":
		return Event{Kind: KindStart, Name: verb, Start: &Start{StreamID: arg, Format: media.Telephony}}, nil
	case "media":
		return Event{Kind: KindMedia, Name: verb, Audio: []byte(arg)}, nil
	case "mark":
		return Event{Kind: KindMark, Name: verb, Mark: arg}, nil
	case "info":
		return Event{Kind: KindInfo, Name: verb}, nil
	}
	return Event{}, Errorf("toy", verb, "", ErrUnknownEvent, "")
}

func (textCodec) Encode(dst []byte, c Command) (Frame, error) {
	switch c.Kind {
	case KindAudio:
		return Frame{Binary: true, Data: append(dst, c.Audio...)}, nil
	case KindMark:
		return Frame{Data: append(append(dst, "mark "...), c.Mark...)}, nil
	case KindClear:
		return Frame{Data: append(dst, "clear"...)}, nil
	}
	return Frame{}, ErrUnsupported
}

func (textCodec) EncodeEvent([]byte, Event) (Frame, error) { return Frame{}, ErrUnsupported }
func (textCodec) DecodeCommand(Frame) (Command, error)     { return Command{}, ErrUnsupported }

func TestReadOrder(t *testing.T) {
	ctx := context.Background()
	p := newPipe()
	c := NewConn(p, textCodec{}, Options{})
	for _, tc := range []struct {
		in   string
		kind Kind
		want error
	}{
		{"info", KindInfo, nil},
		{"media ab", 0, ErrOrder},
		{"mark x", 0, ErrOrder},
		{"bogus", 0, ErrUnknownEvent},
		{"start s1", KindStart, nil},
		{"start s2", 0, ErrOrder},
		{"media ab", KindMedia, nil},
		{"mark nobody", KindMark, nil},
	} {
		p.in <- Frame{Data: []byte(tc.in)}
		ev, err := c.Read(ctx)
		var de *DecodeError
		switch {
		case tc.want != nil && (!errors.As(err, &de) || !errors.Is(err, tc.want)):
			t.Fatalf("%q: %v, want a *DecodeError wrapping %v", tc.in, err, tc.want)
		case tc.want == nil && (err != nil || ev.Kind != tc.kind):
			t.Fatalf("%q: %v %v", tc.in, ev.Kind, err)
		case tc.want == nil && ev.Kind == KindMark && ev.Progress != nil:
			t.Fatalf("a mark the Conn did not send has progress %+v", ev.Progress)
		}
	}
	if got := c.Start(); got == nil || got.StreamID != "s1" {
		t.Fatalf("Start = %+v", got)
	}
}

func TestSendBeforeStart(t *testing.T) {
	c := NewConn(newPipe(), textCodec{}, Options{})
	if err := c.SendAudio("u", []byte{1}); !errors.Is(err, ErrNotStarted) {
		t.Fatalf("SendAudio: %v", err)
	}
	if err := c.SendPCM("u", []int16{1}, 8000); !errors.Is(err, ErrNotStarted) {
		t.Fatalf("SendPCM: %v", err)
	}
	if err := c.Hangup(context.Background()); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Hangup: %v", err)
	}
	c.EndUtterance("u") // no pacer yet: nothing to do, no panic
	if p, err := c.Clear(context.Background()); err != nil || len(p) != 0 {
		t.Fatalf("Clear before start: %v, %v", p, err)
	}
}

// TestClearWithoutClearCommand: a dialect without a clear gets nothing on
// the wire, and the Conn's own queue is dropped.
func TestClearWithoutClearCommand(t *testing.T) {
	for _, caps := range []Capabilities{{}, {Clear: true, Marks: true}} {
		p := newPipe()
		c := NewConn(p, textCodec{caps: caps}, Options{})
		p.in <- Frame{Data: []byte("start s")}
		if _, err := c.Read(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := c.SendAudio("u", make([]byte, 8000)); err != nil {
			t.Fatal(err)
		}
		if c.Buffered() != time.Second {
			t.Fatalf("Buffered = %v", c.Buffered())
		}
		if _, err := c.Clear(context.Background()); err != nil {
			t.Fatal(err)
		}
		if c.Buffered() != 0 {
			t.Fatalf("Buffered after Clear = %v", c.Buffered())
		}
		var wrote []string
		for len(p.out) > 0 {
			wrote = append(wrote, string((<-p.out).Data))
		}
		if want := caps.Clear; (len(wrote) == 1 && wrote[0] == "clear") != want || (!want && len(wrote) != 0) {
			t.Fatalf("caps %+v wrote %q", caps, wrote)
		}
	}
}

// TestSendPCMResamples: 16 kHz PCM on an 8 kHz µ-law stream is queued at
// half the samples, one byte each.
func TestSendPCMResamples(t *testing.T) {
	p := newPipe()
	c := NewConn(p, textCodec{}, Options{})
	p.in <- Frame{Data: []byte("start s")}
	if _, err := c.Read(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.SendPCM("u", make([]int16, 16000), 16000); err != nil {
		t.Fatal(err)
	}
	if err := c.SendPCM("u", make([]int16, 100), 24000); err == nil {
		t.Fatal("a rate change within an utterance was accepted")
	}
	c.EndUtterance("u")
	if d := c.Buffered(); d < 980*time.Millisecond || d > time.Second+20*time.Millisecond {
		t.Fatalf("Buffered = %v, want about 1 s", d)
	}
}

func TestDropPending(t *testing.T) {
	c := &fakeClock{t: time.Unix(0, 0)}
	tr := NewTracker(c)
	for range 10 {
		tr.Sent("u", 20*time.Millisecond)
	}
	name := tr.Mark("u", true)
	c.advance(100 * time.Millisecond)
	p := tr.Clear()
	if len(p) != 1 || !p[0].Cleared || p[0].Done || p[0].Played != 100*time.Millisecond {
		t.Fatalf("Clear = %+v", p)
	}
	tr.DropPending()
	if got := tr.Progress("u"); !got.Done || got.Played != 100*time.Millisecond {
		t.Fatalf("after DropPending: %+v", got)
	}
	if _, ok := tr.Echo(name); ok {
		t.Fatal("a dropped mark was still known")
	}
}

func TestParseContentType(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want media.Format
		ok   bool
	}{
		{"audio/l16;rate=16000", L16(16000), true},
		{"audio/x-l16; rate=8000", L16(8000), true},
		{"audio/x-l16", L16(8000), true},
		{"audio/x-mulaw;rate=8000", media.Telephony, true},
		{"AUDIO/PCMU", media.Telephony, true},
		{"audio/x-alaw", media.Format{Encoding: media.Alaw, SampleRate: 8000, Channels: 1}, true},
		{"audio/l16;rate=fast", media.Format{}, false},
		{"audio/l16;rate=-1", media.Format{}, false},
		{"audio/opus", media.Format{}, false},
	} {
		got, ok := ParseContentType(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseContentType(%q) = %v, %v", tc.in, got, ok)
		}
	}
}

func TestPCMRoundTrip(t *testing.T) {
	samples := []int16{0, 1000, -1000, 32000, -32000}
	for _, f := range []media.Format{L16(8000), media.Telephony, {Encoding: media.Alaw, SampleRate: 8000, Channels: 1}} {
		b := AppendPCM(nil, f, samples)
		if len(b) != len(samples)*f.BytesPerSample() {
			t.Fatalf("%v: %d bytes", f, len(b))
		}
		back, err := DecodePCM(nil, f, b)
		if err != nil || len(back) != len(samples) {
			t.Fatalf("%v: %v %v", f, back, err)
		}
		for i := range samples {
			if d := int(back[i]) - int(samples[i]); d > 1100 || d < -1100 || (f.Encoding == media.PCM16 && d != 0) {
				t.Fatalf("%v: sample %d: %d back as %d", f, i, samples[i], back[i])
			}
		}
		if Silence(f) != AppendPCM(nil, f, []int16{0})[0] {
			t.Fatalf("%v: silence byte %#x", f, Silence(f))
		}
	}
}

func TestDecodeErrorText(t *testing.T) {
	err := Errorf("plivo", "media", "media.payload", ErrPayload, "bad %s", "base64")
	if got := err.Error(); got != "plivo: media: media.payload: bad media payload: bad base64" {
		t.Fatalf("Error() = %q", got)
	}
	if !errors.Is(err, ErrPayload) || !errors.Is(Missing("x", "", "f"), ErrMalformed) {
		t.Fatal("sentinels not wrapped")
	}
	if _, err := ParseCount("x", "e", "f", "-3", false); !errors.Is(err, ErrMalformed) {
		t.Fatalf("ParseCount(-3) = %v", err)
	}
	if n, err := ParseCount("x", "e", "f", "", false); n != 0 || err != nil {
		t.Fatalf("ParseCount(\"\") = %d, %v", n, err)
	}
	if FormatCount(0) != "" || FormatCount(12) != "12" {
		t.Fatal("FormatCount")
	}
}
