package load

// The wire protocol of GET /v1/session as a caller sees it
// (docs/PROTOCOL.md). The package defines its own structs so that it tests
// the protocol, not the server's types.

// serverMsg is the union of the server's JSON messages; Type says which
// fields are meaningful.
type serverMsg struct {
	Type        string   `json:"type"`
	Disposition string   `json:"disposition"` // session, disposition, turn_end
	Session     string   `json:"session"`
	Position    int      `json:"position"`
	Stage       string   `json:"stage"`
	Turn        string   `json:"turn"`
	Generation  uint64   `json:"generation"`
	Delta       string   `json:"delta"`
	Encoding    string   `json:"encoding"`
	Rate        int      `json:"rate"`
	Cancelled   []string `json:"cancelled"`
	Reason      string   `json:"reason"`
	Text        string   `json:"text"`
	Code        string   `json:"code"`
	Message     string   `json:"message"`
	Error       string   `json:"error"`
	// Kinds lists the fallbacks an `offer` has room for right now
	// ("callback", "handoff").
	Kinds []string `json:"kinds"`
}

// Client messages.
type (
	turnMsg struct {
		Type string `json:"type"` // "turn"
		ID   string `json:"id"`
		Text string `json:"text"`
	}
	// helloMsg declares the caller's frame length; the format is the
	// server's default (pcm16 at the synthesizer's rate both ways).
	helloMsg struct {
		Type  string     `json:"type"` // "hello"
		Audio helloAudio `json:"audio"`
	}
	helloAudio struct {
		FrameMS int `json:"frame_ms"`
	}
	simpleMsg struct {
		Type string `json:"type"` // "barge_in", "hangup"
	}
	callbackMsg struct {
		Type    string `json:"type"` // "callback"
		Consent bool   `json:"consent"`
		Number  string `json:"number"`
		// Synthetic marks the answer as the load generator's: the server
		// refuses it (error code "synthetic") rather than booking it
		// among real callers' callbacks.
		Synthetic bool `json:"synthetic"`
	}
)

// Dispositions as the protocol spells them.
const (
	dQueued     = "queued"
	dAdmitted   = "admitted"
	dCompleted  = "completed"
	dCancelled  = "cancelled"
	dFailed     = "failed" // a stage's lease released after its backend failed; a turn that failed
	dExpired    = "expired"
	dOverloaded = "overloaded"
	dClosed     = "closed"
	// dRefused is a refusal whose kind the caller could not hear: the
	// Twilio wire closes a refused call with 1013 and no word.
	dRefused = "refused"
)

// refusal reports whether d turns work away (the typed refusals).
func refusal(d string) bool {
	switch d {
	case dOverloaded, dExpired, dClosed, "stale", "out-of-order", dRefused:
		return true
	}
	return false
}

// callbackNumber is the fictional number a synthetic caller leaves.
const callbackNumber = "+15550100"
