// Package stub provides deterministic stand-ins for a model, a synthesizer
// and a recognizer. Their timing (time to first token, time between tokens,
// synthesis delay, cleanup delay after cancel), failure rate and a hang that
// never confirms cleanup are set by Settings, which mirror the stub flags of
// frontdoor serve. Each stub counts the calls running now and the most ever
// running at once, so over-admission tests can check that a stage never let
// more work reach the backend than its limit.
//
// Timing uses the real clock: tests make it fast by choosing durations of a
// few milliseconds.
package stub
