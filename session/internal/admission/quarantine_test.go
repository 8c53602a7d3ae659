package admission

import (
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"

	"github.com/prometheus/client_golang/prometheus"
)

// TestQuarantineStreak: only late cleanups in a row count; one on time
// ends the run; with the policy off nothing is quarantined.
func TestQuarantineStreak(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after int
		steps string // l: late, o: on time, c: an overdue one confirmed
		want  bool
	}{
		{"off", 0, "lllll", false},
		{"two in a row", 2, "ll", true},
		{"broken run", 2, "lol", false},
		{"three after a break", 3, "llolll", true},
		{"reopens when none overdue", 2, "llcc", false},
		{"stays while one is overdue", 2, "llc", true},
		{"quarantined again", 2, "llccll", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var overdue atomic.Int64
			gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "q"}, []string{"stage"})
			st := &quarantine{after: tc.after, stage: "model", timeout: time.Second, clock: clock.System,
				log: slog.New(slog.NewTextHandler(io.Discard, nil)), gauge: gauge, overdue: &overdue}
			for _, c := range tc.steps {
				switch c {
				case 'l':
					overdue.Add(1)
					st.Late()
				case 'o':
					st.OnTime()
				case 'c':
					overdue.Add(-1)
					st.Confirmed()
				}
			}
			if got := st.On(); got != tc.want {
				t.Fatalf("quarantined %v, want %v", got, tc.want)
			}
		})
	}
}
