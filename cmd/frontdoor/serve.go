package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/lmittmann/tint"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/frontdoorhq/frontdoor/cmd/frontdoor/backends"
	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/offer"
	"github.com/frontdoorhq/frontdoor/session/server"
	"github.com/frontdoorhq/frontdoor/session/telephony"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/web"
)

// serveSettings are the flags of frontdoor serve.
type serveSettings struct {
	listen                           string
	session, recognize, model, synth stages.Limits
	cleanupTimeout, drainTimeout     time.Duration
	segmentGrace                     time.Duration
	shedRate                         float64
	pace                             bool
	backend                          string
	backends                         backends.Config
	logFormat, logLevel, config      string
	logCallerContent                 bool
	cpuProfile                       string
	fallback                         fallback.Config
	policy                           stages.Policy
	store                            *storeSettings
	guard                            *guardWiring
	media                            *mediaSettings // serve_media.go
	gateway                          *gatewayOpts   // serve_gateway.go
	sip                              *sipSettings   // serve_sip.go
	trace                            *traceSettings // serve_trace.go
	otlp                             *otlpSettings  // serve_otel.go
	adapt                            *adaptSettings // serve_adapt.go
}

func serveFlags(fs *flag.FlagSet) *serveSettings {
	s := &serveSettings{}
	fs.StringVar(&s.listen, "listen", "127.0.0.1:8080", "address to listen on (host:port; port 0 picks a free one)")
	s.adapt = adaptFlags(fs) // -STAGE-slots auto, -stage-order: serve_adapt.go
	stageFlags(fs, "session", &s.session, session.DefaultSessionLimits, s.adapt)
	stageFlags(fs, "recognize", &s.recognize, session.DefaultRecognizeLimits, s.adapt)
	stageFlags(fs, "model", &s.model, session.DefaultModelLimits, s.adapt)
	stageFlags(fs, "synth", &s.synth, session.DefaultSynthesisLimits, s.adapt)
	fs.Float64Var(&s.shedRate, "shed-refusal-rate", 0, "the shedding rule: past this many refusals a second (over the last second), a refused caller is still told why, with the prompt's sentence, but offered no callback or person, so a refusal costs one sentence and no wait for an answer (0: never; docs/SECURITY.md)")
	fs.DurationVar(&s.segmentGrace, "synth-segment-grace", session.DefaultSegmentGrace, "a reply's later sentences: how long past the end of the audio already queued before it one may still wait for a synthesis slot (the silence a caller may hear between sentences); the first sentence waits at most -synth-max-wait from the turn's Born")
	fs.DurationVar(&s.cleanupTimeout, "cleanup-timeout", 2*time.Second, "after cancel, how long a backend may take to confirm it stopped before its lease is reported overdue (it stays held)")
	fs.BoolVar(&s.pace, "pace", true, "release reply audio in real time (20 ms frames), so a barge-in stops what was not yet played")
	fs.DurationVar(&s.drainTimeout, "drain-timeout", 30*time.Second, "on SIGTERM, how long calls in progress may go on before they are ended")
	fs.StringVar(&s.backend, "backend", "", "engine for -model and -recognize when they are not given: stub (both stubs) or openai (see -model-url); unset: -model demo and -recognize auto")
	s.backends = backends.DefaultConfig()
	s.backends.Flags(fs) // -model, -synth, -recognize, their URLs, and -stub-*
	s.fallback = fallback.DefaultConfig()
	s.fallback.Flags(fs)
	fs.StringVar(&s.logFormat, "log-format", "auto", "log format: auto (text with colour on a terminal, JSON otherwise), text or json")
	fs.StringVar(&s.logLevel, "log-level", "info", "least level logged: debug, info, warn or error (info has a line per call and per turn)")
	fs.BoolVar(&s.logCallerContent, "log-caller-content", false, "also log what callers say and key (attributes named caller_*: transcripts, digits); off, no log line, metric or span carries it (docs/OBSERVABILITY.md)")
	fs.StringVar(&s.config, "config", "", "optional config file of name = value lines")
	fs.StringVar(&s.cpuProfile, "cpuprofile", "", "write a CPU profile (go tool pprof) of the whole run to this file, ended on shutdown")
	s.guard = newGuardWiring(fs)
	s.store = storeFlags(fs) // -store and its settings: serve_store.go
	s.media = mediaFlags(fs) // -twilio-*, -webrtc-*: serve_media.go
	s.sip = sipFlags(fs)     // -sip-*: serve_sip.go
	s.trace = traceFlags(fs) // -record-trace: serve_trace.go
	s.otlp = otlpFlags(fs)   // -otlp-*: serve_otel.go
	fs.Var(&s.policy, "policy", "admission `policy` of every stage: frontdoor, or a baseline kept only to be measured against it (unbounded, semaphore, release-on-cancel)")
	s.gateway = gatewayFlags(fs) // -gateway-*, -audiosocket-*: serve_gateway.go
	return s
}

func stageFlags(fs *flag.FlagSet, name string, l *stages.Limits, def stages.Limits, a *adaptSettings) {
	long := map[string]string{"session": "sessions (calls)", "recognize": "recognitions", "model": "model requests", "synth": "synthesis jobs"}[name]
	l.Slots = def.Slots
	slots := long + " holding a lease at once"
	if sessionStageOf[name] != "" {
		slots += "; auto or auto:MIN-MAX (default bounds 1-64) moves the limit with the backend's measured latency (docs/ADMISSION.md)"
	}
	fs.Var(&slotsFlag{l: l, stage: sessionStageOf[name], a: a}, name+"-slots", "`n` "+slots)
	fs.IntVar(&l.Waiting, name+"-queue", def.Waiting, long+" waiting for a lease")
	from := "the turn's Born: its receipt minus age_ms, kept across stages"
	if name == "session" {
		from = "the caller's arrival"
	}
	help := "oldest age of waiting " + long + " still eligible (measured from " + from + ")"
	if name == "model" {
		help += "; shorter while the model's measured time to a reply's first sentence would bring that sentence past -synth-max-wait"
	}
	if name == "synth" {
		help = "oldest age of a reply's first sentence still eligible for synthesis (measured from " + from + "); later sentences wait against -synth-segment-grace"
	}
	fs.DurationVar(&l.MaxAge, name+"-max-wait", def.MaxAge, help)
}

// newLogger is serve's logger: -log-format, -log-level and
// -log-caller-content.
func newLogger(format, level string, callerContent bool, w io.Writer) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("-log-level %q: want debug, info, warn or error", level)
	}
	replace := logAttrs(callerContent)
	switch format {
	case "auto":
		if f, ok := w.(*os.File); ok {
			if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
				return slog.New(tint.NewTextHandler(w, &tint.Options{TimeFormat: time.TimeOnly, Level: lv, ReplaceAttr: replace})), nil
			}
		}
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lv, ReplaceAttr: replace})), nil
	case "text":
		return slog.New(tint.NewTextHandler(w, &tint.Options{TimeFormat: time.TimeOnly, NoColor: true, Level: lv, ReplaceAttr: replace})), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lv, ReplaceAttr: replace})), nil
	}
	return nil, fmt.Errorf("-log-format %q: want auto, text or json", format)
}

// CallerContentPrefix starts the key of every log attribute that carries
// what a caller said or keyed (caller_transcript, caller_digit). Such an
// attribute is dropped unless -log-caller-content is on, so privacy does
// not hang on each call site's log level.
const CallerContentPrefix = "caller_"

// logAttrs rewrites each attribute before it is written: caller content
// is dropped (unless keep), and a duration is written as a string such as
// "1.5s" rather than nanoseconds.
func logAttrs(keep bool) func(groups []string, a slog.Attr) slog.Attr {
	return func(_ []string, a slog.Attr) slog.Attr {
		if !keep && strings.HasPrefix(a.Key, CallerContentPrefix) {
			return slog.Attr{}
		}
		if a.Value.Kind() == slog.KindDuration {
			return slog.String(a.Key, a.Value.Duration().String())
		}
		return a
	}
}

// runServe runs the session server until ctx ends (SIGTERM or interrupt),
// then drains: admission closes, /readyz turns 503, calls in progress go on
// until they end or -drain-timeout passes, and it returns nil.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	set := serveFlags(fs)
	fs.Usage = func() { serveUsage(stderr, fs) }
	if err := parseFlags(fs, args, os.LookupEnv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q (serve takes only flags)", fs.Args())}
	}
	if err := checkFlags(fs, serveRules...); err != nil {
		return err
	}
	bc, err := backendConfig(fs, set)
	if err != nil {
		return usageError{err}
	}
	log, err := newLogger(set.logFormat, set.logLevel, set.logCallerContent, stderr)
	if err != nil {
		return usageError{err}
	}
	if err := set.guard.prepare(set, log, os.LookupEnv); err != nil {
		return err
	}
	traces, err := set.otlp.start(log)
	if err != nil {
		return err
	}
	defer flushTraces(traces, log) // on every return; after the one below it does nothing
	if set.cpuProfile != "" {
		stop, err := startCPUProfile(set.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	reg := prometheus.NewRegistry()
	// The process's own CPU, memory and runtime figures beside the
	// frontdoor_* metrics: frontdoor load reads process_cpu_seconds_total
	// to report the server's CPU per call-second.
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector())
	// One clock for the engine and the backends' timers.
	clock := clock.System
	bc.Clock = clock
	bc.AnswerPhrases = fallback.AnswerPhrases
	be, err := backends.New(bc, reg)
	if err != nil {
		return err
	}
	defer be.Close()
	for _, n := range be.Notes {
		log.Info(n)
	}
	if set.policy.Baseline() {
		log.Warn("baseline admission policy: for measurement only, not for callers", "policy", set.policy)
	}
	log.Info("backends", "model", be.ModelName, "synth", be.SynthName, "recognize", be.RecognizeName)
	if be.RecognizeName == backends.Pocketsphinx && fs.Lookup("recognize-slots").Value.String() == fs.Lookup("recognize-slots").DefValue {
		// Each local recognition keeps one core busy: more at once only
		// makes all of them slower.
		set.recognize.Slots = runtime.NumCPU()
		log.Info("local recognizer: one recognition per core", "recognize_slots", set.recognize.Slots)
	}
	// The backends' health for /readyz: probed once before listening, so
	// that a dead backend is reported from the first request on, then
	// every -backend-probe-interval until the server stops.
	health := be.NewHealth(log)
	health.Probe(ctx)
	if r := health.Reasons(); len(r) > 0 {
		log.Warn("backends not ready at start: /readyz answers 503 until they are", "reasons", r)
	}
	hctx, stopHealth := context.WithCancel(context.Background())
	var probing sync.WaitGroup
	probing.Go(func() { health.Run(hctx) })
	defer probing.Wait()
	defer stopHealth()
	// Listen first: the page's burst control dials this address.
	ln, err := net.Listen("tcp", set.listen)
	if err != nil {
		return fmt.Errorf("-listen %s: %w", set.listen, err)
	}
	defer ln.Close()
	fl, err := openFleet(set.store, set.policy, log)
	if err != nil {
		return err
	}
	defer fl.Close()
	set.guard.useFleet(fl) // tenant caps and call tokens fleet-wide: serve_store.go
	rec, err := openTrace(set.trace, fl, reg, log)
	if err != nil {
		return err
	}
	defer rec.Close() // after the server's stages stopped
	fopts, err := fl.fallbackOptions(set.fallback)
	if err != nil {
		return err
	}
	set.fallback.Clock = clock
	svc, err := fallback.New(ctx, set.fallback, offer.Synthesizer(be.Synthesizer), log, fopts...)
	if err != nil {
		return err
	}
	defer svc.Close()
	offers := offer.New(svc)
	page := web.Handler(web.Options{Burster: loadBurster(ln.Addr().String()), Logger: log})
	defer page.Close()
	handlers := page.Routes()
	handlers["GET /v1/agents"] = svc.AgentHandler(set.guard.agentAccept())
	handlers["/v1/callbacks"] = svc.CallbackHandler()
	handlers["/v1/callbacks/"] = svc.CallbackHandler()
	set.adapt.apply(&set.session, &set.recognize, &set.model, &set.synth) // -stage-order
	scfg := session.Config{
		Session: set.session, Recognize: set.recognize, Model: set.model, Synthesis: set.synth,
		CleanupTimeout: set.cleanupTimeout,
		SegmentGrace:   set.segmentGrace,
		ShedRate:       set.shedRate,
		Pace:           set.pace,
		ModelBackend:   be.Model, Synthesizer: be.Synthesizer, Recognizer: be.Recognizer,
		Answers:        be.Answers,
		Logger:         log,
		Clock:          clock,
		Registry:       reg,
		TracerProvider: traces.provider(), // nil without -otlp-endpoint
		Fallback:       offers,
		NewGate:        set.adapt.newGate(rec.newGate(fl, set.policy, log), log), // in-process unless -store; recorded with -record-trace; adaptive with -STAGE-slots auto
		StoreTimeout:   set.store.timeout,
		Ready:          readiness(fl.readyFunc(), health),
		OnBackend:      health.Observe,
	}
	set.guard.limits.apply(&scfg) // audio limits, quarantine: serve_limits.go
	sc := server.Config{Config: scfg, Root: page, Handlers: handlers, OriginPatterns: set.guard.origins()}
	if err := set.media.apply(&sc); err != nil {
		return err
	}
	if err := set.gateway.apply(&sc, os.LookupEnv); err != nil {
		return err
	}
	if sc.Twilio.Prompts == nil { // one rendering of each prompt for every phone endpoint
		sc.Twilio.Prompts = telephony.NewPromptCache()
	}
	srv, err := server.New(sc)
	if err != nil {
		return err
	}
	srv.AddView("callback", svc.View(prompt.KindCallback))
	srv.AddView("handoff", svc.View(prompt.KindHandoff))
	sipSrv, err := set.sip.start(ctx, srv.Engine, sc.Twilio.Prompts, log)
	if err != nil {
		return err
	}
	defer closeSIP(sipSrv)
	hs, served, err := set.guard.serve(ln, srv, reg, log)
	if err != nil {
		return err
	}
	audio, err := set.gateway.listen(srv, log) // -audiosocket-listen
	if err != nil {
		return err
	}
	defer audio.Close()
	local := dialable(ln.Addr().String())
	log.Info("listening", "addr", ln.Addr().String(), "url", "http://"+local+"/",
		"session", "ws://"+local+"/v1/session")

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	log.Info("draining", "drain_timeout", set.drainTimeout, "calls", srv.Calls())
	dctx, cancel := context.WithTimeout(context.Background(), set.drainTimeout)
	audio.stopAccepting()
	derr := srv.Drain(dctx)
	cancel()
	if errors.Is(derr, session.ErrDrainTimeout) {
		log.Warn("drain timeout: remaining calls told to go away", "calls", srv.Calls())
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	page.Close()
	// Backends are closed before the server waits for its calls, so that a
	// backend that never confirms cleanup (-stub-hang) cannot hold the exit.
	_ = be.Close()
	closed := make(chan struct{})
	go func() { closeSIP(sipSrv); srv.Close(); close(closed) }()
	select {
	case <-closed:
		offers.Wait()
	case <-sctx.Done():
		log.Warn("calls still cleaning up at exit")
	}
	flushTraces(traces, log) // every call has ended: its spans are in the flush
	log.Info("stopped")
	return nil
}

// startCPUProfile starts a CPU profile into name; stop ends and writes it.
func startCPUProfile(name string) (stop func(), err error) {
	f, err := os.Create(name)
	if err != nil {
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// readiness is /readyz's check beyond the server's own: the fleet store
// (nil without -store) and every backend's health, one reason each.
func readiness(store func(context.Context) error, health *backend.Health) func(context.Context) error {
	return func(ctx context.Context) error {
		var errs []error
		if store != nil {
			if err := store(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		for _, r := range health.Reasons() {
			errs = append(errs, errors.New(r))
		}
		return errors.Join(errs...)
	}
}

// dialable is the host:port a browser on this machine opens for a
// listener at addr: an unspecified host (0.0.0.0, [::], none), which is
// not an address to dial, becomes 127.0.0.1.
func dialable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

// backendConfig applies -backend to the engines not chosen one by one.
func backendConfig(fs *flag.FlagSet, set *serveSettings) (backends.Config, error) {
	bc := set.backends
	given := func(name string) bool {
		f := fs.Lookup(name)
		return f != nil && f.Value.String() != f.DefValue
	}
	switch set.backend {
	case "":
		// Unset: each engine's own default (the demo agent, and the
		// recognizer auto: pocketsphinx when installed).
	case backends.Stub:
		if !given("recognize") {
			bc.Recognize = backends.Stub
		}
		if !given("model") {
			bc.Model = backends.Stub
		}
	case backends.OpenAI:
		if !given("model") {
			bc.Model = backends.OpenAI
		}
		if !given("recognize") {
			bc.Recognize = backends.OpenAI
		}
	default:
		return bc, fmt.Errorf("-backend %q: want stub or openai", set.backend)
	}
	return bc, nil
}
