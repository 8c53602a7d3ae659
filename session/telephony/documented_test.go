package telephony

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/stages"
)

// A documented dialect is a gateway as its provider's own pages show it,
// with no frontdoor code on the gateway's side: every message the test
// sends is an example copied from the provider's documentation (or, for
// mod_audio_fork, written as its source writes it) into the codec
// package's testdata, with only the audio payload or the mark's name
// replaced; every message frontdoor sends is read as raw JSON or binary
// and compared with the provider's documented example of it (the same
// fields, none added). Each example file's source is named in its
// package's decoder tests (TestDecodeDocumented and the like).
type documented struct {
	name, path string
	protocols  []string
	pkg        string   // media/gateway/<pkg>/testdata
	opening    []string // sent verbatim at connection, in order
	format     media.Format
	media      func(t *testing.T, audio []byte) gateway.Frame // caller audio, as the provider sends it
	// out classifies a message from frontdoor: its audio, a mark's name, a
	// clear, a hang-up; and the documented example its shape must match.
	out  func(t *testing.T, m map[string]any) (audio []byte, mark string, clear, hangup bool, example string)
	echo func(t *testing.T, mark string) gateway.Frame // the provider's answer to a mark once played
	stop string                                        // the provider's end of the stream ("": it closes the socket)
}

// example reads a documented message of pkg as a JSON object. It may run
// on the peer's reader: a missing example is an error, not a Fatal.
func example(t *testing.T, pkg, file string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "media", "gateway", pkg, "testdata", file))
	if err != nil {
		t.Error(err)
		return map[string]any{}
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Errorf("%s/%s: %v", pkg, file, err)
		return map[string]any{}
	}
	return m
}

// with returns the example with the value at the dotted path replaced.
func with(t *testing.T, m map[string]any, path string, v any) gateway.Frame {
	t.Helper()
	keys := strings.Split(path, ".")
	cur := m
	for _, k := range keys[:len(keys)-1] {
		next, ok := cur[k].(map[string]any)
		if !ok {
			t.Errorf("no object %q in the example", k)
			return gateway.Frame{}
		}
		cur = next
	}
	cur[keys[len(keys)-1]] = v
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return gateway.Frame{Data: b}
}

// field reads the string at a dotted path ("" when absent).
func field(m map[string]any, path string) string {
	var cur any = m
	for _, k := range strings.Split(path, ".") {
		o, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = o[k]
	}
	s, _ := cur.(string)
	return s
}

// sameShape reports the fields of got that the documented example of the
// same message does not have, recursively.
func sameShape(got, doc map[string]any, at string) []string {
	var extra []string
	for k, v := range got {
		dv, ok := doc[k]
		if !ok {
			extra = append(extra, at+k)
			continue
		}
		if gm, ok := v.(map[string]any); ok {
			if dm, ok := dv.(map[string]any); ok {
				extra = append(extra, sameShape(gm, dm, at+k+".")...)
			}
		}
	}
	return extra
}

// b64 decodes a payload frontdoor sent; it runs on the peer's reader, so
// a bad one is an error, not a Fatal.
func b64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Errorf("payload: %v", err)
	}
	return b
}

func binaryMedia(_ *testing.T, audio []byte) gateway.Frame {
	return gateway.Frame{Binary: true, Data: audio}
}

var documentedDialects = []documented{
	{
		name: "plivo", path: "/v1/plivo", pkg: "plivo", opening: []string{"start.json"}, format: media.Telephony,
		media: func(t *testing.T, a []byte) gateway.Frame {
			return with(t, example(t, "plivo", "media.json"), "media.payload", base64.StdEncoding.EncodeToString(a))
		},
		out: func(t *testing.T, m map[string]any) ([]byte, string, bool, bool, string) {
			switch m["event"] {
			case "playAudio":
				return b64(t, field(m, "media.payload")), "", false, false, "playAudio.json"
			case "checkpoint":
				return nil, field(m, "name"), false, false, "checkpoint.json"
			case "clearAudio":
				return nil, "", true, false, "clearAudio.json"
			}
			return nil, "", false, false, ""
		},
		echo: func(t *testing.T, mark string) gateway.Frame {
			return with(t, example(t, "plivo", "playedStream.json"), "name", mark)
		},
	},
	{
		name: "exotel", path: "/v1/exotel", pkg: "exotel", opening: []string{"connected.json", "start.json"}, format: gateway.L16(8000),
		media: func(t *testing.T, a []byte) gateway.Frame {
			return with(t, example(t, "exotel", "media.json"), "media.payload", base64.StdEncoding.EncodeToString(a))
		},
		out: func(t *testing.T, m map[string]any) ([]byte, string, bool, bool, string) {
			switch m["event"] {
			case "media":
				return b64(t, field(m, "media.payload")), "", false, false, "media.json"
			case "mark":
				return nil, field(m, "mark.name"), false, false, "mark_out.json"
			case "clear":
				return nil, "", true, false, "clear.json"
			}
			return nil, "", false, false, ""
		},
		echo: func(t *testing.T, mark string) gateway.Frame {
			return with(t, example(t, "exotel", "mark.json"), "mark.name", mark)
		},
		stop: "stop.json",
	},
	{
		name: "vonage", path: "/v1/vonage", pkg: "vonage", opening: []string{"connected.json"}, format: gateway.L16(16000),
		media: binaryMedia,
		out: func(t *testing.T, m map[string]any) ([]byte, string, bool, bool, string) {
			switch m["action"] {
			case "notify":
				return nil, field(m, "payload.name"), false, false, "notify_action.json"
			case "clear":
				return nil, "", true, false, "clear.json"
			}
			return nil, "", false, false, ""
		},
		echo: func(t *testing.T, mark string) gateway.Frame {
			return with(t, example(t, "vonage", "notify.json"), "payload.name", mark)
		},
	},
	{
		name: "asterisk", path: "/v1/asterisk?control=json", protocols: []string{"media"}, pkg: "asterisk",
		opening: []string{"media_start.json"}, format: media.Telephony, media: binaryMedia,
		out: func(t *testing.T, m map[string]any) ([]byte, string, bool, bool, string) {
			switch m["command"] {
			case "MARK_MEDIA":
				return nil, field(m, "correlation_id"), false, false, ""
			case "FLUSH_MEDIA":
				return nil, "", true, false, ""
			case "HANGUP":
				return nil, "", false, true, ""
			}
			return nil, "", false, false, ""
		},
		echo: func(t *testing.T, mark string) gateway.Frame {
			return with(t, example(t, "asterisk", "mark_processed.json"), "correlation_id", mark)
		},
	},
	{
		name: "jambonz", path: "/v1/jambonz", protocols: []string{"audio.jambonz.org"}, pkg: "jambonz",
		opening: []string{"metadata.json"}, format: gateway.L16(8000), media: binaryMedia,
		out: func(t *testing.T, m map[string]any) ([]byte, string, bool, bool, string) {
			switch m["type"] {
			case "mark":
				return nil, field(m, "data.name"), false, false, "mark.json"
			case "killAudio":
				return nil, "", true, false, "kill_audio.json"
			case "disconnect":
				return nil, "", false, true, "disconnect.json"
			}
			return nil, "", false, false, ""
		},
		echo: func(t *testing.T, mark string) gateway.Frame {
			return with(t, example(t, "jambonz", "mark_playout.json"), "data.name", mark)
		},
	},
	{
		// mod_audio_fork has no protocol page: its messages are as its
		// source (jambonz/freeswitch-modules lws_glue.cpp) reads and writes
		// them (freeswitch/testdata/fork_*.json), and its metadata is what
		// the dialplan passes.
		name: "freeswitch", path: "/v1/freeswitch", protocols: []string{"audio.drachtio.org"}, pkg: "freeswitch",
		opening: []string{"metadata.json"}, format: gateway.L16(8000), media: binaryMedia,
		out: func(t *testing.T, m map[string]any) ([]byte, string, bool, bool, string) {
			switch m["type"] {
			case "mark":
				return nil, field(m, "data.name"), false, false, "fork_mark.json"
			case "killAudio":
				return nil, "", true, false, "fork_kill_audio.json"
			case "disconnect":
				return nil, "", false, true, "fork_disconnect.json"
			}
			return nil, "", false, false, ""
		},
		echo: func(t *testing.T, mark string) gateway.Frame {
			return with(t, example(t, "freeswitch", "fork_mark_playout.json"), "data.name", mark)
		},
	},
}

// docPeer is the gateway's side of a documented call: it reads what
// frontdoor sends, checks each message against the provider's example,
// and answers marks as the provider does.
type docPeer struct {
	t  *testing.T
	d  documented
	ws *websocket.Conn

	mu       sync.Mutex
	audio    int // bytes of audio received
	marks    []string
	clears   int
	hangups  int
	err      error // how the socket ended
	bad      []string
	changed  chan struct{}
	finished chan struct{}
}

func dialDocumented(ctx context.Context, t *testing.T, r *rig, d documented) *docPeer {
	t.Helper()
	ws, _, err := websocket.Dial(ctx, r.WSURL(d.path), &websocket.DialOptions{Subprotocols: d.protocols})
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(1 << 20)
	p := &docPeer{t: t, d: d, ws: ws, changed: make(chan struct{}, 1), finished: make(chan struct{})}
	t.Cleanup(func() { ws.CloseNow(); <-p.finished })
	for _, f := range d.opening {
		b, err := os.ReadFile(filepath.Join("..", "..", "media", "gateway", d.pkg, "testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := ws.Write(ctx, websocket.MessageText, b); err != nil {
			t.Fatal(err)
		}
	}
	go p.read(ctx)
	return p
}

func (p *docPeer) read(ctx context.Context) {
	defer close(p.finished)
	for {
		typ, b, err := p.ws.Read(ctx)
		if err != nil {
			p.update(func() { p.err = err })
			return
		}
		if typ == websocket.MessageBinary {
			p.update(func() { p.audio += len(b) })
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			p.update(func() { p.bad = append(p.bad, "not JSON: "+string(b)) })
			continue
		}
		audio, mark, clear, hangup, ex := p.d.out(p.t, m)
		if ex != "" {
			if extra := sameShape(m, example(p.t, p.d.pkg, ex), ""); len(extra) > 0 {
				p.update(func() {
					p.bad = append(p.bad, truncate(string(b), 160)+" has fields "+strings.Join(extra, ", ")+" that "+ex+" has not")
				})
			}
		}
		p.update(func() {
			p.audio += len(audio)
			if mark != "" {
				p.marks = append(p.marks, mark)
			}
			if clear {
				p.clears++
			}
			if hangup {
				p.hangups++
			}
		})
		if mark != "" {
			// The provider answers a mark once the audio before it has
			// played; this gateway plays at once.
			f := p.d.echo(p.t, mark)
			_ = p.ws.Write(ctx, websocket.MessageText, f.Data)
		}
	}
}

func (p *docPeer) update(f func()) {
	p.mu.Lock()
	f()
	p.mu.Unlock()
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// wait blocks until cond holds of the peer (under its lock).
func (p *docPeer) wait(ctx context.Context, what string, cond func() bool) {
	p.t.Helper()
	for {
		p.mu.Lock()
		ok := cond()
		p.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			p.mu.Lock()
			defer p.mu.Unlock()
			p.t.Fatalf("%s: waiting for %s: %v (audio %d bytes, marks %v, clears %d, hang-ups %d, end %v)",
				p.d.name, what, ctx.Err(), p.audio, p.marks, p.clears, p.hangups, p.err)
		case <-p.changed:
		}
	}
}

// speak sends samples as the provider's media messages of 20 ms.
func (p *docPeer) speak(ctx context.Context, samples []int16) {
	p.t.Helper()
	a := gateway.AppendPCM(nil, p.d.format, samples)
	n := p.d.format.BytesPer(media.FrameDuration)
	for len(a) > 0 {
		k := min(n, len(a))
		f := p.d.media(p.t, a[:k])
		typ := websocket.MessageText
		if f.Binary {
			typ = websocket.MessageBinary
		}
		if err := p.ws.Write(ctx, typ, f.Data); err != nil {
			p.t.Fatal(err)
		}
		a = a[k:]
	}
}

func (p *docPeer) checkShapes() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range p.bad {
		p.t.Errorf("%s: not as documented: %s", p.d.name, b)
	}
}

// TestDocumentedCall: each dialect's gateway, speaking only its provider's
// documented messages, from connection to hang-up: its start, speech as
// its media messages, a reply heard, barge-in answered with the dialect's
// clear, every mark frontdoor places answered with the provider's echo, a
// second reply, and the provider's end of the stream; frontdoor counts no
// protocol error (every documented message was understood), every
// message it sent has only the fields of the provider's example of it,
// and the session lease is freed.
func TestDocumentedCall(t *testing.T) {
	t.Parallel()
	for _, d := range documentedDialects {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			logs := &logRecords{}
			logs.dumpOnFailure(t)
			r := newRig(t, func(c *session.Config, s *stub.Settings) {
				c.Recognizer = stub.NewRecognizer(stub.Settings{})
				c.Logger = slog.New(logs)
				s.FrameCount = 100 // a 2 s reply
				s.Tokens = 8
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			p := dialDocumented(ctx, t, r, d)
			logs.waitAdmitted(t, 1)
			rate := d.format.SampleRate
			p.speak(ctx, sessiontest.Speech(t, "hello-8k.wav", rate))
			p.speak(ctx, silence(600*time.Millisecond, rate))
			second := d.format.BytesPer(time.Second)
			p.wait(ctx, "a reply", func() bool { return p.audio >= second/2 })
			p.speak(ctx, sessiontest.Speech(t, "stop-8k.wav", rate))
			p.wait(ctx, "the clear", func() bool { return p.clears >= 1 })
			p.speak(ctx, silence(600*time.Millisecond, rate))
			p.wait(ctx, "a mark after the second reply", func() bool { return len(p.marks) >= 1 })
			if d.stop != "" {
				b, err := os.ReadFile(filepath.Join("..", "..", "media", "gateway", d.pkg, "testdata", d.stop))
				if err != nil {
					t.Fatal(err)
				}
				if err := p.ws.Write(ctx, websocket.MessageText, b); err != nil {
					t.Fatal(err)
				}
			} else {
				_ = p.ws.Close(websocket.StatusNormalClosure, "")
			}
			sessiontest.WaitFor(t, "the session lease freed", func() bool { return r.stage(session.StageSession).Leased == 0 })
			if n := r.Counter("frontdoor_protocol_errors_total"); n != 0 {
				t.Fatalf("%v protocol errors on the provider's own messages", n)
			}
			p.checkShapes()
		})
	}
}

// TestDocumentedRefusal: each dialect's gateway, speaking only its
// provider's documented messages, is refused with the session stage full:
// it hears the prompt as audio and the stream ends, with the dialect's
// hang-up where it has one.
func TestDocumentedRefusal(t *testing.T) {
	t.Parallel()
	for _, d := range documentedDialects {
		t.Run(d.name, func(t *testing.T) {
			logs := &logRecords{}
			logs.dumpOnFailure(t)
			r := newRig(t, func(c *session.Config, s *stub.Settings) {
				c.Session = stages.Limits{Slots: 1, Waiting: 1, MaxAge: 100 * time.Millisecond}
				c.Logger = slog.New(logs)
			})
			holder := r.Admitted()
			defer holder.Send(map[string]any{"type": "hangup"})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			p := dialDocumented(ctx, t, r, d)
			p.wait(ctx, "the end of the refused stream", func() bool { return p.err != nil })
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.audio == 0 {
				t.Fatal("the refused caller heard no prompt")
			}
			hangs := slices.Contains([]string{"asterisk", "jambonz", "freeswitch"}, d.name)
			if hangs && p.hangups != 1 {
				t.Fatalf("%d hang-ups, want the dialect's one", p.hangups)
			}
			if !hangs && websocket.CloseStatus(p.err) != websocket.StatusTryAgainLater {
				t.Fatalf("closed with %v, want 1013", p.err)
			}
			for _, b := range p.bad {
				t.Errorf("not as documented: %s", b)
			}
		})
	}
}
