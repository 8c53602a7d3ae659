package session

import "github.com/frontdoorhq/frontdoor/session/internal/observe"

// The span and attribute names the trace tests read, from package
// internal/observe.
const (
	attrBargeIns    = observe.AttrBargeIns
	attrCallID      = observe.AttrCallID
	attrCancelled   = observe.AttrCancelled
	attrCleanupMS   = observe.AttrCleanupMS
	attrDisposition = observe.AttrDisposition
	attrEnd         = observe.AttrEnd
	attrEndReason   = observe.AttrEndReason
	attrFirstAudio  = observe.AttrFirstAudio
	attrFirstToken  = observe.AttrFirstToken
	attrGeneration  = observe.AttrGeneration
	attrHeard       = observe.AttrHeard
	attrLate        = observe.AttrLate
	attrQueued      = observe.AttrQueued
	attrSpeech      = observe.AttrSpeech
	attrStage       = observe.AttrStage
	attrTurnID      = observe.AttrTurnID
	attrTurns       = observe.AttrTurns
	spanCall        = observe.SpanCall
	spanLease       = observe.SpanLease
	spanTurn        = observe.SpanTurn
	spanWait        = observe.SpanWait
)
