package gatewaytest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/media/gateway/exotel"
	"github.com/frontdoorhq/frontdoor/media/gateway/gatewaytest"
	"github.com/frontdoorhq/frontdoor/media/gateway/gatewaytest/suite"
	"github.com/frontdoorhq/frontdoor/media/gateway/plivo"
	"github.com/frontdoorhq/frontdoor/media/gateway/vonage"
)

// TestClearAndMarks drives the simulator from a raw server: a mark behind
// ten seconds of audio comes back at once on a clear where the dialect
// echoes pending marks (Exotel), and never where it drops them (Plivo); the
// buffered audio is dropped either way, and a mark sent after the clear,
// with nothing buffered, comes back at once.
func TestClearAndMarks(t *testing.T) {
	for _, tc := range []struct {
		codec gateway.Codec
		want  []string
	}{
		{exotel.Codec{}, []string{"behind", "after"}},
		{plivo.Codec{}, []string{"after"}},
	} {
		t.Run(tc.codec.Name(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			client, server := suite.WebSocketPair(tc.codec, nil, nil)(t)
			g, err := gatewaytest.New(ctx, client, tc.codec, gatewaytest.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			f := g.Start().Format
			send := func(c gateway.Command) {
				c.StreamID, c.Format = g.Start().StreamID, f
				fr, err := tc.codec.Encode(nil, c)
				if err != nil {
					t.Fatal(err)
				}
				if err := server.WriteFrame(ctx, fr); err != nil {
					t.Fatal(err)
				}
			}
			send(gateway.Command{Kind: gateway.KindAudio, Audio: make([]byte, f.BytesPer(3*time.Second))})
			send(gateway.Command{Kind: gateway.KindMark, Mark: "behind"})
			send(gateway.Command{Kind: gateway.KindClear})
			send(gateway.Command{Kind: gateway.KindMark, Mark: "after"})
			s, err := g.Wait(ctx, func(s gatewaytest.Snapshot) bool {
				return len(s.Echoed) == len(tc.want) && s.Count(gateway.KindMark) == 2
			})
			if err != nil {
				t.Fatal(err)
			}
			for i, name := range tc.want {
				if s.Echoed[i] != name {
					t.Fatalf("echoed %q, want %q", s.Echoed, tc.want)
				}
			}
			if s.Received != 3*time.Second || s.Heard >= time.Second || s.AfterClear != 0 {
				t.Fatalf("received %v, heard %v, after clear %v", s.Received, s.Heard, s.AfterClear)
			}
			if len(g.Audio()) != f.BytesPer(3*time.Second) {
				t.Fatalf("recorded %d bytes", len(g.Audio()))
			}
		})
	}
}

// TestWaitEnds: Wait returns the connection's error when it ends with the
// condition false.
func TestWaitEnds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, server := suite.WebSocketPair(vonage.Codec{}, nil, nil)(t)
	g, err := gatewaytest.New(ctx, client, vonage.Codec{}, gatewaytest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := g.SendStop(ctx); !errors.Is(err, gateway.ErrUnsupported) {
		t.Fatalf("SendStop on Vonage: %v", err)
	}
	_ = server.Close()
	if _, err := g.Wait(ctx, func(gatewaytest.Snapshot) bool { return false }); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait = %v, want the connection's end", err)
	}
}
