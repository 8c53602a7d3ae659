package sessiontest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Client is a test caller on a WebSocket of the native protocol.
type Client struct {
	T    testing.TB
	Conn *websocket.Conn
	Ctx  context.Context
}

// Msg is a decoded server message, the fields of every message type in
// one; a binary frame has Type "binary" and its length in Bytes.
type Msg struct {
	Type        string   `json:"type"`
	Disposition string   `json:"disposition"`
	Session     string   `json:"session"`
	Position    int      `json:"position"`
	Stage       string   `json:"stage"`
	Turn        string   `json:"turn"`
	Generation  uint64   `json:"generation"`
	Segment     int      `json:"segment"`
	Delta       string   `json:"delta"`
	Encoding    string   `json:"encoding"`
	Rate        int      `json:"rate"`
	Cancelled   []string `json:"cancelled"`
	Heard       *Heard   `json:"heard"`
	Reason      string   `json:"reason"`
	Text        string   `json:"text"`
	Code        string   `json:"code"`
	Error       string   `json:"error"`
	Message     string   `json:"message"`
	Ref         string   `json:"ticket"`
	Kinds       []string `json:"kinds"`
	AudioMS     int64    `json:"audio_ms"`
	Cut         bool     `json:"cut"`
	Bytes       int      `json:"-"`
	// At is when the message was read.
	At time.Time
}

// Heard is an interrupted message's heard, as session.Heard encodes it
// (this package cannot name session's).
type Heard struct {
	Turn    string `json:"turn"`
	AudioMS int64  `json:"audio_ms"`
	Text    string `json:"text"`
}

// Send writes v as a JSON text message.
func (c *Client) Send(v any) {
	c.T.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.T.Fatal(err)
	}
	c.SendRaw(string(b))
}

// HangUp sends hangup, for a Cleanup: on a context of its own, as the
// client's ends 10 s after the dial and a test on a loaded machine (or
// one that runs beside others) outlasts it, and without failing the test
// when the connection is already gone (the rig closing ends it anyway).
func (c *Client) HangUp() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = c.Conn.Write(ctx, websocket.MessageText, []byte(`{"type":"hangup"}`))
}

// SendRaw writes s as a text message, as it is (malformed on purpose, for
// some tests).
func (c *Client) SendRaw(s string) {
	c.T.Helper()
	if err := c.Conn.Write(c.Ctx, websocket.MessageText, []byte(s)); err != nil {
		c.T.Fatal(err)
	}
}

// Read reads the next message; a text message that is not JSON fails the
// test.
func (c *Client) Read() (Msg, error) {
	typ, b, err := c.Conn.Read(c.Ctx)
	if err != nil {
		return Msg{}, err
	}
	if typ == websocket.MessageBinary {
		return Msg{Type: "binary", Bytes: len(b), At: time.Now()}, nil
	}
	var m Msg
	if err := json.Unmarshal(b, &m); err != nil {
		c.T.Fatalf("bad server JSON %s: %v", b, err)
	}
	m.At = time.Now()
	return m, nil
}

// Until reads messages until one satisfies ok, returning all read.
func (c *Client) Until(ok func(Msg) bool) []Msg {
	c.T.Helper()
	var all []Msg
	for {
		m, err := c.Read()
		if err != nil {
			c.T.Fatalf("read: %v (after %v)", err, Types(all))
		}
		all = append(all, m)
		if ok(m) {
			return all
		}
	}
}

// UntilAll reads until a message of each of types has come, in any
// order, and returns every message read.
func (c *Client) UntilAll(types ...string) []Msg {
	c.T.Helper()
	left := map[string]bool{}
	for _, typ := range types {
		left[typ] = true
	}
	return c.Until(func(m Msg) bool {
		delete(left, m.Type)
		return len(left) == 0
	})
}

// Expect reads until a message of type typ and returns it.
func (c *Client) Expect(typ string) Msg {
	c.T.Helper()
	all := c.Until(IsType(typ))
	return all[len(all)-1]
}

// IsType is Until's condition for a message of type typ.
func IsType(typ string) func(Msg) bool { return func(m Msg) bool { return m.Type == typ } }

// LastOf is the last message of type typ in ms (the zero Msg if none).
func LastOf(ms []Msg, typ string) Msg {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Type == typ {
			return ms[i]
		}
	}
	return Msg{}
}

// Types lists ms for a failure message: each type, with the stage of a
// disposition and the disposition where there is one.
func Types(ms []Msg) []string {
	var out []string
	for _, m := range ms {
		s := m.Type
		if m.Stage != "" && m.Type == "disposition" {
			s += ":" + m.Stage
		}
		if m.Disposition != "" {
			s += ":" + m.Disposition
		}
		out = append(out, s)
	}
	return out
}
