package openai

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	oai "github.com/openai/openai-go/v3"

	"github.com/frontdoorhq/frontdoor/session/backend"
)

// DefaultMaxSpeechIn bounds the audio of one Recognize call.
const DefaultMaxSpeechIn = 2 * time.Minute

// maxTranscript bounds the JSON response of a transcription.
const maxTranscript = 1 << 20

// TranscribeConfig configures a Recognizer.
type TranscribeConfig struct {
	Endpoint
	// Model is the transcription model, such as "whisper-1".
	Model string
	// Language is an ISO-639-1 hint such as "en" (empty: detect).
	Language string
	// MaxAudio bounds the speech of one call; longer is rejected before
	// upload (0: DefaultMaxSpeechIn).
	MaxAudio time.Duration
}

// Recognizer transcribes through /v1/audio/transcriptions, uploading a WAV.
// The whole response must arrive within the stall timeout. It is safe for
// concurrent use.
type Recognizer struct {
	*conn
	cfg TranscribeConfig
}

// NewRecognizer returns a Recognizer for cfg. It does not contact the server.
func NewRecognizer(cfg TranscribeConfig) (*Recognizer, error) {
	if cfg.Model == "" {
		return nil, errors.New("openai: transcription model required")
	}
	if cfg.MaxAudio <= 0 {
		cfg.MaxAudio = DefaultMaxSpeechIn
	}
	c, err := newConn(cfg.Endpoint, maxTranscript)
	if err != nil {
		return nil, err
	}
	return &Recognizer{conn: c, cfg: cfg}, nil
}

// Recognize implements backend.Recognizer.
func (r *Recognizer) Recognize(ctx context.Context, speech backend.Audio) (string, error) {
	if len(speech.Samples) == 0 {
		return "", nil
	}
	if speech.Rate < 1000 || speech.Rate > 192000 {
		return "", &backend.Error{Kind: backend.KindRejected, Backend: Name, Op: "recognize",
			Err: fmt.Errorf("sample rate %d", speech.Rate)}
	}
	if d := speech.Duration(); d > r.cfg.MaxAudio {
		return "", &backend.Error{Kind: backend.KindRejected, Backend: Name, Op: "recognize",
			Err: fmt.Errorf("%s of speech exceeds %s", d, r.cfg.MaxAudio)}
	}
	// No chunks to watch: the watchdog bounds the whole request.
	rctx, dog, cancel := r.watch(ctx)
	defer cancel(nil)
	defer dog.stop()
	p := oai.AudioTranscriptionNewParams{
		File:           oai.File(bytes.NewReader(WAV(speech)), "speech.wav", "audio/wav"),
		Model:          r.cfg.Model,
		ResponseFormat: oai.AudioResponseFormatJSON,
	}
	if r.cfg.Language != "" {
		p.Language = oai.String(r.cfg.Language)
	}
	res, err := r.client.Audio.Transcriptions.New(rctx, p)
	if err != nil {
		return "", r.classify(ctx, rctx, "recognize", err)
	}
	return strings.TrimSpace(res.Text), nil
}

// WAV encodes a as a 16-bit mono PCM WAV file.
func WAV(a backend.Audio) []byte {
	data := len(a.Samples) * 2
	b := make([]byte, 44+data)
	copy(b[0:], "RIFF")
	binary.LittleEndian.PutUint32(b[4:], uint32(36+data))
	copy(b[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(b[16:], 16)
	binary.LittleEndian.PutUint16(b[20:], 1) // PCM
	binary.LittleEndian.PutUint16(b[22:], 1) // mono
	binary.LittleEndian.PutUint32(b[24:], uint32(a.Rate))
	binary.LittleEndian.PutUint32(b[28:], uint32(a.Rate*2))
	binary.LittleEndian.PutUint16(b[32:], 2)
	binary.LittleEndian.PutUint16(b[34:], 16)
	copy(b[36:], "data")
	binary.LittleEndian.PutUint32(b[40:], uint32(data))
	for i, s := range a.Samples {
		binary.LittleEndian.PutUint16(b[44+2*i:], uint16(s))
	}
	return b
}
