package session

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/frontdoorhq/frontdoor/media/pcm"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/stages"
)

// logBuffer collects a server's JSON log lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines returns the lines whose msg is msg, decoded.
func (l *logBuffer) lines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(l.b.Bytes()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// turnLine returns the "turn ended" line of turn id.
func turnLine(t *testing.T, logs *logBuffer, id string) map[string]any {
	t.Helper()
	var found []map[string]any
	for _, m := range logs.lines(t, "turn ended") {
		if m["turn"] == id {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("turn %s: %d \"turn ended\" lines, want 1:\n%s", id, len(found), logs)
	}
	return found[0]
}

// TestTurnLogLine: every ended turn has one info line with its identities,
// outcome, the queue wait of each stage it reached (and none for the
// others), its time to first token and audio, what was heard and why it
// ended; never what the caller said or what the agent answered.
func TestTurnLogLine(t *testing.T) {
	logs := &logBuffer{}
	r := newRig(t, func(c *Config, s *stub.Settings) {
		c.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
		s.FrameCount, s.FrameDelay, s.CleanupDelay = 60, 5*time.Millisecond, 20*time.Millisecond
	})
	a, call := r.admittedCall()

	// A turn too old for the model stage: refused expired, nothing started.
	a.Send(map[string]any{"type": "turn", "id": "t2", "text": "zebra again", "age_ms": 5000})
	a.Until(func(m sessiontest.Msg) bool { return m.Type == "turn_end" && m.Turn == "t2" })
	// A turn that completes: its reply is played out in 60 frames of 20 ms.
	a.Send(map[string]any{"type": "turn", "id": "t1", "text": "zebra secret words"})
	if end := a.Expect("turn_end"); end.Disposition != "completed" {
		t.Fatalf("t1 %+v", end)
	}
	// A turn the caller speaks over while its audio is being written.
	a.Send(map[string]any{"type": "turn", "id": "t3", "text": "zebra once more"})
	a.Until(sessiontest.IsType("binary"))
	a.Send(map[string]any{"type": "barge_in"})
	a.Until(func(m sessiontest.Msg) bool { return m.Type == "turn_end" && m.Turn == "t3" })

	l1 := turnLine(t, logs, "t1")
	want := map[string]any{"call": call, "generation": 1.0, "disposition": "completed", "reason": "replied",
		"heard_ms": 1200.0, "level": "INFO"}
	for k, v := range want {
		if l1[k] != v {
			t.Errorf("t1 %s = %v, want %v (%v)", k, l1[k], v, l1)
		}
	}
	for _, k := range []string{"model_wait_ms", "synthesis_wait_ms", "first_token_ms", "first_audio_ms", "turn_ms"} {
		if v, ok := l1[k].(float64); !ok || v < 0 {
			t.Errorf("t1 %s = %v, want a duration in ms (%v)", k, l1[k], l1)
		}
	}
	if l1["first_audio_ms"].(float64) < l1["first_token_ms"].(float64) {
		t.Errorf("t1 first audio %v before first token %v", l1["first_audio_ms"], l1["first_token_ms"])
	}
	for _, k := range []string{"recognize_wait_ms", "stage", "error"} { // a text turn: no recognition
		if v, ok := l1[k]; ok {
			t.Errorf("t1 has %s = %v", k, v)
		}
	}

	l2 := turnLine(t, logs, "t2")
	for k, v := range map[string]any{"disposition": "expired", "reason": "refused", "stage": "model"} {
		if l2[k] != v {
			t.Errorf("t2 %s = %v, want %v (%v)", k, l2[k], v, l2)
		}
	}
	if _, ok := l2["model_wait_ms"].(float64); !ok {
		t.Errorf("t2 reached the model stage but has no model_wait_ms: %v", l2)
	}
	for _, k := range []string{"synthesis_wait_ms", "first_token_ms", "first_audio_ms", "heard_ms"} {
		if v, ok := l2[k]; ok {
			t.Errorf("t2 never reached synthesis but has %s = %v", k, v)
		}
	}

	l3 := turnLine(t, logs, "t3")
	for k, v := range map[string]any{"disposition": "cancelled", "reason": "barge_in", "stage": "synthesis", "generation": 1.0} {
		if l3[k] != v {
			t.Errorf("t3 %s = %v, want %v (%v)", k, l3[k], v, l3)
		}
	}
	if h, ok := l3["heard_ms"].(float64); !ok || h <= 0 || h >= 1200 {
		t.Errorf("t3 heard_ms = %v, want part of its 1200 ms reply", l3["heard_ms"])
	}

	if s := logs.String(); strings.Contains(s, "zebra") || strings.Contains(s, "secret") {
		t.Errorf("the log carries caller text:\n%s", s)
	}
}

// TestTurnLogLineSpeech: a speech turn's line has its recognition wait,
// and never its transcript.
func TestTurnLogLineSpeech(t *testing.T) {
	logs := &logBuffer{}
	r := newRig(t, func(c *Config, _ *stub.Settings) {
		c.Logger = slog.New(slog.NewJSONHandler(logs, nil))
		c.Recognizer = stub.NewRecognizer(stub.Settings{})
	})
	c := r.Dial()
	c.Send(map[string]any{"type": "hello", "audio": map[string]any{"encoding": "pcm16", "rate": 16000}})
	c.Expect("session")
	s := sessiontest.Speech(t, "hello-16k.wav", 16000)
	for len(s) > 0 {
		n := min(640, len(s))
		if err := c.Conn.Write(c.Ctx, websocket.MessageBinary, pcm.Encode(nil, s[:n])); err != nil {
			t.Fatal(err)
		}
		s = s[n:]
	}
	tr := c.Expect("transcript")
	if end := c.Expect("turn_end"); end.Disposition != "completed" {
		t.Fatalf("turn_end %+v", end)
	}
	l := turnLine(t, logs, "speech-1")
	for _, k := range []string{"recognize_wait_ms", "model_wait_ms", "synthesis_wait_ms", "first_token_ms", "first_audio_ms", "heard_ms"} {
		if _, ok := l[k].(float64); !ok {
			t.Errorf("speech-1 %s = %v (%v)", k, l[k], l)
		}
	}
	if tr.Text == "" || strings.Contains(logs.String(), tr.Text) {
		t.Errorf("the log carries the transcript %q:\n%s", tr.Text, logs)
	}
}

// admittedCall dials, waits for `session` admitted and returns the call's id.
func (r *rig) admittedCall() (*sessiontest.Client, string) {
	r.T.Helper()
	c := r.Dial()
	m := c.Expect("session")
	if m.Disposition != "admitted" || m.Session == "" {
		r.T.Fatalf("session %+v", m)
	}
	return c, m.Session
}

// endSignal is a span processor that tells when a span named name ends.
type endSignal struct {
	name  string
	ended chan struct{}
}

func newEndSignal(name string) *endSignal {
	return &endSignal{name: name, ended: make(chan struct{}, 16)}
}

func (e *endSignal) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (e *endSignal) OnEnd(s sdktrace.ReadOnlySpan) {
	if s.Name() == e.name {
		e.ended <- struct{}{}
	}
}

// wait waits for n more such spans to end.
func (e *endSignal) wait(t *testing.T, n int) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for range n {
		select {
		case <-e.ended:
		case <-timeout:
			t.Fatalf("%s spans did not end", e.name)
		}
	}
}
func (e *endSignal) Shutdown(context.Context) error   { return nil }
func (e *endSignal) ForceFlush(context.Context) error { return nil }

// spanTree indexes recorded spans.
type spanTree struct {
	t     *testing.T
	spans tracetest.SpanStubs
}

func attrOf(s tracetest.SpanStub, k attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes {
		if kv.Key == k {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// named returns the spans called name whose attributes include want.
func (st spanTree) named(name string, want ...attribute.KeyValue) []tracetest.SpanStub {
	var out []tracetest.SpanStub
next:
	for _, s := range st.spans {
		if s.Name != name {
			continue
		}
		for _, kv := range want {
			if v, ok := attrOf(s, kv.Key); !ok || v != kv.Value {
				continue next
			}
		}
		out = append(out, s)
	}
	return out
}

// one returns the single span called name with attributes want.
func (st spanTree) one(name string, want ...attribute.KeyValue) tracetest.SpanStub {
	st.t.Helper()
	got := st.named(name, want...)
	if len(got) != 1 {
		st.t.Fatalf("%d spans %s %v, want 1; all: %v", len(got), name, want, st.names())
	}
	return got[0]
}

func (st spanTree) children(parent tracetest.SpanStub) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range st.spans {
		if s.Parent.SpanID() == parent.SpanContext.SpanID() && s.Parent.IsValid() {
			out = append(out, s)
		}
	}
	return out
}

func (st spanTree) names() []string {
	var out []string
	for _, s := range st.spans {
		out = append(out, s.Name)
	}
	return out
}

// has checks that s has every attribute of want, and lies within parent.
func (st spanTree) has(s tracetest.SpanStub, parent *tracetest.SpanStub, want ...attribute.KeyValue) {
	st.t.Helper()
	for _, kv := range want {
		if v, ok := attrOf(s, kv.Key); !ok || v != kv.Value {
			st.t.Errorf("%s: %s = %v (present %v), want %v; attributes %v", s.Name, kv.Key, v.String(), ok, kv.Value.String(), s.Attributes)
		}
	}
	if parent == nil {
		return
	}
	if s.Parent.SpanID() != parent.SpanContext.SpanID() || s.SpanContext.TraceID() != parent.SpanContext.TraceID() {
		st.t.Errorf("%s is not a child of %s", s.Name, parent.Name)
	}
	if s.StartTime.Before(parent.StartTime) || s.EndTime.After(parent.EndTime) {
		st.t.Errorf("%s [%v, %v] outside its parent %s [%v, %v]", s.Name, s.StartTime, s.EndTime, parent.Name, parent.StartTime, parent.EndTime)
	}
}

// TestTraceCall: a real call over a WebSocket with tracing on (the SDK's
// in-memory exporter): one call span; under it the session's wait and
// lease and one span per turn; under each turn its stage waits and
// leases, with the dispositions the caller was sent. The turn the caller
// speaks over ends barge_in, its synthesis lease cancelled and late (its
// backend took longer than the cleanup timeout to stop).
func TestTraceCall(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	callEnded := newEndSignal(spanCall)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSpanProcessor(callEnded))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	r := newRig(t, func(c *Config, s *stub.Settings) {
		c.TracerProvider = tp
		c.CleanupTimeout = 20 * time.Millisecond
		s.FrameCount, s.FrameDelay, s.CleanupDelay = 60, 5*time.Millisecond, 80*time.Millisecond
	})
	a, call := r.admittedCall()
	// Born 5 s ago (before the call): refused expired at the offer.
	a.Send(map[string]any{"type": "turn", "id": "t2", "text": "too late", "age_ms": 5000})
	if end := a.Expect("turn_end"); end.Disposition != "expired" {
		t.Fatalf("t2 %+v", end)
	}
	a.Send(map[string]any{"type": "turn", "id": "t1", "text": "hello"})
	if end := a.Expect("turn_end"); end.Disposition != "completed" {
		t.Fatalf("t1 %+v", end)
	}
	a.Send(map[string]any{"type": "turn", "id": "t3", "text": "tell me a long story"})
	// The caller speaks over t3 once it is heard and its model is done: a
	// reply streams, so until the model's completed the barge-in could
	// cancel the model's lease too (a flake when it did not wait).
	var heard, written bool
	a.Until(func(m sessiontest.Msg) bool {
		heard = heard || m.Type == "binary"
		written = written || m.Type == "disposition" && m.Stage == StageModel && m.Disposition == "completed"
		return heard && written
	})
	a.Send(map[string]any{"type": "barge_in"})
	if end := a.Expect("turn_end"); end.Disposition != "cancelled" || end.Turn != "t3" {
		t.Fatalf("t3 %+v", end)
	}
	a.Send(map[string]any{"type": "hangup"})
	for { // until the server's close, which the read answers
		if _, err := a.Read(); err != nil {
			break
		}
	}
	callEnded.wait(t, 1)

	st := spanTree{t: t, spans: exp.GetSpans()}
	id := attrCallID.String(call)
	root := st.one(spanCall, id)
	if root.Parent.IsValid() {
		t.Errorf("the call span has a parent %v", root.Parent)
	}
	if root.SpanKind != trace.SpanKindServer {
		t.Errorf("call span kind %v", root.SpanKind)
	}
	st.has(root, nil, attrEnd.String("hangup"), attrTurns.Int64(3), attrBargeIns.Int64(1), attrGeneration.Int64(2))
	if len(root.Events) != 1 || root.Events[0].Name != "frontdoor.barge_in" {
		t.Errorf("call span events %v, want one frontdoor.barge_in", root.Events)
	}
	st.has(st.one(spanWait+StageSession), &root, attrStage.String(StageSession), attrDisposition.String("admitted"))
	st.has(st.one(spanLease+StageSession), &root, attrStage.String(StageSession), attrDisposition.String("completed"))
	if n := len(st.children(root)); n != 5 {
		t.Errorf("the call span has %d children, want 5 (session wait and lease, 3 turns): %v", n, st.names())
	}

	turnSpan := func(turn string) (tracetest.SpanStub, map[string]tracetest.SpanStub) {
		t.Helper()
		s := st.one(spanTurn, attrTurnID.String(turn))
		st.has(s, &root, id, attrGeneration.Int64(1), attrSpeech.Bool(false))
		kids := map[string]tracetest.SpanStub{}
		for _, k := range st.children(s) {
			if _, dup := kids[k.Name]; dup {
				t.Errorf("turn %s has two %s spans", turn, k.Name)
			}
			kids[k.Name] = k
			st.has(k, &s, id, attrTurnID.String(turn), attrGeneration.Int64(1))
		}
		return s, kids
	}

	// t1: completed, through both stages.
	t1, kids := turnSpan("t1")
	st.has(t1, nil, attrDisposition.String("completed"), attrEndReason.String("replied"), attrHeard.Int64(1200))
	for _, k := range []attribute.Key{attrFirstToken, attrFirstAudio} {
		if v, ok := attrOf(t1, k); !ok || v.AsFloat64() <= 0 {
			t.Errorf("t1 %s = %v", k, v.String())
		}
	}
	if len(kids) != 4 {
		t.Errorf("t1 children %v, want the model and synthesis waits and leases", kids)
	}
	for _, stage := range []string{StageModel, StageSynthesis} {
		st.has(kids[spanWait+stage], nil, attrStage.String(stage), attrDisposition.String("admitted"), attrQueued.Bool(false))
		st.has(kids[spanLease+stage], nil, attrStage.String(stage), attrDisposition.String("completed"),
			attrCancelled.Bool(false), attrLate.Bool(false))
		if w, l := kids[spanWait+stage], kids[spanLease+stage]; l.StartTime.Before(w.EndTime) {
			t.Errorf("%s lease starts before its wait ended", stage)
		}
	}
	// A reply streams: its first sentence may wait for synthesis while the
	// model still holds its lease (the order of the two was a flake), but
	// never before the model was admitted and writing.
	if kids[spanWait+StageSynthesis].StartTime.Before(kids[spanLease+StageModel].StartTime) {
		t.Error("the synthesis wait starts before the model's lease began")
	}

	// t2: refused expired at the model stage; no lease, no synthesis.
	t2, kids := turnSpan("t2")
	st.has(t2, nil, attrDisposition.String("expired"), attrEndReason.String("refused"), attrStage.String(StageModel))
	if len(kids) != 1 {
		t.Errorf("t2 children %v, want its model wait alone", kids)
	}
	st.has(kids[spanWait+StageModel], nil, attrDisposition.String("expired"))

	// t3: spoken over during synthesis.
	t3, kids := turnSpan("t3")
	st.has(t3, nil, attrDisposition.String("cancelled"), attrEndReason.String("barge_in"), attrStage.String(StageSynthesis))
	if _, ok := attrOf(t3, attrHeard); !ok {
		t.Error("t3 has no heard_ms")
	}
	st.has(kids[spanLease+StageModel], nil, attrDisposition.String("completed"), attrCancelled.Bool(false))
	syn := kids[spanLease+StageSynthesis]
	st.has(syn, nil, attrDisposition.String("cancelled"), attrCancelled.Bool(true), attrLate.Bool(true))
	if v, ok := attrOf(syn, attrCleanupMS); !ok || v.AsFloat64() < 20 {
		t.Errorf("t3 synthesis cleanup_ms = %v, want over the 20 ms cleanup timeout", v.String())
	}
	// The stage saw the same late cleanup.
	if n := r.Counter("frontdoor_stage_cleanup_overdue_total"); n != 1 {
		t.Errorf("overdue cleanups counted %v, want 1", n)
	}
	if n := r.Counter("frontdoor_turn_queue_wait_seconds"); n != 4 {
		t.Errorf("queue waits observed %v, want 4 (the model and synthesis waits of t1 and t3)", n)
	}
}

// TestObserveHooksAllocateNothing: the hooks on the per-token and
// per-audio-chunk path allocate nothing, with tracing off and on.
func TestObserveHooksAllocateNothing(t *testing.T) {
	for _, tracing := range []bool{false, true} {
		r := newRig(t, func(c *Config, _ *stub.Settings) {
			if tracing {
				c.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
			}
		})
		c := newCall(r.Engine, "alloc", nil, Capabilities{})
		c.obs.Start(r.Engine.obs, c.id, "", c.log)
		tn := &turn{id: "t", gen: 1, born: r.Engine.cfg.Clock.Now().Add(-time.Millisecond), ctx: context.Background()}
		tn.obs.Init(&c.obs, tn.id, tn.gen, tn.born, false, tn.ctx, &tn.silenced)
		if n := testing.AllocsPerRun(100, func() {
			tn.obs.Token()
			tn.obs.Audio()
		}); n != 0 {
			t.Errorf("tracing %v: %v allocations per token and audio chunk", tracing, n)
		}
		if !tn.obs.Noted() {
			t.Errorf("tracing %v: first token and audio not noted", tracing)
		}
		c.observeEnd("test")
	}
}

// TestTraceSessionRefused: a call the session stage refuses has a trace of
// its own: the call span (end refused) and its session wait, overloaded,
// with no lease; a call that leaves while queued has its wait cancelled.
func TestTraceSessionRefused(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	callEnded := newEndSignal(spanCall)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSpanProcessor(callEnded))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	r := newRig(t, func(c *Config, _ *stub.Settings) {
		c.TracerProvider = tp
		c.Session = stages.Limits{Slots: 1, Waiting: 1, MaxAge: 10 * time.Second}
	})
	_, held := r.admittedCall()
	queued := r.Dial()
	if m := queued.Expect("session"); m.Disposition != "queued" {
		t.Fatalf("second call %+v", m)
	}
	refused := r.Dial()
	if m := refused.Expect("session"); m.Disposition != "overloaded" {
		t.Fatalf("third call %+v", m)
	}
	for { // the prompt, then the server's close
		if _, err := refused.Read(); err != nil {
			break
		}
	}
	queued.Conn.CloseNow() // leaves while queued
	callEnded.wait(t, 2)

	st := spanTree{t: t, spans: exp.GetSpans()}
	var ends []string
	for _, call := range st.named(spanCall) {
		v, _ := attrOf(call, attrEnd)
		ends = append(ends, v.AsString())
		kids := st.children(call)
		if len(kids) != 1 || kids[0].Name != spanWait+StageSession {
			t.Errorf("call ended %s has children %v, want its session wait alone", v.AsString(), kids)
			continue
		}
		want := map[string]string{"refused": "overloaded", "disconnected": "cancelled"}[v.AsString()]
		st.has(kids[0], &call, attrStage.String(StageSession), attrDisposition.String(want))
		if id, _ := attrOf(call, attrCallID); id.AsString() == held {
			t.Error("the admitted call's span ended while it is held")
		}
	}
	if len(ends) != 2 {
		t.Fatalf("call spans ended %v, want the refused and the queued call", ends)
	}
}
