package guard

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/server"
	"github.com/frontdoorhq/frontdoor/stages"
)

// The session server's native handler returns once a call is accepted;
// the call still counts against its tenant's cap until it has ended.
func TestTenantCapHeldForTheWholeCall(t *testing.T) {
	keys, err := ReadAPIKeys(strings.NewReader("acme caller acme-key-0123456789\n"))
	if err != nil {
		t.Fatal(err)
	}
	st := stub.Settings{Tokens: 1, FrameCount: 1, Rate: 16000}
	model, synth := stub.NewModel(st), stub.NewSynthesizer(st)
	defer model.Close()
	defer synth.Close()
	srv, err := server.New(server.Config{Config: session.Config{
		Session:      stages.Limits{Slots: 4, Waiting: 4, MaxAge: 5 * time.Second},
		ModelBackend: model, Synthesizer: synth,
	}})
	if err != nil {
		t.Fatal(err)
	}
	g := New(Config{Auth: keys, TenantSessions: 1})
	ts := httptest.NewServer(g.Handler(srv.Handler(), Public))
	defer ts.Close()
	defer srv.Close()
	url := "ws" + strings.TrimPrefix(ts.URL, "http") + "/v1/session"
	auth := &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer acme-key-0123456789"}}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	call := func() *websocket.Conn {
		t.Helper()
		c, _, err := websocket.Dial(ctx, url, auth)
		if err != nil {
			t.Fatal(err)
		}
		_, b, err := c.Read(ctx)
		var m struct{ Type, Disposition string }
		if err != nil || json.Unmarshal(b, &m) != nil || m.Disposition != "admitted" {
			t.Fatalf("first call: %s %v", b, err)
		}
		return c
	}
	c := call()
	defer c.CloseNow()
	if _, resp, err := websocket.Dial(ctx, url, auth); err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("second call while the first goes on: %v %v, want 429", err, resp)
	}
	if n := g.Sessions("acme"); n != 1 {
		t.Fatalf("acme has %d calls counted, want 1", n)
	}
	if err := c.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for g.Sessions("acme") != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the ended call still counts against its tenant")
		}
		time.Sleep(5 * time.Millisecond)
	}
	call().CloseNow() // room again
}
