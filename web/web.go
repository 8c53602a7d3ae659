package web

import (
	"embed"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
)

//go:embed static
var static embed.FS

// Options configures the page.
type Options struct {
	// Burster starts synthetic callers for the burst control (nil: the
	// control reports that no load generator is configured).
	Burster Burster
	// MaxCallers caps one burst's callers (0: 500); MaxRate its callers per
	// second (0: 200); MaxTurns each caller's turns (0: 20).
	MaxCallers int
	MaxRate    float64
	MaxTurns   int
	// MaxDuration ends a burst that runs longer (0: 2 minutes).
	MaxDuration time.Duration
	// Logger (nil: discard).
	Logger *slog.Logger
	// Clock stamps a burst's start and end (nil: clock.System).
	Clock clock.Clock
}

func (o Options) withDefaults() Options {
	if o.MaxCallers <= 0 {
		o.MaxCallers = 500
	}
	if o.MaxRate <= 0 {
		o.MaxRate = 200
	}
	if o.MaxTurns <= 0 {
		o.MaxTurns = 20
	}
	if o.MaxDuration <= 0 {
		o.MaxDuration = 2 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Clock = clock.Or(o.Clock)
	return o
}

// Page serves the demo page, its assets and the burst API. Close it to stop
// a running burst.
type Page struct {
	opts  Options
	mux   *http.ServeMux
	burst *bursts
}

// Handler returns the page. Mount it as the server's root and on the
// patterns of Routes.
func Handler(opts Options) *Page {
	opts = opts.withDefaults()
	p := &Page{opts: opts, mux: http.NewServeMux(), burst: newBursts(opts)}
	assets := Assets()
	files := http.FileServerFS(assets)
	p.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		secure(w)
		http.ServeFileFS(w, r, assets, "index.html")
	})
	p.mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secure(w)
		if r.URL.Path == "" || r.URL.Path == "index.html" {
			http.NotFound(w, r)
			return
		}
		files.ServeHTTP(w, r)
	})))
	p.mux.HandleFunc("GET /v1/burst", p.burst.get)
	p.mux.HandleFunc("POST /v1/burst", p.burst.post)
	p.mux.HandleFunc("DELETE /v1/burst", p.burst.stop)
	return p
}

// ServeHTTP implements http.Handler.
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) { p.mux.ServeHTTP(w, r) }

// Routes are the patterns, besides the root, to mount the page on in
// another mux (session.Config.Handlers).
func (p *Page) Routes() map[string]http.Handler {
	return map[string]http.Handler{
		"GET /assets/":     p,
		"GET /v1/burst":    p,
		"POST /v1/burst":   p,
		"DELETE /v1/burst": p,
	}
}

// Close stops a running burst and waits for it to end.
func (p *Page) Close() { p.burst.close() }

// contentPolicy keeps the page to its own origin: scripts, styles and
// connections (WebSocket included) go only to the host that served it.
const contentPolicy = "default-src 'self'; connect-src 'self'; img-src 'self' data:; " +
	"media-src 'self' blob:; style-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"

func secure(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
}

// Assets returns the page's embedded files (index.html, style.css and the
// JavaScript modules), as served under /assets/.
func Assets() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return sub
}
