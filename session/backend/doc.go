// Package backend defines the interfaces frontdoor uses to reach the engines
// behind a call: a Model that streams the reply to a turn, a Synthesizer that
// turns text into audio, and a Recognizer that turns caller audio into text.
// Adapters live in subpackages (stub, espeak, openai); package
// cmd/frontdoor/backends builds the set chosen on frontdoor serve's command
// line.
//
// # Release evidence
//
// Every call honours context cancellation, and RETURNS ONLY ONCE IT HAS
// STOPPED USING ITS RESOURCE: the HTTP response body is closed and the
// request has returned, the subprocess has been killed and waited for, the
// stub's simulated cleanup has finished. That return is the release evidence
// the stage lease waits for: the caller releases its admission lease only
// after Reply, Synthesize or Recognize has returned, so capacity is never
// handed back while a backend is still busy with abandoned work.
//
// # Emitting
//
// Streaming calls deliver output through an emit callback, in order, from the
// calling goroutine's point of view one at a time. If emit returns an error,
// the backend stops, cleans up, and returns that error wrapped (errors.Is sees
// it). The session uses this to stop a generation that lost its right to
// speak.
//
// # Failures
//
// Failures that callers branch on are typed: errors.Is(err, ErrOverloaded),
// ErrUnavailable, ErrStalled, ErrMalformed or ErrRejected, and errors.As to
// *Error for the backend name, HTTP status and Retry-After. Cancellation is
// passed through: a call stopped by its context returns an error for which
// errors.Is(err, context.Canceled) (or context.DeadlineExceeded) holds.
package backend
