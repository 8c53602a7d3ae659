// Command acceptor is a test helper: a minimal server that accepts
// callbacks through fallback.Service and serves the operator API, so that a
// test can kill -9 a process that has told callers their callback is booked.
// It prints its listening address on the first line of stdout.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/fallback/callbackapi"
)

func main() {
	cfg := fallback.DefaultConfig()
	cfg.Flags(flag.CommandLine)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := fallback.New(ctx, cfg, nil, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer s.Close()
	mux := http.NewServeMux()
	mux.Handle("/v1/callbacks", callbackapi.Handler(s))
	mux.Handle("/v1/callbacks/", callbackapi.Handler(s))
	mux.HandleFunc("POST /accept", func(w http.ResponseWriter, r *http.Request) {
		var req fallback.CallbackRequest
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		res, err := s.RequestCallback(r.Context(), req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		json.NewEncoder(w).Encode(res)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	srv := &http.Server{Handler: mux}
	go func() { <-ctx.Done(); srv.Close() }()
	srv.Serve(ln)
}
