package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/frontdoorhq/frontdoor/session/backend"
)

// DefaultStallTimeout is how long a call may go without progress.
const DefaultStallTimeout = 10 * time.Second

// Name is the backend name in errors.
const Name = "openai"

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 4 << 10

// errStalled is the cause set on a request's context by the stall watchdog.
var errStalled = errors.New("stalled")

// Endpoint says where a server is and how to reach it.
type Endpoint struct {
	// BaseURL is the API root, such as "http://127.0.0.1:11434/v1".
	BaseURL string
	// APIKeyEnv names the environment variable holding the API key; empty
	// for servers that need none. The key itself is never logged.
	APIKeyEnv string
	// StallTimeout bounds the wait for response headers and between
	// chunks (0: DefaultStallTimeout).
	StallTimeout time.Duration
	// HTTPClient, if set, is used instead of a client of the adapter's own.
	HTTPClient *http.Client
	// Clock times the stall watchdog and reads Retry-After dates (nil:
	// backend.SystemClock). The HTTP client's own deadlines stay on the
	// wall clock: they are the operating system's.
	Clock backend.Clock
}

// conn is an openai-go client configured for one Endpoint.
type conn struct {
	client oai.Client
	base   string // the API root, for Probe
	http   *http.Client
	key    string
	stall  time.Duration
	clock  backend.Clock
}

func newConn(e Endpoint, maxBody int64) (*conn, error) {
	if e.BaseURL == "" {
		return nil, errors.New("openai: base URL required")
	}
	if !strings.HasPrefix(e.BaseURL, "http://") && !strings.HasPrefix(e.BaseURL, "https://") {
		return nil, fmt.Errorf("openai: base URL %q is not http(s)", e.BaseURL)
	}
	c := &conn{base: strings.TrimRight(e.BaseURL, "/"), http: e.HTTPClient, stall: e.StallTimeout, clock: backend.ClockOr(e.Clock)}
	if c.stall <= 0 {
		c.stall = DefaultStallTimeout
	}
	if e.APIKeyEnv != "" {
		c.key = os.Getenv(e.APIKeyEnv)
		if c.key == "" {
			return nil, fmt.Errorf("openai: environment variable %s (the API key) is empty", e.APIKeyEnv)
		}
	}
	if c.http == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		c.http = &http.Client{Transport: t}
	}
	c.client = oai.NewClient(
		option.WithBaseURL(e.BaseURL),
		// Always set the key, even empty, so OPENAI_API_KEY from the
		// environment is never sent to a server it was not meant for.
		option.WithAPIKey(c.key),
		option.WithHeaderDel("OpenAI-Organization"),
		option.WithHeaderDel("OpenAI-Project"),
		option.WithHTTPClient(c.http),
		// No retry loops: the stage owns the turn's deadline.
		option.WithMaxRetries(0),
		option.WithMiddleware(c.limitResponses(maxBody)),
	)
	return c, nil
}

// Close drops idle connections.
func (c *conn) Close() error {
	c.http.CloseIdleConnections()
	return nil
}

// Probe implements backend.Prober: GET {base}/models, within ctx. Any
// answer below 500 counts as up (a 404 from an agent that lists no
// models, a 401 for a wrong key: its turns will say so); a refused or
// timed-out connection or a 5xx does not. It runs no model.
func (c *conn) Probe(ctx context.Context) error {
	u := c.base + "/models"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return c.scrub(fmt.Errorf("GET %s: %w", u, probeCause(err)))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return nil
}

// probeCause is the innermost useful part of a failed request: "connect:
// connection refused" rather than the URL and address again.
func probeCause(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// limitResponses turns error statuses into typed errors here, reading at
// most maxErrorBody of the body (openai-go would read all of it, and drops
// the status when the body is not its JSON error shape, as with Ollama's
// {"error":"..."}), and caps successful bodies at maxBody (0: no cap).
func (c *conn) limitResponses(maxBody int64) option.Middleware {
	return func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		resp, err := next(req)
		if err != nil {
			return resp, err
		}
		if resp.StatusCode >= 400 {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
			resp.Body.Close()
			return nil, backend.StatusError(Name, "", resp.StatusCode, resp.Header, c.clock.Now(), c.detail(body))
		}
		var r io.Reader = resp.Body
		if maxBody > 0 {
			r = io.LimitReader(r, maxBody)
		}
		resp.Body = markedBody{r, resp.Body}
		return resp, nil
	}
}

// markedBody marks read errors as transport errors, so that a connection
// cut in the middle of a body is told apart from a body that does not
// parse (both can surface as io.ErrUnexpectedEOF).
type markedBody struct {
	r io.Reader
	io.Closer
}

func (b markedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		err = &transportError{err}
	}
	return n, err
}

type transportError struct{ err error }

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// detail is a short, key-free description of an error body.
func (c *conn) detail(body []byte) error {
	s := strings.TrimSpace(strings.ToValidUTF8(string(body), "?"))
	if c.key != "" {
		s = strings.ReplaceAll(s, c.key, "[redacted]")
	}
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	if s == "" {
		return nil
	}
	return errors.New(s)
}

// watchdog cancels a request that makes no progress within the stall
// timeout, on the conn's clock. Pause it while waiting on the caller
// (emit), so a slow caller is not taken for a stalled backend. Its methods
// are called from the request's goroutine only.
type watchdog struct {
	clock backend.Clock
	d     time.Duration
	fire  func()
	t     backend.Timer
}

func (c *conn) watch(ctx context.Context) (context.Context, *watchdog, context.CancelCauseFunc) {
	rctx, cancel := context.WithCancelCause(ctx)
	w := &watchdog{clock: c.clock, d: c.stall, fire: func() { cancel(errStalled) }}
	w.resume()
	return rctx, w, cancel
}

func (w *watchdog) pause()  { w.t.Stop() }
func (w *watchdog) resume() { w.t = w.clock.AfterFunc(w.d, w.fire) }
func (w *watchdog) stop()   { w.t.Stop() }

// classify maps a failure of a call made with rctx (derived from ctx) to a
// typed error. Cancellation of ctx passes through as ctx.Err().
func (c *conn) classify(ctx, rctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(context.Cause(rctx), errStalled) {
		return &backend.Error{Kind: backend.KindStalled, Backend: Name, Op: op,
			Err: fmt.Errorf("no progress within %s", c.stall)}
	}
	var be *backend.Error
	if errors.As(err, &be) {
		if be.Op == "" {
			be.Op = op
		}
		return be
	}
	var se *ssestream.StreamError
	var te *transportError
	var ue *url.Error
	switch {
	case errors.As(err, &se):
		return &backend.Error{Kind: backend.KindUnavailable, Backend: Name, Op: op, Err: c.detail([]byte(se.Message))}
	case errors.As(err, &te), errors.As(err, &ue), backend.IsUnreachable(err):
		// A failed request (url.Error: refused, reset, EOF before the
		// status line) or a body cut off in transit.
		return &backend.Error{Kind: backend.KindUnavailable, Backend: Name, Op: op, Err: c.scrub(err)}
	}
	return &backend.Error{Kind: backend.KindMalformed, Backend: Name, Op: op, Err: c.scrub(err)}
}

// scrub removes the key from an error's text, in case a library quoted it.
func (c *conn) scrub(err error) error {
	if c.key == "" || !strings.Contains(err.Error(), c.key) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), c.key, "[redacted]"))
}
