package main

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// metric reads one sample of /metrics ("name{labels}"; 0 when absent).
func metric(t *testing.T, base, sample string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), sample+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// TestSecuritySlowReadersFreeSynthesis: callers that send a turn and never
// read its reply hold every synthesis slot only until their writes stall
// for the slow-reader bound (5 s): then each call is dropped, its turn ends
// typed (cancelled or failed) and its synthesis lease is back, paced or
// not; a reading caller is answered after.
func TestSecuritySlowReadersFreeSynthesis(t *testing.T) {
	t.Parallel()
	for _, pace := range []string{"false", "true"} {
		t.Run("pace="+pace, func(t *testing.T) {
			p := startServe(t, nil, "-synth-slots", "2", "-stub-frame-count", "20000", "-stub-tokens", "50", "-pace="+pace)
			base := "http://" + p.addr
			synth := func() map[string]any { return stagesView(t, base, "")["synthesis"] }
			// Small client socket buffers: the server meets the stall after
			// kilobytes, not the megabytes loopback would absorb.
			small := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
				if tc, ok := c.(*net.TCPConn); ok {
					_ = tc.SetReadBuffer(4 << 10)
				}
				return c, err
			}}}
			for i := range 2 {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				c, _, err := websocket.Dial(ctx, p.ws("/v1/session"), &websocket.DialOptions{HTTPClient: small})
				cancel()
				if err != nil {
					t.Fatal(err)
				}
				defer c.CloseNow()
				next(t, c, "session")
				send(t, c, `{"type":"turn","id":"hog`+strconv.Itoa(i)+`","text":"talk a lot"}`)
				// ... and never read again.
			}
			waitFor(t, 5*time.Second, "both synthesis slots held", func() bool { return num(synth(), "leased") == 2 })
			held := time.Now()
			waitFor(t, 20*time.Second, "the synthesis slots to be given back", func() bool { return num(synth(), "leased") == 0 })
			t.Logf("synthesis slots held by non-reading callers for %v (slow-reader bound 5s after the write stalls)", time.Since(held).Round(time.Millisecond))
			ended := metric(t, base, `frontdoor_turns_total{disposition="cancelled"}`) + metric(t, base, `frontdoor_turns_total{disposition="failed"}`)
			if ended < 2 {
				t.Fatalf("%v turns ended cancelled or failed, want the 2 whose callers stopped reading", ended)
			}
			c, _, err := dial(t, p.ws("/v1/session"), nil)
			if err != nil {
				t.Fatal(err)
			}
			next(t, c, "session")
			send(t, c, `{"type":"turn","id":"ok","text":"hello"}`)
			if m := next(t, c, "audio_start"); m.Turn != "ok" {
				t.Fatalf("reading caller: audio_start for %q", m.Turn)
			}
		})
	}
}
