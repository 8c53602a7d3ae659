package backends

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/backend/espeak"
	"github.com/frontdoorhq/frontdoor/session/backend/openai"
	"github.com/frontdoorhq/frontdoor/session/backend/pocketsphinx"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
)

// Backend names.
const (
	Stub   = "stub"
	OpenAI = "openai"
	Espeak = "espeak"
	// Demo is the default model: the stub model as the demo agent, which
	// answers from a small script and says it is a demo.
	Demo = "demo"
	// Pocketsphinx is the local recognizer (Debian's pocketsphinx).
	Pocketsphinx = "pocketsphinx"
	// Auto picks the local engine when installed, else the stub: espeak
	// for -synth, pocketsphinx for -recognize.
	Auto = "auto"
)

// Config selects and configures the backends. Its fields mirror the flags
// that Flags registers.
type Config struct {
	Model     string // -model: demo, stub or openai
	Synth     string // -synth: auto, stub, espeak or openai
	Recognize string // -recognize: auto, stub, pocketsphinx or openai

	ModelURL       string // -model-url, e.g. http://127.0.0.1:11434/v1
	ModelName      string // -model-name
	ModelAPIKeyEnv string // -model-api-key-env: the variable's name, not the key
	SystemPrompt   string // -system-prompt

	SynthURL       string // -synth-url
	SynthModel     string // -synth-model
	SynthVoice     string // -synth-voice (espeak-ng or OpenAI voice)
	SynthAPIKeyEnv string // -synth-api-key-env

	RecognizeURL       string // -recognize-url
	RecognizeModel     string // -recognize-model
	RecognizeAPIKeyEnv string // -recognize-api-key-env

	// AnswerPhrases, when set with the local recognizer, build Set.Answers:
	// a pocketsphinx grammar of these phrases (fallback.AnswerPhrases).
	AnswerPhrases []string

	// StallTimeout bounds an HTTP backend's silence (-backend-stall-timeout).
	StallTimeout time.Duration
	// ProbeInterval is how often each backend's health is probed for
	// /readyz (-backend-probe-interval); UnreadyAfter how many turns in a
	// row a backend may fail before /readyz answers 503 until its next
	// good probe or turn (-backend-unready-after; 0: never).
	ProbeInterval time.Duration
	UnreadyAfter  int

	// Stub sets the stubs' timing (-stub-*).
	Stub stub.Settings
	// StubCapacity, when positive, makes the stub model and synthesizer
	// each share a processor of that many jobs (-stub-capacity): beyond it
	// every job slows down, as a real backend does when over-admitted.
	StubCapacity int
	// StubModelCapacity, when set, caps the stub model alone, on a
	// capacity that may change during the run (-stub-model-capacity
	// 10,4@10s,15@20s: steps timed from the first reply), for measuring
	// adaptive limits against a backend whose capacity moves.
	StubModelCapacity string

	// Clock is the engine's clock (session.Config.Clock; nil: the wall
	// clock): the stubs' delays, the HTTP backends' stall watchdog and
	// the health probes run on it. It overrides Stub.Clock.
	Clock backend.Clock
}

// DefaultConfig returns the settings of a fresh frontdoor serve: the demo
// agent with a quick, natural pace, and the auto synthesizer and recognizer.
func DefaultConfig() Config {
	return Config{
		Model:          Demo,
		Synth:          Auto,
		Recognize:      Auto,
		ModelURL:       "http://127.0.0.1:11434/v1",
		ModelName:      "llama3.2",
		SystemPrompt:   "You are a friendly phone assistant. Answer in one or two short spoken sentences.",
		SynthModel:     "tts-1",
		RecognizeModel: "whisper-1",
		StallTimeout:   openai.DefaultStallTimeout,
		ProbeInterval:  5 * time.Second,
		UnreadyAfter:   5,
		Stub: stub.Settings{
			ModelDelay:   150 * time.Millisecond,
			TokenDelay:   30 * time.Millisecond,
			Tokens:       12,
			SynthDelay:   100 * time.Millisecond,
			FrameCount:   50,
			FrameDelay:   20 * time.Millisecond, // real time, like a streaming engine
			CleanupDelay: 50 * time.Millisecond,
		},
	}
}

// Flags registers the backend flags on fs, with c's values as defaults (all
// of DefaultConfig's if c is the zero Config), writing parsed values into c.
func (c *Config) Flags(fs *flag.FlagSet) {
	if c.Model == "" && c.Synth == "" && c.Recognize == "" {
		phrases := c.AnswerPhrases
		*c = DefaultConfig()
		c.AnswerPhrases = phrases
	}
	fs.StringVar(&c.Model, "model", c.Model, "model backend: demo (a scripted demo agent), stub (echoes the caller) or openai")
	fs.StringVar(&c.Synth, "synth", c.Synth, "synthesizer: auto (espeak when espeak-ng is installed, else stub), stub, espeak or openai")
	fs.StringVar(&c.Recognize, "recognize", c.Recognize, "recognizer: auto (pocketsphinx when installed, else stub), stub, pocketsphinx or openai")
	fs.StringVar(&c.ModelURL, "model-url", c.ModelURL, "OpenAI-compatible API root for -model=openai (Ollama, vLLM, llama.cpp, OpenAI)")
	fs.StringVar(&c.ModelName, "model-name", c.ModelName, "model name for -model=openai")
	fs.StringVar(&c.ModelAPIKeyEnv, "model-api-key-env", c.ModelAPIKeyEnv, "name of the environment variable holding the model server's API key (empty: none)")
	fs.StringVar(&c.SystemPrompt, "system-prompt", c.SystemPrompt, "system prompt for -model=openai")
	fs.StringVar(&c.SynthURL, "synth-url", c.SynthURL, "OpenAI-compatible API root for -synth=openai (/audio/speech)")
	fs.StringVar(&c.SynthModel, "synth-model", c.SynthModel, "speech model for -synth=openai")
	fs.StringVar(&c.SynthVoice, "synth-voice", c.SynthVoice, "voice: an espeak-ng voice (empty: en-us), or an OpenAI voice (empty: alloy)")
	fs.StringVar(&c.SynthAPIKeyEnv, "synth-api-key-env", c.SynthAPIKeyEnv, "name of the environment variable holding the speech server's API key (empty: none)")
	fs.StringVar(&c.RecognizeURL, "recognize-url", c.RecognizeURL, "OpenAI-compatible API root for -recognize=openai (/audio/transcriptions)")
	fs.StringVar(&c.RecognizeModel, "recognize-model", c.RecognizeModel, "transcription model for -recognize=openai")
	fs.StringVar(&c.RecognizeAPIKeyEnv, "recognize-api-key-env", c.RecognizeAPIKeyEnv, "name of the environment variable holding the transcription server's API key (empty: none)")
	fs.DurationVar(&c.StallTimeout, "backend-stall-timeout", c.StallTimeout, "an HTTP backend silent this long fails the turn as stalled")
	fs.DurationVar(&c.ProbeInterval, "backend-probe-interval", c.ProbeInterval, "how often each backend is probed for /readyz (an OpenAI-compatible server: GET {url}/models; espeak-ng, pocketsphinx: the binary runs; stubs: always ready); one failing makes /readyz 503 with the reason until a probe passes")
	fs.IntVar(&c.UnreadyAfter, "backend-unready-after", c.UnreadyAfter, "turns in a row a backend may fail before /readyz answers 503, until its next good probe or turn (0: never)")
	fs.DurationVar(&c.Stub.ModelDelay, "stub-model-delay", c.Stub.ModelDelay, "stub model: time to the first token")
	fs.DurationVar(&c.Stub.TokenDelay, "stub-token-delay", c.Stub.TokenDelay, "stub model: time between tokens")
	fs.IntVar(&c.Stub.Tokens, "stub-tokens", c.Stub.Tokens, "stub model: tokens per reply")
	fs.IntVar(&c.Stub.SentenceWords, "stub-sentence-words", c.Stub.SentenceWords, "stub model: end a sentence every that many words (0: one sentence a reply), so that replies stream sentence by sentence")
	fs.DurationVar(&c.Stub.SynthDelay, "stub-synth-delay", c.Stub.SynthDelay, "stub synthesizer and recognizer: time to the first frame or the transcript")
	fs.IntVar(&c.Stub.FrameCount, "stub-frame-count", c.Stub.FrameCount, "stub synthesizer: 20 ms frames per synthesis (per sentence of a reply)")
	fs.IntVar(&c.Stub.WordFrames, "stub-word-frames", c.Stub.WordFrames, "stub synthesizer: when set, 20 ms frames per word of the text instead of -stub-frame-count (20: 150 words a minute)")
	fs.DurationVar(&c.Stub.FrameDelay, "stub-frame-delay", c.Stub.FrameDelay, "stub synthesizer: time between frames")
	fs.IntVar(&c.Stub.FrameChunk, "stub-frame-chunk", c.Stub.FrameChunk, "stub synthesizer: frames per emit, the chunks that many frame delays apart, as a streaming TTS sends audio (0: 1)")
	fs.DurationVar(&c.Stub.CleanupDelay, "stub-cleanup-delay", c.Stub.CleanupDelay, "stubs: time from cancel to confirmed stop")
	fs.Float64Var(&c.Stub.FailRate, "stub-fail-rate", c.Stub.FailRate, "stubs: fraction of calls that fail as unavailable (0 to 1)")
	fs.StringVar(&c.StubModelCapacity, "stub-model-capacity", c.StubModelCapacity, "stub model: jobs it runs at full speed, and how that changes from its first reply on (`N[,N@DURATION...]`: 10,4@10s,15@20s); beyond it all slow down; overrides -stub-capacity for the model")
	fs.IntVar(&c.StubCapacity, "stub-capacity", c.StubCapacity, "stubs: jobs the stub model and synthesizer each run at full speed (0: unlimited); beyond it all slow down")
	fs.BoolVar(&c.Stub.Hang, "stub-hang", c.Stub.Hang, "stubs: never confirm cleanup after cancel (a wedged backend)")
}

// fill sets DefaultConfig's choices where c leaves them empty. URLs, names
// and the prompt are left as given: empty is a choice there, or an error
// that New reports.
func (c *Config) fill() {
	d := DefaultConfig()
	set := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	set(&c.Model, d.Model)
	set(&c.Synth, d.Synth)
	set(&c.Recognize, d.Recognize)
	set(&c.SynthModel, d.SynthModel)
	set(&c.RecognizeModel, d.RecognizeModel)
	if c.StallTimeout <= 0 {
		c.StallTimeout = d.StallTimeout
	}
	if c.ProbeInterval <= 0 {
		c.ProbeInterval = d.ProbeInterval
	}
}

// Set is the backends New built, each wrapped to count its calls.
type Set struct {
	Model       backend.Model
	Synthesizer backend.Synthesizer
	Recognizer  backend.Recognizer
	// Answers hears the answers to an offer (session.Config.Answers): a
	// grammar of Config.AnswerPhrases, when the recognizer is the local
	// one; nil otherwise (answers are heard in turns only).
	Answers backend.Recognizer
	// Names of the chosen backends, with auto resolved: "stub", "openai",
	// "espeak", "pocketsphinx".
	ModelName, SynthName, RecognizeName string
	// The stubs, when chosen (nil otherwise), for their counters
	// (StubModel is also the demo agent).
	StubModel       *stub.Model
	StubSynthesizer *stub.Synthesizer
	StubRecognizer  *stub.Recognizer
	// Metrics counts calls and failures per backend ("model/openai" ...).
	Metrics *backend.Metrics
	// Notes are sentences for the startup log, such as why the stub
	// synthesizer was chosen.
	Notes []string

	// Probes are the chosen backends' health checks by stage
	// ("recognize", "model", "synthesis"); nil for a stub, which is
	// always ready. NewHealth watches them.
	Probes map[string]func(context.Context) error

	health  backend.HealthConfig
	closers []func() error
}

// NewHealth returns the backends' readiness for /readyz: each probed every
// -backend-probe-interval, and unready after -backend-unready-after failed
// turns in a row (feed it with Observe); Run it while serving.
func (s *Set) NewHealth(log *slog.Logger) *backend.Health {
	cfg := s.health
	cfg.Logger = log
	h := backend.NewHealth(cfg)
	for _, st := range []string{"recognize", "model", "synthesis"} {
		h.Watch(st, s.Probes[st])
	}
	return h
}

// Close releases the backends: idle HTTP connections, and stub calls hung
// by -stub-hang. Call it after the calls using them have returned, or to
// end hung stub calls at shutdown.
func (s *Set) Close() error {
	var errs []error
	for _, c := range s.closers {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}

// New builds the backends c selects, counting their calls on reg (which may
// be nil). It contacts no server.
func New(c Config, reg prometheus.Registerer) (*Set, error) {
	c.fill()
	c.Stub.Clock = c.Clock
	s := &Set{Metrics: backend.NewMetrics(reg)}
	if err := s.model(c); err != nil {
		return nil, err
	}
	if err := s.synth(c); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.recognizer(c); err != nil {
		s.Close()
		return nil, err
	}
	// Each backend's health check, taken before the metrics wrap it: the
	// stage names are session's. Stubs have none and are always ready.
	s.health = backend.HealthConfig{Interval: c.ProbeInterval, FailuresInARow: c.UnreadyAfter, Clock: c.Clock}
	s.Probes = map[string]func(context.Context) error{
		"recognize": probeOf(s.Recognizer), "model": probeOf(s.Model), "synthesis": probeOf(s.Synthesizer),
	}
	s.Model = s.Metrics.Model("model/"+s.ModelName, s.Model)
	s.Synthesizer = s.Metrics.Synthesizer("synth/"+s.SynthName, s.Synthesizer)
	s.Recognizer = s.Metrics.Recognizer("recognize/"+s.RecognizeName, s.Recognizer)
	return s, nil
}

// probeOf is b's health check, or nil when it has none.
func probeOf(b any) func(context.Context) error {
	if p, ok := b.(backend.Prober); ok {
		return p.Probe
	}
	return nil
}

func (s *Set) model(c Config) error {
	switch c.Model {
	case Stub, Demo:
		c.Stub.Demo = c.Model == Demo
		if c.StubModelCapacity != "" {
			steps, err := stub.ParseSteps(c.StubModelCapacity)
			if err != nil {
				return fmt.Errorf("-stub-model-capacity: %w", err)
			}
			m := stub.NewScheduledModel(c.Stub, steps, c.Clock)
			s.Model, s.StubModel = m, m.Model
			s.closers = append(s.closers, m.Close)
			break
		}
		if c.StubCapacity > 0 {
			m := stub.NewCappedModel(c.Stub, stub.NewCapacity(c.StubCapacity, c.Clock))
			s.Model, s.StubModel = m, m.Model
			s.closers = append(s.closers, m.Close)
			break
		}
		m := stub.NewModel(c.Stub)
		s.Model, s.StubModel = m, m
		s.closers = append(s.closers, m.Close)
	case OpenAI:
		m, err := openai.NewModel(openai.ModelConfig{
			Endpoint:     openai.Endpoint{BaseURL: c.ModelURL, APIKeyEnv: c.ModelAPIKeyEnv, StallTimeout: c.StallTimeout, Clock: c.Clock},
			Model:        c.ModelName,
			SystemPrompt: c.SystemPrompt,
		})
		if err != nil {
			return fmt.Errorf("-model=openai: %w", err)
		}
		s.Model = m
		s.closers = append(s.closers, m.Close)
	default:
		return fmt.Errorf("-model=%q: want demo, stub or openai", c.Model)
	}
	s.ModelName = c.Model
	return nil
}

func (s *Set) synth(c Config) error {
	name := c.Synth
	if name == Auto {
		name = Stub
		if espeak.Available() {
			name = Espeak
		} else {
			s.Notes = append(s.Notes, "espeak-ng is not installed: using the stub synthesizer (a tone); install espeak-ng for a real voice")
		}
	}
	switch name {
	case Stub:
		if c.StubCapacity > 0 {
			sy := stub.NewCappedSynthesizer(c.Stub, stub.NewCapacity(c.StubCapacity, c.Clock))
			s.Synthesizer, s.StubSynthesizer = sy, sy.Synthesizer
			s.closers = append(s.closers, sy.Close)
			break
		}
		sy := stub.NewSynthesizer(c.Stub)
		s.Synthesizer, s.StubSynthesizer = sy, sy
		s.closers = append(s.closers, sy.Close)
	case Espeak:
		if !espeak.Available() {
			return errors.New("-synth=espeak: espeak-ng is not installed (apt-get install espeak-ng)")
		}
		voice := c.SynthVoice
		if voice == "" {
			// American English: the voice the local recognizer's
			// en-us model hears best (docs/RECOGNIZERS.md).
			voice = "en-us"
		}
		sy, err := espeak.New(espeak.Options{Voice: voice})
		if err != nil {
			return fmt.Errorf("-synth=espeak: %w", err)
		}
		s.Synthesizer = sy
	case OpenAI:
		voice := c.SynthVoice
		if voice == "" {
			voice = "alloy"
		}
		sy, err := openai.NewSynthesizer(openai.SpeechConfig{
			Endpoint: openai.Endpoint{BaseURL: c.SynthURL, APIKeyEnv: c.SynthAPIKeyEnv, StallTimeout: c.StallTimeout, Clock: c.Clock},
			Model:    c.SynthModel,
			Voice:    voice,
		})
		if err != nil {
			return fmt.Errorf("-synth=openai: %w", err)
		}
		s.Synthesizer = sy
		s.closers = append(s.closers, sy.Close)
	default:
		return fmt.Errorf("-synth=%q: want auto, stub, espeak or openai", c.Synth)
	}
	s.SynthName = name
	return nil
}

func (s *Set) recognizer(c Config) error {
	name := c.Recognize
	if name == Auto {
		name = Stub
		if pocketsphinx.Available() {
			name = Pocketsphinx
		} else {
			s.Notes = append(s.Notes, "pocketsphinx is not installed: recognition is a stub (it hears only how long you spoke); apt-get install pocketsphinx pocketsphinx-en-us, or -recognize=openai")
		}
	}
	switch name {
	case Pocketsphinx:
		if !pocketsphinx.Available() {
			return errors.New("-recognize=pocketsphinx: not installed (apt-get install pocketsphinx pocketsphinx-en-us)")
		}
		r, err := pocketsphinx.New(pocketsphinx.Options{})
		if err != nil {
			return fmt.Errorf("-recognize=pocketsphinx: %w", err)
		}
		s.Recognizer = r
		s.closers = append(s.closers, r.Close)
		if len(c.AnswerPhrases) > 0 {
			a, err := pocketsphinx.New(pocketsphinx.Options{Phrases: c.AnswerPhrases, MaxAudio: 10 * time.Second})
			if err != nil {
				return fmt.Errorf("-recognize=pocketsphinx: answers: %w", err)
			}
			s.Answers = a
			s.closers = append(s.closers, a.Close)
		}
	case Stub:
		r := stub.NewRecognizer(c.Stub)
		s.Recognizer, s.StubRecognizer = r, r
		s.closers = append(s.closers, r.Close)
	case OpenAI:
		r, err := openai.NewRecognizer(openai.TranscribeConfig{
			Endpoint: openai.Endpoint{BaseURL: c.RecognizeURL, APIKeyEnv: c.RecognizeAPIKeyEnv, StallTimeout: c.StallTimeout, Clock: c.Clock},
			Model:    c.RecognizeModel,
		})
		if err != nil {
			return fmt.Errorf("-recognize=openai: %w", err)
		}
		s.Recognizer = r
		s.closers = append(s.closers, r.Close)
	default:
		return fmt.Errorf("-recognize=%q: want auto, stub, pocketsphinx or openai", c.Recognize)
	}
	s.RecognizeName = name
	return nil
}
