package backend

import (
	"context"
	"time"
)

// Roles of a Message.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is one entry of a conversation: Role is "system", "user" or
// "assistant".
type Message struct{ Role, Content string }

// Turn is one utterance of a caller that a Model answers.
type Turn struct {
	Call, ID, Text string
	// History is the conversation before this turn, oldest first, without
	// the system prompt (the adapter adds its own) and without Text.
	History []Message
}

// Model streams text replies.
type Model interface {
	// Reply streams the reply to t, calling emit for each text delta in
	// order. It returns only once it has stopped using its backend.
	Reply(ctx context.Context, t Turn, emit func(delta string) error) error
}

// Audio is PCM16 mono at Rate samples per second.
type Audio struct {
	Rate    int
	Samples []int16
}

// Duration is how long the samples play.
func (a Audio) Duration() time.Duration {
	if a.Rate <= 0 {
		return 0
	}
	return time.Duration(len(a.Samples)) * time.Second / time.Duration(a.Rate)
}

// Synthesizer turns text into speech.
type Synthesizer interface {
	// Synthesize calls emit with consecutive chunks of PCM16 audio at the
	// synthesizer's native rate, as they are produced. The receiver may
	// read the Samples slice until emit returns and never writes to it: a
	// synthesizer may share it or use it again afterwards (the stub emits
	// views of one precomputed wave), so a receiver that keeps audio
	// copies it. It returns only once it has stopped using its backend.
	Synthesize(ctx context.Context, text string, emit func(Audio) error) error
}

// Recognizer turns speech into text.
type Recognizer interface {
	// Recognize returns the transcript of speech. It returns only once it
	// has stopped using its backend.
	Recognize(ctx context.Context, speech Audio) (string, error)
}
