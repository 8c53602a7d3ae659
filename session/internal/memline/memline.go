// Package memline is a session.Transport in memory, for tests that drive
// the call engine black-box with no socket: the test speaks as the caller
// in the native protocol's JSON, and reads what the call sends, decoded as
// package sessiontest decodes a WebSocket's messages. With no socket and
// no real wait, such a test runs inside a testing/synctest bubble, where
// every deadline of the engine passes in fake time.
package memline

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/session/wire"
)

// ErrClosed is what Recv, Send and Say return once the line is closed.
var ErrClosed = errors.New("memline: closed")

// Line is one call's connection, both ends: the engine's Transport on one
// side, the test's caller (Say, Next, Until) on the other. Messages the
// call sends wait in an unbounded log until the caller reads them, so the
// engine never blocks on a test that reads late.
type Line struct {
	in     chan wire.ClientEvent
	closed chan struct{}

	mu     sync.Mutex
	log    []sessiontest.Msg
	read   int           // the caller's place in log
	more   chan struct{} // closed and replaced when log grows or the line closes
	status wire.CloseStatus
	reason string
	once   sync.Once
}

// New returns an open Line.
func New() *Line {
	return &Line{in: make(chan wire.ClientEvent), closed: make(chan struct{}), more: make(chan struct{})}
}

// Recv implements session.Transport: the caller's next event.
func (l *Line) Recv(ctx context.Context) (wire.ClientEvent, error) {
	select {
	case ev := <-l.in:
		return ev, nil
	case <-l.closed:
		return wire.ClientEvent{}, ErrClosed
	case <-ctx.Done():
		return wire.ClientEvent{}, ctx.Err()
	}
}

// Send implements session.Transport: msg is kept as the caller would read
// its JSON.
func (l *Line) Send(_ context.Context, msg wire.Message) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	var m sessiontest.Msg
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	return l.add(m)
}

// SendAudio implements session.Transport: a frame is kept as its length.
func (l *Line) SendAudio(_ context.Context, audio []byte) error {
	return l.add(sessiontest.Msg{Type: "binary", Bytes: len(audio)})
}

func (l *Line) add(m sessiontest.Msg) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.closed:
		return ErrClosed
	default:
	}
	l.log = append(l.log, m)
	close(l.more)
	l.more = make(chan struct{})
	return nil
}

// Close implements session.Transport.
func (l *Line) Close(status wire.CloseStatus, reason string) {
	l.once.Do(func() {
		l.mu.Lock()
		l.status, l.reason = status, reason
		close(l.closed)
		close(l.more)
		l.more = make(chan struct{})
		l.mu.Unlock()
	})
}

// Closed reports whether the call closed the line, and with what.
func (l *Line) Closed() (wire.CloseStatus, string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.closed:
		return l.status, l.reason, true
	default:
		return 0, "", false
	}
}

// Say sends one native-protocol text message (JSON) as the caller; it
// fails the test if the message does not decode, and returns ErrClosed
// once the call has closed the line.
func (l *Line) Say(t testing.TB, msg string) error {
	t.Helper()
	ev, err := wire.DecodeText([]byte(msg))
	if err != nil {
		t.Fatalf("memline: %s: %v", msg, err)
	}
	select {
	case l.in <- ev:
		return nil
	case <-l.closed:
		return ErrClosed
	}
}

// Next returns the next message the call sent, waiting for it; ok is
// false once the line is closed and every message was read.
func (l *Line) Next(ctx context.Context) (m sessiontest.Msg, ok bool) {
	for {
		l.mu.Lock()
		if l.read < len(l.log) {
			m = l.log[l.read]
			l.read++
			l.mu.Unlock()
			return m, true
		}
		more := l.more
		l.mu.Unlock()
		select {
		case <-more:
		case <-l.closed:
			l.mu.Lock()
			left := l.read < len(l.log)
			l.mu.Unlock()
			if !left {
				return m, false
			}
		case <-ctx.Done():
			return m, false
		}
	}
}

// Until reads messages up to and including the first that ok accepts,
// and returns them; it fails the test if the line closes first.
func (l *Line) Until(t testing.TB, ok func(sessiontest.Msg) bool) []sessiontest.Msg {
	t.Helper()
	var got []sessiontest.Msg
	for {
		m, more := l.Next(context.Background())
		if !more {
			t.Fatalf("memline: closed before the message waited for; read %v", sessiontest.Types(got))
		}
		got = append(got, m)
		if ok(m) {
			return got
		}
	}
}
