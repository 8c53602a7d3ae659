package session

import (
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
)

// TestModelDeadline: the model stage's useful wait is its own max wait
// until the model's first sentences are measured; then it shrinks so that
// a turn admitted at its end still has its first sentence within the
// synthesis stage's budget, never below minModelWait.
func TestModelDeadline(t *testing.T) {
	born := time.Unix(1_700_000_000, 0)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	tests := []struct {
		name     string
		observed []time.Duration
		want     time.Duration // after born; 0: no deadline of its own
	}{
		{"nothing measured", nil, 0},
		{"too few turns measured", []time.Duration{ms(1500), ms(1500), ms(1500)}, 0},
		{"a fast model: a little less", []time.Duration{ms(100), ms(100), ms(100), ms(100), ms(100), ms(100), ms(100), ms(100)}, ms(1887)},
		{"a steady 1.2 s", []time.Duration{ms(1200), ms(1200), ms(1200), ms(1200), ms(1200), ms(1200), ms(1200), ms(1200), ms(1200), ms(1200),
			ms(1200), ms(1200), ms(1200), ms(1200), ms(1200), ms(1200), ms(1200), ms(1200), ms(1200), ms(1200)}, ms(800)},
		{"slower than the whole budget", []time.Duration{ms(5000), ms(5000), ms(5000), ms(5000), ms(5000), ms(5000), ms(5000), ms(5000)}, minModelWait},
		{"one hung reply among fast ones", []time.Duration{ms(100), ms(100), ms(100), ms(100), ms(60000), ms(100), ms(100), ms(100), ms(100), ms(100), ms(100)}, ms(1361)},
	}
	for _, tt := range tests {
		e := &Engine{cfg: Config{Model: stages.Limits{MaxAge: 2 * time.Second}, Synthesis: stages.Limits{MaxAge: 2 * time.Second}}}
		for _, d := range tt.observed {
			e.firstSentence.Observe(d, e.cfg.Synthesis.MaxAge)
		}
		got := e.modelDeadline(born)
		if tt.want == 0 {
			if !got.IsZero() {
				t.Errorf("%s: deadline born+%v, want none", tt.name, got.Sub(born))
			}
			continue
		}
		// The deviation decays toward 0 for a steady pace: within 10 ms.
		if d := got.Sub(born); (d - tt.want).Abs() > 10*time.Millisecond {
			t.Errorf("%s: deadline born+%v, want born+%v", tt.name, d, tt.want)
		}
	}
}
