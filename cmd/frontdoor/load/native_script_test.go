package load_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/coder/websocket"
)

// nativeScript serves /v1/session by script: play is frontdoor's side of
// each call, on a peer that notes everything the caller sent, so that a
// test's outcome is exact.
func nativeScript(t *testing.T, play func(p *nativePeer)) (*httptest.Server, *heardLog) {
	t.Helper()
	heard := &heardLog{}
	h := http.NewServeMux()
	h.HandleFunc("/v1/session", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		play(&nativePeer{c: c, ctx: r.Context(), heard: heard})
	})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts, heard
}

// heardLog is what a scripted server heard from its callers, in order.
type heardLog struct {
	mu     sync.Mutex
	order  []string         // "binary", or a text message's type
	text   []map[string]any // the text messages
	binary []int            // the binary frames' lengths
}

// first returns the first text message of type typ, or nil.
func (l *heardLog) first(typ string) map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.text {
		if m["type"] == typ {
			return m
		}
	}
	return nil
}

// nativePeer is the scripted server's end of one call.
type nativePeer struct {
	c     *websocket.Conn
	ctx   context.Context
	heard *heardLog
}

func (p *nativePeer) send(v map[string]any) {
	b, _ := json.Marshal(v)
	_ = p.c.Write(p.ctx, websocket.MessageText, b)
}

// audio sends a binary frame of n bytes of silence.
func (p *nativePeer) audio(n int) { _ = p.c.Write(p.ctx, websocket.MessageBinary, make([]byte, n)) }

// recv reads the caller's next message: nil for a binary frame.
func (p *nativePeer) recv() (map[string]any, error) {
	typ, b, err := p.c.Read(p.ctx)
	if err != nil {
		return nil, err
	}
	l := p.heard
	l.mu.Lock()
	defer l.mu.Unlock()
	if typ == websocket.MessageBinary {
		l.order = append(l.order, "binary")
		l.binary = append(l.binary, len(b))
		return nil, nil
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	l.order = append(l.order, fmt.Sprint(m["type"]))
	l.text = append(l.text, m)
	return m, nil
}

// read returns the caller's next text message; nil once the connection
// ended.
func (p *nativePeer) read() map[string]any {
	for {
		m, err := p.recv()
		if err != nil || m != nil {
			return m
		}
	}
}

// readType returns the caller's next text message of type typ; nil once
// the connection ended.
func (p *nativePeer) readType(typ string) map[string]any {
	for {
		m := p.read()
		if m == nil || m["type"] == typ {
			return m
		}
	}
}

// hangUp waits for the caller's hangup and closes the call normally.
func (p *nativePeer) hangUp() {
	if p.readType("hangup") != nil {
		_ = p.c.Close(websocket.StatusNormalClosure, "")
	}
}
