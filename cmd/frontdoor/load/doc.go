// Package load runs synthetic callers against a frontdoor server and reports
// what they got.
//
// It is a black-box client: it speaks the wire protocol of GET /v1/session
// (docs/PROTOCOL.md), or with Config.Dialect Twilio that of a Twilio Media
// Streams gateway on GET /v1/twilio (docs/TELEPHONY.md; see twilioCaller
// for what a caller can and cannot tell on that wire), over real
// WebSockets, reads GET /v1/stages and GET /metrics, and imports nothing
// from package session. Callers arrive
// in bursts or as a steady Poisson stream at a target rate; each waits for
// its session, speaks its turns with think times between them, barges in
// with a given probability, accepts a callback when one is offered with a
// given probability, and hangs up.
//
// The Report starts from the offered population. Every caller and every
// turn ends in exactly one place of a conservation ledger (refused before
// retention, still queued, still active, or terminal), and the server's own
// stage ledgers, read before and after the run, are checked against what
// the callers saw. Goodput counts only turns whose first audio reached the
// caller within the useful deadline; audio that came later is reported as
// late: work done after it had lost its value. The spoken fallback prompt
// that follows a refusal is not an answer and counts for neither. The
// rate of completed turns is reported too: with the stages kept busy
// (many callers speaking back to back) it measures the pipeline's capacity,
// so that load can be offered as a multiple of a measured figure.
//
// The generator records every caller's scheduled and actual arrival. When
// it cannot keep up with the schedule (bounded concurrency, a slow dial, a
// busy machine) the report says so, with the lag, instead of silently
// offering less load than asked for.
//
// Runs are bounded: a count of callers, a duration after which every caller
// hangs up, and loopback targets only unless Config.AllowRemote is set.
package load
