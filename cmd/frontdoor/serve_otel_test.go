package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP collector on loopback that keeps what it
// is sent.
type otlpReceiver struct {
	srv *httptest.Server

	mu    sync.Mutex
	posts []otlpPost
}

type otlpPost struct {
	method, path, contentType string
	req                       *coltracepb.ExportTraceServiceRequest
	err                       error
}

func newOTLPReceiver() *otlpReceiver {
	r := &otlpReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		p := otlpPost{method: req.Method, path: req.URL.Path, contentType: req.Header.Get("Content-Type"), err: err}
		if err == nil {
			p.req = &coltracepb.ExportTraceServiceRequest{}
			p.err = proto.Unmarshal(body, p.req)
		}
		r.mu.Lock()
		r.posts = append(r.posts, p)
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		_, _ = w.Write(b)
	}))
	return r
}

func (r *otlpReceiver) addr() string { return strings.TrimPrefix(r.srv.URL, "http://") }

func (r *otlpReceiver) received() []otlpPost {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]otlpPost(nil), r.posts...)
}

// spans returns every span posted to /v1/traces, and the resources'
// service names.
func (r *otlpReceiver) spans(t *testing.T) (spans []*tracepb.Span, services []string) {
	t.Helper()
	for _, p := range r.received() {
		if p.method != http.MethodPost || p.path != "/v1/traces" || p.contentType != "application/x-protobuf" || p.err != nil {
			t.Errorf("OTLP request %s %s (%s): %v, want POST /v1/traces in protobuf", p.method, p.path, p.contentType, p.err)
			continue
		}
		for _, rs := range p.req.GetResourceSpans() {
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.GetKey() == "service.name" {
					services = append(services, kv.GetValue().GetStringValue())
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				spans = append(spans, ss.GetSpans()...)
			}
		}
	}
	return spans, services
}

// spanAttr is s's string attribute key ("" if none).
func spanAttr(s *tracepb.Span, key string) string {
	for _, kv := range s.GetAttributes() {
		if kv.GetKey() == key {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

// TestServeOTLP: frontdoor serve -otlp-endpoint posts a call's spans to an
// OTLP/HTTP collector (here one on loopback) at /v1/traces; SIGTERM flushes
// them before the process exits, so nothing waits for the batch timer.
func TestServeOTLP(t *testing.T) {
	rcv := newOTLPReceiver()
	defer rcv.srv.Close()
	p := startServe(t, nil, "-otlp-endpoint", rcv.addr(), "-otlp-insecure")
	c, _, err := dial(t, p.ws("/v1/session"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := next(t, c, "session"); m.Disposition != "admitted" {
		t.Fatalf("session %+v", m)
	}
	send(t, c, `{"type":"turn","id":"t1","text":"hello"}`)
	// A reply's sentences each wait for and hold a synthesis lease.
	sentences := 0
	for {
		m := next(t, c, "")
		if m.Type == "disposition" && m.Stage == "synthesis" && m.Disposition == "admitted" {
			sentences++
		}
		if m.Type == "turn_end" {
			if m.Disposition != "completed" || sentences == 0 {
				t.Fatalf("turn_end %+v after %d sentences", m, sentences)
			}
			break
		}
	}
	send(t, c, `{"type":"hangup"}`)
	closeCode(t, c)
	if n := len(rcv.received()); n != 0 {
		t.Logf("%d posts before shutdown (a batch timer fired)", n)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = <-p.exited
	p.exited <- err // for the cleanup
	if err != nil {
		t.Fatalf("serve exited: %v", err)
	}

	spans, services := rcv.spans(t)
	if len(services) == 0 || services[0] != "frontdoor" {
		t.Errorf("service.name %v, want frontdoor", services)
	}
	byName := map[string][]*tracepb.Span{}
	for _, s := range spans {
		byName[s.GetName()] = append(byName[s.GetName()], s)
	}
	for _, name := range []string{"frontdoor.call", "frontdoor.turn", "frontdoor.wait.session", "frontdoor.lease.session",
		"frontdoor.wait.model", "frontdoor.lease.model", "frontdoor.wait.synthesis", "frontdoor.lease.synthesis"} {
		want := 1
		if strings.HasSuffix(name, ".synthesis") {
			want = sentences
		}
		if len(byName[name]) != want {
			t.Errorf("%d %s spans, want %d (all: %d spans)", len(byName[name]), name, want, len(spans))
		}
	}
	if t.Failed() {
		return
	}
	call, turn := byName["frontdoor.call"][0], byName["frontdoor.turn"][0]
	if !bytes.Equal(turn.GetParentSpanId(), call.GetSpanId()) || !bytes.Equal(turn.GetTraceId(), call.GetTraceId()) {
		t.Error("the turn span is not a child of the call span")
	}
	if spanAttr(turn, "frontdoor.turn_id") != "t1" || spanAttr(turn, "frontdoor.disposition") != "completed" ||
		spanAttr(call, "frontdoor.end") != "hangup" || spanAttr(call, "frontdoor.call_id") == "" {
		t.Errorf("attributes: call %v, turn %v", call.GetAttributes(), turn.GetAttributes())
	}
	var logged bool
	for m := range p.logs {
		logged = logged || (m["msg"] == "tracing" && strings.HasSuffix(m["otlp"].(string), rcv.addr()+"/v1/traces"))
	}
	if !logged {
		t.Error("no tracing line naming the endpoint")
	}
}

// TestTracingShutdown: the tracer provider's shutdown flushes a span to
// the collector and ends every goroutine the exporter started (its batch
// processor and its HTTP connections).
func TestTracingShutdown(t *testing.T) {
	defer goleak.VerifyNone(t)
	rcv := newOTLPReceiver()
	defer rcv.srv.Close()
	log := slog.New(slog.DiscardHandler)
	tr, err := (&otlpSettings{endpoint: rcv.addr(), insecure: true, sample: 1}).start(log)
	if err != nil {
		t.Fatal(err)
	}
	_, span := tr.provider().Tracer("test").Start(context.Background(), "frontdoor.call")
	span.End()
	if n := len(rcv.received()); n != 0 {
		t.Fatalf("%d posts before shutdown", n)
	}
	if err := tr.shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if spans, _ := rcv.spans(t); len(spans) != 1 || spans[0].GetName() != "frontdoor.call" {
		t.Fatalf("spans after shutdown: %v", spans)
	}
	if err := tr.shutdown(context.Background()); err != nil {
		t.Fatalf("a second shutdown: %v", err)
	}

	// Off: no provider at all, so the server builds no span.
	off, err := (&otlpSettings{sample: 1}).start(log)
	if err != nil || off != nil || off.provider() != nil || off.shutdown(context.Background()) != nil {
		t.Fatalf("tracing off: %v %v", off, err)
	}
}

// TestServeOTLPFlags: a bad -otlp-endpoint or -otlp-sample is a usage
// error (exit 2), before anything listens.
func TestServeOTLPFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-otlp-endpoint", "collector"},
		{"-otlp-endpoint", "127.0.0.1:4318", "-otlp-sample", "2"},
	} {
		code, _, stderr := runCLI(t, append([]string{"serve", "-listen", "127.0.0.1:0"}, args...)...)
		if code != 2 || !strings.Contains(stderr, "-otlp-") {
			t.Errorf("serve %v: exit %d, stderr %q; want 2 naming the flag", args, code, stderr)
		}
	}
}
