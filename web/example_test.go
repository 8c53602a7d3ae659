package web_test

import (
	"context"
	"maps"
	"net/http"

	"github.com/frontdoorhq/frontdoor/web"
)

// The page is mounted as the session server's root and on its own routes;
// a Burster connects the burst control to a load generator.
func ExampleHandler() {
	page := web.Handler(web.Options{
		Burster: web.BurstFunc(func(ctx context.Context, b web.Burst, progress func(any)) (any, error) {
			// Start b.Callers synthetic callers at b.Rate per second, each
			// saying b.Turns turns, against this server's /v1/session.
			return map[string]int{"callers": b.Callers}, nil
		}),
	})
	defer page.Close() // stops a running burst

	handlers := map[string]http.Handler{} // other routes (e.g. GET /v1/agents)
	maps.Copy(handlers, page.Routes())
	_ = handlers // session.Config{Root: page, Handlers: handlers, ...}
	// Output:
}
