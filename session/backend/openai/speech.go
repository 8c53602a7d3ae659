package openai

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"
	"time"

	oai "github.com/openai/openai-go/v3"

	"github.com/frontdoorhq/frontdoor/session/backend"
)

// SpeechRate is the sample rate of response_format "pcm": 24 kHz PCM16 mono,
// little-endian.
const SpeechRate = 24000

// DefaultMaxSpeech bounds the audio of one Synthesize call.
const DefaultMaxSpeech = 5 * time.Minute

// SpeechConfig configures a Synthesizer.
type SpeechConfig struct {
	Endpoint
	// Model is the speech model, such as "tts-1" or "kokoro".
	Model string
	// Voice is the voice name, such as "alloy".
	Voice string
	// Speed is the speaking speed, 0.25 to 4 (0: the server's default).
	Speed float64
	// MaxAudio bounds one call's audio; longer ends with ErrMalformed
	// (0: DefaultMaxSpeech).
	MaxAudio time.Duration
	// ChunkBytes is the largest chunk emitted at once (0: 4800, 100 ms).
	ChunkBytes int
}

// Synthesizer speaks through /v1/audio/speech. It is safe for concurrent use.
type Synthesizer struct {
	*conn
	cfg SpeechConfig
}

// NewSynthesizer returns a Synthesizer for cfg. It does not contact the
// server.
func NewSynthesizer(cfg SpeechConfig) (*Synthesizer, error) {
	if cfg.Model == "" || cfg.Voice == "" {
		return nil, errors.New("openai: speech model and voice required")
	}
	if cfg.Speed != 0 && (cfg.Speed < 0.25 || cfg.Speed > 4) {
		return nil, fmt.Errorf("openai: speech speed %v outside 0.25..4", cfg.Speed)
	}
	if cfg.MaxAudio <= 0 {
		cfg.MaxAudio = DefaultMaxSpeech
	}
	if cfg.ChunkBytes <= 0 {
		cfg.ChunkBytes = 4800
	}
	cfg.ChunkBytes += cfg.ChunkBytes % 2
	c, err := newConn(cfg.Endpoint, 0)
	if err != nil {
		return nil, err
	}
	return &Synthesizer{conn: c, cfg: cfg}, nil
}

// Synthesize implements backend.Synthesizer: it emits 24 kHz audio as the
// response body arrives, and returns after the body is closed.
func (s *Synthesizer) Synthesize(ctx context.Context, text string, emit func(backend.Audio) error) error {
	if strings.TrimSpace(text) == "" {
		return nil
	}
	rctx, dog, cancel := s.watch(ctx)
	defer cancel(nil)
	defer dog.stop()
	p := oai.AudioSpeechNewParams{
		Input:          text,
		Model:          s.cfg.Model,
		Voice:          oai.AudioSpeechNewParamsVoiceUnion{OfString: oai.String(s.cfg.Voice)},
		ResponseFormat: oai.AudioSpeechNewParamsResponseFormatPCM,
	}
	if s.cfg.Speed != 0 {
		p.Speed = oai.Float(s.cfg.Speed)
	}
	resp, err := s.client.Audio.Speech.New(rctx, p)
	if err != nil {
		return s.classify(ctx, rctx, "synthesize", err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		if mt, _, _ := mime.ParseMediaType(ct); mt == "application/json" || strings.HasPrefix(mt, "text/") {
			return &backend.Error{Kind: backend.KindMalformed, Backend: Name, Op: "synthesize",
				Err: fmt.Errorf("content type %q, want raw PCM", ct)}
		}
	}
	err = s.stream(resp.Body, dog, emit)
	resp.Body.Close()
	var emitErr *emitFailure
	switch {
	case errors.As(err, &emitErr):
		return backend.EmitError(Name, "synthesize", emitErr.err)
	case err != nil:
		return s.classify(ctx, rctx, "synthesize", err)
	}
	return ctx.Err()
}

type emitFailure struct{ err error }

func (e *emitFailure) Error() string { return e.err.Error() }

var errTooLong = errors.New("audio longer than the limit")

func (s *Synthesizer) stream(r io.Reader, dog *watchdog, emit func(backend.Audio) error) error {
	limit := int64(s.cfg.MaxAudio/time.Millisecond) * SpeechRate / 1000 * 2
	buf := make([]byte, s.cfg.ChunkBytes)
	var total int64
	have := 0
	for {
		n, err := r.Read(buf[have:])
		have += n
		total += int64(n)
		if total > limit {
			return &backend.Error{Kind: backend.KindMalformed, Backend: Name, Op: "synthesize",
				Err: fmt.Errorf("%w (%s)", errTooLong, s.cfg.MaxAudio)}
		}
		// Emit once a chunk is full, or whatever whole samples are left at
		// the end, so small network reads are gathered into fewer frames.
		if whole := have &^ 1; whole > 0 && (have == len(buf) || err != nil) {
			samples := make([]int16, whole/2)
			for i := range samples {
				samples[i] = int16(binary.LittleEndian.Uint16(buf[2*i:]))
			}
			dog.pause()
			if eerr := emit(backend.Audio{Rate: SpeechRate, Samples: samples}); eerr != nil {
				return &emitFailure{eerr}
			}
			dog.resume()
			copy(buf, buf[whole:have])
			have -= whole
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
