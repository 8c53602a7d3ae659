package wire

import "fmt"

// Error codes sent in ErrorMsg.
const (
	CodeBadJSON      = "bad_json"
	CodeUnknownType  = "unknown_type"
	CodeBadField     = "bad_field"
	CodeOutOfOrder   = "out_of_order"   // e.g. hello after the first message
	CodeNotAdmitted  = "not_admitted"   // a turn before the session was admitted
	CodeTooManyTurns = "too_many_turns" // turns in flight over the per-call cap
	CodeDuplicate    = "duplicate_turn" // a turn id already used in this call
	CodeTooLarge     = "too_large"
	CodeSlowReader   = "slow_reader"
	CodeUnsupported  = "unsupported"
	// CodeAudioRate is sent before a call is closed (1008) for sending
	// audio faster than its limit (session.AudioLimits.MaxRate).
	CodeAudioRate = "audio_rate"
	// CodeRateLimited is sent before a call is closed (1008) for its
	// tenant's turn rate or cap of calls at once.
	CodeRateLimited = "rate_limited"
	// CodeHeartbeat is never sent: it counts connections closed because
	// their peer did not answer a ping (frontdoor_protocol_errors_total).
	CodeHeartbeat = "heartbeat_timeout"
)

// ProtocolError is bad input from the caller. The call answers it with an
// ErrorMsg and goes on.
type ProtocolError struct {
	Code    string
	Message string
}

func (e *ProtocolError) Error() string { return "session: " + e.Code + ": " + e.Message }

// Errorf returns a *ProtocolError of code with a formatted message.
func Errorf(code, format string, args ...any) *ProtocolError {
	return &ProtocolError{Code: code, Message: fmt.Sprintf(format, args...)}
}
