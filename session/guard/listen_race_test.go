package guard

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/server"
	"github.com/frontdoorhq/frontdoor/stages"
)

// armHook is a net.Conn whose SetReadDeadline calls hook first: a test can
// hold a Read of conn between computing its idle deadline and setting it.
type armHook struct {
	net.Conn
	hook func(t time.Time)
}

func (a *armHook) SetReadDeadline(t time.Time) error {
	a.hook(t)
	return a.Conn.SetReadDeadline(t)
}

// A deadline set while Read is arming its idle deadline wins: net/http's
// Hijack sets one in the past to stop its background read and waits for
// that Read to return.
func TestConnReadKeepsDeadlineSetWhileArming(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	defer a.Close()
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h := &armHook{Conn: a, hook: func(d time.Time) {
		if d.After(time.Now().Add(time.Minute)) { // Read's idle deadline
			once.Do(func() { close(entered); <-release })
		}
	}}
	c := &conn{Conn: h, l: &Listener{}, idle: time.Hour}

	read := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		read <- err
	}()
	<-entered
	aborted := make(chan struct{})
	go func() { // what abortPendingRead does
		_ = c.SetReadDeadline(time.Unix(1, 0))
		close(aborted)
	}()
	select { // the abort runs now, or (fixed) waits for Read's arming
	case <-aborted:
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	select {
	case err := <-read:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read: %v, want the deadline set while it armed", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("read still waiting: its idle deadline overwrote the one set meanwhile (a hijack would wait for the client's next byte)")
	}
	<-aborted
}

// slowUpgrade widens, on every upgrade, the window that net/http leaves
// open about once in a thousand upgrades on a busy machine: the 101 answer
// takes 20 ms to write, so the server's background read (started before
// the handler) is arming its idle deadline when Hijack stops it, and
// arming a far-future read deadline takes 50 ms.
type slowUpgrade struct{ net.Listener }

func (l slowUpgrade) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &slowConn{armHook{Conn: c, hook: func(d time.Time) {
		if d.After(time.Now().Add(time.Hour)) {
			time.Sleep(50 * time.Millisecond)
		}
	}}}, nil
}

type slowConn struct{ armHook }

func (c *slowConn) Write(b []byte) (int, error) {
	if strings.HasPrefix(string(b), "HTTP/1.1 101 ") {
		time.Sleep(20 * time.Millisecond)
	}
	return c.Conn.Write(b)
}

// Every caller upgraded through the guard's listener hears that its
// session is admitted, without saying anything first.
func TestEveryUpgradeBehindListenerIsAdmitted(t *testing.T) {
	const callers = 40
	st := stub.Settings{Tokens: 1, FrameCount: 1, Rate: 16000}
	model, synth := stub.NewModel(st), stub.NewSynthesizer(st)
	defer model.Close()
	defer synth.Close()
	srv, err := server.New(server.Config{Config: session.Config{
		Session:      stages.Limits{Slots: callers, Waiting: callers, MaxAge: 5 * time.Second},
		ModelBackend: model, Synthesizer: synth,
	}})
	if err != nil {
		t.Fatal(err)
	}
	lims := ServerLimits{ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 5 * time.Second, ConnIdle: 24 * time.Hour}
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = lims.NewServer(srv.Handler(), nil)
	ts.Listener = lims.Listen(slowUpgrade{ts.Listener})
	ts.Start()
	defer ts.Close()
	defer srv.Close()
	url := "ws" + strings.TrimPrefix(ts.URL, "http") + "/v1/session"

	errs := make(chan error, callers)
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() { errs <- admitted(url) })
	}
	wg.Wait()
	close(errs)
	silent := 0
	for err := range errs {
		if err != nil {
			silent++
			t.Log(err)
		}
	}
	if silent > 0 {
		t.Fatalf("%d of %d callers never heard `session` admitted", silent, callers)
	}
}

// admitted dials url and waits (3 s at most) for the session message.
func admitted(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return err
	}
	defer c.CloseNow()
	_, b, err := c.Read(ctx)
	if err != nil {
		return err
	}
	var m struct{ Type, Disposition string }
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	if m.Type != "session" || m.Disposition != "admitted" {
		return errors.New("first message: " + string(b))
	}
	return c.Close(websocket.StatusNormalClosure, "")
}
