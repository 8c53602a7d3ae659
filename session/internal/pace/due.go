package pace

import "time"

// Due releases audio frames in real time (a call's own writer, off the
// shared Pacer): frame n of a reply is due at the
// reply's start plus the duration of the frames before it, less the lead.
// After an underrun (the producer fell behind) the clock restarts from now.
type Due struct {
	start time.Time
	sent  time.Duration
}

// Reset starts the next reply afresh.
func (p *Due) Reset() { p.start, p.sent = time.Time{}, 0 }

// Next reports when the next frame, of length d, is due; now is the
// engine clock's.
func (p *Due) Next(now time.Time, d, lead time.Duration) time.Time {
	if p.start.IsZero() || now.After(p.start.Add(p.sent)) {
		p.start = now.Add(-p.sent) // start, or rebase after an underrun
	}
	due := p.start.Add(p.sent - lead)
	p.sent += d
	return due
}
