package audiosocket

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/media/gateway/gatewaytest/suite"
)

func read(t testing.TB, name string) gateway.Frame {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return gateway.Frame{Binary: true, Data: b}
}

// TestDecode decodes one message of each kind of the protocol definition.
func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		file string
		c    Codec
		want gateway.Event
	}{
		{"uuid.bin", Codec{}, gateway.Event{Kind: gateway.KindStart, Name: "uuid", Start: &gateway.Start{StreamID: "40325b1a-8664-4d3a-8e4e-5e7b2b8d6d1c", Format: gateway.L16(8000)}}},
		{"dtmf.bin", Codec{}, gateway.Event{Kind: gateway.KindDTMF, Name: "dtmf", Digit: "5"}},
		{"hangup.bin", Codec{}, gateway.Event{Kind: gateway.KindStop, Name: "hangup"}},
		{"error.bin", Codec{}, gateway.Event{Kind: gateway.KindError, Name: "error", Err: &gateway.GatewayError{Code: "02", Message: "frame forwarding error"}}},
		{"slin.bin", Codec{}, gateway.Event{Kind: gateway.KindMedia, Name: "slin8000", Audio: []byte{1, 0, 0xff, 0x7f}}},
		{"slin16.bin", Codec{SampleRate: 16000}, gateway.Event{Kind: gateway.KindMedia, Name: "slin16000", Audio: []byte{0, 0x80}}},
	} {
		got, err := tc.c.Decode(read(t, tc.file))
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		suite.SameEvent(t, got, tc.want)
	}
}

func TestEncode(t *testing.T) {
	f, err := Codec{}.Encode(nil, gateway.Command{Kind: gateway.KindAudio, Audio: []byte{1, 0, 0xff, 0x7f}})
	if err != nil || string(f.Data) != string(read(t, "slin.bin").Data) {
		t.Fatalf("audio: % x, %v", f.Data, err)
	}
	f, err = Codec{}.Encode(nil, gateway.Command{Kind: gateway.KindHangup})
	if err != nil || string(f.Data) != "\x00\x00\x00" {
		t.Fatalf("hangup: % x, %v", f.Data, err)
	}
	f, err = Codec{SampleRate: 16000}.Encode(f.Data[:0], gateway.Command{Kind: gateway.KindAudio, Audio: []byte{0, 0x80}})
	if err != nil || string(f.Data) != "\x12\x00\x02\x00\x80" {
		t.Fatalf("16 kHz audio: % x, %v", f.Data, err)
	}
	for _, k := range []gateway.Kind{gateway.KindMark, gateway.KindClear} {
		if _, err := (Codec{}).Encode(nil, gateway.Command{Kind: k}); !errors.Is(err, gateway.ErrUnsupported) {
			t.Fatalf("%v: %v", k, err)
		}
	}
	if _, err := Append(nil, KindSlin, make([]byte, 0x10000)); !errors.Is(err, gateway.ErrTooLarge) {
		t.Fatalf("oversize payload: %v", err)
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want error
	}{
		{"short", "\x10\x00", gateway.ErrMalformed},
		{"length past the end", "\x10\x00\x04\x00\x00", gateway.ErrMalformed},
		{"bytes past the length", "\x03\x00\x01\x31\x32", gateway.ErrMalformed},
		{"short uuid", "\x01\x00\x02\xab\xcd", gateway.ErrMalformed},
		{"not a digit", "\x03\x00\x01x", gateway.ErrMalformed},
		{"two digits", "\x03\x00\x0212", gateway.ErrMalformed},
		{"unknown kind", "\x42\x00\x00", gateway.ErrUnknownEvent},
		{"16 kHz on an 8 kHz stream", "\x12\x00\x02\x00\x00", gateway.ErrUnsupported},
		{"odd audio", "\x10\x00\x01\x00", gateway.ErrPayload},
		{"oversize", string(make([]byte, MaxMessageSize+1)), gateway.ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Codec{}.Decode(gateway.Frame{Binary: true, Data: []byte(tc.in)})
			var de *gateway.DecodeError
			if !errors.As(err, &de) || !errors.Is(err, tc.want) {
				t.Fatalf("Decode = %v, want a *DecodeError wrapping %v", err, tc.want)
			}
		})
	}
}

// tcpPair is a loopback TCP connection, the way Asterisk dials an
// AudioSocket server.
func tcpPair(t testing.TB) (gateway.Link, gateway.Link) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return NewLink(client), NewLink(server)
}

func TestConn(t *testing.T) {
	for _, c := range []Codec{{}, {SampleRate: 16000}} {
		t.Run(c.Capabilities().Formats[0].String(), func(t *testing.T) {
			suite.RunConn(t, suite.Setup{Codec: c, Pair: tcpPair,
				Start: gateway.Start{StreamID: "40325b1a-8664-4d3a-8e4e-5e7b2b8d6d1c"}, Malformed: gateway.Frame{Binary: true, Data: []byte("\x42\x00\x00")}})
		})
	}
}

func TestStop(t *testing.T) {
	suite.RunStop(t, suite.Setup{Codec: Codec{}, Pair: tcpPair, Start: gateway.Start{StreamID: "40325b1a-8664-4d3a-8e4e-5e7b2b8d6d1c"}})
}

// TestLinkContext: a read blocked on a silent peer returns when its
// context ends.
func TestLinkContext(t *testing.T) {
	_, server := tcpPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := server.ReadFrame(ctx)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("ReadFrame = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadFrame did not return")
	}
}

func FuzzDecode(f *testing.F) {
	suite.Fuzz(f, NewCodec(16000), suite.Seeds(f, "uuid.bin", "dtmf.bin", "hangup.bin", "error.bin", "slin.bin", "slin16.bin", "slin16_0x11.bin")...)
}

// TestSlin16Kinds: a 16 kHz stream takes slin16 as the AudioSocket page
// numbers it (0x12) and as recent Asterisk releases send it (0x11), and a
// NewCodec answers in the kind its peer sends; an 8 kHz stream still
// refuses 0x11 audio, and a 12 kHz one takes it as 12 kHz.
func TestSlin16Kinds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rate     int
		kind     byte
		ok       bool
		wantKind byte // what NewCodec writes after the peer's frame
	}{
		{"16k page", 16000, 0x12, true, 0x12},
		{"16k recent Asterisk", 16000, 0x11, true, 0x11},
		{"8k refuses 0x11", 8000, 0x11, false, 0x10},
		{"12k", 12000, 0x11, true, 0x11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCodec(tc.rate)
			in, err := Append(nil, tc.kind, []byte{0, 0x80, 1, 0})
			if err != nil {
				t.Fatal(err)
			}
			ev, err := c.Decode(gateway.Frame{Binary: true, Data: in})
			if tc.ok != (err == nil) {
				t.Fatalf("decode 0x%02x on a %d Hz stream: %v", tc.kind, tc.rate, err)
			}
			if tc.ok && (ev.Kind != gateway.KindMedia || ev.Name != fmt.Sprintf("slin%d", tc.rate) || len(ev.Audio) != 4) {
				t.Fatalf("decoded %+v", ev)
			}
			if !tc.ok && !errors.Is(err, gateway.ErrUnsupported) {
				t.Fatalf("refused with %v, want ErrUnsupported", err)
			}
			f, err := c.Encode(nil, gateway.Command{Kind: gateway.KindAudio, Audio: []byte{0, 0x80}})
			if err != nil || f.Data[0] != tc.wantKind {
				t.Fatalf("answered kind 0x%02x (%v), want 0x%02x", f.Data[0], err, tc.wantKind)
			}
		})
	}
}
