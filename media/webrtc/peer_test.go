package webrtc

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/vad"
	"github.com/frontdoorhq/frontdoor/media/wav"
)

// pipe delivers signals to a peer in order from its own goroutine, as a
// WebSocket reader would.
type pipe struct {
	ch chan Signal
}

func (p *pipe) Send(ctx context.Context, s Signal) error {
	select {
	case p.ch <- s:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *pipe) pump(ctx context.Context, t *testing.T, to *Peer, wg *sync.WaitGroup) {
	defer wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case s := <-p.ch:
			if err := to.HandleSignal(ctx, s); err != nil && ctx.Err() == nil {
				t.Errorf("HandleSignal(%s): %v", s.Type, err)
			}
		}
	}
}

func tone(d time.Duration) []int16 {
	s := make([]int16, int(d.Seconds()*8000))
	for i := range s {
		s[i] = int16(6000 * math.Sin(2*math.Pi*440*float64(i)/8000))
	}
	return s
}

func wait(t *testing.T, ctx context.Context, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestPeersExchangePCMU connects a server peer and a "browser" peer on
// loopback, exchanges events on the data channel and audio both ways, and
// checks that caller speech detected by the VAD stops the server's reply.
func TestPeersExchangePCMU(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	det, _ := vad.New(vad.Config{SampleRate: 8000})
	speech := make(chan vad.Event, 4)
	var cleared atomic.Int64
	serverEvents := make(chan string, 4)
	var sentUtterances sync.Map
	var server *Peer
	toServer, toBrowser := &pipe{make(chan Signal, 64)}, &pipe{make(chan Signal, 64)}
	server, err := NewPeer(Config{
		LoopbackOnly: true,
		OnAudio: func(pcm []int16) {
			for _, e := range det.Process(nil, pcm) {
				if e.Kind == vad.SpeechStart {
					cleared.Store(int64(server.ClearAudio())) // barge-in
				}
				speech <- e
			}
		},
		OnEvent:         func(b []byte) { serverEvents <- string(b) },
		OnUtteranceSent: func(u string) { sentUtterances.Store(u, true) },
	}, toBrowser)
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()

	var mu sync.Mutex
	var heard int
	var lastPacket time.Time
	browserEvents := make(chan string, 4)
	browser, err := NewPeer(Config{
		LoopbackOnly: true,
		OnAudio: func(pcm []int16) {
			mu.Lock()
			heard += len(pcm)
			lastPacket = time.Now()
			mu.Unlock()
		},
		OnEvent: func(b []byte) { browserEvents <- string(b) },
	}, toServer)
	if err != nil {
		t.Fatal(err)
	}
	defer browser.Close()

	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Add(4)
	go toServer.pump(ctx, t, server, &wg)
	go toBrowser.pump(ctx, t, browser, &wg)
	go func() { defer wg.Done(); _ = server.Run(ctx) }()
	go func() { defer wg.Done(); _ = browser.Run(ctx) }()

	if err := browser.Offer(ctx); err != nil {
		t.Fatal(err)
	}
	wait(t, ctx, server.Connected(), "server connected")
	wait(t, ctx, browser.Open(), "browser data channel")
	wait(t, ctx, server.Open(), "server data channel")

	if err := browser.SendEvent([]byte(`{"type":"hello"}`)); err != nil {
		t.Fatal(err)
	}
	if got := <-serverEvents; got != `{"type":"hello"}` {
		t.Fatalf("server got event %s", got)
	}
	if err := server.SendEvent([]byte(`{"type":"welcome"}`)); err != nil {
		t.Fatal(err)
	}
	if got := <-browserEvents; got != `{"type":"welcome"}` {
		t.Fatalf("browser got event %s", got)
	}

	// The server replies with 3 s of audio; after half a second the caller talks.
	if err := server.SendPCM(tone(3 * time.Second)); err != nil {
		t.Fatal(err)
	}
	server.EndUtterance("reply")
	for {
		mu.Lock()
		h := heard
		mu.Unlock()
		if h >= 4000 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("browser heard only %d samples", h)
		case <-time.After(10 * time.Millisecond):
		}
	}
	a, err := wav.ReadFile("../testdata/hello-8k.wav")
	if err != nil {
		t.Fatal(err)
	}
	if err := browser.SendPCM(a.Samples); err != nil {
		t.Fatal(err)
	}
	var start vad.Event
	select {
	case start = <-speech:
	case <-ctx.Done():
		t.Fatal("server VAD never heard the caller")
	}
	if start.Kind != vad.SpeechStart {
		t.Fatalf("first VAD event %v", start.Kind)
	}
	if cleared.Load() <= 0 {
		t.Fatal("barge-in cleared nothing")
	}
	// The reply stops: nothing reaches the browser once the clear has taken effect.
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	h, last := heard, lastPacket
	mu.Unlock()
	if since := time.Since(last); since < 200*time.Millisecond {
		t.Errorf("browser still receiving audio %v after the barge-in", since)
	}
	if h >= 3*8000 {
		t.Errorf("browser heard all %d samples of the reply", h)
	}
	if _, ok := sentUtterances.Load("reply"); ok {
		t.Error("cleared utterance reported as sent")
	}
}

func TestDecodeSignal(t *testing.T) {
	good := []string{
		`{"type":"offer","sdp":"v=0"}`,
		`{"type":"candidate","candidate":{"candidate":"candidate:1 1 udp 1 127.0.0.1 5000 typ host","sdpMid":"0","sdpMLineIndex":0}}`,
	}
	for _, s := range good {
		if _, err := DecodeSignal([]byte(s)); err != nil {
			t.Errorf("DecodeSignal(%s): %v", s, err)
		}
	}
	bad := []string{`{`, `{"type":"offer"}`, `{"type":"bye"}`, `{"type":"candidate"}`, `{"type":"answer","sdp":"x","extra":1}`}
	for _, s := range bad {
		if _, err := DecodeSignal([]byte(s)); !errors.Is(err, ErrSignal) {
			t.Errorf("DecodeSignal(%s) = %v, want ErrSignal", s, err)
		}
	}
}
