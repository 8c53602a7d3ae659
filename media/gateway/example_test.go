package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/media/gateway/gatewaytest"
	"github.com/frontdoorhq/frontdoor/media/gateway/plivo"
)

// A server endpoint for one dialect: accept, read the start, play an
// utterance and learn from its mark that it was heard. gatewaytest plays
// Plivo's side.
func Example() {
	heard := make(chan gateway.Progress, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := gateway.Accept(w, r, nil, plivo.Codec{}, gateway.Options{})
		if err != nil {
			return
		}
		defer conn.Close()
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		done := make(chan struct{})
		go func() { defer close(done); _ = conn.Run(ctx) }()
		defer func() { cancel(); <-done }()
		for {
			ev, err := conn.Read(ctx)
			if err != nil {
				return
			}
			switch ev.Kind {
			case gateway.KindStart:
				_ = conn.SendPCM("hello", make([]int16, 8000/10), 8000) // 100 ms
				conn.EndUtterance("hello")
			case gateway.KindMark:
				if ev.Progress != nil && ev.Progress.Done {
					heard <- *ev.Progress
				}
			}
		}
	}))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g, err := gatewaytest.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), plivo.Codec{}, gatewaytest.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Close()
	p := <-heard
	fmt.Println(p.Utterance, "heard", p.Played)
	// Output: hello heard 100ms
}
