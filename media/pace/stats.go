package pace

import (
	"slices"
	"time"
)

// Stats summarises how late frames left relative to their schedule. Lateness
// is the pacing jitter a listener's jitter buffer has to absorb.
type Stats struct {
	Frames int64
	Mean   time.Duration
	P50    time.Duration // over the most recent window of frames
	P99    time.Duration // over the most recent window of frames
	Max    time.Duration
}

const window = 1024

type recorder struct {
	n    int64
	sum  time.Duration
	max  time.Duration
	ring [window]time.Duration
}

func (r *recorder) add(late time.Duration) {
	r.ring[r.n%window] = late
	r.n++
	r.sum += late
	r.max = max(r.max, late)
}

func (r *recorder) snapshot() Stats {
	if r.n == 0 {
		return Stats{}
	}
	k := int(min(r.n, window))
	s := slices.Clone(r.ring[:k])
	slices.Sort(s)
	return Stats{
		Frames: r.n,
		Mean:   r.sum / time.Duration(r.n),
		P50:    s[k/2],
		P99:    s[(k*99)/100],
		Max:    r.max,
	}
}
