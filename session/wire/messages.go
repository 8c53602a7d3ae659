package wire

import (
	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/stages"
)

// Server -> client messages. Each is JSON with a "type".

// SessionMsg reports the session stage's disposition for the call.
type SessionMsg struct {
	Type        string             `json:"type"` // "session"
	Disposition stages.Disposition `json:"disposition"`
	Session     string             `json:"session"`
	Position    int                `json:"position,omitempty"` // 1 is next; only while queued
}

// DispositionMsg reports one stage outcome of one turn.
type DispositionMsg struct {
	Type        string             `json:"type"` // "disposition"
	Stage       string             `json:"stage"`
	Turn        string             `json:"turn"`
	Generation  uint64             `json:"generation"`
	Segment     int                `json:"segment,omitempty"` // synthesis: the reply's sentence, from 1
	Disposition stages.Disposition `json:"disposition"`
	Position    int                `json:"position,omitempty"` // while queued
	Error       string             `json:"error,omitempty"`    // backend failure kind after completion
}

// TextMsg carries model output as it streams.
type TextMsg struct {
	Type       string `json:"type"` // "text"
	Turn       string `json:"turn"`
	Generation uint64 `json:"generation"`
	Delta      string `json:"delta"`
}

// AudioStartMsg announces the binary audio frames that follow.
type AudioStartMsg struct {
	Type       string `json:"type"` // "audio_start"
	Turn       string `json:"turn"`
	Generation uint64 `json:"generation"`
	Encoding   string `json:"encoding"` // pcm16 (little-endian), mulaw or alaw
	Rate       int    `json:"rate"`
}

// AudioEndMsg ends a turn's audio.
type AudioEndMsg struct {
	Type       string `json:"type"` // "audio_end"
	Turn       string `json:"turn"`
	Generation uint64 `json:"generation"`
	AudioMS    int64  `json:"audio_ms"`
	// Cut: prompt audio stopped early because the state it was spoken
	// for ended (docs/PROTOCOL.md, "Prompts follow the call's state");
	// AudioMS is what was sent.
	Cut bool `json:"cut,omitempty"`
}

// Turn outcomes beyond the stage dispositions.
const (
	// TurnFailed: a backend failed (see TurnEndMsg.Error for its kind).
	TurnFailed = "failed"
)

// TranscriptMsg is what the recognition stage heard in a speech turn.
type TranscriptMsg struct {
	Type       string `json:"type"` // "transcript"
	Turn       string `json:"turn"`
	Generation uint64 `json:"generation"`
	Text       string `json:"text"`
}

// TurnEndMsg is a turn's final outcome: "completed", "cancelled", a refusal
// disposition of the stage named in Stage, or "failed".
type TurnEndMsg struct {
	Type        string `json:"type"` // "turn_end"
	Turn        string `json:"turn"`
	Generation  uint64 `json:"generation"`
	Disposition string `json:"disposition"`
	Stage       string `json:"stage,omitempty"`
	Error       string `json:"error,omitempty"`
}

// Heard is how much of an interrupted reply had been sent for playing.
type Heard struct {
	Turn    string `json:"turn"`
	AudioMS int64  `json:"audio_ms"`
	Text    string `json:"text"`
}

// InterruptedMsg follows a barge-in: the new generation, the turns it
// cancelled, and what of the interrupted reply was sent.
type InterruptedMsg struct {
	Type       string   `json:"type"` // "interrupted"
	Generation uint64   `json:"generation"`
	Cancelled  []string `json:"cancelled"`
	Heard      *Heard   `json:"heard,omitempty"`
}

// PromptMsg is a truthful sentence for the caller about a refusal or expiry.
type PromptMsg struct {
	Type   string `json:"type"` // "prompt"
	Reason string `json:"reason"`
	Stage  string `json:"stage"`
	Text   string `json:"text"`

	Stamp // the call's premise once queued (not part of the JSON)
}

// ErrorMsg answers bad input.
type ErrorMsg struct {
	Type    string `json:"type"` // "error"
	Code    string `json:"code"`
	Message string `json:"message"`

	Barrier // AudioBefore: see OfferMsg
}

// OfferMsg lists the fallbacks a refused caller may take now.
//
// Its AudioBefore is closed once every frame of audio the call had queued
// when the offer was queued (the prompt the offer follows) has been
// handed to the transport, or dropped, or will not be (the call's writer
// stopped). The offer itself is written ahead of queued audio (the
// control lane), so that a caller can answer while the prompt plays; a
// transport that speaks after the offer (a phone's keypad menu) waits for
// it before it puts its own audio on the line, or it would talk over the
// prompt. It is closed already for an offer queued behind no audio, and
// for one that was never queued by a call.
type OfferMsg struct {
	Type  string        `json:"type"` // "offer"
	Kinds []prompt.Kind `json:"kinds"`

	Barrier
}

// FallbackMsg answers a `callback` or `handoff` request. Its AudioBefore
// (see OfferMsg) says when the audio the call had queued before it has
// been handed over: a phone speaks the outcome after it.
type FallbackMsg struct {
	Type        string             `json:"type"` // "callback" or "handoff"
	Disposition stages.Disposition `json:"disposition"`
	// Ref is the callback's or handoff's reference (fallback's Ref), the
	// "ticket" the caller is told.
	Ref      string `json:"ticket,omitempty"`
	Agent    string `json:"agent,omitempty"`
	Position int    `json:"position,omitempty"`

	Barrier
}
