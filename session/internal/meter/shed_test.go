package meter

import (
	"testing"
	"time"
)

// TestShedMeter: the rule's count of the last second, a sliding window
// over one-second windows, on given times.
func TestShedMeter(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	for _, tc := range []struct {
		name string
		rate float64
		at   []time.Time
		shed []bool
	}{
		{"off", 0, []time.Time{ms(0), ms(1), ms(2)}, []bool{false, false, false}},
		{"within the rate", 2, []time.Time{ms(0), ms(500)}, []bool{false, false}},
		{"over the rate in one second", 2, []time.Time{ms(0), ms(100), ms(200), ms(300)}, []bool{false, false, true, true}},
		// At 1.5 s half of the first window still counts: 2·0.5 + 1 = 2.
		{"half of the last window counts", 2, []time.Time{ms(0), ms(100), ms(1500)}, []bool{false, false, false}},
		{"and then one more is over", 2, []time.Time{ms(0), ms(100), ms(1500), ms(1600)}, []bool{false, false, false, true}},
		{"a quiet second forgets", 2, []time.Time{ms(0), ms(1), ms(2), ms(2500)}, []bool{false, false, true, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := Shed{Rate: tc.rate}
			for i, at := range tc.at {
				if got := m.Refused(at); got != tc.shed[i] {
					t.Fatalf("refusal %d at %v: shed %v, want %v", i, at.Sub(t0), got, tc.shed[i])
				}
			}
		})
	}
}
