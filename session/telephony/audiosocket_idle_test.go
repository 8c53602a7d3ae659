package telephony

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/gateway/audiosocket"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/heartbeat"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

// protocolErrors is frontdoor_protocol_errors_total{code} of the rig's engine.
func protocolErrors(t testing.TB, r *rig, code string) float64 {
	t.Helper()
	mfs, err := r.Engine.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "frontdoor_protocol_errors_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "code" && l.GetValue() == code {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// audioSocketStart opens an AudioSocket connection to the rig as Asterisk
// does (its UUID message first) and waits for the call's session lease.
func audioSocketStart(t *testing.T, r *rig) net.Conn {
	t.Helper()
	c := r.dialAudioSocket()
	id, err := audiosocket.ParseUUID("40325b1a-8664-4d3a-8e4e-5e7b2b8d6d1c")
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := audiosocket.Append(nil, audiosocket.KindUUID, id)
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	sessiontest.WaitFor(t, "the session lease", func() bool { return r.stage(session.StageSession).Leased == 1 })
	return c
}

// waitClosed reads c (discarding what the server sends) until the server
// closes it.
func waitClosed(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, c); err != nil {
		t.Fatalf("the server did not close the silent connection: %v", err)
	}
}

// TestAudioSocketSilentPeer: an AudioSocket peer that keeps its TCP
// connection open and sends nothing after its UUID is closed once it has
// been silent for the heartbeat's bound (25 s, as a WebSocket peer that
// stops answering pings), on the engine's clock: not a moment before,
// and its session lease is freed.
//
// The clock moves only once the call's one write (its `session`) was
// handed to the line, and then in steps shorter than the outbound
// timeout: the engine's stall watch times a write in progress on the
// same clock, and a jump of 24 s over a write that real time had not let
// finish read as a caller not reading (end=slow_reader), which closed
// the call before the idle watch could (a flake under load).
func TestAudioSocketSilentPeer(t *testing.T) {
	t.Parallel()
	clock := stagestest.NewClock(stagestest.Epoch)
	logs := &logRecords{}
	logs.dumpOnFailure(t)
	r := newRig(t, func(c *session.Config, _ *stub.Settings) { c.Clock = clock },
		rigGateway(func(gc *GatewayConfig) { gc.Logger = slog.New(logs) }))
	c := audioSocketStart(t, r)
	sessiontest.WaitFor(t, "the session message sent", func() bool { return len(logs.find("audiosocket: session")) == 1 })
	bound := heartbeat.Default.Bound()
	for range bound/time.Second - 1 {
		clock.Advance(time.Second)
	}
	if got := protocolErrors(t, r, CodeAudioSocketIdle); got != 0 {
		t.Fatalf("closed after %v of silence, before the %v bound", bound-time.Second, bound)
	}
	clock.Advance(time.Second)
	waitClosed(t, c)
	if got := protocolErrors(t, r, CodeAudioSocketIdle); got != 1 {
		t.Fatalf("%s counted %v, want 1", CodeAudioSocketIdle, got)
	}
	sessiontest.WaitFor(t, "the lease freed", func() bool { return r.stage(session.StageSession).Leased == 0 })
}

// TestAudioSocketIdleRealSockets: on the wall clock and real sockets, a
// peer that sends a frame every 20 ms for three times the idle bound
// keeps its call; once it falls silent it is closed and its lease freed.
func TestAudioSocketIdleRealSockets(t *testing.T) {
	t.Parallel()
	const idle = 300 * time.Millisecond
	r := newRig(t, rigGateway(func(gc *GatewayConfig) { gc.AudioSocketIdle = idle }))
	c := audioSocketStart(t, r)
	frame, _ := audiosocket.Append(nil, audiosocket.KindSlin, make([]byte, 320))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() { _, _ = io.Copy(io.Discard, c) }() // the greeting, if any
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(3 * idle); time.Now().Before(end); {
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-tick.C:
		}
		if _, err := c.Write(frame); err != nil {
			t.Fatalf("closed while the peer was sending: %v", err)
		}
	}
	if got := protocolErrors(t, r, CodeAudioSocketIdle); got != 0 {
		t.Fatalf("a peer sending every 20 ms was closed for silence")
	}
	sessiontest.WaitFor(t, "the silent peer closed", func() bool { return protocolErrors(t, r, CodeAudioSocketIdle) == 1 })
	sessiontest.WaitFor(t, "the lease freed", func() bool { return r.stage(session.StageSession).Leased == 0 })
}
