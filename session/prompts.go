package session

import (
	"context"
	"sync"
	"time"
	"weak"

	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/g711"
	"github.com/frontdoorhq/frontdoor/media/pcm"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
)

// Refusal describes work a stage turned away or let expire, a backend
// that failed, or a session waiting in the queue (Disposition Queued, with
// its Position).
type Refusal struct {
	Call        string
	Turn        string             // empty for the session stage
	Stage       string             // StageSession, StageModel, StageSynthesis, ...
	Disposition stages.Disposition // 0 for a failure
	Position    int                // for a queued session
	Reason      string             // for a failed backend: its error kind
	// Started: the stage's backend had started on the work before it
	// failed (false for every refusal: stages refuse and expire only
	// queued work, and for a store that could not admit it).
	Started bool
	// Partial: the caller heard part of the reply before the rest was
	// refused or failed; what was said stands.
	Partial bool
	// Final: the call ends once the prompt is out (its session lease was
	// lost); nothing is offered.
	Final bool
	// Shed: the engine is refusing faster than Config.ShedRate a second
	// (shed.go): the refusal is told, but nothing is offered, so that it
	// costs one sentence and no wait for an answer.
	Shed bool
}

// Outcome is what the prompt for r is keyed by (prompt.Of).
func (r Refusal) Outcome() prompt.Outcome {
	return prompt.Outcome{Stage: r.Stage, Reason: reason(r), Started: r.Started, Partial: r.Partial}
}

// Sender is the call a Fallback speaks to: it sends server messages and
// prompt audio to one caller, through the call's outbound queue (messages
// in order among themselves and ahead of queued audio), and says how the
// caller can answer.
type Sender interface {
	// Send queues a message. A PromptMsg, a FallbackMsg or a session
	// outcome changes the call's state: prompt audio spoken for the state
	// before is cut (premise.go).
	Send(ctx context.Context, msg wire.Message) error
	// SendAudio queues prompt audio (audio_start, binary frames,
	// audio_end) in the call's format, spoken for prompt, a PromptMsg
	// already sent (nil: the last one sent). Prompt audio belongs to no
	// generation, so a barge-in does not cut it; a change of the call's
	// state since prompt was sent does, even one made while the audio was
	// being rendered.
	SendAudio(ctx context.Context, turn string, prompt *wire.PromptMsg, a backend.Audio) error
	// Keypad is the call's transport's declared keypad
	// (Capabilities.Keypad); nil when the caller answers with messages.
	Keypad() func(offered []string) []string
	// Hold keeps a call refused at the session stage open once Refused
	// returns, for an answer to its offer: until release is called,
	// window has passed on the engine's clock, or the caller leaves. The
	// wait holds the parked call only (hold.go). Outside the session
	// stage's Refused it does nothing.
	Hold(window time.Duration) (release func())
}

// Fallback decides what a caller hears after a refusal or expiry, and may
// offer alternatives. Package session/offer provides the full one (offers,
// callbacks, handoffs); Prompts is the minimal default.
type Fallback interface {
	// Refused is called after each refusal, expiry or backend failure, and
	// when a session is queued. It sends at least a PromptMsg through out.
	// For the session stage, the connection closes (1013) once it returns,
	// unless it asked out to Hold the call.
	Refused(ctx context.Context, r Refusal, out Sender)
	// Message is given client messages of types the session does not know
	// (such as "callback" or "handoff"). It reports false if it does not
	// know them either; the caller then gets an unknown_type error.
	Message(ctx context.Context, call string, ev wire.ClientEvent, out Sender) bool
	// SpeaksPrompts reports whether the Fallback sends its prompts as
	// audio itself. When it does not (Prompts), transports without a text
	// channel (Twilio) speak the prompt text with the synthesizer.
	SpeaksPrompts() bool
	// SpokenAnswer is asked about each transcript of a caller whose
	// transport declared no Capabilities.Answer: when the utterance
	// answers the call's open offer ("a person, please"), it returns the
	// answer, which the call gives to Message instead of the model.
	SpokenAnswer(call, transcript string) (wire.ClientEvent, bool)
	// Listening reports whether the call's offer waits for an answer in
	// words: the call's utterances then go to the answer recognizer
	// (Config.Answers) first, and for a refused call are heard at all.
	Listening(call string) bool
	// CallEnded tells a Fallback that keeps per-call state that the call
	// has ended.
	CallEnded(call string)
}

// Prompts is the default Fallback: a truthful sentence per stage and
// disposition, and no alternatives. It never claims work is in progress once
// it was refused or expired.
type Prompts struct{}

// Refused implements Fallback.
func (Prompts) Refused(ctx context.Context, r Refusal, out Sender) {
	_ = out.Send(ctx, &wire.PromptMsg{Type: "prompt", Reason: reason(r), Stage: r.Stage, Text: PromptText(r)})
}

// Message implements Fallback.
func (Prompts) Message(context.Context, string, wire.ClientEvent, Sender) bool { return false }

// SpeaksPrompts implements Fallback: Prompts sends text only.
func (Prompts) SpeaksPrompts() bool { return false }

// SpokenAnswer implements Fallback: Prompts offers nothing to answer.
func (Prompts) SpokenAnswer(string, string) (wire.ClientEvent, bool) {
	return wire.ClientEvent{}, false
}

// Listening implements Fallback: Prompts offers nothing to answer.
func (Prompts) Listening(string) bool { return false }

// CallEnded implements Fallback: Prompts keeps no state.
func (Prompts) CallEnded(string) {}

func reason(r Refusal) string {
	if r.Disposition == 0 {
		return wire.TurnFailed
	}
	return r.Disposition.String()
}

// PromptText is the default prompt for r: the sentence of the prompt
// table (docs/PROMPTS.md) for its outcome, without an offer.
func PromptText(r Refusal) string {
	return prompt.Of(r.Outcome(), nil).Text
}

// Prompt audio is encoded once per rendering and call format, and every call
// that speaks it streams frames sliced from that one buffer: a refused
// caller's prompt costs its writes, not a resampling, an encoding and an
// allocation per 20 ms frame. At 10x overload thousands of refused callers
// hear the same few prompts at once.

// maxEncodedPromptBytes bounds the encoded prompt audio kept for reuse, all
// formats together (the prompt table at 16 kHz PCM16 is some 10 MB).
const maxEncodedPromptBytes = 32 << 20

// encodedPrompt is one rendering in one call format: its 20 ms frames back
// to back in data, shared read-only by every call that speaks it (each
// frame is a full slice expression, so an append cannot reach the next).
// A call whose frames are longer (hello.audio.frame_ms) is sent windows of
// span frames of the same buffer: its framing costs no encoding of its own.
type encodedPrompt struct {
	enc     media.Encoding
	rate    int
	data    []byte
	frame   int   // bytes in each 20 ms frame; the last may be shorter
	sampleB int   // bytes per sample
	synthUS int64 // the rendering's duration, as audio_end reports it
}

// frames returns the number of frames of p in frames of span 20 ms frames.
func (p *encodedPrompt) frames(span int) int {
	n := max(span, 1) * p.frame
	return (len(p.data) + n - 1) / n
}

// at returns frame i, of span 20 ms frames, and its duration in
// microseconds.
func (p *encodedPrompt) at(i, span int) ([]byte, int64) {
	n := max(span, 1) * p.frame
	lo, hi := i*n, min((i+1)*n, len(p.data))
	return p.data[lo:hi:hi], int64((hi-lo)/p.sampleB) * 1e6 / int64(p.rate)
}

// promptKey names a rendering by its samples (a weak pointer, so that a
// cached encoding does not keep a rendering the fallback's cache let go),
// their count and rate, and the call format it is encoded in.
type promptKey struct {
	samples weak.Pointer[int16]
	n, rate int
	enc     media.Encoding
	outRate int
}

// promptCache holds the encoded prompts, oldest first for eviction.
type promptCache struct {
	mu    sync.Mutex
	m     map[promptKey]*encodedPrompt
	order []promptKey
	bytes int
}

var encodedPrompts = promptCache{m: map[promptKey]*encodedPrompt{}}

// get returns a's encoding in format f, encoding it on first use. Two
// concurrent first uses may both encode; the results are equal.
func (pc *promptCache) get(a backend.Audio, f media.Format) (*encodedPrompt, error) {
	enc, rate := f.Encoding, f.SampleRate
	if enc == "" {
		enc = media.PCM16
	}
	if rate == 0 {
		rate = a.Rate
	}
	k := promptKey{samples: weak.Make(&a.Samples[0]), n: len(a.Samples), rate: a.Rate, enc: enc, outRate: rate}
	pc.mu.Lock()
	p := pc.m[k]
	pc.mu.Unlock()
	if p != nil {
		return p, nil
	}
	p, err := encodePrompt(a, enc, rate)
	if err != nil {
		return nil, err
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if q := pc.m[k]; q != nil {
		return q, nil
	}
	// Encodings of renderings that are gone are dropped first (an insert
	// is rare: once per rendering and format).
	live := pc.order[:0]
	for _, old := range pc.order {
		if old.samples.Value() == nil {
			pc.bytes -= len(pc.m[old].data)
			delete(pc.m, old)
			continue
		}
		live = append(live, old)
	}
	clear(pc.order[len(live):])
	pc.order = live
	for len(pc.order) > 0 && pc.bytes+len(p.data) > maxEncodedPromptBytes {
		old := pc.order[0]
		pc.order = pc.order[1:]
		pc.bytes -= len(pc.m[old].data)
		delete(pc.m, old)
	}
	if len(p.data) <= maxEncodedPromptBytes {
		pc.m[k] = p
		pc.order = append(pc.order, k)
		pc.bytes += len(p.data)
	}
	return p, nil
}

// encodePrompt encodes a as the call's reply audio would be: resampled to
// rate and encoded in 20 ms frames, exactly as audioOut does for a
// synthesized reply.
func encodePrompt(a backend.Audio, enc media.Encoding, rate int) (*encodedPrompt, error) {
	samples := a.Samples
	if rate != a.Rate {
		rs, err := pcm.NewResampler(a.Rate, rate)
		if err != nil {
			return nil, err
		}
		samples = rs.Flush(rs.Resample(nil, samples))
	}
	n := frameSamples(rate, 1)
	p := &encodedPrompt{enc: enc, rate: rate, sampleB: 1, synthUS: int64(len(a.Samples)) * 1e6 / int64(a.Rate)}
	if enc != media.Mulaw && enc != media.Alaw {
		p.sampleB = 2
	}
	p.frame = n * p.sampleB
	p.data = make([]byte, 0, len(samples)*p.sampleB)
	for i := 0; i < len(samples); i += n {
		p.data = encodeFrame(p.data, enc, samples[i:min(i+n, len(samples))])
	}
	return p, nil
}

// encodedLen is the length of n samples in enc.
func encodedLen(enc media.Encoding, n int) int {
	switch enc {
	case media.Mulaw, media.Alaw:
		return n
	}
	return 2 * n
}

// encodeFrame appends samples to dst in enc.
func encodeFrame(dst []byte, enc media.Encoding, s []int16) []byte {
	switch enc {
	case media.Mulaw:
		return g711.EncodeMulaw(dst, s)
	case media.Alaw:
		return g711.EncodeAlaw(dst, s)
	}
	return pcm.Encode(dst, s)
}

// sendPrompt queues p as one prompt's audio_start, frames of span 20 ms
// frames and audio_end, for premise (SendAudio).
func (c *Call) sendPrompt(ctx context.Context, id string, premise uint64, p *encodedPrompt, span int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	start := &wire.AudioStartMsg{Type: "audio_start", Turn: id, Generation: c.gen.Load(), Encoding: string(p.enc), Rate: p.rate}
	if err := c.push(ctx, frame{premise: premise, msg: start}); err != nil {
		return err
	}
	for i := range p.frames(span) {
		b, us := p.at(i, span)
		if err := c.push(ctx, frame{premise: premise, audio: b, ms: us}); err != nil {
			return err
		}
	}
	end := &wire.AudioEndMsg{Type: "audio_end", Turn: id, Generation: c.gen.Load(), AudioMS: p.synthUS / 1000}
	return c.push(ctx, frame{premise: premise, end: true, msg: end})
}
